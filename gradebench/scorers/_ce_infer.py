"""Inference of the ``cross-encoder`` scorer and the encoder adapters: tokenize once, batch by tokens, one sync.

The token machinery (the content-keyed encoding cache, batches cut by a token budget, ids copied
to the device once and batches gathered there) is :mod:`gradebench.training.tokens`, shared with
training. Here: a whole scoring pass of a sentence-transformers ``CrossEncoder``. With
``bucket=True`` the pairs are sorted by token length (longest first, stable) so a batch holds
pairs of similar length and little padding; the scores stay on the device until the last batch
(one synchronisation for the whole run) and are put back in the input order.

Scores are the model's raw output (the ``"scores"`` of the sentence-transformers pipeline,
no sigmoid or other activation).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from gradebench.ticks import tick
from gradebench.training.tokens import EncodedPairs, cut_batches, host_to_device


def iter_batches(encoded: EncodedPairs, *, batch_size: int, bucket: bool,
                 max_tokens: int | None = None) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """``(rows, arrays)`` per batch, in batching order (see :meth:`EncodedPairs.order`)."""
    for rows in cut_batches(encoded.order(bucket), encoded.lengths, batch_size=batch_size, max_tokens=max_tokens):
        yield rows, encoded.batch(rows)


def to_device(arrays: dict[str, np.ndarray], device: Any) -> dict[str, Any]:
    """Each of a batch's host arrays as a tensor on ``device`` (same dtype): on the CPU the array
    itself, elsewhere a copy that waits for nothing
    (:func:`~gradebench.training.tokens.host_to_device`: pinned, ``non_blocking``, on CUDA)."""
    import torch

    if str(device) == "cpu":
        return {k: torch.from_numpy(v) for k, v in arrays.items()}
    return {k: host_to_device(v, device, v.dtype) for k, v in arrays.items()}


# -- inference -----------------------------------------------------------------------------------
def predict_logits(
    model: Any, encoded: EncodedPairs, *, batch_size: int, bucket: bool, amp_dtype: Any = None,
    max_tokens: int | None = None,
) -> np.ndarray:
    """``[n]`` float64 raw scores of a sentence-transformers ``CrossEncoder`` for ``encoded``, in input order."""
    import torch

    n = len(encoded)
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    device = model.device
    model.eval()
    tokens = encoded.on_device(device)
    batches = cut_batches(encoded.order(bucket), encoded.lengths, batch_size=batch_size, max_tokens=max_tokens)
    order = np.concatenate(batches)
    parts: list[Any] = []
    autocast = (torch.autocast(device_type=device.type, dtype=amp_dtype) if amp_dtype is not None
                else contextlib.nullcontext())
    with torch.inference_mode(), autocast:
        index = tokens.index(order)  # one copy of the whole plan; each batch is a slice of it
        start = 0
        for rows in batches:
            features = tokens.batch(rows, index[start:start + len(rows)])
            start += len(rows)
            features["modality"] = "text"
            parts.append(model(features)["scores"].reshape(-1).float())
            tick(start, n)
    flat = torch.cat(parts).cpu().numpy().astype(np.float64)  # one device sync for the whole run
    out = np.empty(n, dtype=np.float64)
    out[order] = flat
    return out
