"""Reading a built benchmark into lists: gradebench's reader against ``datasets`` + pandas, same files.

Usage::

    python benchmarks/bench_load.py                      # e-SNLI dev and 100,000 distinct pairs
    python benchmarks/bench_load.py --pairs 0 --repeat 3  # e-SNLI dev only
    python benchmarks/bench_load.py --benchmark DIR       # an existing build

Builds ``esnli`` (``--resplit 80/10/10 --no-validity --no-validate``) from the real e-SNLI dev
release (``../shared/data/esnli/eSNLI``) and, with ``--pairs N``, from that release replicated to
N **distinct** pairs (copy ``k`` of each hypothesis suffixed `` [r<k>]``). Then, each in a fresh
process, every split of the build is read:

* ``gradebench lists``: ``open_benchmark(DIR)`` (manifest, sha256 of every data file, columns)
  and ``.lists(split)`` for every split: dense ``[n_queries, list_size]`` arrays;
* ``gradebench.load``: ``gradebench.load(DIR)``, the ``datasets.DatasetDict`` of the rows
  (one row per candidate; not grouped into lists). ``gradebench`` imports ``datasets`` only
  when ``load`` is called, so this path's ``read_s`` includes that import (about 2 s of CPU
  here): compare it with the peer on ``wall_s``/``cpu_s``, the whole process;
* peer ``datasets + pandas``: ``datasets.load_dataset("parquet", data_files={split: files})``,
  then per split ``to_pandas()`` and ``groupby("query_id", sort=False).agg(list)`` on the candidate
  ids, texts, grades and scores: one row of lists per query. Run with a fresh ``cache_dir``
  each time (what a first load costs: ``datasets`` converts the Parquet files to its Arrow cache)
  and again with that cache warm.

Each child reports its import time and the read; the script checks that every path read the same
number of queries and candidates as the build reported, and writes
``benchmarks/results/load-lists.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import _common as c

GRADEBENCH_LISTS = r"""
import json, sys, time
t0 = time.perf_counter()
from gradebench.benchmark.lists import open_benchmark
t1 = time.perf_counter()
bench = open_benchmark(sys.argv[1])
lists = {s: bench.lists(s) for s in bench.splits}
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "read_s": t2 - t1,
                  "queries": {s: int(l.n_queries) for s, l in lists.items()},
                  "candidates": {s: int(l.mask.sum()) for s, l in lists.items()}}))
"""

GRADEBENCH_LOAD = r"""
import json, sys, time
t0 = time.perf_counter()
import gradebench
t1 = time.perf_counter()
dd = gradebench.load(sys.argv[1])
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "read_s": t2 - t1,
                  "queries": {s: len(set(d["query_id"])) for s, d in dd.items()},
                  "candidates": {s: d.num_rows for s, d in dd.items()}}))
"""

PEER = r"""
import json, sys, time
t0 = time.perf_counter()
import datasets, pandas
t1 = time.perf_counter()
files = json.loads(sys.argv[1])
dd = datasets.load_dataset("parquet", data_files=files, cache_dir=sys.argv[2])
lists = {}
for split, ds in dd.items():
    df = ds.to_pandas()
    lists[split] = df.groupby("query_id", sort=False).agg(
        {"query": "first", "candidate_id": list, "candidate": list, "relevance": list, "score": list})
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "read_s": t2 - t1,
                  "queries": {s: len(l) for s, l in lists.items()},
                  "candidates": {s: int(l["candidate_id"].map(len).sum()) for s, l in lists.items()}}))
"""


def measure(path: Path, expected: dict, repeat: int) -> dict:
    files = json.dumps({s: [str(path / f) for f in v] for s, v in expected["files"].items()})
    want_q = {s: v["queries"] for s, v in expected["splits"].items()}
    want_c = {s: v["candidates"] for s, v in expected["splits"].items()}
    runs: dict[str, list[dict]] = {"gradebench lists": [], "gradebench.load (rows)": [],
                                   "datasets+pandas (fresh cache)": [], "datasets+pandas (warm cache)": []}
    with tempfile.TemporaryDirectory(prefix="gb-load-") as tmp:
        for i in range(repeat):  # alternate, so the machine's load weighs on every path alike
            runs["gradebench lists"].append(c.child(GRADEBENCH_LISTS, str(path)))
            runs["gradebench.load (rows)"].append(c.child(GRADEBENCH_LOAD, str(path)))
            fresh = str(Path(tmp) / f"fresh-{i}")
            runs["datasets+pandas (fresh cache)"].append(c.child(PEER, files, fresh))
            runs["datasets+pandas (warm cache)"].append(c.child(PEER, files, fresh))
    checks = {}
    for name, rs in runs.items():
        for r in rs:
            if r["queries"] != want_q or r["candidates"] != want_c:
                raise SystemExit(f"{name} read {r['queries']} queries / {r['candidates']} candidates, "
                                 f"the build wrote {want_q} / {want_c}")
        checks[name] = {"queries": sum(rs[0]["queries"].values()), "candidates": sum(rs[0]["candidates"].values())}
    out = {name: {**c.summary(rs, ("wall_s", "cpu_s", "import_s", "read_s")), **checks[name]}
           for name, rs in runs.items()}
    ours = out["gradebench lists"]["read_s"]
    for name in runs:
        out[name]["read_vs_gradebench_lists"] = c.ratio(out[name]["read_s"], ours)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=100_000, help="also a build of N distinct pairs (0: none)")
    parser.add_argument("--benchmark", type=Path, help="time this build only (its manifest gives the counts)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default="load-lists.json")
    args = parser.parse_args()
    results = c.header("read a built benchmark into lists")
    results.update(repeat=args.repeat, cases={})
    with tempfile.TemporaryDirectory(prefix="gb-load-build-") as work:
        cases: list[tuple[str, dict]] = []
        if args.benchmark:
            manifest = json.loads((args.benchmark / "manifest.json").read_text())
            cases.append((str(args.benchmark), {"path": str(args.benchmark), "files": {
                s: v["files"] for s, v in manifest["splits"].items()}, "splits": manifest["splits"]}))
        else:
            cases.append(("e-SNLI dev (9,842 pairs)", c.built_esnli(None, Path(work) / "dev")))
            if args.pairs:
                cases.append((f"e-SNLI dev replicated to {args.pairs:,} distinct pairs",
                              c.built_esnli(args.pairs, Path(work) / "rep")))
        for label, built in cases:
            path = Path(built["path"])
            n_c = sum(v["candidates"] for v in built["splits"].values())
            n_q = sum(v["queries"] for v in built["splits"].values())
            print(f"\n## {label}: {n_q:,} queries, {n_c:,} candidates in {len(built['splits'])} splits")
            r = measure(path, built, args.repeat)
            print(f"{'path':<32} {'read_s':>8} {'import_s':>9} {'wall_s':>8} {'cpu_s':>7} {'vs ours':>8}")
            for name, v in r.items():
                print(f"{name:<32} {v['read_s']:>8.3f} {v['import_s']:>9.3f} {v['wall_s']:>8.3f} {v['cpu_s']:>7.3f} "
                      f"{v['read_vs_gradebench_lists']:>7.2f}x")
            print("(gradebench.load imports datasets inside its call: compare it on wall_s/cpu_s, not read_s)")
            results["cases"][label] = {"queries": n_q, "candidates": n_c, "paths": r,
                                       "note": "gradebench.load's read_s includes importing datasets (lazy); "
                                               "compare it with the peer on wall_s and cpu_s"}
    c.write(args.out, results)


if __name__ == "__main__":
    main()
