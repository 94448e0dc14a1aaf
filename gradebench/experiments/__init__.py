"""Experiments: train scorers, evaluate any scorer, keep the records, rank the systems.

* :func:`.train.train` -- one training run into a run folder; :func:`.runs.load_run` reads it back;
* :func:`evaluate_scorer` -- score a split, compute the metric suite with bootstrap CIs and
  the bias controls (:mod:`.bias`), and write a versioned record (:mod:`.record`, :mod:`.suite`);
  :func:`evaluate_model` -- the same for any model (a folder or a Hub id) through an adapter;
* :func:`.validity.validity_figures` -- how far shortcuts get on a built benchmark;
* :func:`.leaderboard.leaderboard` -- one row per system, mean over seeds, paired tests against the best;
* :func:`.query.query` -- DuckDB SQL over the records (views in ``leaderboard/views.sql``);
* :func:`plot_run`, :func:`plot_history` -- score distributions per tier, training curves;
* :func:`.sweep.sweep` -- a grid of benchmarks x scorers x losses x seeds from an experiment YAML;
* :func:`.demo.run_demo` -- the main job end to end on the embedded demo data.

Names are imported lazily, so ``import gradebench.experiments`` stays cheap. The functions
named like their modules (``train``, ``leaderboard``, ``query``, ``sweep``) are not
re-exported, so ``gradebench.experiments.query`` is always the module.
"""

from __future__ import annotations

from gradebench._lazy import lazy_attributes

_LAZY = {
    "EvalRecord": "gradebench.experiments.record",
    "read_record": "gradebench.experiments.store",
    "evaluate_scorer": "gradebench.experiments.evaluate",
    "evaluate_model": "gradebench.experiments.evaluate",
    "list_records": "gradebench.experiments.store",
    "find_record": "gradebench.experiments.store",
    "Leaderboard": "gradebench.experiments.leaderboard",
    "run_query": "gradebench.experiments.query",
    "connect": "gradebench.experiments.query",
    "plot_run": "gradebench.experiments.plot",
    "plot_history": "gradebench.experiments.plot",
    "SweepResult": "gradebench.experiments.sweep",
    "load_run": "gradebench.experiments.runs",
    "RunInfo": "gradebench.experiments.runs",
    "run_demo": "gradebench.experiments.demo",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_attributes(__name__, _LAZY, globals())
