"""Batching shared by the adapters: a seeded batch plan, sharded over processes, gathered in place.

**The plan.** The items to score (pairs, texts or prompts) are put in a seeded order: sorted by
``sha256(seed, key)`` of each item's content key (``query_id``/``candidate_id`` for pairs, the
text for texts), so which items share a batch is drawn from content, never from the
benchmark's list order. With ``bucket=True`` that order is then sorted, stably, by length
(longest first): a batch holds items of similar length and little padding, and items of one
length keep their seeded order. The plan cuts the order into batches of ``batch_size``.

**Sharding.** Under ``torchrun`` or ``accelerate launch`` (``WORLD_SIZE`` > 1), process ``r``
computes batches ``r, r + W, r + 2W, ...`` of the same plan and every process gathers every
batch's values (``torch.distributed.all_gather_object``). Each batch is computed exactly as a
single process would compute it, so the scores, and the record, are those of a one-process run
(on the same device type and thread count). The gather always runs over **gloo**, on GPUs too:
what is gathered is CPU numpy arrays, once per run, and NCCL's ``all_gather_object`` would
stage them on the *current* CUDA device, which is ``cuda:0`` in every process unless each one
calls ``torch.cuda.set_device`` first (8 ranks on one GPU: a hang or a failure). Each process's
model goes to ``cuda:LOCAL_RANK`` (:func:`pick_device`).

Also here: :func:`encode_texts`, the single-text counterpart of
:func:`gradebench.scorers._ce_infer.encode_pairs` (chat prompts, judge prompts), and
:func:`left_padded` for causal LMs read at their last token.
"""

from __future__ import annotations

import atexit
import hashlib
import itertools
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gradebench.ticks import tick
from gradebench.training.tokens import EncodedPairs, cut_batches

__all__ = ["GATHER_BACKEND", "EncodedPairs", "distributed", "encode_texts", "left_padded", "pick_device", "plan_batches",
           "run_plan", "seeded_order"]

#: the process group the scores are gathered over, whatever the device (see the module docstring)
GATHER_BACKEND = "gloo"


#: the last few seeded orders, by (seed, sha256 of the keys): a repeated pass over the same items
#: (the invariance check, a second scorer on the same split) reuses its order
_ORDERS: dict[tuple[int, str], np.ndarray] = {}
_ORDERS_KEPT = 8


def seeded_order(keys: Sequence[str], *, seed: int, keys_digest: str | None = None) -> np.ndarray:
    """Indices of ``keys`` sorted by ``sha256(seed, key)`` (ties, i.e. equal keys, by position).

    Remembered by content (the seed and a digest of the keys, which costs a fifth of the
    per-key hashing), so a repeated pass over the same keys does not hash them again.
    ``keys_digest``: ``texts_digest(keys)`` when the caller computed it already.
    """
    from gradebench.training.tokens import texts_digest

    memo = (int(seed), keys_digest if keys_digest is not None else texts_digest(keys))
    if memo in _ORDERS:
        return _ORDERS[memo].copy()
    prefix = f"gradebench.batch-order\x1f{int(seed)}\x1f".encode()
    draws = np.fromiter((int.from_bytes(hashlib.sha256(prefix + k.encode("utf-8")).digest()[:8], "big") for k in keys),
                        dtype=np.uint64, count=len(keys))
    order = np.argsort(draws, kind="stable")
    if len(_ORDERS) >= _ORDERS_KEPT:
        _ORDERS.pop(next(iter(_ORDERS)))
    _ORDERS[memo] = order
    return order.copy()


def plan_batches(keys: Sequence[str], lengths: np.ndarray, *, seed: int, batch_size: int,
                 bucket: bool, max_tokens: int | None = None, keys_digest: str | None = None) -> list[np.ndarray]:
    """The batches (item indices) of the plan described in the module docstring; with
    ``max_tokens``, each batch holds as many items as fit ``items x longest <= max_tokens``
    instead of ``batch_size`` (:func:`gradebench.training.tokens.cut_batches`); ``keys_digest``
    as in :func:`seeded_order`."""
    order = seeded_order(keys, seed=seed, keys_digest=keys_digest)
    if bucket and len(order):
        order = order[np.argsort(-np.asarray(lengths)[order], kind="stable")]
    return cut_batches(order, np.asarray(lengths), batch_size=batch_size, max_tokens=max_tokens)


# -- processes -------------------------------------------------------------------------------
def distributed() -> tuple[int, int, int]:
    """``(rank, world_size, local_rank)`` from the launcher's environment (``(0, 1, 0)`` alone)."""
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if world <= 1:
        return 0, 1, 0
    return int(os.environ.get("RANK", "0")), world, int(os.environ.get("LOCAL_RANK", "0"))


def pick_device(requested: str | None, *, cuda: bool, mps: bool) -> str:
    """The torch device of this process: ``requested``, else the best available (cuda > mps > cpu).

    Under a distributed launch (``WORLD_SIZE`` > 1) a CUDA device without an index, requested
    or picked, is ``cuda:LOCAL_RANK``: one GPU per process, never every process on ``cuda:0``.
    """
    _, world, local = distributed()
    device = requested if requested is not None else "cuda" if cuda else "mps" if mps else "cpu"
    if device == "cuda" and world > 1:
        return f"cuda:{local}"
    return device


def _process_group(device_type: str) -> Any:
    """The default process group, started over :data:`GATHER_BACKEND` whatever ``device_type`` is."""
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group(backend=GATHER_BACKEND)
        atexit.register(_destroy)
    return dist


def _destroy() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def run_plan(batches: list[np.ndarray], fn: Callable[[np.ndarray], np.ndarray], n: int, *,
             device_type: str = "cpu") -> np.ndarray:
    """``fn(rows) -> values[len(rows), ...]`` over every batch (this process's share when sharded),
    assembled into ``[n, ...]`` in item order, every process getting every value."""
    rank, world, _ = distributed()
    mine_batches = batches[rank::world]
    total = sum(len(rows) for rows in mine_batches)
    done = 0
    outputs = []
    for rows in mine_batches:
        outputs.append((rows, fn(rows)))
        done += len(rows)
        tick(done, total)
    mine = _on_host(outputs)
    if world > 1:
        dist = _process_group(device_type)
        gathered: list[Any] = [None] * world
        dist.all_gather_object(gathered, mine)
        parts = list(itertools.chain.from_iterable(gathered))
    else:
        parts = mine
    if not parts:
        return np.zeros(0, dtype=np.float64)
    tail = parts[0][1].shape[1:]
    out = np.zeros((n, *tail), dtype=parts[0][1].dtype)
    done = np.zeros(n, dtype=bool)
    for rows, values in parts:
        out[rows] = values
        done[rows] = True
    if not done.all():  # pragma: no cover - a plan always covers every item
        raise RuntimeError(f"{int((~done).sum())} items were not scored")
    return out


def _on_host(parts: list[tuple[np.ndarray, Any]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each batch's values as numpy. Torch tensors (left on their device by ``fn``, so no batch
    waits for the device) are joined there and copied back in one transfer: one synchronisation
    for the whole plan."""
    torch = sys.modules.get("torch")
    tensors = [v for _, v in parts if torch is not None and isinstance(v, torch.Tensor)]
    if not tensors:
        return [(rows, np.asarray(v)) for rows, v in parts]
    if len(tensors) != len(parts):
        raise TypeError("a batch function returned tensors for some batches and arrays for others")
    flat = torch.cat([t.reshape(len(rows), -1) for (rows, _), t in zip(parts, tensors)]).cpu().numpy()
    out, start = [], 0
    for (rows, t) in parts:
        out.append((rows, flat[start:start + len(rows)].reshape((len(rows), *t.shape[1:]))))
        start += len(rows)
    return out


# -- texts -----------------------------------------------------------------------------------
def encode_texts(tokenizer: Any, texts: Sequence[str], *, max_length: int, add_special_tokens: bool,
                 keep: str = "end") -> EncodedPairs:
    """Tokenize ``texts`` at once (no padding) into an :class:`EncodedPairs` (no token types).

    A text longer than ``max_length`` tokens keeps its last ``max_length`` (``keep="end"``: a
    reward or a judge reads the end of the conversation) or its first (``keep="start"``).
    """
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    pad_id = int(pad_id if pad_id is not None else 0)
    if not len(texts):
        empty = np.zeros(0, dtype=np.int64)
        return EncodedPairs(empty, None, empty.copy(), empty.copy(), pad_id)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and hasattr(backend, "encode_batch_fast"):
        truncation, padding = backend.truncation, backend.padding
        try:
            backend.no_truncation()
            backend.no_padding()
            ids = [e.ids for e in backend.encode_batch_fast(list(texts), add_special_tokens=add_special_tokens)]
        finally:
            if truncation is not None:
                backend.enable_truncation(**truncation)
            if padding is not None:
                backend.enable_padding(**padding)
    else:
        ids = tokenizer(list(texts), add_special_tokens=add_special_tokens, padding=False)["input_ids"]
    ids = [i[-max_length:] if keep == "end" else i[:max_length] for i in ids]
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    starts = np.zeros(len(ids), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum()))
    return EncodedPairs(flat, None, starts, lengths, pad_id)


def left_padded(encoded: EncodedPairs, rows: np.ndarray) -> dict[str, np.ndarray]:
    """``input_ids``/``attention_mask``/``position_ids`` of ``rows``, padded on the left.

    Positions count real tokens only (0 at the first real token), so a padded row is computed
    like the same row alone; the last column is every row's last token.
    """
    lengths = encoded.lengths[rows]
    width = int(lengths.max()) if len(rows) else 0
    cols = np.arange(width)
    offset = width - lengths
    valid = cols[None, :] >= offset[:, None]
    pos = np.where(valid, encoded.starts[rows][:, None] + cols[None, :] - offset[:, None], 0)
    return {
        "input_ids": np.where(valid, encoded.ids[pos], encoded.pad_id),
        "attention_mask": valid.astype(np.int64),
        "position_ids": np.where(valid, cols[None, :] - offset[:, None], 0),
    }
