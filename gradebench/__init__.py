"""gradebench: graded ranking benchmarks from explanation/NLI data, and the harness around them.

The facade re-exports the public API lazily, so ``import gradebench`` and ``gradebench --help``
stay fast and have no side effects (no environment variables, threads or network).
"""

from __future__ import annotations

from gradebench import _moved
from gradebench._lazy import lazy_attributes
from gradebench._version import DATA_FORMAT_VERSION, __version__
from gradebench.errors import GradebenchError

_LAZY = {
    # name: module that defines it
    "build": "gradebench.experiments.build",
    "BuildResult": "gradebench.benchmark.engine",
    "info": "gradebench.benchmark.info",
    "validate_folder": "gradebench.benchmark.validate",
    "load": "gradebench.hub",
    "export_reward": "gradebench.reward",
    "reward_report": "gradebench.reward",
    "lipo": "gradebench.rl",
    "grpo": "gradebench.rl",
    "ppo": "gradebench.rl",
    "pretrain_policy": "gradebench.rl",
    "publish": "gradebench.hub",
    "Builder": "gradebench.datasets",
    "GradedList": "gradebench.datasets",
    "register_builder": "gradebench.datasets",
    "get_builder": "gradebench.datasets",
    "list_recipes": "gradebench.recipes.catalog",
    "load_recipe": "gradebench.recipes.loader",
    "Recipe": "gradebench.recipes.models",
    # metrics (numpy)
    "evaluate": "gradebench.metrics",
    "parse_metric": "gradebench.metrics",
    "METRICS": "gradebench.metrics",
    # significance
    "bootstrap_ci": "gradebench.stats",
    "paired_bootstrap_test": "gradebench.stats",
    "paired_randomization_test": "gradebench.stats",
    "holm": "gradebench.stats",
    # benchmarks as dense lists
    "open_benchmark": "gradebench.benchmark.lists",
    "Lists": "gradebench.benchmark.lists",
    # scorers and the harness
    "make_scorer": "gradebench.scorers",
    "register_scorer": "gradebench.scorers",
    "Scorer": "gradebench.scorers",
    "TrainOptions": "gradebench.scorers",
    "train": "gradebench.experiments.train",
    "load_run": "gradebench.experiments.runs",
    "run_demo": "gradebench.experiments.demo",
    # results
    "evaluate_scorer": "gradebench.experiments.evaluate",
    "evaluate_model": "gradebench.experiments.evaluate",
    "reproduction_report": "gradebench.experiments.reproduction",
    # losses (torch, imported only when asked for)
    "get_loss": "gradebench.losses",
    "LOSSES": "gradebench.losses",
}

__all__ = ["__version__", "DATA_FORMAT_VERSION", "GradebenchError", *_LAZY]


__getattr__ = lazy_attributes(__name__, _LAZY, globals())

_moved.install()  # old import paths (gradebench.sources, .builders, .harness, .results, .lists)
