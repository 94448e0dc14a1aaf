"""Kernels shared by every loss: input checks, masks, pair tensors, ranks, gains, reductions.

Nothing here is public API; the loss modules build on it so that every loss validates, masks
and reduces in exactly the same way.

Conventions (also stated in each loss's docstring):

* ``scores`` and ``labels`` are ``[batch, list_size]``; ``mask`` (optional, same shape, bool)
  is True for valid items. Masked items are replaced by 0 on entry through ``torch.where``,
  so junk in padding (even NaN/inf) never reaches the computation and its gradient is exactly 0.
* Every loss first computes one value per list, ``per_list[b]`` (a *sum* over the list's
  units: items for pointwise losses, valid pairs for pairwise losses, the list itself for
  listwise losses), and a count of units per list. ``reduction="none"`` returns ``per_list``
  (shape ``[batch]``), ``"sum"`` its sum, and ``"mean"`` the sum divided by the total number of
  units in the batch (0 if there are none) — rax's ``reduce_fn=jnp.mean`` with ``safe_reduce``.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F

from gradebench.errors import InvalidArgumentError

Reduction = Literal["mean", "sum", "none"]
REDUCTIONS: tuple[str, ...] = ("mean", "sum", "none")
Gain = Literal["exp2", "linear"]
GAINS: tuple[str, ...] = ("exp2", "linear")

_LN2 = math.log(2.0)


class Inputs(NamedTuple):
    """Validated inputs: masked entries of ``scores`` and ``labels`` are 0."""

    scores: torch.Tensor  # [B, L] floating, differentiable w.r.t. the caller's scores
    labels: torch.Tensor  # [B, L] same dtype as scores, no gradient
    mask: torch.Tensor  # [B, L] bool


# ---------------------------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------------------------


def check_reduction(loss: str, reduction: object) -> None:
    if reduction not in REDUCTIONS:
        raise InvalidArgumentError(
            f"{loss}: reduction must be one of {', '.join(map(repr, REDUCTIONS))}, got {reduction!r}",
            hint="'mean' averages over the loss's units (see its docstring), 'none' gives one value per list",
        )


def check_positive(loss: str, param: str, value: object) -> float:
    """A finite float > 0 (temperatures)."""
    v = _as_float(loss, param, value)
    if not v > 0.0:
        raise InvalidArgumentError(
            f"{loss}: {param} must be > 0, got {value!r}",
            hint=f"use a small positive {param} such as 0.1 for a sharper approximation",
        )
    return v


def check_nonnegative(loss: str, param: str, value: object) -> float:
    """A finite float >= 0 (margins)."""
    v = _as_float(loss, param, value)
    if not v >= 0.0:
        raise InvalidArgumentError(f"{loss}: {param} must be >= 0, got {value!r}", hint=f"pass {param}=0 or more")
    return v


def check_choice(loss: str, param: str, value: object, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise InvalidArgumentError(
            f"{loss}: {param} must be one of {', '.join(map(repr, choices))}, got {value!r}",
            hint=f"pass {param}={choices[0]!r}",
        )
    return value  # type: ignore[return-value]


def check_optional_int(loss: str, param: str, value: object, *, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{loss}: {param} must be an int or None, got {value!r}")
    if value < minimum:
        raise InvalidArgumentError(f"{loss}: {param} must be >= {minimum}, got {value}", hint=f"pass {param}=None")
    return value


def check_int(loss: str, param: str, value: object, *, minimum: int) -> int:
    out = check_optional_int(loss, param, value, minimum=minimum)
    if out is None:
        raise InvalidArgumentError(f"{loss}: {param} must be an int >= {minimum}, got None")
    return out


def _as_float(loss: str, param: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(f"{loss}: {param} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise InvalidArgumentError(f"{loss}: {param} must be finite, got {value!r}")
    return v


# ---------------------------------------------------------------------------------------------
# Tensor checks
# ---------------------------------------------------------------------------------------------


def prepare(
    loss: str,
    scores: object,
    labels: object,
    mask: object,
    *,
    validate: bool,
    label_min: float | None = None,
    label_max: float | None = None,
    label_rule: str = "",
    gain: str | None = None,
) -> Inputs:
    """Check shapes/dtypes (always) and values (if ``validate``); zero out masked entries.

    Value checks (finite scores and labels, ``label_min <= labels <= label_max``) look at valid
    items only and cost one fused reduction and one host sync; ``validate=False`` skips them.
    ``gain`` (``"exp2"``/``"linear"``) sets the label range that gain needs (see
    :func:`gain_label_bounds`).
    """
    if not isinstance(scores, torch.Tensor):
        raise InvalidArgumentError(
            f"{loss}: scores must be a torch.Tensor, got {type(scores).__name__}",
            hint="pass torch.as_tensor(scores, dtype=torch.float32)",
        )
    if not scores.is_floating_point():
        raise InvalidArgumentError(
            f"{loss}: scores must be a floating-point tensor, got dtype {scores.dtype}",
            hint="cast with scores.float()",
        )
    if scores.dim() != 2:
        raise InvalidArgumentError(
            f"{loss}: scores must have shape [batch, list_size], got shape {tuple(scores.shape)}",
            hint="use scores.unsqueeze(0) for a single list",
        )
    if gain is not None:
        label_min, label_max, rule = gain_label_bounds(scores.dtype, gain)
        label_rule = f"{loss}: {rule}"
    labels_t = _as_tensor(loss, "labels", labels, scores)
    if labels_t.is_complex():
        raise InvalidArgumentError(f"{loss}: labels must be real numbers, got dtype {labels_t.dtype}")
    labels_t = labels_t.to(dtype=scores.dtype)
    if mask is None:
        mask_t = torch.ones(scores.shape, dtype=torch.bool, device=scores.device)
    else:
        mask_t = _as_tensor(loss, "mask", mask, scores)
        if mask_t.dtype != torch.bool:
            mask_t = mask_t != 0
    if validate:
        bad = ~(torch.isfinite(scores) & torch.isfinite(labels_t))
        if label_min is not None:
            bad |= labels_t < label_min
        if label_max is not None:
            bad |= labels_t > label_max
        bad &= mask_t
        if bool(bad.any()):
            raise _describe_bad(loss, scores, labels_t, mask_t, label_min, label_max, label_rule)
    zero = torch.zeros((), dtype=scores.dtype, device=scores.device)
    return Inputs(torch.where(mask_t, scores, zero), torch.where(mask_t, labels_t, zero).detach(), mask_t)


def _as_tensor(loss: str, what: str, value: object, scores: torch.Tensor) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        t = value
        if t.device != scores.device:
            raise InvalidArgumentError(
                f"{loss}: {what} is on {t.device} but scores are on {scores.device}",
                hint=f"move it with {what}.to(scores.device)",
            )
    else:
        try:
            t = torch.as_tensor(value, device=scores.device)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise InvalidArgumentError(f"{loss}: {what} cannot be converted to a tensor: {exc}") from None
    if tuple(t.shape) != tuple(scores.shape):
        raise InvalidArgumentError(
            f"{loss}: {what} shape {tuple(t.shape)} does not match scores shape {tuple(scores.shape)}",
            hint=f"{what} must be [batch, list_size] like scores; pad ragged lists and mask the padding",
        )
    return t


def _describe_bad(
    loss: str,
    scores: torch.Tensor,
    labels: torch.Tensor,
    mask: torch.Tensor,
    label_min: float | None,
    label_max: float | None,
    label_rule: str,
) -> InvalidArgumentError:
    """Slow path, only on error: name the first offending entry and how to fix it."""
    hint_mask = "mask it out (mask[b, i] = False) if it is padding"
    bad_scores = ~torch.isfinite(scores) & mask
    if bool(bad_scores.any()):
        b, i = (int(x) for x in bad_scores.nonzero()[0])
        return InvalidArgumentError(
            f"{loss}: scores[{b}, {i}] = {float(scores[b, i])} is not finite "
            f"({int(bad_scores.sum())} non-finite valid score(s) in all)",
            hint=f"check the model output for overflow; {hint_mask}",
        )
    bad_labels = ~torch.isfinite(labels) & mask
    if bool(bad_labels.any()):
        b, i = (int(x) for x in bad_labels.nonzero()[0])
        return InvalidArgumentError(
            f"{loss}: labels[{b}, {i}] = {float(labels[b, i])} is not finite",
            hint=hint_mask,
        )
    low = labels < label_min if label_min is not None else torch.zeros_like(mask)
    high = labels > label_max if label_max is not None else torch.zeros_like(mask)
    out = (low | high) & mask
    b, i = (int(x) for x in out.nonzero()[0])
    return InvalidArgumentError(
        f"{loss}: labels[{b}, {i}] = {float(labels[b, i])} is out of range; {label_rule}",
        hint=f"rescale the labels or choose another loss; {hint_mask}",
    )


# ---------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------


def reduce(per_list: torch.Tensor, count: torch.Tensor, reduction: str) -> torch.Tensor:
    """``none`` -> per_list [B]; ``sum`` -> its sum; ``mean`` -> sum / total count (0 if none)."""
    if reduction == "none":
        return per_list
    total = per_list.sum()
    if reduction == "sum":
        return total
    return total / count.to(torch.int64).sum().clamp(min=1).to(per_list.dtype)


def fill_invalid(values: torch.Tensor, mask: torch.Tensor, fill: float) -> torch.Tensor:
    """``values`` where ``mask`` is True, ``fill`` elsewhere (``mask`` broadcasts against ``values``)."""
    return torch.where(mask, values, torch.tensor(fill, dtype=values.dtype, device=values.device))


def fill_invalid_lowest(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """:func:`fill_invalid` with the dtype's lowest finite value: ~0 weight in a softmax, never NaN."""
    return fill_invalid(values, mask, torch.finfo(values.dtype).min)


def positive_or_one(x: torch.Tensor) -> torch.Tensor:
    """``x`` with its entries ``<= 0`` replaced by 1: a divisor for which ``0 / 0`` gives 0."""
    return torch.where(x > 0, x, torch.ones_like(x))


def pair_mask(labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``[B, L, L]`` bool: entry ``[b, i, j]`` is True when ``y_i > y_j`` and both are valid.

    One comparison: a masked ``i`` compares as ``-inf`` and a masked ``j`` as ``+inf``.
    """
    hi = fill_invalid(labels, mask, float("-inf"))
    lo = fill_invalid(labels, mask, float("inf"))
    return hi.unsqueeze(-1) > lo.unsqueeze(-2)


def pair_diffs(scores: torch.Tensor) -> torch.Tensor:
    """``[B, L, L]``: entry ``[b, i, j]`` is ``s_i - s_j``."""
    return scores.unsqueeze(-1) - scores.unsqueeze(-2)


def softplus(x: torch.Tensor) -> torch.Tensor:
    """``log(1 + exp(x))``, exact to rounding for every finite ``x`` and with finite gradient.

    ``F.softplus`` switches to the identity above ``threshold`` (error ``log1p(exp(-threshold))``);
    the threshold is raised from torch's default 20 to 50 (error ~2e-22) where the dtype's range
    allows ``exp(threshold)`` (float32/64, bfloat16), and kept below overflow for float16. This is
    used instead of ``F.logsigmoid``, whose CPU kernel always dispatches to the thread pool and
    is slow for small tensors on a busy machine.
    """
    threshold = min(50.0, math.log(torch.finfo(x.dtype).max) - 1.0)
    return F.softplus(x, beta=1.0, threshold=threshold)


def gains(labels: torch.Tensor, gain: str) -> torch.Tensor:
    """``2^y - 1`` (``exp2``, rax/TF-Ranking/LiPO default) or ``y`` (``linear``)."""
    if gain == "exp2":
        return torch.expm1(labels * _LN2)
    return labels


def gain_label_bounds(dtype: torch.dtype, gain: str) -> tuple[float, float | None, str]:
    """Valid label range for a gain: labels >= 0, and 2^y - 1 must not overflow ``dtype``."""
    if gain == "exp2":
        hi = float(math.floor(math.log2(torch.finfo(dtype).max)) - 1)
        return 0.0, hi, f"the gain 2^y - 1 needs 0 <= labels <= {hi:g} (graded labels, not log-odds)"
    return 0.0, None, "the linear gain needs labels >= 0"


def inverse_log2_discounts(
    n: int, *, dtype: torch.dtype, device: torch.device, k: int | None = None
) -> torch.Tensor:
    """``[n]``: ``1 / log2(1 + r)`` for ranks ``r = 1..n``, and 0 for ranks ``r > k`` if ``k`` is given."""
    disc = 1.0 / torch.log2(torch.arange(2, n + 2, dtype=dtype, device=device))
    if k is not None and k < n:
        disc = torch.where(torch.arange(n, device=device) < k, disc, torch.zeros_like(disc))
    return disc


def ideal_dcg(g: torch.Tensor, mask: torch.Tensor, k: int | None = None) -> torch.Tensor:
    """``[B]`` ideal DCG(@k) of gains ``g`` (masked entries must already be 0, gains >= 0)."""
    sorted_g = torch.sort(torch.where(mask, g, torch.zeros_like(g)), dim=-1, descending=True).values
    return (sorted_g * inverse_log2_discounts(g.shape[-1], dtype=g.dtype, device=g.device, k=k)).sum(-1)


def minus_ndcg(
    dcg: torch.Tensor, g: torch.Tensor, mask: torch.Tensor, reduction: str, k: int | None = None
) -> torch.Tensor:
    """``-dcg / IDCG(@k)`` per list (0 where IDCG = 0), reduced over the lists with a valid item.

    The common end of the NDCG surrogates: ``dcg`` ``[B]`` is the loss's smooth DCG, ``g`` the
    gains with masked entries 0.
    """
    per_list = -dcg / positive_or_one(ideal_dcg(g, mask, k))
    return reduce(per_list, mask.any(-1), reduction)


def ranks_by_score(scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``[B, L]`` 1-based ranks (int64) under ``scores``, descending, computed without gradient.

    Ties in score are broken *pessimistically*: among equal scores the item with the lower
    label is ranked first, so the result does not depend on the order of items in the list
    (items equal in both score and label are interchangeable). Masked items are ranked after
    every valid item. With distinct scores this equals rax's ``utils.ranks``.
    """
    with torch.no_grad():
        n = scores.shape[-1]
        inf = torch.tensor(float("inf"), dtype=scores.dtype, device=scores.device)
        by_label = torch.sort(labels, dim=-1, stable=True).indices
        key = torch.where(mask, -scores, inf).gather(-1, by_label)
        order = by_label.gather(-1, torch.sort(key, dim=-1, stable=True).indices)
        positions = torch.arange(1, n + 1, device=scores.device).expand_as(order)
        return torch.empty_like(order).scatter_(-1, order, positions)
