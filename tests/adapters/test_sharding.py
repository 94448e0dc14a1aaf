"""Sharding: ``accelerate launch -m gradebench eval --model`` over 2 CPU processes (gloo) writes the record a
single process writes; the plan's batches are split between the processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gradebench.scorers.adapters import runner
from tests.conftest import REPO


class _FakeGroup:
    """Stands in for torch.distributed: the other rank's share comes from ``other``."""

    def __init__(self, other):
        self.other, self.sent = other, None

    def all_gather_object(self, out, obj):
        self.sent = obj
        out[0], out[1] = self.other, obj


def test_each_process_scores_its_share_of_the_batches(monkeypatch):
    batches = runner.plan_batches([str(i) for i in range(10)], np.zeros(10), seed=0, batch_size=3, bucket=False)
    other = [(rows, rows * 10.0) for rows in batches[0::2]]  # rank 0's share
    group = _FakeGroup(other)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setattr(runner, "_process_group", lambda device_type: group)
    seen = []
    out = runner.run_plan(batches, lambda rows: seen.append(rows.tolist()) or rows * 10.0, 10)
    assert seen == [b.tolist() for b in batches[1::2]]  # rank 1 computed batches 1, 3, ...
    assert out.tolist() == [10.0 * i for i in range(10)]  # and holds every value


def _eval(args, out_dir, *, processes: int):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(REPO),
           "ACCELERATE_USE_CPU": "true"}
    cli = ["-m", "gradebench", "eval", *map(str, args), "--results-dir", str(out_dir), "--json"]
    if processes == 1:
        cmd = [sys.executable, *cli]
    else:
        cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(processes),
               "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", *cli]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=out_dir.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)  # only the main process prints


@pytest.mark.slow
@pytest.mark.parametrize("fixture, adapter", [("seq_classifier", "sequence-classifier"), ("tiny_bert", "bi-encoder")])
def test_accelerate_launch_writes_the_single_process_record(request, demo_benchmark, tmp_path, fixture, adapter):
    model = request.getfixturevalue(fixture)
    args = ["--benchmark", demo_benchmark, "--model", model, "--adapter", adapter, "--set", "batch_size=3",
            "--resamples", 50, "--check-invariance"]
    one = _eval(args, tmp_path / "one", processes=1)
    two = _eval(args, tmp_path / "two", processes=2)
    assert two["scorer"]["model"]["processes"] == 2 and one["scorer"]["model"]["processes"] == 1
    assert one["id"] == two["id"]
    for key in ("metrics", "bias", "invariance", "separation", "benchmark", "bootstrap"):
        assert one[key] == two[key], key
    files = sorted(p.name for p in (tmp_path / "two" / "demo").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "one" / "demo").iterdir())  # one record, written once
    for suffix in (".predictions.parquet", ".queries.parquet"):
        a = (tmp_path / "one" / "demo" / (one["id"] + suffix)).read_bytes()
        assert a == (tmp_path / "two" / "demo" / (two["id"] + suffix)).read_bytes(), suffix


def _launched(monkeypatch, *, world: int, local: int) -> None:
    monkeypatch.setenv("WORLD_SIZE", str(world))
    monkeypatch.setenv("RANK", str(local))
    monkeypatch.setenv("LOCAL_RANK", str(local))


@pytest.mark.parametrize("device_type", ["cuda", "cpu"])
def test_the_scores_are_gathered_over_gloo_on_gpus_too(monkeypatch, device_type):
    """NCCL's all_gather_object would stage the CPU arrays on cuda:0 in every process (no set_device)."""
    import torch.distributed as dist

    started = []
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group", lambda **kw: started.append(kw))
    monkeypatch.setattr(runner.atexit, "register", lambda fn: None)
    assert runner._process_group(device_type) is dist
    assert started == [{"backend": "gloo"}]


@pytest.mark.parametrize("requested, cuda, world, expected", [
    (None, True, 8, "cuda:5"),       # picked: this process's GPU
    ("cuda", True, 8, "cuda:5"),     # --set device=cuda: still one GPU per process
    ("cuda:1", True, 8, "cuda:1"),   # an explicit index is kept
    ("cpu", True, 8, "cpu"),
    (None, False, 8, "cpu"),
    (None, True, 1, "cuda"),         # one process: the current device
    ("cuda", True, 1, "cuda"),
])
def test_each_process_gets_the_gpu_of_its_local_rank(monkeypatch, requested, cuda, world, expected):
    _launched(monkeypatch, world=world, local=5)
    assert runner.pick_device(requested, cuda=cuda, mps=False) == expected


@pytest.mark.parametrize("requested", [None, "cuda"])
def test_the_model_scorer_places_its_model_on_cuda_local_rank(monkeypatch, requested):
    import torch

    from gradebench.scorers import make_scorer

    _launched(monkeypatch, world=8, local=3)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)  # the device is checked against what is there
    scorer = make_scorer("hf-sequence-classifier", {"model": "unused", "device": requested})
    assert scorer.device == "cuda:3" and scorer.device_type == "cuda"
