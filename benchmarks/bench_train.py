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

Peer (``hashed-mlp``, unless ``--no-peer``): the same epoch as a plain PyTorch loop, no Trainer:
the same module (same seed, so the same initial weights), the same featurised lists and
``batch_tensors`` batches of 32 queries in a seeded random order, a hand-written ListNet loss
(softmax cross-entropy of the grades against the scores, padding masked), AdamW (lr 1e-3, weight
decay 0.01), gradient clipping at 1.0, a linear schedule with 10% warm-up: the work gradebench's
epoch does, minus what ``transformers.Trainer`` adds. The script checks both took the same
number of optimiser steps and that the peer's loss went down. ``--repeat N`` takes the median of
N epochs of each (alternating); ``--out`` writes the figures as JSON.

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


def plain_torch_epoch(train: Lists, batch_queries: int = 32, seed: int = 0) -> dict[str, float]:
    """One epoch of ``hashed-mlp`` + ListNet as a plain PyTorch loop (see the module docstring)."""
    import torch

    from gradebench.scorers import make_scorer
    from gradebench.scorers._torch_common import batch_tensors

    scorer = make_scorer("hashed-mlp", seed=0)
    net = scorer._new_net()
    lf = scorer._features(train)
    labels = torch.from_numpy(train.relevance.astype(np.float32))
    mask = torch.from_numpy(train.mask)
    order = np.random.default_rng(seed).permutation(train.n_queries)
    batches = [order[i:i + batch_queries] for i in range(0, len(order), batch_queries)]
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01)
    warmup = max(1, int(0.1 * len(batches)))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min((step + 1) / warmup, max(0.0, (len(batches) - step) / max(1, len(batches) - warmup))))
    net.train()
    losses = []
    t = time.perf_counter()
    for rows in batches:
        width = train.list_size
        feats = batch_tensors(lf, rows, width, scorer.parts)
        m = mask[rows, :width]
        scores = net(m, **feats).reshape(len(rows), width)
        neg = torch.finfo(scores.dtype).min
        target = torch.softmax(labels[rows, :width].masked_fill(~m, neg), dim=1)
        loss = -(target * torch.log_softmax(scores.masked_fill(~m, neg), dim=1)).masked_fill(~m, 0.0).sum(1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    epoch = time.perf_counter() - t
    k = max(1, len(losses) // 10)
    return {"epoch_s": epoch, "steps": len(batches), "loss_first": float(np.mean(losses[:k])),
            "loss_last": float(np.mean(losses[-k:]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=8000)
    parser.add_argument("--scorers", nargs="+", default=list(SCORERS), choices=SCORERS)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--repeat", type=int, default=1, help="epochs of each to take the median of")
    parser.add_argument("--no-peer", dest="peer", action="store_false", help="skip the plain PyTorch loop")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON (benchmarks/results/...)")
    args = parser.parse_args()
    load_at_start = [round(x, 2) for x in os.getloadavg()]

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
    print(f"{'scorer':<30} {'featurise_s':>11} {'epoch_s':>8} {'steps':>6} {'fit_s':>7}")
    figures: dict[str, dict] = {}
    for name in args.scorers:
        runs, peers = [], []
        for _ in range(args.repeat):  # alternate with the peer, so load weighs on both alike
            runs.append(bench_one(name, train, validation))
            if args.peer and name == "hashed-mlp":
                peers.append(plain_torch_epoch(train))
        r = {k: float(np.median([x[k] for x in runs])) for k in ("featurise_s", "epoch_s", "fit_s")}
        r["steps"] = runs[0]["steps"]
        figures[name] = {**r, "epoch_s_runs": [round(x["epoch_s"], 3) for x in runs]}
        print(f"{name:<30} {r['featurise_s']:>11.2f} {r['epoch_s']:>8.2f} {r['steps']:>6d} {r['fit_s']:>7.2f}")
        if peers:
            p = {k: float(np.median([x[k] for x in peers])) for k in ("epoch_s", "loss_first", "loss_last")}
            p["steps"] = peers[0]["steps"]
            if p["steps"] != r["steps"]:
                raise SystemExit(f"the peer took {p['steps']} steps, gradebench {r['steps']}: not the same epoch")
            if not p["loss_last"] < p["loss_first"]:
                raise SystemExit(f"the peer's loss did not go down ({p['loss_first']:.4f} -> {p['loss_last']:.4f})")
            figures["hashed-mlp (plain PyTorch loop)"] = {**p, "epoch_s_runs": [round(x["epoch_s"], 3) for x in peers]}
            print(f"{'  peer: plain PyTorch loop':<30} {'':>11} {p['epoch_s']:>8.2f} {p['steps']:>6d} {'':>7}   "
                  f"gradebench epoch = {r['epoch_s'] / p['epoch_s']:.2f}x the peer's; peer loss "
                  f"{p['loss_first']:.3f} -> {p['loss_last']:.3f}")
    if args.out is not None:
        import json

        out = {"benchmark": "one training epoch over synthetic lists", "platform": platform.platform(),
               "torch": torch.__version__, "threads": torch.get_num_threads(), "load_at_start": load_at_start,
               "load_at_end": [round(x, 2) for x in os.getloadavg()], "queries": train.n_queries,
               "list_size": train.list_size, "repeat": args.repeat, "scorers": figures}
        if "hashed-mlp (plain PyTorch loop)" in figures:
            out["hashed_mlp_epoch_vs_plain_torch"] = round(
                figures["hashed-mlp"]["epoch_s"] / figures["hashed-mlp (plain PyTorch loop)"]["epoch_s"], 3)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"# wrote {args.out}")


if __name__ == "__main__":
    main()
