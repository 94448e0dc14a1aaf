"""Ctrl-C and SIGTERM: one line, exit 130 / 143, nothing half-written, no stray worker processes.

The subprocess tests do not race the clock: the build is slowed down inside the workers
(``build_batch`` sleeps), the test waits until the temporary ``.incomplete-*`` folder
exists, and only then sends the signal.
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

from gradebench.benchmark.writer import BenchmarkWriter
from tests.conftest import REPO, shared_data

INTERRUPTED = "gradebench: interrupted; nothing was left half-written\n"
TERMINATED = "gradebench: terminated; nothing was left half-written\n"

# `python -m gradebench build demo --out OUT`, with small batches (so the worker pool runs)
# and workers that take a minute per batch. Workers come from a forkserver (a fresh
# interpreter), so the slow-down is installed by a sitecustomize module on PYTHONPATH,
# which every interpreter of the test (parent, server, workers) imports at start-up.
SLOW_SITECUSTOMIZE = textwrap.dedent(
    """
    import time
    import gradebench.benchmark.engine as p
    import gradebench.benchmark.workers as w
    p.BATCH_QUERIES = 4
    _orig = w.build_batch
    def _slow(*args):
        time.sleep(60)
        return _orig(*args)
    w.build_batch = _slow
    """
)
SLOW_BUILD = "import runpy, sys; sys.argv = ['gradebench', *sys.argv[1:]]; runpy.run_module('gradebench', run_name='__main__', alter_sys=True)"


def _leftovers(out: Path) -> list[Path]:
    """Anything that is not an (empty) folder: files, temp folders, finished benchmarks."""
    return [p for p in out.rglob("*") if p.is_file() or "incomplete" in p.name or (p / "manifest.json").exists()]


def _start(argv: list[str], site: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    if site is not None:
        site.mkdir(parents=True, exist_ok=True)
        (site / "sitecustomize.py").write_text(SLOW_SITECUSTOMIZE, encoding="utf-8")
        env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    # own session = own process group, like a shell job; killpg then mimics Ctrl-C in a terminal
    return subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _wait_for_incomplete(proc: subprocess.Popen, out: Path, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(out.glob("*/.staging/*.incomplete-*")):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.01)
    return False


def _group_gone(pgid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_interrupt_in_process_cleans_up(cli, tmp_path, monkeypatch):
    calls = []

    def interrupted(self, split, table):
        calls.append(split)
        raise KeyboardInterrupt

    monkeypatch.setattr(BenchmarkWriter, "write", interrupted)
    code, out, err = cli("build", "demo", "--out", str(tmp_path))
    assert calls, "the build never reached the writer"
    assert (code, out, err) == (130, "", INTERRUPTED)
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("moment", ["mkdtemp", "rename"])
def test_signal_inside_the_temp_folder_steps(cli, tmp_path, monkeypatch, sig, moment):
    """A signal that lands while the temp folder is made (or renamed into place) still cleans up."""
    import gradebench.benchmark.writer as writer_module

    real_mkdtemp, real_rename, fired = writer_module.tempfile.mkdtemp, writer_module.os.rename, []

    def mkdtemp(*a, **k):
        path = real_mkdtemp(*a, **k)
        if moment == "mkdtemp" and "incomplete" in path and not fired:
            fired.append(sig)
            os.kill(os.getpid(), sig)  # held back until the folder is owned
        return path

    def rename(src, dst):
        real_rename(src, dst)
        if moment == "rename" and ".incomplete-" in Path(src).name and not fired:  # the final rename
            fired.append(sig)
            os.kill(os.getpid(), sig)

    monkeypatch.setattr(writer_module.tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(writer_module.os, "rename", rename)
    code, out, err = cli("build", "demo", "--out", str(tmp_path))
    assert fired
    assert (code, out, err) == (128 + sig, "", INTERRUPTED if sig == signal.SIGINT else TERMINATED)
    assert not [p for p in tmp_path.rglob("*") if "incomplete" in p.name]
    if moment == "mkdtemp":
        assert _leftovers(tmp_path) == []
    else:  # the signal came after the final rename: the benchmark is complete, never partial
        (done,) = [p for p in tmp_path.rglob("manifest.json")]
        assert (done.parent / "README.md").is_file()


@pytest.mark.parametrize(
    ("sig", "to_group", "code", "line"),
    [
        (signal.SIGINT, True, 130, INTERRUPTED),  # Ctrl-C: the terminal signals parent and workers
        (signal.SIGINT, False, 130, INTERRUPTED),  # kill -INT <pid>
        (signal.SIGTERM, False, 143, TERMINATED),  # kill <pid>
        (signal.SIGTERM, True, 143, TERMINATED),  # kill -- -<pgid>
    ],
    ids=["sigint-group", "sigint-parent", "sigterm-parent", "sigterm-group"],
)
def test_signal_during_pooled_build(tmp_path, sig, to_group, code, line):
    out = tmp_path / "out"
    proc = _start([sys.executable, "-c", SLOW_BUILD, "build", "demo", "--out", str(out), "--no-validate"], site=tmp_path / "site")
    try:
        assert _wait_for_incomplete(proc, out), proc.communicate(timeout=60)
        (os.killpg if to_group else os.kill)(proc.pid, sig)
        stdout, stderr = proc.communicate(timeout=30)  # workers sleep 60 s: they must be killed, not awaited
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (proc.returncode, stdout, stderr) == (code, "", line)
    assert _leftovers(out) == []
    assert _group_gone(proc.pid), "worker processes outlived the build"


@pytest.mark.integration
def test_ctrl_c_during_real_esnli_build(tmp_path):
    """The unpatched CLI on the real data (~10k queries, two batches, two workers)."""
    source = shared_data("esnli", "eSNLI")
    out = tmp_path / "out"
    proc = _start([sys.executable, "-m", "gradebench", "build", "esnli", "--source", str(source), "--out", str(out)])
    try:
        started = _wait_for_incomplete(proc, out)
        if started:
            os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    if proc.returncode == 0:
        pytest.skip("the build finished before the signal arrived")
    assert (proc.returncode, stdout, stderr) == (130, "", INTERRUPTED)
    assert _leftovers(out) == []
    assert _group_gone(proc.pid)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_wrapped_by_an_extension_is_still_an_interruption(cli, tmp_path, monkeypatch, sig):
    """pydantic-core turned a SIGINT that landed while it serialized into PydanticSerializationError
    ("internal error", exit 1); the command was interrupted all the same: one line, 128 + signal."""
    fired = []

    def write(self, split, table):
        fired.append(split)
        try:
            os.kill(os.getpid(), sig)
        except KeyboardInterrupt as e:  # what an extension calling back into Python does with it
            raise RuntimeError(f"Error calling function `_dump`: {e}") from e

    monkeypatch.setattr(BenchmarkWriter, "write", write)
    code, out, err = cli("build", "demo", "--out", str(tmp_path))
    assert fired
    assert (code, out, err) == (128 + sig, "", INTERRUPTED if sig == signal.SIGINT else TERMINATED)
    assert _leftovers(tmp_path) == []
