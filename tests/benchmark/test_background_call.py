"""``background_call``: one piece of work in a worker process while the caller goes on.

The validity figures fit the strong lexical ceiling this way; the figures must be those of a
run in one process, an exception in the worker must reach the caller, and a block left early
must leave no process behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gradebench.benchmark.workers import background_call
from gradebench.errors import BenchmarkError
from tests.conftest import REPO


def _square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def _fails(message: str) -> None:
    raise BenchmarkError(message, hint="a test")


def _sleeps(seconds: float) -> int:
    import time

    time.sleep(seconds)
    return os.getpid()


def test_the_result_comes_from_another_process():
    with background_call(_square_and_pid, 7) as wait:
        value, pid = wait()
    assert value == 49
    assert pid != os.getpid()


def test_an_exception_in_the_worker_is_raised_by_wait():
    with background_call(_fails, "the worker's message") as wait, pytest.raises(BenchmarkError, match="worker's message"):
        wait()


def test_leaving_the_block_early_kills_the_worker():
    import multiprocessing

    with pytest.raises(RuntimeError, match="caller failed"), background_call(_sleeps, 60) as wait:
        children = multiprocessing.active_children()
        assert children, "the worker is running"
        raise RuntimeError("caller failed")
    assert all(not c.is_alive() for c in children)
    del wait


def test_an_unguarded_script_gets_the_same_validity_figures(tmp_path):
    """A script without a main guard forks the worker (or runs the fit itself): same figures either way."""
    script = tmp_path / "figures.py"
    script.write_text(textwrap.dedent("""
        import json, sys, threading, time
        import gradebench as gb
        import gradebench.experiments.validity as validity
        validity.BACKGROUND_MIN_ROWS = 0  # the demo is small: fit the ceiling in a worker all the same
        if sys.argv[2] == "thread":  # a running thread: no fork, the fit runs in this process
            threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        r = gb.build("demo", out=sys.argv[1], progress=False, resplit=(50, 0, 50), validate=False)
        print(json.dumps(r.validity, sort_keys=True))
    """))
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    outputs = []
    for mode in ("fork", "thread"):
        done = subprocess.run([sys.executable, str(script), str(tmp_path / mode), mode], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        outputs.append(done.stdout.strip().splitlines()[-1])
    assert outputs[0] == outputs[1]
    import json

    assert isinstance(json.loads(outputs[0])["lexical_ceiling_strong"]["pairwise_agreement"], float)


def test_a_large_benchmark_fits_the_strong_ceiling_here_with_the_same_figures(tmp_path, monkeypatch):
    import gradebench as gb
    from gradebench.experiments import validity
    from gradebench.experiments.build import add_validity

    built = gb.build("demo", out=tmp_path, progress=False, resplit=(50, 0, 50), validate=False)
    monkeypatch.setattr(validity, "BACKGROUND_MIN_ROWS", 0)
    monkeypatch.setattr(validity, "BACKGROUND_MAX_ROWS", 100)  # the demo's 240 rows count as large
    monkeypatch.setattr("gradebench.benchmark.workers.background_call",
                        lambda *a: pytest.fail("a large benchmark must not start a worker"))
    assert add_validity(Path(built.path)) == built.validity


def test_a_small_benchmark_fits_the_strong_ceiling_here(tmp_path, monkeypatch):
    """Below BACKGROUND_MIN_ROWS starting a worker costs more than the fit."""
    import gradebench as gb
    from gradebench.experiments.build import add_validity

    built = gb.build("demo", out=tmp_path, progress=False, resplit=(50, 0, 50), validate=False)
    monkeypatch.setattr("gradebench.benchmark.workers.background_call",
                        lambda *a: pytest.fail("a small benchmark must not start a worker"))
    assert add_validity(Path(built.path)) == built.validity
