"""Torch plumbing shared by the hashed-feature scorers: batches, seeded init, inference, weights I/O.

Imported only inside scorer methods (it imports torch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from gradebench.errors import InvalidArgumentError
from gradebench.paths import publish, temp_beside
from gradebench.scorers.features import ListFeatures

WEIGHTS_FILE = "model.safetensors"
CORRUPT_HINT = "the file is truncated or damaged; train the run again (or save the scorer again)"


def bag_tensors(m: sp.csr_matrix, rows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``EmbeddingBag`` inputs ``(indices, offsets, per_sample_weights)`` of CSR rows ``rows``."""
    sub = m[rows]
    return (torch.from_numpy(sub.indices.astype(np.int64)),
            torch.from_numpy(sub.indptr[:-1].astype(np.int64)),
            torch.from_numpy(sub.data.astype(np.float32)))


def batch_tensors(lf: ListFeatures, rows: np.ndarray, width: int, parts: Sequence[str]) -> dict[str, torch.Tensor]:
    """Feature tensors of the lists at ``rows`` (query rows), cut to the first ``width`` positions.

    ``parts`` picks ``candidate`` (``c_*``), ``query`` (``q_*``), ``shared`` (``s_*``) and
    ``dense``; candidate bags are row-major ``[len(rows) * width]`` (empty bags at padding).
    """
    rows = np.asarray(rows, dtype=np.int64)
    flat = (rows[:, None] * lf.list_size + np.arange(width)[None, :]).ravel()
    out: dict[str, torch.Tensor] = {}
    if "candidate" in parts:
        out["c_idx"], out["c_off"], out["c_w"] = bag_tensors(lf.candidate, flat)
    if "query" in parts:
        out["q_idx"], out["q_off"], out["q_w"] = bag_tensors(lf.query, rows)
    if "shared" in parts:
        out["s_idx"], out["s_off"], out["s_w"] = bag_tensors(lf.shared, flat)
    if "dense" in parts:
        out["dense"] = torch.from_numpy(np.ascontiguousarray(lf.dense[rows, :width]))
    return out


def init_module(module: nn.Module, seed: int) -> nn.Module:
    """Re-initialise every parameter from a local ``torch.Generator(seed)`` (no global RNG).

    Linear layers get torch's default scheme (Kaiming-uniform weights, ``a = sqrt(5)``; bias
    uniform in ``±1/sqrt(fan_in)``); embedding bags ``N(0, 1)`` except one-column bags (linear
    models), which start at 0 like their bias; PReLU slopes 0.25.
    """
    g = torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        for _name, sub in module.named_modules():
            if isinstance(sub, nn.Linear):
                nn.init.kaiming_uniform_(sub.weight, a=math.sqrt(5), generator=g)
                if sub.bias is not None:
                    bound = 1.0 / math.sqrt(sub.in_features) if sub.in_features else 0.0
                    nn.init.uniform_(sub.bias, -bound, bound, generator=g)
            elif isinstance(sub, (nn.EmbeddingBag, nn.Embedding)):
                if sub.embedding_dim == 1:
                    sub.weight.zero_()
                else:
                    nn.init.normal_(sub.weight, 0.0, 1.0, generator=g)
            elif isinstance(sub, nn.PReLU):
                sub.weight.fill_(0.25)
    return module


def build_module(cls: type[nn.Module], seed: int, **kwargs: Any) -> nn.Module:
    """``cls(**kwargs)`` initialised by :func:`init_module` (construction leaves global RNG untouched)."""
    with torch.random.fork_rng(devices=[]):
        module = cls(**kwargs)
    return init_module(module, seed)


def module_device(module: nn.Module) -> torch.device:
    return next(module.parameters()).device


def predict(module: nn.Module, lf: ListFeatures, parts: Sequence[str], *, batch_queries: int = 256,
            max_cells: int | None = None) -> np.ndarray:
    """``[n_queries, list_size]`` float64 scores of every list (eval mode, no grad; 0 at padding).

    ``max_cells`` caps ``queries * width**2`` per batch (pairwise modules).
    """
    n_q, width = lf.mask.shape
    out = np.zeros((n_q, width), dtype=np.float64)
    if n_q == 0 or width == 0:
        return out
    step = max(1, int(batch_queries))
    if max_cells is not None:
        step = max(1, min(step, max_cells // max(1, width * width)))
    device = module_device(module)
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            for lo in range(0, n_q, step):
                rows = np.arange(lo, min(n_q, lo + step))
                batch = batch_tensors(lf, rows, width, parts)
                batch = {k: v.to(device) for k, v in batch.items()}
                mask = torch.from_numpy(lf.mask[rows].copy()).to(device)
                scores = module(mask=mask, **batch).float().cpu().numpy().astype(np.float64)
                out[rows] = np.where(lf.mask[rows], scores, 0.0)
    finally:
        module.train(was_training)
    return out


def save_weights(module: nn.Module, directory: Path) -> None:
    """``state_dict`` -> ``directory/model.safetensors`` (CPU, contiguous; temp file + rename)."""
    from safetensors.torch import save_file

    state = {k: v.detach().to("cpu").contiguous() for k, v in module.state_dict().items()}
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / WEIGHTS_FILE
    tmp = temp_beside(final)
    try:
        save_file(state, str(tmp), metadata={"format": "pt"})
        publish(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def load_weights(module: nn.Module, directory: Path) -> nn.Module:
    """Load ``directory/model.safetensors`` into ``module`` (strict; a shape mismatch is an error).

    Raises:
        InvalidArgumentError: naming the file: missing, truncated or damaged, or weights of
            another shape than ``module``'s.
    """
    from safetensors.torch import load_file

    from gradebench.scorers._weight_files import check_weight_file, load_error

    path = directory / WEIGHTS_FILE
    if not path.is_file():
        raise InvalidArgumentError(f"no {WEIGHTS_FILE} in the model folder", path=directory,
                                   hint="give the folder that the scorer's save() wrote")
    check_weight_file(path, error=InvalidArgumentError, hint=CORRUPT_HINT)
    try:
        state = load_file(str(path), device="cpu")
    except Exception as e:  # noqa: BLE001 - what the header check cannot see (e.g. an unreadable file)
        raise load_error(e, path, what="the saved weights", error=InvalidArgumentError,
                         hint=CORRUPT_HINT) from None
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as e:
        raise InvalidArgumentError(f"the saved weights do not fit the config ({str(e).splitlines()[0]})",
                                   path=path, hint="load with the config saved next to the weights") from None
    module.eval()
    return module
