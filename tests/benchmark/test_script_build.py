"""``gb.build(...)`` at the top level of a script file, without ``if __name__ == "__main__":``.

Worker processes must not run the caller's script again: an unguarded script builds with forked
workers (one thread) or, when it runs threads, in its own process with one warning line; a
guarded one keeps the forkserver. Every way gives the same bytes as a serial build.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gradebench.benchmark.workers import SERIAL_WARNING, _has_main_guard
from tests.conftest import REPO

# small batches, so the 48 demo queries make 12 batches and the worker pool starts
SCRIPT = """
import json, sys, threading, time
import gradebench as gb
import gradebench.benchmark.engine as engine
import gradebench.benchmark.workers as workers

engine.BATCH_QUERIES = 4
if {thread}:
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
{guard}
{indent}print("start-method", workers.start_method(), file=sys.stderr)
{indent}r = gb.build("demo", out=sys.argv[1], progress=False, validity=False, workers=2)
{indent}print(json.dumps(r.files))
"""


def _run(tmp_path: Path, *, guard: bool, thread: bool) -> tuple[dict, str, Path]:
    script = tmp_path / "build_script.py"
    script.write_text(textwrap.dedent(SCRIPT).format(
        thread=thread, guard='if __name__ == "__main__":' if guard else "", indent="    " if guard else ""))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "bootstrapping phase" not in proc.stderr
    files = json.loads(proc.stdout.strip().splitlines()[-1])
    return files, proc.stderr, next(out.glob("demo/*"))


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((folder / "data").glob("*.parquet"))}


@pytest.fixture(scope="module")
def serial_digests(tmp_path_factory):
    from gradebench.benchmark import engine

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "BATCH_QUERIES", 4)  # the scripts' row groups
        r = engine.build("demo", out=tmp_path_factory.mktemp("serial"), progress=False, workers=1)
    return _digests(Path(r.path))


@pytest.mark.parametrize(("guard", "thread", "method"), [
    (False, False, "fork"),  # the README's example: forked workers, nothing re-imported
    (False, True, "None"),  # unguarded and threaded: one process, one warning line
    (True, True, "forkserver"),  # guarded: the forkserver as always
])
def test_script_builds(tmp_path, serial_digests, guard, thread, method):
    files, stderr, folder = _run(tmp_path, guard=guard, thread=thread)
    assert f"start-method {method}" in stderr
    assert stderr.count("gradebench: warning:") == (1 if method == "None" else 0)
    if method == "None":
        assert SERIAL_WARNING in stderr
    assert _digests(folder) == serial_digests


def test_main_guard_detection(tmp_path):
    script = tmp_path / "s.py"
    for text, expected in [
        ('if __name__ == "__main__":\n    pass\n', True),
        ("if '__main__' == __name__:\n    pass\n", True),
        ("def f():\n    if __name__ == '__main__':\n        pass\n", False),
        ("import gradebench\n", False),
        ("this is not python(\n", False),
    ]:
        script.write_text(text)
        assert _has_main_guard(str(script)) is expected, text


# The build's process is killed (kill -9) while both workers wait for their next batch.
ORPHANS = """
import os, signal, sys, threading, time
import gradebench.benchmark.workers as workers
from gradebench.recipes.loader import load_recipe

if {thread}:  # with a main guard, a thread makes it the forkserver
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()

def batches():
    yield [], []
    yield [], []
    print(*[c.pid for c in __import__("multiprocessing").active_children()], flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    yield [], []

{guard}
{indent}print(workers.start_method(), flush=True)
{indent}for _ in workers.run_batches("esnli", load_recipe("esnli").model_dump_json(), batches(), 2):
{indent}    pass
"""


@pytest.mark.parametrize(("guard", "method"), [(False, "fork"), (True, "forkserver")])
def test_workers_leave_when_the_build_is_killed(tmp_path, guard, method):
    """A forked worker holds copies of the parent's ends of the pipes: it closes them, or it would
    wait for a batch forever once the parent is gone."""
    script = tmp_path / "orphans.py"
    script.write_text(textwrap.dedent(ORPHANS).format(
        thread=guard, guard='if __name__ == "__main__":' if guard else "", indent="    " if guard else ""))
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    with proc:
        first, second = proc.stdout.readline().strip(), proc.stdout.readline()
        assert proc.wait(timeout=300) == -9
        pids = [int(p) for p in second.split()]
        deadline = time.monotonic() + 60  # a bound on a hang, not a timing
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)
        alive = [p for p in pids if _alive(p)]
        for p in alive:
            os.kill(p, signal.SIGKILL)
    assert first == method
    assert len(pids) >= 2
    assert alive == [], "workers outlived the build"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
