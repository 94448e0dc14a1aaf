"""The watchdog of a build's local Ray instance (``gradebench.benchmark.ray_watch``), without Ray.

A parent process stands in for the building process: it starts the watchdog, then a fake "Ray"
process (a script inside a folder given as the Ray package's folder, which starts a child of its
own) and an unrelated child. Killed with SIGKILL, the parent leaves the fake Ray processes to the
watchdog, which ends them and nothing else; a parent that says ``done`` leaves them running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gradebench.benchmark import ray_watch

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the watchdog reads /proc")

REPO = Path(__file__).resolve().parents[2]

PARENT = textwrap.dedent("""
    import subprocess, sys, time
    sys.path.insert(0, {repo!r})
    from gradebench.benchmark import ray_watch
    ray_dir, how = sys.argv[1], sys.argv[2]
    watch = ray_watch.start(ray_dir)
    agent = subprocess.Popen([sys.executable, ray_dir + "/agent.py"])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    print(agent.pid, other.pid, watch.pid, flush=True)
    time.sleep(1.0)  # the watchdog notes the processes a few times a second
    if how == "done":
        ray_watch.stop(watch)
        print("stopped", flush=True)
    time.sleep(120)
""")

# a fake Ray process: it survives a hang-up and a SIGTERM (so the watchdog's SIGKILL round must end it),
# starts a child at once, and another one 2.5 s later (while it is being stopped, after the last look)
AGENT = textwrap.dedent("""
    import signal, subprocess, sys, time
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    open(sys.argv[0] + ".child", "w").write(str(child.pid))
    time.sleep(2.5)
    late = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    open(sys.argv[0] + ".late", "w").write(str(late.pid))
    time.sleep(120)
""")


def _alive(pid: int) -> bool:
    return ray_watch._stat(pid) is not None  # a zombie counts as gone


def _gone(pids, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def parent(tmp_path):
    ray_dir = tmp_path / "ray"
    ray_dir.mkdir()
    (ray_dir / "agent.py").write_text(AGENT, encoding="utf-8")
    started = []

    def start(how: str):
        proc = subprocess.Popen([sys.executable, "-c", PARENT.format(repo=str(REPO)), str(ray_dir), how],
                                stdout=subprocess.PIPE, text=True, start_new_session=True)
        started.append(proc)
        agent, other, watch = (int(x) for x in proc.stdout.readline().split())
        child_file = ray_dir / "agent.py.child"
        deadline = time.monotonic() + 30
        while not child_file.exists() or not child_file.read_text():
            assert time.monotonic() < deadline, "the fake agent never started its child"
            time.sleep(0.05)
        return proc, agent, int(child_file.read_text()), other, watch

    start.late = lambda: int((ray_dir / "agent.py.late").read_text())  # the child started 2.5 s in
    yield start
    for proc in started:  # whatever a failed test left
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


@pytest.mark.parametrize("how", ["kill -9", "hang-up"])
def test_a_parent_that_dies_leaves_its_ray_processes_to_the_watchdog(parent, how):
    """The parent ends without clean-up: SIGKILL to it alone, or a hang-up of its whole process
    group (a closed terminal), which the watchdog outlives. The fake Ray process ignores SIGTERM and
    starts a child after the parent is gone: the watchdog's SIGKILL round ends them all."""
    proc, agent, grandchild, other, watch = parent("kill")
    time.sleep(1.0)
    if how == "kill -9":
        os.kill(proc.pid, signal.SIGKILL)
    else:
        os.killpg(proc.pid, signal.SIGHUP)
    proc.wait()
    assert _gone([agent, grandchild, watch], timeout=20), "the fake Ray processes outlived the parent"
    late = parent.late()
    assert _gone([late], timeout=5), "a child the fake Ray process started late outlived it"
    if how == "kill -9":
        assert _alive(other), "the watchdog ended a process that is not Ray's"
        os.kill(other, signal.SIGKILL)


def test_a_parent_that_stopped_ray_itself_leaves_everything_alone(parent):
    proc, agent, grandchild, other, watch = parent("done")
    assert proc.stdout.readline().strip() == "stopped"
    assert _gone([watch], timeout=10), "the watchdog did not exit on 'done'"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(1.0)
    assert all(_alive(p) for p in (agent, grandchild, other))
    for p in (agent, grandchild, other):
        os.kill(p, signal.SIGKILL)


def test_ray_processes_are_found_by_their_program_and_title(tmp_path):
    ray_dir = str(tmp_path / "ray")
    assert ray_watch._is_ray([f"{ray_dir}/core/src/ray/raylet/raylet", "--x"], ray_dir)
    assert ray_watch._is_ray(["/usr/bin/python", "-u", f"{ray_dir}/_private/log_monitor.py"], ray_dir)
    assert ray_watch._is_ray(["ray::DashboardAgent"], ray_dir)
    assert not ray_watch._is_ray(["/usr/bin/python", "-c", "import ray"], ray_dir)
    assert not ray_watch._is_ray([], ray_dir)
    assert not ray_watch._is_ray([f"{ray_dir}_other/x.py"], ray_dir)  # a sibling folder's name starts alike
    with pytest.raises(ValueError):
        ray_watch.ray_processes(os.getpid(), "", skip=-1)
    found = ray_watch.ray_processes(os.getpid(), ray_dir, skip=-1)
    assert found == {}  # this test process has no Ray children
