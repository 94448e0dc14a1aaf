"""Experiments: train scorers, evaluate any scorer, keep the records, rank the systems.

* :func:`.train.train` -- one training run into a run folder; :func:`.runs.load_run` reads it back;
* :func:`evaluate_scorer` -- score a split, compute the metric suite with bootstrap CIs and
  the bias controls (:mod:`.bias`), and write a versioned record (:mod:`.record`, :mod:`.suite`);
  :func:`check_record`, :func:`verified_records` -- a record's digests, ranges and counts, checked
  before any reader believes it (:mod:`.verify`);
  :func:`evaluate_model` -- the same for any model (a folder or a Hub id) through an adapter;
* :func:`.validity.validity_figures` -- how far shortcuts get on a built benchmark;
* :func:`.leaderboard.leaderboard` -- one row per system, mean over seeds, paired tests against the best;
* :func:`.query.query` -- DuckDB SQL over the records (views in ``leaderboard/views.sql``);
* :func:`plot_run`, :func:`plot_history` -- score distributions per tier, training curves;
* :func:`.sweep.sweep` -- a grid of benchmarks x scorers x losses x list sizes x seeds from an
  experiment YAML, each cell also evaluated on its ``transfer:`` benchmarks;
* :func:`.demo.run_demo` -- the main job end to end on the embedded demo data.

Names are imported lazily, so ``import gradebench.experiments`` stays cheap. The functions
named like their modules (``train``, ``leaderboard``, ``query``, ``sweep``) are not
re-exported, so ``gradebench.experiments.query`` is always the module.
"""

from __future__ import annotations

from gradebench._lazy import by_module, lazy_attributes

_LAZY = by_module({
    "gradebench.experiments.record": ("EvalRecord",),
    "gradebench.experiments.store": ("read_record", "list_records", "find_record"),
    "gradebench.experiments.verify": ("check_record", "verified_records"),
    "gradebench.experiments.evaluate": ("evaluate_scorer", "evaluate_model"),
    "gradebench.experiments.leaderboard": ("Leaderboard",),
    "gradebench.experiments.query": ("run_query", "connect"),
    "gradebench.experiments.plot": ("plot_run", "plot_history"),
    "gradebench.experiments.sweep": ("SweepResult",),
    "gradebench.experiments.runs": ("load_run", "RunInfo"),
    "gradebench.experiments.demo": ("run_demo",),
})

__all__ = sorted(_LAZY)


__getattr__ = lazy_attributes(__name__, _LAZY, globals())
