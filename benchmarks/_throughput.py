"""Where the time of scoring and training goes, beside sentence-transformers' own calls on the same model.

Shared by ``bench_host.py`` (CPU, a stub model whose forward costs next to nothing: the host
side alone) and ``bench_gpu.py`` (a GPU, all-MiniLM-L6-v2 in bf16). Every figure is measured
in this process with the model already loaded, the median of ``repeat`` passes after a
warm-up, the methods alternating; on CUDA each timed span ends with a device synchronisation,
so no figure leaves work queued on the device.

Stages of one scoring pass of the ``cross-encoder`` scorer, timed one after another (each
synchronised, so their sum can exceed the pipelined pass): ``tokenize`` (the Rust tokenizer,
uncached), ``plan`` (bucketing and cutting batches), ``copy`` (the split's ids to the device,
once), ``pad`` (gathering and padding every batch on the device), ``forward`` (the model on
those batches), ``gather`` (scores back to the host in input order).

Training: ``GradebenchCrossEncoderTrainer`` (``scorer.fit``, no validation lists) against
``CrossEncoderTrainer`` with sentence-transformers' ``ListNetLoss`` on the same lists, the
same lists per step, one epoch, the same learning rate and precision; pairs/s over the
``train()`` call. The breakdown of ours: the loss module's forward (lookup, gather, model
forward, loss), the backward and optimizer step (the rest of the steps), checkpoint saving.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np


def sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def timed(fns: dict[str, Callable[[], Any]], repeat: int, device: str) -> dict[str, float]:
    """Median seconds of each function over ``repeat`` alternating passes, after one warm-up each."""
    for fn in fns.values():
        fn()
        sync(device)
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            sync(device)
            t0 = time.perf_counter()
            fn()
            sync(device)
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def _stub(dest: Path, tokenizer_from: Path, model_class: Any, **config: Any) -> Path:
    """A seeded 1-layer BERT of width 8 (``model_class``) with the tokenizer of ``tokenizer_from``,
    saved as a transformers folder ``dest/hf``: a forward that costs next to nothing."""
    import torch
    from transformers import AutoTokenizer, BertConfig

    tok = AutoTokenizer.from_pretrained(str(tokenizer_from))
    bert = BertConfig(vocab_size=len(tok), hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                      intermediate_size=8, max_position_embeddings=512, pad_token_id=tok.pad_token_id, **config)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = model_class(bert)
    raw = dest / "hf"
    model.save_pretrained(raw)
    tok.save_pretrained(raw)
    return raw


def stub_cross_encoder(dest: Path, tokenizer_from: Path) -> Path:
    """A sentence-transformers CrossEncoder folder around the stub BERT (:func:`_stub`)."""
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import BertForSequenceClassification

    raw = _stub(dest, tokenizer_from, BertForSequenceClassification, num_labels=1)
    CrossEncoder(str(raw), device="cpu", activation_fn=torch.nn.Identity()).save(str(dest))
    return dest


def stub_bi_encoder(dest: Path, tokenizer_from: Path) -> Path:
    """A sentence-transformers folder (mean pooling) around the stub BERT (:func:`_stub`): an
    embedder whose forward costs next to nothing."""
    from sentence_transformers import SentenceTransformer
    from transformers import BertModel

    raw = _stub(dest, tokenizer_from, BertModel)
    SentenceTransformer(str(raw), device="cpu").save(str(dest))
    return dest


def until_first_forward(fns: dict[str, Callable[[], Any]], module: Any, repeat: int) -> dict[str, float]:
    """Median seconds from calling each function to ``module``'s first forward in that call: the
    host work a device would wait for before it gets any (alternating, after one warm-up each)."""
    first: list[float] = []
    hook = module.register_forward_pre_hook(lambda *_: first.append(time.perf_counter()) if not first else None)
    try:
        out: dict[str, list[float]] = {k: [] for k in fns}
        for rnd in range(repeat + 1):
            for k, fn in fns.items():
                first.clear()
                t0 = time.perf_counter()
                fn()
                if rnd:  # the first round warms up
                    out[k].append(first[0] - t0)
    finally:
        hook.remove()
    return {k: statistics.median(v) for k, v in out.items()}


def head_on(dest: Path, backbone: Path) -> Path:
    """``backbone`` with a fresh one-output head (seed 0), saved as a CrossEncoder folder."""
    import torch
    from sentence_transformers import CrossEncoder

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        ce = CrossEncoder(str(backbone), num_labels=1, device="cpu", activation_fn=torch.nn.Identity())
    ce.save(str(dest))
    return dest


# -- scoring -----------------------------------------------------------------------------------------
def scoring_stages(scorer: Any, q: list[str], c: list[str], repeat: int) -> dict[str, float]:
    """Seconds of each stage of one pass of the ``cross-encoder`` scorer (see the module docstring)."""
    import torch

    from gradebench.training.tokens import DeviceTokens, cut_batches, encode_pairs

    model = scorer.model
    device = str(model.device)
    amp = scorer._amp_dtype()
    max_tokens = scorer.max_batch_tokens() if "batch_size" not in scorer.config.model_fields_set else None
    out: dict[str, list[float]] = defaultdict(list)
    for _ in range(repeat + 1):
        t = {}
        sync(device)
        t0 = time.perf_counter()
        enc = encode_pairs(model.tokenizer, q, c, max_length=scorer.config.max_length, cache=False)
        t["tokenize"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        batches = cut_batches(enc.order(True), enc.lengths, batch_size=scorer.config.batch_size,
                              max_tokens=max_tokens)
        order = np.concatenate(batches)
        t["plan"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        tokens = DeviceTokens(enc, model.device)
        index = tokens.index(order)
        sync(device)
        t["copy"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        feats, start = [], 0
        for rows in batches:
            feats.append(tokens.batch(rows, index[start:start + len(rows)]))
            start += len(rows)
        sync(device)
        t["pad"] = time.perf_counter() - t0
        autocast = torch.autocast(device_type=model.device.type, dtype=amp) if amp is not None else \
            contextlib.nullcontext()
        t0 = time.perf_counter()
        parts = []
        with torch.inference_mode(), autocast:
            for f in feats:
                f["modality"] = "text"
                parts.append(model(f)["scores"].reshape(-1).float())
        sync(device)
        t["forward"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        flat = torch.cat(parts).cpu().numpy().astype(np.float64)
        res = np.empty(len(enc), dtype=np.float64)
        res[order] = flat
        t["gather"] = time.perf_counter() - t0
        for k, v in t.items():
            out[k].append(v)
    return {k: statistics.median(v[1:]) for k, v in out.items()}  # the first pass warms up


def tokenizer_call(tokenizer: Any, q: list[str], c: list[str], max_length: int) -> Callable[[], Any]:
    """One batched call of the tokenizer over the pairs, as a user would make it (no padding)."""
    return lambda: tokenizer(q, c, truncation="longest_first", max_length=max_length, padding=False)


def best_batch(fn: Callable[[int], Any], sizes: list[int], device: str) -> tuple[int, float]:
    """The batch size of ``sizes`` at which ``fn(size)`` is fastest, and its median seconds (3 passes)."""
    best = (sizes[0], float("inf"))
    for size in sizes:
        t = timed({"x": lambda s=size: fn(s)}, 3, device)["x"]
        if t < best[1]:
            best = (size, t)
    return best


# -- training ------------------------------------------------------------------------------------------
@contextlib.contextmanager
def stage_clock(device: str) -> Iterator[dict[str, float]]:
    """Seconds spent in the loss module's forward and in checkpoint saving during training (each call
    synchronised on CUDA, so these spans are exact; it slows the pipelined loop slightly)."""
    from transformers import Trainer

    from gradebench.training.st_loss import GradebenchLoss

    spent: dict[str, float] = defaultdict(float)
    originals = {"loss": GradebenchLoss.forward, "save": Trainer._save_checkpoint}

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def inner(*a: Any, **k: Any) -> Any:
            sync(device)
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                sync(device)
                spent[name] += time.perf_counter() - t0
        return inner

    GradebenchLoss.forward = wrap("loss_forward", originals["loss"])
    Trainer._save_checkpoint = wrap("checkpoint", originals["save"])
    try:
        yield spent
    finally:
        GradebenchLoss.forward = originals["loss"]
        Trainer._save_checkpoint = originals["save"]


def train_gradebench(model_dir: Path, lists: Any, *, batch_queries: int, lr: float, device: str,
                     max_length: int, breakdown: bool) -> dict[str, Any]:
    """One epoch of ``scorer.fit`` (listnet) on ``lists``; pairs/s over the fit, and its breakdown."""
    import tempfile

    from gradebench.scorers import TrainOptions, make_scorer

    scorer = make_scorer("cross-encoder", {"model": str(model_dir), "max_length": max_length, "device": device},
                         seed=42)
    scorer.model  # noqa: B018 - load before the clock starts
    options = TrainOptions(loss="listnet", epochs=1, batch_queries=batch_queries, lr=lr, warmup_ratio=0.1)
    with tempfile.TemporaryDirectory() as tmp, (stage_clock(device) if breakdown else contextlib.nullcontext({})) \
            as spent:
        sync(device)
        t0 = time.perf_counter()
        history = scorer.fit(lists, None, options, run_dir=Path(tmp) / "run")
        sync(device)
        wall = time.perf_counter() - t0
    steps = -(-lists.n_queries // batch_queries)
    out = {"wall_s": round(wall, 3), "pairs_per_s": round(lists.n_candidates / wall, 1), "steps": steps,
           "steps_per_s": round(steps / wall, 2), "loss": history[-1].get("loss") if history else None}
    if breakdown:
        rest = wall - sum(spent.values())
        out["breakdown_s"] = {**{k: round(v, 3) for k, v in spent.items()},
                              "backward, optimizer, trainer": round(rest, 3)}
    return out


def train_peer(model_dir: Path, lists: Any, *, batch_queries: int, lr: float, device: str,
               max_length: int, bf16: bool) -> dict[str, Any]:
    """One epoch of sentence-transformers' ``CrossEncoderTrainer`` with ``ListNetLoss`` on the same lists."""
    import tempfile

    import torch
    from datasets import Dataset
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import ListNetLoss

    from gradebench.scorers._ce_train import listwise_dataset

    ds: Dataset = listwise_dataset(lists)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(42)
        model = CrossEncoder(str(model_dir), device=device, max_length=max_length, activation_fn=torch.nn.Identity())
    with tempfile.TemporaryDirectory() as tmp:
        args = CrossEncoderTrainingArguments(
            output_dir=tmp, num_train_epochs=1, per_device_train_batch_size=batch_queries, learning_rate=lr,
            warmup_ratio=0.1, bf16=bf16, save_strategy="no", eval_strategy="no", logging_strategy="epoch",
            report_to=[], disable_tqdm=True, seed=42, use_cpu=not device.startswith("cuda"),
            dataloader_num_workers=0,
        )
        trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=ds, loss=ListNetLoss(model))
        sync(device)
        t0 = time.perf_counter()
        trainer.train()
        sync(device)
        wall = time.perf_counter() - t0
    steps = -(-lists.n_queries // batch_queries)
    return {"wall_s": round(wall, 3), "pairs_per_s": round(lists.n_candidates / wall, 1), "steps": steps,
            "steps_per_s": round(steps / wall, 2)}


def rate(n: int, seconds: float) -> float:
    return round(n / seconds, 1) if seconds > 0 else float("inf")
