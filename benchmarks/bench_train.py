"""Benchmark the torch scorers' training: featurisation and one epoch over synthetic lists.

Usage::

    python benchmarks/bench_train.py                       # 8,000 queries x 5 candidates, all three scorers
    python benchmarks/bench_train.py --queries 2000 --scorers hashed-mlp
    python benchmarks/bench_train.py --threads 1

Data: ``--queries`` synthetic queries of 8-20 words from a 5,000-word random vocabulary, each
with 5 candidates of 5-25 words; a candidate of grade ``g`` (0..4) copies about ``g / 4`` of
its words from its query, so the task is learnable. 500 extra queries are the validation lists.

Timed (wall clock, one run each, default configs, ``batch_queries=32``):

* ``featurise``: :func:`gradebench.scorers.features.list_features` of the training lists
  (what ``fit`` does once before training; for ``query-blind`` only the candidates);
* ``epoch``: from Trainer's first to its last training step of the single epoch (forward,
  loss, backward, AdamW, clipping; no featurisation, no evaluation, no checkpoint);
* ``fit``: the whole ``fit`` call (featurisation, Trainer set-up, the epoch, one validation
  pass, one checkpoint). For ``query-blind`` (ridge) the fit is the LSQR solves.

The 1-minute load average is printed first: numbers taken while other processes run are slower.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from gradebench.benchmark.lists import Lists, lists_from_table

SCORERS = ("hashed-mlp", "pair-mlp", "query-blind")


def synthetic_lists(n_queries: int, *, list_size: int = 5, seed: int = 0, split: str = "train") -> Lists:
    import pandas as pd

    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = np.array(["".join(rng.choice(letters, rng.integers(2, 9))) for _ in range(5000)])
    rows = []
    for q in range(n_queries):
        qwords = rng.choice(vocab, rng.integers(8, 21))
        for c in range(list_size):
            grade = c % 5
            n = int(rng.integers(5, 26))
            from_query = rng.random(n) < grade / 4
            words = np.where(from_query, rng.choice(qwords, n), rng.choice(vocab, n))
            rows.append({
                "query_id": f"{split}-{q}", "query": " ".join(qwords) + ".",
                "candidate_id": f"{split}-{q}-{c}", "candidate": " ".join(words) + ".",
                "relevance": float(grade), "score": grade / 4, "split": split,
            })
    return lists_from_table(pd.DataFrame(rows), benchmark="synthetic", split=split)


def bench_one(name: str, train: Lists, validation: Lists) -> dict[str, float]:
    from gradebench.scorers import TrainOptions, make_scorer

    scorer = make_scorer(name, seed=0)
    t = time.perf_counter()
    scorer._features(train)
    featurise = time.perf_counter() - t
    steps: list[tuple[int, float]] = []

    def progress(done: int, total: int, message: str) -> None:
        steps.append((done, time.perf_counter()))

    options = TrainOptions(epochs=1, batch_queries=32, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        scorer.fit(train, validation, options, run_dir=Path(tmp), progress=progress)
        fit = time.perf_counter() - t
    started = [s for s in steps if s[0] == 0]
    ended = [s for s in steps if s[0] > 0]
    epoch = (max(s[1] for s in ended) - started[0][1]) if started and ended else float("nan")
    return {"featurise_s": featurise, "epoch_s": epoch, "fit_s": fit, "steps": max((s[0] for s in steps), default=0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=8000)
    parser.add_argument("--scorers", nargs="+", default=list(SCORERS), choices=SCORERS)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    args = parser.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"# {platform.platform()} | python {platform.python_version()} | torch {torch.__version__} | "
          f"threads {torch.get_num_threads()} | load {os.getloadavg()[0]:.2f}")
    t = time.perf_counter()
    train = synthetic_lists(args.queries, seed=0)
    validation = synthetic_lists(500, seed=1, split="validation")
    print(f"# data: {train.n_queries} train queries x {train.list_size}, {validation.n_queries} validation "
          f"(built in {time.perf_counter() - t:.1f} s)")
    print(f"{'scorer':<12} {'featurise_s':>11} {'epoch_s':>8} {'steps':>6} {'fit_s':>7}")
    for name in args.scorers:
        r = bench_one(name, train, validation)
        print(f"{name:<12} {r['featurise_s']:>11.2f} {r['epoch_s']:>8.2f} {r['steps']:>6d} {r['fit_s']:>7.2f}")


if __name__ == "__main__":
    main()
