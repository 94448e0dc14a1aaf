"""Issue 28 item 7: build workers end as soon as the building process is gone, mid-batch too.

The building process is killed (``kill -9``) while both workers are in the middle of a batch
(one that would take two minutes). A worker used to notice only when it next wrote to or read
from its pipe, after the batch (up to 5.1 s with real batches); now it must be gone at once. The
bound below is on a hang (the batch's two minutes), not a timing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests.benchmark.test_script_build import _alive
from tests.conftest import REPO

#: the workers' batch sleeps (module level: a forkserver's workers import this script too)
BUSY = """
import multiprocessing, os, signal, sys, threading, time
import gradebench.benchmark.workers as workers
from gradebench.recipes.loader import load_recipe

def slow_batch(builder, units, out_splits, *rest):
    os.write(1, f"in-batch {{os.getpid()}}\\n".encode())  # one write: two workers' lines never interleave
    time.sleep(120)

workers.build_batch = slow_batch
if {thread}:  # with a main guard, a thread makes it the forkserver
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()

def batches():  # one each: then the build waits for their answers
    yield [], []
    yield [], []

{guard}
{indent}print(workers.start_method(), flush=True)
{indent}for _ in workers.run_batches("esnli", load_recipe("esnli").model_dump_json(), batches(), 2):
{indent}    pass
"""


@pytest.mark.parametrize(("guard", "method"), [(False, "fork"), (True, "forkserver")])
def test_workers_in_a_batch_end_with_the_build(tmp_path, guard, method):
    script = tmp_path / "busy.py"
    script.write_text(textwrap.dedent(BUSY).format(
        thread=guard, guard='if __name__ == "__main__":' if guard else "", indent="    " if guard else ""))
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    pids: list[int] = []
    with proc:
        first = proc.stdout.readline().strip()
        while len(pids) < 2:
            line = proc.stdout.readline()
            assert line.startswith("in-batch"), line
            pids.append(int(line.split()[1]))
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=60) == -9
        deadline = time.monotonic() + 30  # a bound on a hang (the batch sleeps 120 s), not a timing
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.02)
        alive = [p for p in pids if _alive(p)]
        for p in alive:
            os.kill(p, signal.SIGKILL)
    assert first == method
    assert alive == [], "workers in the middle of a batch outlived the build"
