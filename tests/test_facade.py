"""The public facade: lazy, side-effect free, and every name resolves."""

from __future__ import annotations

import gradebench
from tests.conftest import modules_loaded_by


def test_every_lazy_name_resolves():
    for name in gradebench.__all__:
        assert getattr(gradebench, name) is not None


def test_import_is_light_and_side_effect_free():
    code = "import os; before = dict(os.environ); import gradebench; assert dict(os.environ) == before"
    assert modules_loaded_by(code, "torch", "pandas", "pyarrow", "duckdb", "jax")[0] == []


def test_help_does_not_import_torch():
    code = "from gradebench.cli import main; assert main(['--help']) == 0"
    heavy, out = modules_loaded_by(code, "torch", "great_expectations", "trl", "gradebench.datasets", "gradebench.sources")
    assert heavy == [], f"imported by --help: {heavy}"
    assert "build" in out and "info" in out and "list" in out


def test_a_function_named_like_its_submodule_stays_the_function():
    """``gradebench.rl.lipo`` is the function even when ``gradebench.rl.lipo`` the module was imported first
    (a lazy package otherwise ends up exporting the module: the import system binds it there)."""
    import subprocess
    import sys

    code = (
        "import gradebench.rl.lipo, gradebench.rl.grpo, gradebench.rl.ppo, gradebench.rl as rl, inspect\n"
        "from gradebench.rl import lipo\n"
        "assert all(inspect.isfunction(f) for f in (lipo, rl.lipo, rl.grpo, rl.ppo)), (lipo, rl.grpo, rl.ppo)\n"
        "import gradebench.rl.options\n"  # another submodule still binds as a module
        "assert inspect.ismodule(rl.options)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-800:]
