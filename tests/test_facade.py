"""The public facade: lazy, side-effect free, and every name resolves."""

from __future__ import annotations

import subprocess
import sys

import gradebench
from tests.conftest import REPO


def test_every_lazy_name_resolves():
    for name in gradebench.__all__:
        assert getattr(gradebench, name) is not None


def test_import_is_light_and_side_effect_free():
    code = (
        "import os, sys; before = dict(os.environ); import gradebench; "
        "assert dict(os.environ) == before; "
        "heavy = [m for m in ('torch', 'pandas', 'pyarrow', 'duckdb', 'jax') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_help_does_not_import_torch():
    code = (
        "import sys; from gradebench.cli import main; "
        "rc = main(['--help']); "
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('torch', 'great_expectations', 'trl') "
        "or m.startswith(('gradebench.datasets', 'gradebench.sources'))]; "
        "assert not heavy, f'imported by --help: {heavy}'; sys.exit(rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert "build" in out.stdout and "info" in out.stdout and "list" in out.stdout
