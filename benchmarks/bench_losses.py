"""Benchmark gradebench.losses: forward + backward time per query for every registered loss.

Usage::

    python benchmarks/bench_losses.py              # batch 1024, list sizes 5, 16, 64
    python benchmarks/bench_losses.py --quick      # batch 256, fewer repeats (smoke run)
    python benchmarks/bench_losses.py --ragged     # 25% of items masked out (random)

What is timed (wall clock, median of ``--repeat`` runs after ``--warmup`` runs): one call of
the loss with its default parameters and ``reduction="mean"`` on float32 ``[batch, list_size]``
tensors, input checks included (``validate=True``, the default: one host sync), followed by
``backward()``; creating the inputs and zeroing the gradient are not counted. The table shows
microseconds per query (list), i.e. time / batch. One table is printed per value of
``--threads`` (``torch.set_num_threads``; default 2, the reference machine's core count, then 1:
on a loaded 2-core box thread-pool wake-ups can dominate small kernels, and the 1-thread table
shows that). The 1-minute load average is printed before each table, so numbers taken while
other processes run can be read as such.

Scores are standard normal (no ties), labels integer grades 0..4 (``/ 4`` for ``sigmoid_ce``,
whose labels are probabilities).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import torch

from gradebench.losses import LOSSES

SIZES = (5, 16, 64)


def make_inputs(name: str, batch: int, size: int, ragged: bool, seed: int = 0):  # noqa: ANN201
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(batch, size, generator=gen)
    labels = torch.randint(0, 5, (batch, size), generator=gen).float()
    if name == "sigmoid_ce":
        labels = labels / 4.0
    mask = None
    if ragged:
        mask = torch.rand(batch, size, generator=gen) >= 0.25
        mask[:, 0] = True
    return scores, labels, mask


def time_loss(name: str, batch: int, size: int, *, ragged: bool, warmup: int, repeat: int) -> float:
    """Median seconds of one forward + backward."""
    loss_fn = LOSSES.get(name)
    scores, labels, mask = make_inputs(name, batch, size, ragged)
    scores.requires_grad_(True)
    times = []
    for i in range(warmup + repeat):
        scores.grad = None
        t0 = time.perf_counter()
        loss_fn(scores, labels, mask=mask).backward()
        elapsed = time.perf_counter() - t0
        if i >= warmup:
            times.append(elapsed)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=None, help="lists per call (default 1024; 256 with --quick)")
    parser.add_argument("--repeat", type=int, default=None, help="timed runs (default 7; 3 with --quick)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, nargs="+", default=[2, 1], help="one table per value")
    parser.add_argument("--ragged", action="store_true", help="mask out ~25%% of the items")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--losses", nargs="*", default=None, help="subset of loss names")
    args = parser.parse_args()
    batch = args.batch or (256 if args.quick else 1024)
    repeat = args.repeat or (3 if args.quick else 7)
    names = args.losses or LOSSES.names()
    for name in names:
        LOSSES.get(name)  # unknown names fail before any timing
    for i, threads in enumerate(args.threads):
        if i:
            print()
        table(names, batch, repeat, threads, args)
    return 0


def table(names: list[str], batch: int, repeat: int, threads: int, args: argparse.Namespace) -> None:
    torch.set_num_threads(threads)
    load = f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "n/a"
    print(
        f"gradebench.losses forward+backward, float32, batch {batch}, "
        f"{'ragged (25% masked)' if args.ragged else 'no mask'}, median of {repeat} "
        f"after {args.warmup} warm-up; torch {torch.__version__}, {threads} thread(s), "
        f"{os.cpu_count()} CPUs ({platform.machine()}), load average {load}"
    )
    header = f"{'loss':<14} {'kind':<10}" + "".join(f"{f'L={n} us/query':>17}" for n in SIZES)
    print(header)
    print("-" * len(header))
    for name in names:
        row = f"{name:<14} {LOSSES.get(name).kind:<10}"
        for size in SIZES:
            sec = time_loss(name, batch, size, ragged=args.ragged, warmup=args.warmup, repeat=repeat)
            row += f"{sec / batch * 1e6:>17.2f}"
        print(row, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
