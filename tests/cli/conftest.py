"""Shared helpers for the CLI tests: run in-process, or as ``python -m gradebench``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gradebench.cli import main
from tests.conftest import REPO


@pytest.fixture
def cli(capsys):
    """``cli(*args) -> (exit_code, stdout, stderr)``, running ``gradebench.cli.main`` in-process."""

    def run(*args: str):
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def run_module(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m gradebench <args>`` in a subprocess (offline, repo as cwd)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "gradebench", *args], capture_output=True, text=True, cwd=REPO, env=env,
        timeout=timeout,
    )


def assert_one_line_error(err: str, *needles: str) -> None:
    """stderr is exactly one ``gradebench: error: ...`` line containing every needle."""
    assert err.startswith("gradebench: error: "), err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err and "Usage:" not in err and "╭" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)
