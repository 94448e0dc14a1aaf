"""Two-process CPU DDP (gloo) through torchrun: the engine trains unchanged, replicas agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.training._util import TINY

SCRIPT = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    from gradebench.benchmark.lists import open_benchmark
    from gradebench.scorers import TrainOptions, make_scorer

    bench_path, config, out = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3])
    bench = open_benchmark(bench_path)
    results = {}
    for name in ("hashed-mlp", "pair-mlp"):
        scorer = make_scorer(name, config, seed=4)
        history = scorer.fit(bench.lists("train"), bench.lists("validation"),
                             TrainOptions(epochs=2, batch_queries=8, lr=1e-2, seed=4), run_dir=out / name)
        results[name] = {"history": history, "scores": scorer.score(bench.lists("test")).tolist()}
    (out / f"rank{os.environ['RANK']}.json").write_text(json.dumps(results))
""")


@pytest.mark.slow
def test_two_process_ddp_on_cpu(demo_benchmark, tmp_path):
    script = tmp_path / "train_ddp.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script),
           str(demo_benchmark), json.dumps(TINY), str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    rank0 = json.loads((tmp_path / "rank0.json").read_text())
    rank1 = json.loads((tmp_path / "rank1.json").read_text())
    for name in ("hashed-mlp", "pair-mlp"):
        # 38 queries / (8 per process * 2 processes) = 3 steps per epoch
        assert [r["step"] for r in rank0[name]["history"]] == [3, 6]
        assert rank0[name]["history"] == rank1[name]["history"]
        assert rank0[name]["scores"] == rank1[name]["scores"]
        assert len(list((tmp_path / name / "checkpoints").glob("checkpoint-*"))) == 2


@pytest.mark.slow
def test_accelerate_launch_runs_gradebench_train_on_two_processes(demo_benchmark, tmp_path):
    """``accelerate launch ... -m gradebench train`` trains with 2 processes; rank 0 writes the run.

    accelerate 1.15 starts a single process for ``--cpu --num_processes 2``; on a machine
    without GPUs ``--multi_gpu`` launches the processes and torch.distributed uses gloo on the CPU.
    """
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ACCELERATE_USE_CPU": "true"}
    sets = [f"--set={k}={v}" for k, v in TINY.items()]
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "gradebench", "train",
           "--benchmark", str(demo_benchmark), "--scorer", "hashed-mlp", "--loss", "listnet", "--epochs", "2",
           "--batch-queries", "8", "--out", str(out), *sets, "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    info = json.loads((out / "run.json").read_text())
    # 38 queries / (8 per process * 2 processes) = 3 optimizer steps per epoch: both processes took part
    assert [h["step"] for h in info["history"]] == [3, 6]
    assert (out / "model").is_dir()
