"""Issue 28 item 6: two sweeps started together on one grid run each cell once between them.

Both processes wait at a barrier, then sweep the same grid (untrained and trained cells); each
evaluation is logged (pid, record id) and made slow enough that the two always overlap. Before
the fix, a cell whose record was missing when both looked was evaluated by both (each process
evaluated most of the grid); now a cell one process runs is left to it, and the grid ends
complete with every record evaluated exactly once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

from gradebench.experiments.store import list_records
from gradebench.experiments.sweep import IN_USE, sweep
from tests.conftest import REPO

GRID = """\
name: twice
benchmarks:
  - path: {bench}
scorers:
  - name: length
  - name: random
  - name: hashed-mlp
    config: {{dim: 1024, shared_dim: 256, embed_dim: 8, hidden: 16}}
losses: [listnet]
seeds: [0, 1, 2]
split: test
n_resamples: 20
train: {{epochs: 1, batch_queries: 8, lr: 0.01, patience: 10}}
"""

#: one sweep process: meet the other at the barrier, sweep with a logged, slowed evaluation
SWEEPER = """\
import json, os, sys, time
from pathlib import Path
import gradebench.experiments.sweep as sw
log, barrier, exp, res, runs = sys.argv[1:6]
real = sw.evaluate_scorer
def counted(*args, **kwargs):
    time.sleep(0.4)  # scoring a real model takes a while: both processes see the record missing
    record = real(*args, **kwargs)
    with open(log, "a") as f:
        f.write(f"{os.getpid()} {record.id}\\n")
    return record
sw.evaluate_scorer = counted
Path(barrier, str(os.getpid())).touch()
deadline = time.monotonic() + 120
while len(list(Path(barrier).iterdir())) < 2 and time.monotonic() < deadline:
    time.sleep(0.01)
print(json.dumps(sw.sweep(exp, results_dir=res, runs_dir=runs).to_dict()))
"""


def test_two_sweeps_on_one_grid_run_each_cell_once(demo_bench, tmp_path):
    exp = tmp_path / "exp.yaml"
    exp.write_text(GRID.format(bench=demo_bench))
    res, runs, log, barrier = tmp_path / "res", tmp_path / "runs", tmp_path / "evaluations.log", tmp_path / "barrier"
    barrier.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    argv = [sys.executable, "-c", SWEEPER, str(log), str(barrier), str(exp), str(res), str(runs)]
    procs = [subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    results = [json.loads(out) for out, _ in outs]
    n_records = len(results[0]["cells"])
    assert n_records == 9

    evaluated = Counter(line.split()[1] for line in log.read_text().splitlines())
    assert max(evaluated.values()) == 1, evaluated  # no record evaluated twice
    assert sum(evaluated.values()) == n_records
    assert sum(r["evaluated"] for r in results) == n_records
    assert {r.id for r in list_records(res)} == set(evaluated)  # the grid ends complete

    for r in results:  # each process accounts for every record: its own, the other's, or one still in use
        assert r["evaluated"] + r["skipped"] + r["in_use"] == n_records
        for cell in r["cells"]:
            assert cell["status"] != IN_USE or cell["pid"] in {p.pid for p in procs}
    assert min(r["in_use"] for r in results) == 0  # the one that ended last found the other's cells written
    assert not list(res.rglob("*.lock"))  # every cell lock let go and removed


SMALL = """\
name: small
benchmarks:
  - path: {bench}
scorers:
  - name: length
  - name: random
seeds: [0]
split: test
n_resamples: 20
"""


def test_a_cell_another_sweep_holds_is_left_to_it_and_named(demo_bench, tmp_path, cli):
    from gradebench.experiments.store import record_dir
    from gradebench.locks import FileLock

    exp = tmp_path / "exp.yaml"
    exp.write_text(SMALL.format(bench=demo_bench))
    res = tmp_path / "res"
    rid = sweep(exp, results_dir=tmp_path / "first", runs_dir=tmp_path / "runs").cells[0].record_id
    folder = record_dir(res, "demo")
    folder.mkdir(parents=True)
    held = FileLock.acquire(folder / f".{rid}.lock")  # the other sweep, running the length cell right now
    try:
        second = sweep(exp, results_dir=res, runs_dir=tmp_path / "runs")
        assert [(c.scorer, c.status) for c in second.cells] == [("length", IN_USE), ("random", "evaluated")]
        assert second.cells[0].pid == os.getpid() and f"in use by pid {os.getpid()}" in second.cells[0].note
        assert not list(folder.glob(f"{rid}*"))  # not evaluated
        code, _, err = cli("sweep", exp, "--results-dir", res, "--runs-dir", tmp_path / "runs")
        assert code == 3 and err == (f"gradebench: demo/length seed 0 is in use by pid {os.getpid()}: run the same "
                                     "command again when it ends\n")
    finally:
        held.release()
    third = sweep(exp, results_dir=res, runs_dir=tmp_path / "runs")
    assert [c.status for c in third.cells] == ["evaluated", "skipped"]
