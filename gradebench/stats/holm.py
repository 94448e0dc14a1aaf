"""Holm's step-down correction for several comparisons (family-wise error rate)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from numbers import Real
from typing import Any

import numpy as np

from gradebench.errors import InvalidArgumentError
from gradebench.stats import _checks
from gradebench.stats.results import HolmResult, PairedTestResult


def _as_p(value: Any, where: str) -> float:
    if isinstance(value, PairedTestResult):
        return value.p_value
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 <= float(value) <= 1.0:
        raise InvalidArgumentError(
            f"p-value {where} must be a number in [0, 1], got {value!r}",
            hint="pass raw (unadjusted) p-values, e.g. the p_value of each paired test",
        )
    return float(value)


def _collect(p_values: Any) -> tuple[tuple[Hashable, ...] | None, np.ndarray]:
    if isinstance(p_values, Mapping):
        names: tuple[Hashable, ...] | None = tuple(p_values)
        items = [_as_p(p_values[k], f"for {k!r}") for k in names]
    elif isinstance(p_values, (str, bytes)) or not hasattr(p_values, "__iter__"):
        raise InvalidArgumentError(
            f"p_values must be a sequence or a mapping name -> p-value, got {type(p_values).__name__}",
            hint="e.g. holm([0.01, 0.04]) or holm({'bm25 vs dense': 0.01})",
        )
    else:
        names = None
        arr = p_values if isinstance(p_values, np.ndarray) else np.asarray(list(p_values), dtype=object)
        if arr.ndim != 1:
            raise InvalidArgumentError(
                f"p_values must be 1-D, got shape {arr.shape}", hint="pass one p-value per comparison"
            )
        items = [_as_p(v.item() if isinstance(v, np.generic) else v, f"at position {i}") for i, v in enumerate(arr)]
    if not items:
        raise InvalidArgumentError("p_values is empty", hint="pass at least one p-value")
    return names, np.asarray(items, dtype=np.float64)


def holm(p_values: Any, *, alpha: float = 0.05) -> HolmResult:
    """Holm (1979) step-down adjusted p-values and rejections at family-wise level ``alpha``.

    With ``m`` p-values sorted ascending, ``p_(1) <= ... <= p_(m)`` (stable order for ties)::

        adj_(i) = min(1, max_{j <= i} (m - j + 1) * p_(j))

    and hypothesis ``(i)`` is rejected iff ``adj_(i) <= alpha`` — equivalently, reject while
    ``p_(i) <= alpha / (m - i + 1)`` and stop at the first failure. Adjusted values are returned
    in input order; they are ``>=`` the raw ones, ``<= min(1, m * p)`` (Bonferroni) and ordered
    like the raw ones.

    Args:
        p_values: a sequence of p-values, a mapping name -> p-value (keys kept, in order), or
            values that are :class:`PairedTestResult` (their ``p_value`` is used).
        alpha: family-wise error rate in (0, 1).

    Example:
        >>> r = holm({"A": 0.01, "B": 0.04, "C": 0.03, "D": 0.005})
        >>> [round(p, 3) for p in r.adjusted], r.reject
        ([0.03, 0.06, 0.06, 0.02], (True, False, False, True))
    """
    alpha = _checks.check_open_unit("alpha", alpha, example=0.05)
    names, p = _collect(p_values)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = (m - np.arange(m)) * p[order]
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return HolmResult(
        p_values=tuple(float(x) for x in p),
        adjusted=tuple(float(x) for x in adjusted),
        reject=tuple(bool(x) for x in adjusted <= alpha),
        alpha=alpha,
        names=names,
    )
