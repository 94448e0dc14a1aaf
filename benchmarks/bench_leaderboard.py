"""`gradebench leaderboard` over the committed records, against the code before it was made fast.

Usage::

    python benchmarks/bench_leaderboard.py                 # 5 runs of each, leaderboard/results
    python benchmarks/bench_leaderboard.py --repeat 3 --baseline d4dea52

Each run is the whole command a user types, in a fresh process (interpreter start and imports
included): ``gradebench leaderboard --results-dir leaderboard/results --format md``. Timed, in the
same run and alternating:

* ``gradebench``: this checkout;
* ``before`` (peer): the same command from ``--baseline`` (default ``d4dea52``, the last commit
  before the leaderboard was made fast: per-query files through pandas, a bootstrap drawn per
  metric, sign flips materialised as ``[10,000, n_queries]`` arrays), extracted with ``git archive``;
* ``read floor``: what no leaderboard can skip: ``json.load`` of every record and
  ``pyarrow.parquet.read_table`` of every per-query file (no statistics, no rendering).

Checks: both leaderboards are byte-identical to ``leaderboard/LEADERBOARD.md`` (and to each
other), and the number of records the board shows equals the number of record files read.
Writes ``benchmarks/results/leaderboard.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from pathlib import Path

import _common as c

FLOOR = r"""
import json, sys, time, glob
t0 = time.perf_counter()
import pyarrow.parquet as pq
t1 = time.perf_counter()
n = rows = 0
for f in sorted(glob.glob(sys.argv[1] + "/*/*.json")):
    if not f.endswith(".policy.json"):
        json.load(open(f, encoding="utf-8"))
        rows += pq.read_table(f[:-5] + ".queries.parquet").num_rows
        n += 1
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "read_s": t2 - t1, "records": n, "per_query_rows": rows}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results-dir", type=Path, default=c.REPO / "leaderboard" / "results")
    parser.add_argument("--baseline", default="d4dea52", help="git revision of the 'before' peer")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default="leaderboard.json")
    args = parser.parse_args()
    results = c.header("gradebench leaderboard over the committed records")
    files = sorted(p for p in args.results_dir.glob("*/*.json") if not p.name.endswith(".policy.json"))
    expected = (c.REPO / "leaderboard" / "LEADERBOARD.md").read_text(encoding="utf-8")
    argv = ["-m", "gradebench", "leaderboard", "--results-dir", str(args.results_dir), "--format", "md"]
    with tempfile.TemporaryDirectory(prefix="gb-lb-") as tmp:
        subprocess.run(f"git -C {c.REPO} archive {args.baseline} gradebench | tar -x -C {tmp}", shell=True, check=True)
        runs: dict[str, list[dict]] = {"gradebench": [], f"before ({args.baseline})": [], "read floor": []}
        for _ in range(args.repeat):
            ours = c.command(argv)
            before = c.command(["-c", f"import sys; sys.path.insert(0, {tmp!r}); from gradebench.cli import main; "
                                "sys.argv[0] = 'gradebench'; sys.exit(main())", *argv[2:]])
            floor = c.child(FLOOR, str(args.results_dir))
            for name, r in (("gradebench", ours), (f"before ({args.baseline})", before)):
                if r["stdout"] != expected:
                    raise SystemExit(f"{name}: the leaderboard differs from leaderboard/LEADERBOARD.md")
            runs["gradebench"].append(ours)
            runs[f"before ({args.baseline})"].append(before)
            runs["read floor"].append(floor)
    shown = set(re.findall(r"\b[0-9a-f]{12}\b", expected))
    n_records = len(files)
    if runs["read floor"][0]["records"] != n_records:
        raise SystemExit(f"the floor read {runs['read floor'][0]['records']} records, {n_records} exist")
    from gradebench.experiments.leaderboard import leaderboard  # the record count the board is built from

    board = leaderboard(args.results_dir)
    used = sum(len(r.record_ids) for b in board.boards for r in b.rows)
    listed = {rid for b in board.boards for r in b.rows for rid in r.record_ids}
    out = {name: c.summary(rs) for name, rs in runs.items()}
    out["read floor"].update(c.summary(runs["read floor"], ("import_s", "read_s")))
    ours = out["gradebench"]["wall_s"]
    for name in out:
        out[name]["wall_vs_gradebench"] = c.ratio(out[name]["wall_s"], ours)
    results.update(
        repeat=args.repeat, results_dir=str(args.results_dir), record_files=n_records, records_on_board=used,
        distinct_records_on_board=len(listed), identical_to_LEADERBOARD_md=True, baseline=args.baseline,
        short_ids_in_markdown=len(shown), paths=out,
        speedup_vs_before=c.ratio(out[f"before ({args.baseline})"]["wall_s"], ours),
        cpu_speedup_vs_before=c.ratio(out[f"before ({args.baseline})"]["cpu_s"], out["gradebench"]["cpu_s"]))
    print(f"{n_records} record files; the board is built from {used} of them (one per seed of each system; "
          f"{len(listed)} distinct); output byte-identical to leaderboard/LEADERBOARD.md in every run")
    print(f"{'path':<22} {'wall_s':>8} {'cpu_s':>8} {'vs ours':>8}")
    for name, v in out.items():
        print(f"{name:<22} {v['wall_s']:>8.3f} {v['cpu_s']:>8.3f} {v['wall_vs_gradebench']:>7.2f}x")
    c.write(args.out, results)


if __name__ == "__main__":
    main()
