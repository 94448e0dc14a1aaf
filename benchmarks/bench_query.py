"""`gradebench query` start-up over the committed records, against DuckDB on the same files.

Usage::

    python benchmarks/bench_query.py               # leaderboard/results, 5 runs of each
    python benchmarks/bench_query.py --repeat 9

Each run is a fresh process, as a user's command line is; all paths alternate within a run:

* ``gradebench query "SELECT count(*) AS n FROM results" --format csv``: interpreter start, the
  CLI's imports, listing the records, reading their benchmarks' manifests, defining the views
  (``leaderboard/views.sql``), locking the connection, the query;
* the same with ``FROM per_query`` (DuckDB reads every ``<id>.queries.parquet``);
* peer ``duckdb``: ``python -c`` importing duckdb and running the same two counts straight over
  the same files (``read_json_auto`` of the record JSONs, ``read_parquet`` of the per-query files);
* floors: ``python -c pass`` (interpreter start) and ``python -c "import gradebench.cli"`` (the
  CLI's imports, what every ``gradebench`` command pays before it starts).

Checks: every path counts the same number of records (the number of record files) and of
per-query rows. Writes ``benchmarks/results/query-startup.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _common as c

PEER = r"""
import json, sys, time, glob
t0 = time.perf_counter()
import duckdb
t1 = time.perf_counter()
root = sys.argv[1]
records = [f for f in sorted(glob.glob(root + "/*/*.json")) if not f.endswith(".policy.json")]
per_query = [f[:-5] + ".queries.parquet" for f in records]
con = duckdb.connect(":memory:")
n = con.execute(f"SELECT count(*) FROM read_json_auto({records!r})").fetchone()[0]
t2 = time.perf_counter()
rows = con.execute(f"SELECT count(*) FROM read_parquet({per_query!r})").fetchone()[0]
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "results_s": t2 - t1, "per_query_s": t3 - t2, "records": n, "rows": rows}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results-dir", type=Path, default=c.REPO / "leaderboard" / "results")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default="query-startup.json")
    args = parser.parse_args()
    results = c.header("gradebench query start-up")
    n_files = len([p for p in args.results_dir.glob("*/*.json") if not p.name.endswith(".policy.json")])
    q = ["-m", "gradebench", "query", "--results-dir", str(args.results_dir), "--format", "csv"]
    names = ("gradebench query: results", "gradebench query: per_query", "duckdb (both counts)",
             "python -c pass", "import gradebench.cli")
    runs: dict[str, list[dict]] = {n: [] for n in names}
    counts: dict[str, tuple[int, ...]] = {}
    for _ in range(args.repeat):
        r = c.command([*q, "SELECT count(*) AS n FROM results"])
        counts["gradebench records"] = (int(r["stdout"].split()[1]),)
        runs[names[0]].append(r)
        r = c.command([*q, "SELECT count(*) AS n FROM per_query"])
        counts["gradebench rows"] = (int(r["stdout"].split()[1]),)
        runs[names[1]].append(r)
        p = c.child(PEER, str(args.results_dir))
        counts["duckdb"] = (p["records"], p["rows"])
        runs[names[2]].append(p)
        runs[names[3]].append(c.command(["-c", "pass"]))
        runs[names[4]].append(c.command(["-c", "import gradebench.cli"]))
        if counts["gradebench records"][0] != n_files or counts["duckdb"][0] != n_files:
            raise SystemExit(f"records counted: gradebench {counts['gradebench records'][0]}, duckdb "
                             f"{counts['duckdb'][0]}; record files: {n_files}")
        if counts["gradebench rows"][0] != counts["duckdb"][1]:
            raise SystemExit(f"per-query rows: gradebench {counts['gradebench rows'][0]}, duckdb {counts['duckdb'][1]}")
    out = {n: c.summary(rs) for n, rs in runs.items()}
    out["duckdb (both counts)"].update(c.summary(runs["duckdb (both counts)"], ("import_s", "results_s", "per_query_s")))
    base = out[names[0]]["wall_s"]
    for n in out:
        out[n]["wall_vs_gradebench_results"] = c.ratio(out[n]["wall_s"], base)
    results.update(repeat=args.repeat, results_dir=str(args.results_dir), records=n_files,
                   per_query_rows=counts["duckdb"][1], paths=out)
    print(f"{n_files} records, {counts['duckdb'][1]:,} per-query rows (both paths counted the same)")
    print(f"{'path':<30} {'wall_s':>8} {'cpu_s':>8} {'vs query':>9}")
    for n, v in out.items():
        print(f"{n:<30} {v['wall_s']:>8.3f} {v['cpu_s']:>8.3f} {v['wall_vs_gradebench_results']:>8.2f}x")
    c.write(args.out, results)
    print(json.dumps({"cli_import_share_of_query": c.ratio(out[names[4]]["cpu_s"], out[names[0]]["cpu_s"])}))


if __name__ == "__main__":
    main()
