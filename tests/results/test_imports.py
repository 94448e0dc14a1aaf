"""gradebench.experiments stays light: heavy libraries are imported only when a function needs them."""

from __future__ import annotations

import subprocess
import sys

import gradebench.experiments as results
from tests.conftest import REPO


def test_facade_names_resolve_and_modules_stay_modules():
    import types

    for name in results.__all__:
        assert getattr(results, name) is not None, name
    import gradebench.experiments.query  # noqa: F401

    assert isinstance(results.query, types.ModuleType)  # never shadowed by the function of the same name


def test_importing_results_and_commands_is_light():
    code = (
        "import sys; import gradebench.experiments.evaluate, gradebench.experiments.leaderboard, gradebench.experiments.sweep, "
        "gradebench.experiments.plot, gradebench.experiments.query, gradebench.cli.results_cmds; "
        "heavy = [m for m in ('torch', 'matplotlib', 'duckdb', 'transformers', 'lightgbm') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
