"""Ctrl-C and SIGTERM: one line, exit 130 / 143, nothing half-written, no stray worker processes.

The subprocess tests do not race the clock: the build is slowed down inside the workers
(``build_batch`` sleeps), the test waits until the temporary ``.incomplete-*`` folder
exists, and only then sends the signal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gradebench.benchmark.writer import BenchmarkWriter
from gradebench.stops import ENV
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
#: the command line called from a `python -c` program (not `python -m gradebench`), whose build workers
#: are a forkserver's, as a notebook's are (`python -m gradebench` forks them, as its console script does)
FORKSERVER_BUILD = ("import sys; sys.argv = ['gradebench', *sys.argv[1:]]; "
                    "from gradebench.cli import main; sys.exit(main())")


def _leftovers(out: Path) -> list[Path]:
    """Anything that is not an (empty) folder: files, temp folders, finished benchmarks."""
    return [p for p in out.rglob("*") if p.is_file() or "incomplete" in p.name or (p / "manifest.json").exists()]


@pytest.fixture(autouse=True)
def _sigint_handled():
    """Python's own Ctrl-C handler in this process for the in-process cases (see _default_sigint)."""
    before = signal.getsignal(signal.SIGINT)
    if before is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _start(argv: list[str], site: Path | None = None, code: str = SLOW_SITECUSTOMIZE,
           stop_at: str | None = None) -> subprocess.Popen:
    """Start ``argv`` in its own process group; ``site`` gets ``code`` as its sitecustomize
    (on the PYTHONPATH of every interpreter of the build); ``stop_at`` is its GRADEBENCH_STOP_AT."""
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    if stop_at is not None:
        env[ENV] = stop_at
    if site is not None:
        site.mkdir(parents=True, exist_ok=True)
        (site / "sitecustomize.py").write_text(code, encoding="utf-8")
        env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    # own session = own process group, like a shell job; killpg then mimics Ctrl-C in a terminal.
    # SIGINT at its default in the child: a runner started in the background by a shell without job
    # control (`cmd &`, nohup) ignores SIGINT, and an ignored SIGINT is inherited (Python then keeps
    # it ignored, as it should for a nohup'ed job), which would turn every Ctrl-C case into a no-op
    return subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_default_sigint)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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


# Issue 16.6: batches of several megabytes (the first unit of each carries a 4 MiB payload) and
# workers that take a minute per batch. The group signal is sent by the build itself, at a
# named step, so the tests wait on no clock: only `communicate(timeout=...)` bounds a hang.
BIG_SITECUSTOMIZE = SLOW_SITECUSTOMIZE + textwrap.dedent(
    """
    import os, signal
    _batches = p._batches
    SIGNAL_AT = int(os.environ.get("TEST_SIGNAL_AT_BATCH", "-1"))
    SIGNAL = signal.Signals[os.environ.get("TEST_SIGNAL", "SIGINT")]

    class SignalWhilePickled:
        \"\"\"Sends the group signal while the parent pickles its batch for a worker, in whichever
        thread does that; then gives the parent's main thread time to stop the workers before
        the batch is written (multiprocessing.Pool's task thread then wrote it into a pipe no
        one read, and terminate() joined that thread forever).\"\"\"
        def __reduce__(self):
            os.killpg(os.getpgrp(), SIGNAL)
            time.sleep(2)
            return (str, ("x" * (4 << 20),))

    def _big(*args, **kwargs):
        for k, (units, splits) in enumerate(_batches(*args, **kwargs)):
            payload = SignalWhilePickled() if k == SIGNAL_AT else "x" * (4 << 20)
            yield [(u, payload if j == 0 else "") for j, u in enumerate(units)], splits
    p._batches = _big

    def _slow_big(builder, units, splits, *rest):
        time.sleep(60)
        return _orig(builder, [u for u, _ in units], splits, *rest)
    w.build_batch = _slow_big
    """
)


def _run_to_end(proc: subprocess.Popen, timeout: float = 60) -> tuple[str, str]:
    """The output of a build that ends by itself; one still running after ``timeout`` hangs."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"the build hung (killed after {timeout} s); stderr: {stderr[-2000:]}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.parametrize(("how", "code", "line"), [("sigint-group", 130, INTERRUPTED),
                                                   ("sigterm-group", 143, TERMINATED)])
def test_group_signal_while_a_worker_reads_a_multi_megabyte_batch(tmp_path, how, code, line):
    """The second worker has the number of its batch and is about to read the batch, which the
    parent is writing (4 MiB: more than the pipe holds) when the whole group gets the signal.
    SIGINT: the workers ignore it and the parent stops them; SIGTERM kills the reader half-way."""
    out = tmp_path / "out"
    proc = _start([sys.executable, "-c", SLOW_BUILD, "build", "demo", "--out", str(out), "--no-validate"],
                  site=tmp_path / "site", code=BIG_SITECUSTOMIZE, stop_at=f"batch-receiving:2:{how}")
    stdout, stderr = _run_to_end(proc)
    assert (proc.returncode, stdout, stderr) == (code, "", line)
    assert _leftovers(out) == []
    assert _group_gone(proc.pid), "worker processes outlived the build"


def _assert_interrupted_cleanly(tmp_path: Path, code: str, sig: signal.Signals,
                                build: str = SLOW_BUILD) -> None:
    """A demo build (``build``: forked workers, or :data:`FORKSERVER_BUILD`) with ``code`` as its
    sitecustomize ends as interrupted by ``sig``: the one line, 128 + signal, nothing left in its
    output folder, no process of its group left."""
    out = tmp_path / "out"
    proc = _start([sys.executable, "-c", build, "build", "demo", "--out", str(out), "--no-validate"],
                  site=tmp_path / "site", code=code)
    stdout, stderr = _run_to_end(proc)
    assert (proc.returncode, stdout, stderr) == (128 + sig, "", INTERRUPTED if sig == signal.SIGINT else TERMINATED)
    assert _leftovers(out) == []
    assert _group_gone(proc.pid), "worker processes outlived the build"


@pytest.mark.parametrize("build", [SLOW_BUILD, FORKSERVER_BUILD], ids=["fork", "forkserver"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_group_signal_while_a_multi_megabyte_batch_is_handed_over(tmp_path, monkeypatch, sig, build):
    """The hang of issue 16.6 (once in ~60 Ctrl-Cs): the signal lands while the parent pickles
    the third batch, the first two workers busy. With multiprocessing.Pool this hung for good."""
    monkeypatch.setenv("TEST_SIGNAL_AT_BATCH", "2")
    monkeypatch.setenv("TEST_SIGNAL", sig.name)
    _assert_interrupted_cleanly(tmp_path, BIG_SITECUSTOMIZE, sig, build)


# The group signal lands inside the parent's Process.start() of the second worker, after the
# forkserver has forked it and before the parent has written what it must run. Blocking the
# signal in the main thread does not hold back the Python handler (another thread takes the
# signal, the main thread runs the handler); an exception there left the new child reading an
# empty pipe: a stray "EOFError: Ran out of input" traceback on stderr.
STARTUP_SITECUSTOMIZE = SLOW_SITECUSTOMIZE + textwrap.dedent(
    """
    import os, signal
    import multiprocessing.forkserver as fs
    _connect = fs.connect_to_new_process
    _calls = []
    def _connect_and_signal(fds):
        fds = _connect(fds)
        _calls.append(1)
        if len(_calls) == 2:
            os.killpg(os.getpgrp(), signal.Signals[os.environ["TEST_SIGNAL"]])
        return fds
    fs.connect_to_new_process = _connect_and_signal
    """
)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_group_signal_while_a_worker_starts(tmp_path, monkeypatch, sig):
    monkeypatch.setenv("TEST_SIGNAL", sig.name)
    _assert_interrupted_cleanly(tmp_path, STARTUP_SITECUSTOMIZE, sig, FORKSERVER_BUILD)


# The group signal lands while the forkserver process starts (this module is its sitecustomize
# too). The forkserver is started with both signals blocked, which it keeps, and so do the
# workers it forks until they set their own handlers; but multiprocessing's resource tracker,
# started just before it, unblocked them in the parent ("SIG_UNBLOCK"): a Ctrl-C then was a
# KeyboardInterrupt traceback from the forkserver (seen once in 60 random Ctrl-Cs of a real build).
FORKSERVER_SITECUSTOMIZE = SLOW_SITECUSTOMIZE + textwrap.dedent(
    """
    import os, signal, sys
    if "from multiprocessing.forkserver import main" in " ".join(sys.orig_argv):
        os.killpg(os.getpgrp(), signal.Signals[os.environ["TEST_SIGNAL"]])
    """
)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_group_signal_while_the_forkserver_starts(tmp_path, monkeypatch, sig):
    monkeypatch.setenv("TEST_SIGNAL", sig.name)
    _assert_interrupted_cleanly(tmp_path, FORKSERVER_SITECUSTOMIZE, sig, FORKSERVER_BUILD)


def test_a_worker_that_dies_is_an_error_not_a_hang(tmp_path):
    """A worker killed (kill -9, out of memory) while the parent writes it a batch: one line, exit 2."""
    out = tmp_path / "out"
    proc = _start([sys.executable, "-c", SLOW_BUILD, "build", "demo", "--out", str(out), "--no-validate"],
                  site=tmp_path / "site", code=BIG_SITECUSTOMIZE, stop_at="batch-receiving:2:kill")
    stdout, stderr = _run_to_end(proc)
    assert (proc.returncode, stdout) == (2, "")
    assert stderr.startswith("gradebench: error: a build worker ended without answering (exit code 137)"), stderr
    assert stderr.count("\n") == 1, stderr
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


# the source read in the workers in slices of 2,048 rows (the real dev split: 5 of them)
SMALL_SLICES = "import gradebench.datasets.tiers.builder as b\nb.SLICE_ROWS = 2048\n"


@pytest.mark.parametrize(("stop_at", "code", "line"), [
    ("batch-receiving:1:kill", 2, "gradebench: error: a build worker ended without answering (exit code 137)"),
    ("batch-receiving:2:sigint-group", 130, INTERRUPTED.rstrip("\n")),
    ("batch-receiving:3:sigterm-group", 143, TERMINATED.rstrip("\n")),
])
def test_a_build_reading_in_the_workers_stopped_at_a_named_step_then_run_again(tmp_path, stop_at, code, line):
    """The real dev split read in the workers (slices of 2,048 rows: tasks 1-5 key them, 6-7
    build): a worker killed, or the group signalled, while a slice's task is on its way. One
    line, nothing written, no process left; the same command then builds the benchmark an
    unbroken build writes."""
    source = shared_data("esnli", "eSNLI")
    argv = [sys.executable, "-c", SLOW_BUILD, "build", "esnli", "--source", str(source), "--workers", "2",
            "--no-validate", "--no-validity", "--json", "--timings"]
    out = tmp_path / "out"
    proc = _start([*argv, "--out", str(out)], site=tmp_path / "site", code=SMALL_SLICES, stop_at=stop_at)
    stdout, stderr = _run_to_end(proc)
    assert (proc.returncode, stdout) == (code, "")
    assert stderr.startswith(line) and stderr.count("\n") == 1, stderr
    assert _leftovers(out) == []
    assert _group_gone(proc.pid), "worker processes outlived the build"
    again = _start([*argv, "--out", str(out)], site=tmp_path / "site", code=SMALL_SLICES)
    stdout, stderr = _run_to_end(again)
    assert again.returncode == 0, stderr
    assert "workers.select" in json.loads(stdout)["timings"]  # it was read in the workers
    unbroken = _start([*argv, "--out", str(tmp_path / "unbroken"), "--workers", "1"])
    want, _ = _run_to_end(unbroken)
    got, want = json.loads(stdout), json.loads(want)
    assert [got[k] for k in ("fingerprint", "files", "skipped")] == [want[k] for k in ("fingerprint", "files", "skipped")]
    for name in got["files"]["validation"]:
        assert (Path(got["path"]) / name).read_bytes() == (Path(want["path"]) / name).read_bytes()
