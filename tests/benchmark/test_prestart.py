"""``prestart``: the forkserver is started before the source is hashed and indexed, with the
modules a worker imports imported there once (each worker is then a fork that has them).

Each case runs in a fresh interpreter: multiprocessing keeps one forkserver per process, so
a test in this one would see (or leave) another test's server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading

import pytest

from tests.conftest import REPO

#: a module the probe's child runs (it unpickles the function by name; nothing else imports it)
_LOADED = "import sys\n\n\ndef report(conn):\n    conn.send('colorsys' in sys.modules)\n"

#: run with ``-c`` (no script for the workers to import again), so the workers are the forkserver's
_PROBE = textwrap.dedent(
    """
    import json, multiprocessing as mp, sys
    from multiprocessing import forkserver
    sys.path.insert(0, {folder!r})
    from probe_loaded import report
    {before}
    from gradebench.benchmark.workers import prestart

    started = prestart(["colorsys"])
    ctx = mp.get_context("forkserver")
    here, there = ctx.Pipe(duplex=False)
    child = ctx.Process(target=report, args=(there,), daemon=True)  # a child of the server: what it has unasked
    child.start()
    there.close()
    has = here.recv() if here.poll(100) else "no answer"
    child.kill()
    child.join()
    print(json.dumps({{"started": started, "preload": forkserver._forkserver._preload_modules, "child": has}}))
    """
)


def _probe(tmp_path, before: str = "pass") -> dict:
    (tmp_path / "probe_loaded.py").write_text(_LOADED)
    code = _PROBE.format(folder=str(tmp_path), before=before)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.skipif(sys.platform != "linux", reason="the forkserver start method is Linux's default here")
def test_the_server_starts_with_the_workers_modules_added_to_the_callers(tmp_path):
    got = _probe(tmp_path, 'mp.set_forkserver_preload(["__main__", "json"])')
    assert got["started"] is True
    assert got["preload"] == ["__main__", "json", "colorsys"]  # the caller's kept, first
    assert got["child"] is True  # imported by the server: nothing in the child asked for it


@pytest.mark.skipif(sys.platform != "linux", reason="the forkserver start method is Linux's default here")
def test_a_running_server_is_left_as_it_is(tmp_path):
    got = _probe(tmp_path, 'mp.get_context("forkserver").Process(target=print).start()')  # started plainly
    assert got["started"] is False
    assert got["preload"] == ["__main__"]
    assert got["child"] is False


def test_nothing_starts_where_workers_are_forked(tmp_path):
    """An unguarded script gets plain forks (start_method "fork"): no server to start."""
    script = tmp_path / "unguarded.py"
    script.write_text("from gradebench.benchmark.workers import prestart\nprint(prestart(['colorsys']))\n")
    out = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout.strip()) == (0, "False"), out.stderr


def test_the_server_preloads_third_party_modules_only():
    """This project's modules are imported by each worker, with the building process's sys.path:
    the server imports with its own default path (before Python 3.14) and outlives the build, so
    a checkout on sys.path, or a module edited between two builds of one session, would otherwise
    reach the workers as another copy than the building process runs."""
    from gradebench.benchmark.workers import PRELOAD

    assert PRELOAD and not any(m == "gradebench" or m.startswith(("gradebench.", "__main__")) for m in PRELOAD)


def test_the_command_line_forks_its_workers_as_its_console_script_does(monkeypatch):
    """``python -m gradebench`` forks its workers while it runs one thread (as the ``gradebench``
    script does), so they start at once with its imports; other ``-m`` programs, and this one
    once it runs another thread, keep the forkserver."""
    import types

    import gradebench.benchmark.workers as workers

    main = types.ModuleType("__main__")
    main.__file__ = str(REPO / "gradebench" / "__main__.py")
    main.__spec__ = types.SimpleNamespace(name="gradebench.__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(workers, "_single_threaded", lambda: True)
    assert workers.start_method() == "fork"
    monkeypatch.setattr(workers, "_single_threaded", lambda: False)
    assert workers.start_method() == "forkserver"
    main.__spec__ = types.SimpleNamespace(name="someone_else.__main__")
    monkeypatch.setattr(workers, "_single_threaded", lambda: True)
    assert workers.start_method() == "forkserver"


def test_python_m_gradebench_forks_its_workers(tmp_path):
    """End to end: `python -m gradebench build` (run as such by runpy) with batches small enough for
    the pool to start forks its workers, starts no forkserver, and writes the serial build's bytes."""
    import hashlib
    import os

    sums = []
    for workers in ("1", "2"):
        out = tmp_path / workers
        code = textwrap.dedent("""
            import runpy, sys, multiprocessing.forkserver as fs
            import gradebench.benchmark.engine as engine
            import gradebench.benchmark.workers as w
            engine.BATCH_QUERIES = 4  # the demo's 48 queries: 12 batches, so the pool starts
            method = w.start_method
            w.start_method = lambda: print("method", method(), file=sys.stderr) or method()
            sys.argv = ["gradebench", "build", "demo", "--out", OUT, "--no-validate", "--workers", WORKERS]
            try:
                runpy.run_module("gradebench", run_name="__main__", alter_sys=True)
            except SystemExit as e:
                assert not e.code, e.code
            print("server", fs._forkserver._forkserver_pid is not None, file=sys.stderr)
            """).replace("OUT", repr(str(out))).replace("WORKERS", repr(workers))
        proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
        assert proc.returncode == 0, proc.stderr
        assert "server False" in proc.stderr, proc.stderr
        if workers == "2":
            assert "method fork" in proc.stderr and "method forkserver" not in proc.stderr, proc.stderr
        sums.append(sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in out.rglob("*.parquet")))
    assert sums[0] == sums[1] and sums[0]


def test_a_build_with_a_progress_bar_starts_its_workers_before_the_bar(monkeypatch, tmp_path):
    """The workers start before the progress bar's thread, while the build runs one thread, so
    the command line forks them on a terminal too (a forkserver was started, cold, before); the
    bar still counts every query."""
    import types

    import gradebench.benchmark.engine as engine
    import gradebench.benchmark.workers as workers
    from gradebench.experiments.build import build

    main = types.ModuleType("__main__")
    main.__file__ = str(REPO / "gradebench" / "__main__.py")
    main.__spec__ = types.SimpleNamespace(name="gradebench.__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(engine, "BATCH_QUERIES", 4)  # the demo's 48 queries: 12 batches, so the pool starts
    asked, started, advanced = [], [], []
    monkeypatch.setattr(engine, "prestart", lambda: started.append("prestart") or False)
    real_start_method, real_progress = workers.start_method, engine._progress

    def start_method():
        asked.append((real_start_method(), threading.active_count()))
        return "forkserver"  # the test process runs threads (pytest-xdist's): forks would be unsafe here

    class Bar:
        def __init__(self, bar):
            self.bar = bar

        def __enter__(self):
            bar = self.bar.__enter__()
            advanced.append(threading.active_count())  # the bar's refresh thread is running now
            original = bar.advance
            bar.advance = lambda task, n: advanced.append(n) or original(task, n)
            return bar

        def __exit__(self, *exc):
            return self.bar.__exit__(*exc)

    monkeypatch.setattr(workers, "start_method", start_method)
    monkeypatch.setattr(workers, "_single_threaded", lambda: threading.active_count() == baseline)
    monkeypatch.setattr(engine, "_progress", lambda enabled: Bar(real_progress(enabled)))
    baseline = threading.active_count()
    result = build("demo", out=tmp_path / "a", progress=True, workers=2, validate=False, validity=False)
    assert started == ["prestart"]
    assert asked == [("fork", baseline)]  # asked once, before the bar's thread: one thread then
    assert advanced[0] == baseline + 1  # the bar started after, with its thread
    assert sum(advanced[1:]) == sum(s["queries"] for s in result.splits.values()) == 48
