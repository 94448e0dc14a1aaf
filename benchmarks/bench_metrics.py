"""Benchmark gradebench.metrics: the full suite at scale, and against ranx and pytrec_eval.

Usage::

    python benchmarks/bench_metrics.py            # 1,000,000 x 5 and 100,000 x 50
    python benchmarks/bench_metrics.py --quick    # 100,000 x 5 and 10,000 x 50 (smoke run)

What is timed (wall clock, best of ``--repeat`` runs, after one warm-up run):

* **suite**: one ``evaluate()`` call with NDCG@1/3/5 (exp2 and linear gain), MAP, MRR,
  Kendall tau-b, Spearman, the corpus separation ratio, its per-query mean and pairwise
  agreement, all with the default ``"average"`` tie policy (input checks included);
* **per metric**: each metric alone in its own ``evaluate()`` call (shared work such as
  the sort is then paid again, so these do not add up to the suite);
* **peers** on the metrics they share with gradebench, same data:
  pytrec_eval (``ndcg_cut`` 1/3/5 with linear gain, ``map``, ``recip_rank``; trec tie rule)
  and ranx (``ndcg``/``ndcg_burges`` @1/3/5, ``map``, ``mrr``; numba, JIT compiled by a
  warm-up call first). Peers run on a subset of the queries and are compared per query
  (``us/query``); their input conversion from arrays to dicts/Qrels/Run is *not* counted
  in the "evaluation only" rows (only ``RelevanceEvaluator(...)`` + ``evaluate`` for
  pytrec_eval, ``ranx.evaluate`` for ranx), which favours the peers; the "+ conversion"
  rows add building their inputs from the same arrays gradebench takes. Before timing,
  the peers' per-query values are checked against gradebench's on the subset (to 1e-9),
  so the comparison is like for like.

Scores are standard normal (no ties), labels integer grades 0..4 (five tiers).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from collections.abc import Callable

import numpy as np

from gradebench import metrics as gm
from gradebench.metrics import evaluate


def make_data(n: int, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((n, size))
    labels = rng.integers(0, 5, (n, size)).astype(np.float64)
    return scores, labels


def suite() -> list:
    specs = []
    for gain in ("exp2", "linear"):
        specs += [gm.NDCG(k=k, gain=gain) for k in (1, 3, 5)]
    return specs + [
        gm.MAP(),
        gm.MRR(),
        gm.KendallTau(),
        gm.Spearman(),
        gm.SeparationRatio(),
        gm.QuerySeparationRatio(),
        gm.PairwiseAgreement(),
    ]


def best_time(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up (allocations, JIT for ranx)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


# ------------------------------------------------------------------------------ peers


def to_dicts(scores: np.ndarray, labels: np.ndarray) -> tuple[dict, dict]:
    n, size = scores.shape
    docs = [f"d{i:03d}" for i in range(size)]
    qrels, run = {}, {}
    for q in range(n):
        qid = f"q{q:07d}"
        qrels[qid] = dict(zip(docs, labels[q].astype(int).tolist()))
        run[qid] = dict(zip(docs, scores[q].tolist()))
    return qrels, run


def trec_specs() -> tuple[list, dict[str, str]]:
    specs = [gm.NDCG(k=k, gain="linear", ties="trec") for k in (1, 3, 5)]
    specs += [gm.MAP(ties="trec"), gm.MRR(ties="trec")]
    names = {"ndcg_cut_1": specs[0].name, "ndcg_cut_3": specs[1].name,
             "ndcg_cut_5": specs[2].name, "map": specs[3].name, "recip_rank": specs[4].name}
    return specs, names


def ranx_specs() -> tuple[list, dict[str, str]]:
    specs, names = [], {}
    for k in (1, 3, 5):
        for peer, gain in (("ndcg", "linear"), ("ndcg_burges", "exp2")):
            spec = gm.NDCG(k=k, gain=gain)
            specs.append(spec)
            names[f"{peer}@{k}"] = spec.name
    specs += [gm.MAP(), gm.MRR()]
    names.update({"map": specs[-2].name, "mrr": specs[-1].name})
    return specs, names


def check_equal(ours: dict[str, np.ndarray], peer: dict[str, np.ndarray], names: dict[str, str]) -> None:
    for peer_name, our_name in names.items():
        diff = np.max(np.abs(np.asarray(peer[peer_name]) - ours[our_name]))
        if not diff <= 1e-9:
            raise SystemExit(f"mismatch: {our_name} vs peer {peer_name}: max |diff| = {diff}")


def time_pytrec(scores, labels, repeat) -> tuple[float, float] | None:
    try:
        import pytrec_eval
    except ImportError:
        return None
    specs, names = trec_specs()
    qrels, run = to_dicts(scores, labels)
    measures = {"ndcg_cut.1,3,5", "map", "recip_rank"}

    def go():
        return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)

    res = go()
    qids = sorted(res)
    peer = {m: np.array([res[q][m] for q in qids]) for m in names}
    check_equal(evaluate(scores, labels, specs).per_query, peer, names)

    def with_conversion():
        q, r = to_dicts(scores, labels)
        return pytrec_eval.RelevanceEvaluator(q, measures).evaluate(r)

    return best_time(go, repeat), best_time(with_conversion, repeat)


def time_ranx(scores, labels, repeat) -> tuple[float, float] | None:
    try:
        import ranx
    except ImportError:
        return None
    specs, names = ranx_specs()
    qrels_d, run_d = to_dicts(scores, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qrels, run = ranx.Qrels.from_dict(qrels_d), ranx.Run.from_dict(run_d)
        metrics = list(names)

        def go():
            return ranx.evaluate(qrels, run, metrics, return_mean=False, make_comparable=False)

        peer = go()  # JIT compile (or load the numba cache) + values for the check
        check_equal(evaluate(scores, labels, specs).per_query, peer, names)

        def with_conversion():
            q, r = to_dicts(scores, labels)
            q, r = ranx.Qrels.from_dict(q), ranx.Run.from_dict(r)
            return ranx.evaluate(q, r, metrics, return_mean=False, make_comparable=False)

        return best_time(go, repeat), best_time(with_conversion, repeat)


# ----------------------------------------------------------------------------- report


def row(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))


def print_table(title: str, rows: list[list[str]]) -> None:
    header = ["case", "queries", "seconds", "us/query", "speedup"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    print(row(header, widths))
    print(row(["-" * w for w in widths], widths))
    for r in rows:
        print(row(r, widths))


def fmt(case: str, n: int, seconds: float, speedup: str = "") -> list[str]:
    return [case, f"{n:,}", f"{seconds:.3f}", f"{seconds / n * 1e6:.3f}", speedup]


def bench_shape(n: int, size: int, n_peer: int, repeat: int, per_metric: bool) -> None:
    scores, labels = make_data(n, size, seed=n + size)
    specs = suite()
    t_suite = best_time(lambda: evaluate(scores, labels, specs), repeat)
    rows = [fmt(f"suite ({len(specs)} metrics)", n, t_suite)]
    if per_metric:
        for spec in specs:
            rows.append(fmt(f"  {spec.name}", n, best_time(lambda s=spec: evaluate(scores, labels, [s]), repeat)))
    print_table(f"gradebench.metrics, {n:,} queries x {size} candidates (best of {repeat})", rows)

    sub_s, sub_y = scores[:n_peer], labels[:n_peer]
    peer_rows, notes = [], []
    for label, spec_fn, timer in (
        ("pytrec_eval", trec_specs, time_pytrec),
        ("ranx", ranx_specs, time_ranx),
    ):
        shared, names = spec_fn()
        ours = best_time(lambda sh=shared: evaluate(scores, labels, sh), repeat)
        ours_us = ours / n
        peer_rows.append(fmt(f"gradebench, {label}'s metrics", n, ours))
        notes.append(f"  {label}: {', '.join(names)}  =  gradebench {', '.join(s.name for s in shared)}")
        timed = timer(sub_s, sub_y, repeat)
        if timed is None:
            peer_rows.append([f"{label} (not installed)", "-", "-", "-", "-"])
            continue
        for what, t_peer in zip(("evaluation only", "+ array->dict conversion"), timed):
            speedup = (t_peer / n_peer) / ours_us
            peer_rows.append(fmt(f"{label}, {what}", n_peer, t_peer, f"{speedup:.1f}x"))
    print_table(
        f"shared metrics vs peers, {size} candidates (speedup = peer us/query / gradebench us/query)",
        peer_rows,
    )
    print("\n".join(notes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer queries")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (best is kept)")
    parser.add_argument("--no-per-metric", action="store_true", help="skip the per-metric rows")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPU cores, {platform.machine()}")
    bench_shape(1_000_000 // scale, 5, 20_000 // scale, args.repeat, not args.no_per_metric)
    bench_shape(100_000 // scale, 50, 2_000 // scale, args.repeat, not args.no_per_metric)


if __name__ == "__main__":
    main()
