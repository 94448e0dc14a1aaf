"""`gradebench eval` of a trained run, against the same evaluation done by hand with the usual tools.

Usage::

    python benchmarks/bench_eval.py                # e-SNLI dev, hashed-mlp trained 1 epoch, 5 runs each
    python benchmarks/bench_eval.py --repeat 3

Set-up (not timed): ``gradebench build esnli --resplit 80/10/10`` of the real e-SNLI dev release,
then ``gradebench train --scorer hashed-mlp --epochs 1`` on it.

Timed, each run in a fresh process, alternating:

* ``gradebench eval --run RUN --results-dir FRESH --json``: the whole command (interpreter start,
  imports, reading the test split, featurising and scoring, the 10-metric suite, 1,000-resample
  bootstrap CIs per metric, the separation figures, the record and its two Parquet files);
  the record's own ``timings`` give the phases;
* peer ``by hand``: the same trained model (``gradebench.load_run``) scores the same test lists
  (``open_benchmark(...).lists("test")``), then pytrec_eval computes NDCG@1/3/5, MAP and MRR
  (``RelevanceEvaluator``, its dict inputs built from the scores; ranx would add a numba
  compilation to every fresh process: 112 s wall in a trial at load 10), SciPy's ``stats.bootstrap`` gives a
  1,000-resample percentile CI of each per-query metric, and pandas writes the predictions to
  Parquet: the same kind of work, with fewer figures than the record holds (no Kendall/Spearman,
  no separation figures, no tier statistics).

Checks: the record scored every test candidate (its predictions file has one row per candidate of
the split) and the peer scored the same number. Writes ``benchmarks/results/eval-run.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import _common as c

PEER = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np, pandas as pd, pytrec_eval, scipy.stats
from gradebench import load_run
from gradebench.benchmark.lists import open_benchmark
t1 = time.perf_counter()
run, bench, out = sys.argv[1], sys.argv[2], sys.argv[3]
scorer, info = load_run(run)
lists = open_benchmark(bench).lists("test")
t2 = time.perf_counter()
scores = scorer.score(lists)
t3 = time.perf_counter()
qrels, runs = {}, {}
for i, q in enumerate(lists.query_ids):
    m = lists.mask[i]
    qrels[q] = {c: int(r) for c, r in zip(lists.candidate_ids[i][m], lists.relevance[i][m])}
    runs[q] = {c: float(s) for c, s in zip(lists.candidate_ids[i][m], scores[i][m])}
names = ["ndcg_cut_1", "ndcg_cut_3", "ndcg_cut_5", "map", "recip_rank"]
measured = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.1,3,5", "map", "recip_rank"}).evaluate(runs)
per_query = {name: [measured[q][name] for q in lists.query_ids] for name in names}
t4 = time.perf_counter()
cis = {}
for name in names:
    v = np.asarray(per_query[name], dtype=np.float64)
    r = scipy.stats.bootstrap((v,), np.mean, n_resamples=1000, method="percentile", random_state=0)
    cis[name] = [float(v.mean()), float(r.confidence_interval.low), float(r.confidence_interval.high)]
t5 = time.perf_counter()
m = lists.mask
pd.DataFrame({"query_id": np.repeat(lists.query_ids, m.sum(1)), "candidate_id": lists.candidate_ids[m],
              "prediction": scores[m]}).to_parquet(out)
t6 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "scoring_s": t3 - t2, "metrics_s": t4 - t3,
                  "bootstrap_s": t5 - t4, "write_s": t6 - t5, "total_s": t6 - t1,
                  "candidates": int(m.sum()), "queries": int(lists.n_queries), "ndcg@5": cis["ndcg_cut_5"]}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default="eval-run.json")
    args = parser.parse_args()
    results = c.header("gradebench eval of a trained run")
    with tempfile.TemporaryDirectory(prefix="gb-eval-") as work:
        work = Path(work)
        built = c.built_esnli(None, work / "dev")
        bench = built["path"]
        want = built["splits"]["test"]
        run = work / "run"
        c.command(["-m", "gradebench", "train", "--benchmark", bench, "--scorer", "hashed-mlp", "--out", str(run),
                   "--epochs", "1", "--json"])
        print(f"# esnli test split: {want['queries']:,} queries, {want['candidates']:,} candidates; "
              f"hashed-mlp trained 1 epoch on train")
        ours, peers = [], []
        for i in range(args.repeat):
            res = work / f"results-{i}"
            r = c.command(["-m", "gradebench", "eval", "--run", str(run), "--results-dir", str(res), "--json"])
            record = json.loads(r["stdout"])
            import pyarrow.parquet as pq

            pred = next(res.glob("*/*.predictions.parquet"))
            rows = pq.read_metadata(pred).num_rows
            if rows != want["candidates"] or record["benchmark"]["n_queries"] != want["queries"]:
                raise SystemExit(f"eval scored {rows} candidates of {record['benchmark']['n_queries']} queries, "
                                 f"the split has {want['candidates']} of {want['queries']}")
            r.update({f"record_{k}": v for k, v in record["timings"].items() if isinstance(v, (int, float))})
            r["metrics"] = len(record["metrics"])
            ours.append(r)
            p = c.child(PEER, str(run), bench, str(work / f"peer-{i}.parquet"))
            if p["candidates"] != want["candidates"] or p["queries"] != want["queries"]:
                raise SystemExit(f"the peer scored {p['candidates']} candidates, the split has {want['candidates']}")
            peers.append(p)
    for r in ours:  # the record's total minus its scoring: reading, metrics, CIs, separation, writing
        r["record_after_scoring_s"] = r["record_total_s"] - r["record_scoring_s"]
    for p in peers:  # the peer's work on the scores: metrics, CIs, writing
        p["after_scoring_s"] = p["metrics_s"] + p["bootstrap_s"] + p["write_s"]
    keys = ("wall_s", "cpu_s", "record_scoring_s", "record_metrics_s", "record_bootstrap_s", "record_total_s",
            "record_after_scoring_s")
    out = {"gradebench eval": {**c.summary(ours, keys), "metrics_in_record": ours[0]["metrics"]},
           "by hand (load_run + pytrec_eval + scipy + pandas)": c.summary(
               peers, ("wall_s", "cpu_s", "import_s", "load_s", "scoring_s", "metrics_s", "bootstrap_s", "write_s",
                       "total_s", "after_scoring_s"))}
    g, p = out["gradebench eval"], out["by hand (load_run + pytrec_eval + scipy + pandas)"]
    results.update(repeat=args.repeat, queries=want["queries"], candidates=want["candidates"], paths=out,
                   wall_vs_peer=c.ratio(g["wall_s"], p["wall_s"]),
                   scoring_vs_peer=c.ratio(g["record_scoring_s"], p["scoring_s"]))
    print(f"{'path':<52} {'wall_s':>7} {'cpu_s':>7} {'scoring':>8} {'metrics':>8} {'bootstrap':>9}")
    print(f"{'gradebench eval (record timings)':<52} {g['wall_s']:>7.2f} {g['cpu_s']:>7.2f} "
          f"{g['record_scoring_s']:>8.3f} {g['record_metrics_s']:>8.3f} {g['record_bootstrap_s']:>9.3f}")
    print(f"{'by hand (load_run + pytrec_eval + scipy + pandas)':<52} {p['wall_s']:>7.2f} {p['cpu_s']:>7.2f} "
          f"{p['scoring_s']:>8.3f} {p['metrics_s']:>8.3f} {p['bootstrap_s']:>9.3f}")
    print(f"whole command: gradebench {results['wall_vs_peer']}x the peer's wall time; {g['metrics_in_record']} "
          f"metrics with CIs in the record vs 5 by hand")
    c.write(args.out, results)


if __name__ == "__main__":
    main()
