"""Inference of the ``cross-encoder`` scorer: one tokenizer call, length-bucketed dynamic padding.

Every (query, candidate) pair is encoded as the tokenizer's pair encoding (BERT:
``[CLS] query [SEP] candidate [SEP]``, token types 0/1), truncated ``longest_first`` to
``max_length`` — the same encoding ``CrossEncoder.preprocess`` gives in training. All pairs
are tokenized in one call of the fast (Rust, multi-threaded) tokenizer without padding; the
ids go into one flat array, and each batch is cut from it with vectorised indexing, padded
only to its own longest pair. With ``bucket=True`` the pairs are sorted by token length
(longest first, stable) before batching, so a batch holds pairs of similar length and little
padding; the scores are put back in the input order.

Scores are the model's raw output (the ``"scores"`` of the sentence-transformers pipeline,
no sigmoid or other activation).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class EncodedPairs:
    """Token ids of ``n`` pairs, unpadded, stored flat.

    Attributes:
        ids: ``[total_tokens]`` int64 token ids of every pair, back to back.
        types: ``[total_tokens]`` int64 token type ids, or None when the model takes none.
        starts: ``[n]`` offset of each pair in ``ids``.
        lengths: ``[n]`` number of tokens of each pair.
        pad_id: the padding token id.
    """

    ids: np.ndarray
    types: np.ndarray | None
    starts: np.ndarray
    lengths: np.ndarray
    pad_id: int

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    def order(self, bucket: bool) -> np.ndarray:
        """Pair indices in batching order: longest first (stable) if ``bucket``, else input order."""
        if bucket:
            return np.argsort(-self.lengths, kind="stable")
        return np.arange(len(self))

    def batch(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """``input_ids``/``attention_mask`` (and ``token_type_ids``) of ``rows``, right-padded to their longest."""
        lengths = self.lengths[rows]
        width = int(lengths.max()) if len(rows) else 0
        cols = np.arange(width)
        valid = cols[None, :] < lengths[:, None]
        pos = np.where(valid, self.starts[rows][:, None] + cols[None, :], 0)
        out = {
            "input_ids": np.where(valid, self.ids[pos], self.pad_id),
            "attention_mask": valid.astype(np.int64),
        }
        if self.types is not None:
            out["token_type_ids"] = np.where(valid, self.types[pos], 0)
        return out


def encode_pairs(tokenizer: Any, queries: Sequence[str], candidates: Sequence[str], *, max_length: int) -> EncodedPairs:
    """Tokenize every ``(query, candidate)`` pair at once (no padding) into an :class:`EncodedPairs`.

    The encoding is the tokenizer's own (as in ``CrossEncoder.preprocess``), truncated
    ``longest_first`` to ``max_length``; token type ids are kept when the tokenizer returns them.
    A fast tokenizer's Rust backend is called directly (``encode_batch_fast``: no offsets, no
    per-pair Python objects from transformers), with truncation set for the call and restored
    afterwards, as transformers itself does on every call; other tokenizers go through
    ``tokenizer(...)``.
    """
    pad_id = int(tokenizer.pad_token_id)
    if not len(queries):
        empty = np.zeros(0, dtype=np.int64)
        return EncodedPairs(empty, None, empty.copy(), empty.copy(), pad_id)
    want_types = "token_type_ids" in getattr(tokenizer, "model_input_names", ("token_type_ids",))
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and hasattr(backend, "encode_batch_fast"):
        ids, types = _encode_rust(backend, queries, candidates, max_length=max_length, want_types=want_types)
    else:
        enc = tokenizer(list(queries), list(candidates), truncation="longest_first", max_length=max_length,
                        padding=False)
        ids, types = enc["input_ids"], enc.get("token_type_ids")
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    total = int(lengths.sum())
    starts = np.zeros(len(ids), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    flat_ids = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=total)
    flat_types = None
    if types is not None:
        flat_types = np.fromiter(itertools.chain.from_iterable(types), dtype=np.int64, count=total)
    return EncodedPairs(flat_ids, flat_types, starts, lengths, pad_id)


def _encode_rust(
    backend: Any, queries: Sequence[str], candidates: Sequence[str], *, max_length: int, want_types: bool,
) -> tuple[list[list[int]], list[list[int]] | None]:
    truncation, padding = backend.truncation, backend.padding
    try:
        backend.enable_truncation(max_length, strategy="longest_first")
        backend.no_padding()
        encodings = backend.encode_batch_fast(list(zip(queries, candidates)))
    finally:
        if truncation is None:
            backend.no_truncation()
        else:
            backend.enable_truncation(**truncation)
        if padding is not None:
            backend.enable_padding(**padding)
    ids = [e.ids for e in encodings]
    return ids, ([e.type_ids for e in encodings] if want_types else None)


def iter_batches(encoded: EncodedPairs, *, batch_size: int, bucket: bool) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """``(rows, arrays)`` per batch, in batching order (see :meth:`EncodedPairs.order`)."""
    order = encoded.order(bucket)
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        yield rows, encoded.batch(rows)


def to_device(arrays: dict[str, np.ndarray], device: Any) -> dict[str, Any]:
    import torch

    non_blocking = str(device).startswith("cuda")
    return {k: torch.from_numpy(v).to(device, non_blocking=non_blocking) for k, v in arrays.items()}


def predict_logits(
    model: Any, encoded: EncodedPairs, *, batch_size: int, bucket: bool, amp_dtype: Any = None,
) -> np.ndarray:
    """``[n]`` float64 raw scores of a sentence-transformers ``CrossEncoder`` for ``encoded``, in input order."""
    import torch

    n = len(encoded)
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    device = model.device
    model.eval()
    parts: list[Any] = []
    order: list[np.ndarray] = []
    autocast = (torch.autocast(device_type=device.type, dtype=amp_dtype) if amp_dtype is not None
                else contextlib.nullcontext())
    with torch.inference_mode(), autocast:
        for rows, arrays in iter_batches(encoded, batch_size=batch_size, bucket=bucket):
            features = to_device(arrays, device)
            features["modality"] = "text"
            scores = model(features)["scores"]
            parts.append(scores.reshape(-1).float())
            order.append(rows)
    flat = torch.cat(parts).cpu().numpy().astype(np.float64)  # one device sync for the whole run
    out = np.empty(n, dtype=np.float64)
    out[np.concatenate(order)] = flat
    return out
