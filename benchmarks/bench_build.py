"""Build throughput and memory: `gradebench build esnli` end to end, as a user runs it.

1. The real e-SNLI dev split (../shared/data/esnli/eSNLI, 9,842 pairs): wall time of the
   whole command, interpreter start included (target: < 5 s).
2. The same split replicated to 500,000 pairs (distinct source ids, so distinct query ids):
   candidates/s with the Parquet files written (target: >= 100,000/s) and peak PSS of the
   whole process tree, workers included (target: < 2 GB).

Usage: python benchmarks/bench_build.py [--instances 500000] [--data ../shared/data/esnli/eSNLI]
Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FILES = ["s1", "s2", "labels", "preproc1_expl_1", "preproc1_expl_2", "preproc1_expl_3"]


def replicate(src: Path, dest: Path, n: int) -> None:
    """Write the dev files repeated until ``n`` lines (line i of every file stays aligned)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        lines = (src / f"{name}.dev").read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        out = (lines * (n // len(lines) + 1))[:n]
        (dest / f"{name}.dev").write_text("\n".join(out), encoding="utf-8")


def _tree_rss_kib(pid: int) -> int:
    """Sum of PSS over ``pid`` and all its descendants (Linux /proc).

    PSS (proportional set size) splits pages shared copy-on-write between the parent and its
    forked workers, so the sum is the memory the build really holds (a sum of RSS would count
    shared pages once per process).
    """
    total = 0
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            pass
        stack.extend(children.get(p, []))
    return total


def run_build(source: Path, out: Path) -> tuple[float, int, dict]:
    cmd = [sys.executable, "-m", "gradebench", "build", "esnli", "--source", str(source), "--out", str(out), "--json"]
    peak = [0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kib(proc.pid))
            time.sleep(0.05)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    t.join()
    if proc.returncode != 0:
        raise SystemExit(f"build failed ({proc.returncode}): {stderr.decode()}")
    return wall, peak[0], json.loads(stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=500_000)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "esnli" / "eSNLI")
    args = ap.parse_args()
    if not args.data.is_dir():
        raise SystemExit(f"real data not found at {args.data}")
    work = Path(tempfile.mkdtemp(prefix="gradebench-bench-"))
    try:
        rows = []
        wall, rss, res = run_build(args.data, work / "out-dev")
        cands = sum(s["candidates"] for s in res["splits"].values())
        rows.append(("real dev split", cands, wall, rss))
        big = work / "big"
        replicate(args.data, big, args.instances)
        wall, rss, res = run_build(big, work / "out-big")
        cands = sum(s["candidates"] for s in res["splits"].values())
        rows.append((f"dev x{args.instances / 9842:.1f} ({args.instances:,} pairs)", cands, wall, rss))
        print(f"{'input':<34} {'candidates':>11} {'wall s':>8} {'cand/s':>10} {'peak PSS MB':>12}")
        for name, c, w, r in rows:
            print(f"{name:<34} {c:>11,} {w:>8.2f} {c / w:>10,.0f} {r / 1024:>12.0f}")
        print("targets: real dev < 5 s wall; replicated >= 100,000 cand/s and < 2048 MB peak PSS (2 cores)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
