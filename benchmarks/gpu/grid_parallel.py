"""Run experiment grids as many concurrent one-cell sweeps on one machine, within a deadline.

Usage::

    python benchmarks/gpu/grid_parallel.py GRID.yaml [GRID.yaml ...] --workers 8 \\
        --results-dir DIR --runs-dir DIR --start-by 300 --stop-at 420

A small training run leaves a GPU mostly idle (a step is bound by the Python that launches its
kernels), so several runs share one GPU well. Each grid is split into its cells (one benchmark,
scorer, loss and seed each; ``--seeds`` or ``--cells`` keep some of them, ``--list`` prints
them), written as one-cell experiment files beside ``--runs-dir``; each cell is an ordinary
``gradebench sweep`` of its file, so its run folder, record id and record are exactly those of
the whole grid's sweep (a cell whose record exists is skipped by the sweep itself). Cells are
taken in order of seed (every cell of the first seed before any of the second), then as the
grids list them, by ``--workers`` processes; none starts after ``--start-by`` seconds, and any
still running at ``--stop-at`` is stopped (its record is not written; running the same command
again continues it). Prints one line per cell and a JSON summary last.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml


def cells(grid: Path) -> list[dict]:
    exp = yaml.safe_load(grid.read_text(encoding="utf-8"))
    out = []
    for seed in exp.get("seeds", [0]):
        for bench in exp["benchmarks"]:
            for scorer in exp["scorers"]:
                for loss in exp.get("losses") or [None]:
                    one = {**exp, "benchmarks": [bench], "scorers": [scorer], "seeds": [seed]}
                    one["losses"] = [] if loss is None else [loss]
                    tag = f"{Path(bench.get('path') or bench.get('recipe')).parts[-2]}-{scorer['name']}-{loss}-{seed}"
                    one["name"] = f"{exp['name']}.{tag}"
                    out.append({"seed_rank": exp.get("seeds", [0]).index(seed), "tag": tag, "experiment": one})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grids", type=Path, nargs="+")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--results-dir", type=Path, required=True)
    ap.add_argument("--runs-dir", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads of each sweep")
    ap.add_argument("--start-by", type=float, default=float("inf"), help="seconds: start no cell after this")
    ap.add_argument("--stop-at", type=float, default=float("inf"), help="seconds: stop running cells then")
    ap.add_argument("--seeds", type=int, nargs="+", default=None,
                    help="only the cells of these seeds (default: every seed of each grid)")
    ap.add_argument("--cells", nargs="+", default=None,
                    help="only these cells, by the tags --list prints (default: every cell)")
    ap.add_argument("--list", action="store_true", help="print the cells that would run, and run none")
    args = ap.parse_args()

    todo = []
    for i, grid in enumerate(args.grids):
        for j, c in enumerate(cells(grid)):
            todo.append((c["seed_rank"], i, j, c))
    todo = [c for *_, c in sorted(todo, key=lambda t: t[:3])]
    if args.cells is not None:  # checked against every cell of the grids, before --seeds keeps some
        unknown = sorted(set(args.cells) - {c["tag"] for c in todo})
        if unknown:
            raise SystemExit(f"grid_parallel.py: no such cell: {', '.join(unknown)} (see --list)")
        todo = [c for c in todo if c["tag"] in args.cells]
    if args.seeds is not None:
        todo = [c for c in todo if c["experiment"]["seeds"][0] in args.seeds]
    if args.list:
        print("\n".join(c["tag"] for c in todo))
        return
    cell_dir = args.runs_dir / "_cells"
    cell_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    running: dict[str, tuple[subprocess.Popen, float, Path]] = {}
    done: list[dict] = []
    queue = list(todo)
    print(f"{len(queue)} cells, {args.workers} workers", flush=True)
    while queue or running:
        now = time.perf_counter() - t0
        while queue and len(running) < args.workers and now < args.start_by:
            c = queue.pop(0)
            path = cell_dir / f"{c['tag']}.yaml"
            path.write_text(yaml.safe_dump(c["experiment"], sort_keys=False), encoding="utf-8")
            log = cell_dir / f"{c['tag']}.log"
            cmd = [sys.executable, "-m", "gradebench", "sweep", str(path), "--results-dir", str(args.results_dir),
                   "--runs-dir", str(args.runs_dir), "--threads", str(args.threads), "--json"]
            with open(log, "w", encoding="utf-8") as f:
                proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
            running[c["tag"]] = (proc, now, log)
        if not running and (not queue or now >= args.start_by):
            break
        time.sleep(1.0)
        now = time.perf_counter() - t0
        stopped = set()
        if now >= args.stop_at and running:  # every running cell at once: SIGTERM, 10 s, then SIGKILL
            for proc, _, _ in running.values():
                os.killpg(proc.pid, signal.SIGTERM)
            deadline = time.perf_counter() + 10
            while time.perf_counter() < deadline and any(p.poll() is None for p, _, _ in running.values()):
                time.sleep(0.2)
            for proc, _, _ in running.values():
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            stopped = set(running)
        for tag, (proc, started, log) in list(running.items()):
            rc = proc.poll()
            if tag in stopped:
                rc = f"stopped ({rc})"
            if rc is None:
                continue
            del running[tag]
            tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:] if log.exists() else []
            done.append({"cell": tag, "rc": rc, "s": round(now - started, 1)})
            print(f"{now:7.1f}s {tag}: rc {rc} in {now - started:.1f} s {'' if rc == 0 else tail}", flush=True)
    left = [c["tag"] for c in queue]
    print(json.dumps({"finished": [d for d in done if d["rc"] == 0], "failed": [d for d in done if d["rc"] != 0],
                      "not_started": left, "wall_s": round(time.perf_counter() - t0, 1)}))


if __name__ == "__main__":
    main()
