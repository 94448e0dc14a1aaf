"""The two helpers of crash-consistent runs: named stop points and flock locks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from gradebench import locks, stops
from gradebench.errors import InvalidArgumentError
from gradebench.locks import Busy, FileLock, holder, locked_temp_beside, remove_stale_temps
from tests.conftest import REPO


# -- stop points --------------------------------------------------------------------------------------------
def test_parse():
    assert stops.parse("train-step") == ("train-step", 1, "kill")
    assert stops.parse("checkpoint-saving:2") == ("checkpoint-saving", 2, "kill")
    assert stops.parse("output-saved:3:interrupt") == ("output-saved", 3, "interrupt")
    assert stops.parse("output-saved:interrupt") == ("output-saved", 1, "interrupt")
    with pytest.raises(InvalidArgumentError, match="unknown stop point 'checkpoint-save'") as e:
        stops.parse("checkpoint-save:1")
    assert "checkpoint-saving" in str(e.value)  # the hint lists the points
    for bad in ("train-step:0", "train-step:x", "train-step:1:kill:2"):
        with pytest.raises(InvalidArgumentError):
            stops.parse(bad)


def test_a_point_stops_at_its_nth_visit_only(monkeypatch):
    seen = []
    monkeypatch.setenv(stops.ENV, "train-step:3")
    with stops.stopping_with(seen.append):
        for _ in range(5):
            stops.stop_point("train-step")
            stops.stop_point("output-saved")  # another point: counted apart, never stops
    assert seen == ["train-step"]
    monkeypatch.delenv(stops.ENV)
    with stops.stopping_with(seen.append):
        stops.stop_point("train-step")  # unset: a no-op
    assert seen == ["train-step"]


def test_interrupt_raises_keyboard_interrupt_and_a_typo_is_an_error(monkeypatch):
    monkeypatch.setenv(stops.ENV, "run-begun:interrupt")
    with pytest.raises(KeyboardInterrupt):
        stops.stop_point("run-begun")
    monkeypatch.setenv(stops.ENV, "run-begn")
    with pytest.raises(InvalidArgumentError, match="run-begn"):  # not a silent no-op
        stops.stop_point("run-begun")


def test_a_caller_may_number_the_visits(monkeypatch):
    """``visit=``: the batch number decides, not how many batches this process has seen."""
    seen = []
    monkeypatch.setenv(stops.ENV, "batch-receiving:2:sigterm-group")
    assert stops.parse("batch-receiving:2:sigterm-group") == ("batch-receiving", 2, "sigterm-group")
    with stops.stopping_with(seen.append):
        stops.stop_point("batch-receiving", visit=1)
        stops.stop_point("batch-receiving", visit=3)
        assert seen == []
        stops.stop_point("batch-receiving", visit=2)  # this process's first visit, but batch 2
    assert seen == ["batch-receiving"]


@pytest.mark.parametrize(("how", "sig"), [("sigint-group", "SIGINT"), ("sigterm-group", "SIGTERM")])
def test_a_group_signal_reaches_every_process_of_the_group(tmp_path, how, sig):
    """The stopping process and its child both get the signal (as from a terminal), and it carries on."""
    code = (
        "import signal, subprocess, sys, time\nfrom gradebench.stops import stop_point\n"
        f"got = []\nsignal.signal(signal.{sig}, lambda s, f: got.append(s))\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "stop_point('run-begun')\n"
        "child.wait(timeout=30)\n"
        "print(got == [signal." + sig + "], child.returncode)\n"
    )
    env = {**os.environ, stops.ENV: f"run-begun:{how}", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
                          start_new_session=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, f"True {-getattr(signal, sig)}\n"), done.stderr


def test_kill_exits_137_without_cleanup(tmp_path):
    code = ("import pathlib\nfrom gradebench.stops import stop_point\n"
            f"p = pathlib.Path({str(tmp_path / 'cleaned')!r})\n"
            "try:\n    stop_point('run-begun')\nfinally:\n    p.write_text('x')\n")
    env = {**os.environ, stops.ENV: "run-begun", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO)
    assert done.returncode == stops.KILLED_EXIT == 137 and not (tmp_path / "cleaned").exists()


# -- locks ----------------------------------------------------------------------------------------------
def test_a_held_lock_is_busy_with_its_pid_until_released(tmp_path):
    path = tmp_path / ".run.lock"
    lock = FileLock.acquire(path)
    assert holder(path) == os.getpid()
    with pytest.raises(Busy) as e:  # flock is per open file: a second open in this process conflicts too
        FileLock.acquire(path)
    assert e.value.pid == os.getpid()
    lock.release()
    lock.release()  # idempotent
    assert not path.exists()
    again = FileLock.acquire(path)
    assert again.held
    del again  # an abandoned lock is let go (a dead process's is, by the OS)
    FileLock.acquire(path).release()


def test_a_lock_on_a_file_that_was_replaced_is_taken_on_the_new_one(tmp_path, monkeypatch):
    path = tmp_path / ".run.lock"
    calls = {"n": 0}
    real_open = os.open

    def racing_open(p, flags, mode=0o777):
        fd = real_open(p, flags, mode)
        if calls["n"] == 0:  # the holder released (removed the file) right after we opened it
            os.unlink(p)
        calls["n"] += 1
        return fd

    monkeypatch.setattr(locks.os, "open", racing_open)
    lock = FileLock.acquire(path)
    monkeypatch.undo()
    assert calls["n"] == 2 and path.is_file() and holder(path) == os.getpid()
    with pytest.raises(Busy):
        FileLock.acquire(path)
    lock.release()


def test_only_temp_files_nobody_holds_are_stale(tmp_path):
    dead = tmp_path / ".a.json.x1.tmp"
    dead.write_text("a killed writer's")
    with locked_temp_beside(tmp_path / "b.json") as live:
        assert remove_stale_temps(tmp_path) == [dead]
        assert live.exists()
    with pytest.raises(RuntimeError), locked_temp_beside(tmp_path / "c.json") as failed:
        raise RuntimeError
    assert not failed.exists()  # a failed write removes its own temp file
    assert remove_stale_temps(tmp_path) == [live] and not any(tmp_path.iterdir())
