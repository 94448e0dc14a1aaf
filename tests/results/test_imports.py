"""gradebench.experiments stays light: heavy libraries are imported only when a function needs them."""

from __future__ import annotations

import gradebench.experiments as results
from tests.conftest import modules_loaded_by


def test_facade_names_resolve_and_modules_stay_modules():
    import types

    for name in results.__all__:
        assert getattr(results, name) is not None, name
    import gradebench.experiments.query  # noqa: F401

    assert isinstance(results.query, types.ModuleType)  # never shadowed by the function of the same name


def test_importing_results_and_commands_is_light():
    code = (
        "import gradebench.experiments.evaluate, gradebench.experiments.leaderboard, gradebench.experiments.sweep, "
        "gradebench.experiments.plot, gradebench.experiments.query, gradebench.cli.results_cmds"
    )
    assert modules_loaded_by(code, "torch", "matplotlib", "duckdb", "transformers", "lightgbm")[0] == []
