"""Shared helpers for the CLI tests: run as ``python -m gradebench`` (in-process: the ``cli`` fixture of
tests/conftest.py), and check one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO


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
