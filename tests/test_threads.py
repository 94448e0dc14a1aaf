"""The torch thread policy: an explicit count, else the user's OMP/MKL variables, else the free cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import pytest

from gradebench.errors import InvalidArgumentError
from gradebench.threads import (
    ThreadChoice,
    available_cores,
    cgroup_cpu_quota,
    choose_threads,
    interop_threads,
    limit_torch_threads,
    ordered_map,
)
from tests.conftest import REPO


@pytest.mark.parametrize("cores, load, intra", [
    (2, 0.0, 2), (2, 0.4, 2), (2, 0.6, 1), (2, 1.49, 1), (2, 2.5, 1), (2, 40.0, 1),
    (8, 2.6, 5), (8, 0.0, 8), (16, 15.7, 1), (1, 0.0, 1), (4, -1.0, 4),
])
def test_auto_is_the_free_cores(cores, load, intra):
    choice = choose_threads(env={}, cores=cores, load=load)
    assert choice == ThreadChoice(intra, interop_threads(intra), "auto", cores, load)
    assert 1 <= choice.intra_op <= cores


def test_no_load_average_counts_as_idle(monkeypatch):
    monkeypatch.setattr("gradebench.threads.load_average", lambda: None)
    assert choose_threads(env={}, cores=4) == ThreadChoice(4, 2, "auto", 4, None)


def test_interop_is_modest():
    assert [interop_threads(n) for n in (1, 2, 3, 4, 64)] == [1, 1, 1, 2, 2]


@pytest.mark.parametrize("env, intra", [
    ({"OMP_NUM_THREADS": "3"}, 3),
    ({"MKL_NUM_THREADS": "2"}, 2),
    ({"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "2"}, 2),  # torch reads MKL's first
    ({"OMP_NUM_THREADS": "lots"}, None),  # set, but not a count: left to torch
    ({"OMP_NUM_THREADS": "0"}, None),
])
def test_the_users_variables_are_respected(env, intra):
    assert choose_threads(env=env, cores=2, load=9.0) == ThreadChoice(intra, None, "env", 2)


def test_empty_variables_count_as_unset():
    assert choose_threads(env={"OMP_NUM_THREADS": " "}, cores=4, load=1.0).source == "auto"


def test_an_explicit_count_wins_over_everything():
    choice = choose_threads(6, env={"OMP_NUM_THREADS": "1"}, cores=2, load=9.0)
    assert choice == ThreadChoice(6, 2, "option", 2)
    with pytest.raises(InvalidArgumentError, match="at least 1"):
        choose_threads(0, env={}, cores=2, load=0.0)


def test_available_cores():
    assert available_cores(affinity=8, env={}) == 8
    assert available_cores(affinity=8, quota=2, env={}) == 2
    assert available_cores(affinity=2, quota=64, env={}) == 2
    assert available_cores(affinity=8, env={"LOCAL_WORLD_SIZE": "4"}) == 2
    assert available_cores(affinity=2, env={"LOCAL_WORLD_SIZE": "4"}) == 1
    assert available_cores(affinity=0, env={}) == 1
    here = available_cores(env={})
    assert 1 <= here <= (os.cpu_count() or 1)


@pytest.mark.parametrize("threads", [None, 1, 2, 8])
def test_ordered_map_keeps_the_order_and_raises_the_first_failure_in_it(threads):
    import threading
    import time

    assert ordered_map(lambda x: x * x, range(20), threads=threads) == [x * x for x in range(20)]
    assert ordered_map(str, [], threads=threads) == []
    first_done = threading.Event()

    def slow_fail_first(x):
        if x == 1:  # fails late: item 3 has failed by then wherever calls run at once
            first_done.wait(0 if threads == 1 else 2)
            time.sleep(0.05)
            raise KeyError("one")
        if x == 3:
            first_done.set()
            raise ValueError("three")
        return x

    with pytest.raises(KeyError, match="one"):
        ordered_map(slow_fail_first, range(5), threads=threads)


def test_ordered_map_runs_calls_at_once_where_it_may():
    import threading

    both = threading.Barrier(2, timeout=10)  # each call waits for the other: one thread would time out
    assert ordered_map(lambda x: both.wait() * 0 + x, [1, 2], threads=2) == [1, 2]
    seen = []
    assert ordered_map(lambda x: seen.append(threading.current_thread()) or x, [1, 2], threads=1) == [1, 2]
    assert seen == [threading.main_thread()] * 2


@pytest.mark.parametrize("text, cpus", [("max 100000\n", None), ("200000 100000\n", 2), ("150000 100000", 2),
                                        ("50000 100000", 1), ("garbage", None), ("", None)])
def test_cgroup_quota(tmp_path, text, cpus):
    path = tmp_path / "cpu.max"
    path.write_text(text)
    assert cgroup_cpu_quota(path) == cpus
    assert cgroup_cpu_quota(tmp_path / "absent") is None


class _FakeTorch(types.SimpleNamespace):
    def __init__(self, threads: int, interop_started: bool = False):
        super().__init__(threads=threads, interop=None, interop_started=interop_started)

    def get_num_threads(self):
        return self.threads

    def set_num_threads(self, n):
        self.threads = n

    def set_num_interop_threads(self, n):
        if self.interop_started:
            raise RuntimeError("cannot set number of interop threads after parallel work has started")
        self.interop = n


@pytest.fixture
def _no_user_threads(monkeypatch):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("_no_user_threads")
def test_limit_sets_an_imported_torch_and_restores_it(monkeypatch):
    fake = _FakeTorch(threads=7)
    monkeypatch.setitem(sys.modules, "torch", fake)
    with limit_torch_threads(3) as choice:
        assert (fake.threads, fake.interop, choice.source) == (3, 1, "option")
        assert "OMP_NUM_THREADS" not in os.environ
    assert fake.threads == 7
    fake = _FakeTorch(threads=7, interop_started=True)  # its inter-op pool is running: left as it is
    monkeypatch.setitem(sys.modules, "torch", fake)
    with limit_torch_threads(5):
        assert (fake.threads, fake.interop) == (5, None)


@pytest.mark.usefixtures("_no_user_threads")
def test_limit_never_imports_torch(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr("gradebench.threads.load_average", lambda: 0.0)
    with limit_torch_threads() as choice:
        assert choice.source == "auto" and choice.intra_op >= 1
        assert os.environ["OMP_NUM_THREADS"] == os.environ["MKL_NUM_THREADS"] == str(choice.intra_op)
        assert "torch" not in sys.modules
    assert "OMP_NUM_THREADS" not in os.environ and "MKL_NUM_THREADS" not in os.environ


def test_limit_leaves_the_users_variables(monkeypatch):
    fake = _FakeTorch(threads=7)
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    with limit_torch_threads() as choice:
        assert choice.source == "env" and fake.threads == 7 and os.environ["OMP_NUM_THREADS"] == "1"
    with limit_torch_threads(2):
        assert fake.threads == 2
    assert os.environ["OMP_NUM_THREADS"] == "1" and "MKL_NUM_THREADS" not in os.environ


def test_cli_records_the_threads_torch_ran_with(demo_benchmark, tmp_path):
    """A fresh process (torch not yet imported): --threads wins over OMP_NUM_THREADS, both reach torch,
    and the record says what torch ran with."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env["PYTHONPATH"] = str(REPO)

    def gradebench(*args, **extra):
        out = subprocess.run([sys.executable, "-m", "gradebench", *map(str, args), "--json"], cwd=tmp_path,
                             env={**env, **extra}, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    run = gradebench("train", "--benchmark", demo_benchmark, "--scorer", "hashed-mlp", "--out", tmp_path / "run",
                     "--epochs", 1, "--threads", 1)["run_dir"]
    res = tmp_path / "res"
    record = gradebench("eval", "--run", run, "--resamples", 10, "--results-dir", res, "--threads", 1,
                        OMP_NUM_THREADS="2")
    assert record["environment"]["torch_threads"] == 1
    record = gradebench("eval", "--run", run, "--resamples", 10, "--results-dir", res, OMP_NUM_THREADS="1")
    assert record["environment"]["torch_threads"] == 1
