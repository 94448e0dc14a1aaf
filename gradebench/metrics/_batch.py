"""A validated block of queries, with the intermediates that several metrics share.

:func:`gradebench.metrics.evaluate` cuts the queries into blocks and hands each metric
the same :class:`Batch`, so a sort (per tie policy), the ideal order of the labels or the
gains are computed once per block, not once per metric.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from gradebench.errors import InvalidArgumentError
from gradebench.metrics._ranking import Ranking, rank
from gradebench.metrics._rows import row_sum


class Batch:
    """Validated ``[n, L]`` scores/labels/mask (+ optional gold/important), with a cache.

    Args:
        scores: float64 ``[n, L]``, finite at valid positions.
        labels: float64 ``[n, L]``, finite at valid positions.
        mask: bool ``[n, L]`` or None (every item valid).
        extras: optional boolean ``[n, L]`` arrays by name (``"gold"``, ``"important"``).
    """

    def __init__(
        self,
        scores: np.ndarray,
        labels: np.ndarray,
        mask: np.ndarray | None,
        extras: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.scores = scores
        self.labels = labels
        self.mask = mask
        self.extras = extras or {}
        self.n_queries, self.list_size = scores.shape
        self._cache: dict[Hashable, Any] = {}

    def cached(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """Memoize ``make()`` under ``key`` for the lifetime of this batch."""
        try:
            return self._cache[key]
        except KeyError:
            value = self._cache[key] = make()
            return value

    @property
    def n_valid(self) -> np.ndarray:
        """``[n]`` number of valid items per query (int)."""
        if self.mask is None:
            return np.full(self.n_queries, self.list_size)
        return self.cached("n_valid", lambda: row_sum(self.mask))

    @property
    def empty(self) -> np.ndarray:
        """``[n]`` True for queries with no valid item (their metrics are NaN)."""
        return self.cached("empty", lambda: self.n_valid == 0)

    def zero_masked(self, x: np.ndarray) -> np.ndarray:
        """``x`` with masked-out entries set to 0."""
        return x if self.mask is None else np.where(self.mask, x, 0.0)

    @property
    def labels_z(self) -> np.ndarray:
        """Labels with masked-out entries set to 0."""
        return self.cached("labels_z", lambda: self.zero_masked(self.labels))

    def ranking(self, ties: str) -> Ranking:
        """Items ranked by score under tie policy ``ties`` (cached per policy)."""
        return self.cached(("ranking", ties), lambda: rank(self.scores, self.mask, ties))

    def label_ranking(self) -> Ranking:
        """Items ranked by label (ideal order), with tie groups of equal labels."""
        return self.cached("label_ranking", lambda: rank(self.labels, self.mask, "average"))

    def ideal_labels(self) -> np.ndarray:
        """``[n, L]`` labels sorted descending, masked-out entries as 0 at the end."""

        def make() -> np.ndarray:
            if self.mask is None:
                return -np.sort(-self.labels, axis=1)
            ideal = -np.sort(np.where(self.mask, -self.labels, np.inf), axis=1)
            ideal[np.isinf(ideal)] = 0.0
            return ideal

        return self.cached("ideal_labels", make)

    def relevant(self, threshold: float) -> np.ndarray:
        """``[n, L]`` float 1.0 where a valid label is ``>= threshold``, else 0.0."""

        def make() -> np.ndarray:
            rel = self.labels >= threshold
            if self.mask is not None:
                rel &= self.mask
            return rel.astype(np.float64)

        return self.cached(("relevant", threshold), make)

    def extra(self, name: str, metric: str) -> np.ndarray:
        """The boolean extra array ``name`` (masked-out entries False), or a clear error."""
        arr = self.extras.get(name)
        if arr is None:
            raise InvalidArgumentError(
                f"metric {metric!r} needs the boolean array {name!r}",
                hint=f"pass {name}=<bool [n_queries, list_size]> to evaluate()",
            )
        return arr if self.mask is None else arr & self.mask


def nan_where(values: np.ndarray, undefined: np.ndarray) -> np.ndarray:
    """``values`` with NaN where ``undefined`` is True (in place when possible)."""
    values = np.asarray(values, dtype=np.float64)
    values[undefined] = np.nan
    return values


def mark_undefined(
    values: np.ndarray, batch: Batch, no_relevant: str, nothing_relevant: Callable[[], np.ndarray]
) -> np.ndarray:
    """``values`` with NaN for empty queries and, under ``no_relevant="exclude"``, for the queries
    flagged by ``nothing_relevant()`` (``[n]`` bool, called only then); under ``"zero"`` those
    keep their value (0 for every metric that takes this parameter)."""
    undefined = batch.empty
    if no_relevant == "exclude":
        undefined = undefined | nothing_relevant()
    return nan_where(values, undefined)


def safe_divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` with 0 where ``den == 0`` (callers mark those entries separately)."""
    den = np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den != 0)
