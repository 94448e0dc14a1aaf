"""``gradebench build ... | head``: the reader goes away before the output is written (issue 31)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gradebench.cli.main import BROKEN_PIPE_EXIT
from tests.conftest import REPO


@pytest.mark.parametrize("extra", [[], ["--json"]])  # rich's Console, and a plain sys.stdout.write
def test_a_closed_stdout_exits_141_quietly(tmp_path, extra):
    proc = subprocess.Popen([sys.executable, "-m", "gradebench", "build", "demo", "--out", str(tmp_path), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    proc.stdout.close()  # before the interpreter has started: every write to stdout meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == BROKEN_PIPE_EXIT == 141  # as `yes | head` reports, not 1 (a bug's code)
    assert err == ""
    assert len(list((tmp_path / "demo").iterdir())) == 1  # the build itself was done and kept
