"""Score separation: how spread out predicted scores are relative to the true ones.

* ``separation_ratio`` (paper 000, Eq. 10): ``sigma(predicted) / sigma(true)`` over all
  valid candidates of all queries pooled, on the scores as the scorer emits them
  (corpus level; population standard deviations, the ratio does not depend on ddof).
  MSE compresses scores (0.089 in the paper), ListNet keeps them apart (0.85-0.92).
  Not scale-free: it compares the scorer's units to the label units.
* ``query_separation_ratio``: the same ratio inside each list; its mean over queries is
  reported. Lists with constant labels (or fewer than two valid items) are NaN, excluded
  and counted.
* ``tier_eta2``: the share of predicted-score variance explained by the quality grade,
  ``eta^2 = SS_between / SS_total`` with the predicted scores of all valid candidates
  grouped by label value (corpus level). Scale-free, in [0, 1]. With ``center="query"``
  each list's mean score is removed first (ranking losses leave a per-query offset free).
  Meant for discrete grades (tiers); with all-distinct labels every group is a singleton
  and eta^2 is 1.

Undefined values (constant true scores; constant predicted scores for ``tier_eta2``) are NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from gradebench.metrics._batch import Batch, nan_where, safe_divide
from gradebench.metrics._rows import row_max, row_min, row_sum
from gradebench.metrics.spec import NONNEG, UNIT, MetricSpec, register


def _pooled(batch: Batch, x: np.ndarray) -> np.ndarray:
    return x.ravel() if batch.mask is None else x[batch.mask]


def _spread(x: np.ndarray) -> float:
    """Population standard deviation; exactly 0 for constant input."""
    if x.size == 0 or x.min() == x.max():
        return 0.0
    return float(np.std(x))


def separation_ratio_value(batch: Batch) -> float:
    """Corpus-level ``sigma(scores) / sigma(labels)`` over valid candidates."""
    true = _spread(_pooled(batch, batch.labels))
    return float("nan") if true == 0 else _spread(_pooled(batch, batch.scores)) / true


def _row_mean(batch: Batch, x: np.ndarray) -> np.ndarray:
    """``[n]`` mean of each row's valid items (0 for an empty row)."""
    return safe_divide(row_sum(batch.zero_masked(x)), batch.n_valid)


def _row_var(batch: Batch, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row population variance over valid items, and a "constant row" flag."""
    n_valid = batch.n_valid
    if batch.mask is None:
        hi, lo = row_max(x), row_min(x)
    else:
        hi = row_max(np.where(batch.mask, x, -np.inf))
        lo = row_min(np.where(batch.mask, x, np.inf))
    dev = batch.zero_masked(x - _row_mean(batch, x)[:, None])
    var = safe_divide(np.einsum("ij,ij->i", dev, dev), n_valid)
    return var, ~(hi > lo)


def query_separation_values(batch: Batch) -> np.ndarray:
    """``[n]`` per-query ``sigma(scores) / sigma(labels)``."""
    var_s, const_s = _row_var(batch, batch.scores)
    var_y, const_y = _row_var(batch, batch.labels)
    var_s = np.where(const_s, 0.0, var_s)
    return nan_where(np.sqrt(safe_divide(var_s, var_y)), const_y)


def tier_eta2_value(batch: Batch, center: str) -> float:
    """Corpus-level ``SS_between / SS_total`` of scores grouped by label value."""
    scores = batch.scores
    if center == "query":
        scores = scores - _row_mean(batch, scores)[:, None]
    s = _pooled(batch, scores)
    y = _pooled(batch, batch.labels)
    if s.size == 0 or s.min() == s.max():
        return float("nan")
    _, group = np.unique(y, return_inverse=True)
    count = np.bincount(group)
    group_mean = np.bincount(group, weights=s) / count
    grand = s.mean()
    ss_between = float(np.dot(count, (group_mean - grand) ** 2))
    ss_total = float(np.dot(s - grand, s - grand))
    return float("nan") if ss_total == 0 else min(1.0, ss_between / ss_total)


@register
@dataclass(frozen=True)
class SeparationRatio(MetricSpec):
    """Corpus-level ``sigma(predicted) / sigma(true)`` over all valid candidates (Eq. 10).

    Example:
        >>> from gradebench.metrics import separation_ratio
        >>> round(separation_ratio([[0.52, 0.50, 0.48]], [[1.0, 0.5, 0.0]]), 6)
        0.04
    """

    family = "separation_ratio"
    value_range = NONNEG
    level = "corpus"

    def compute(self, batch: Batch) -> float:
        return separation_ratio_value(batch)


@register
@dataclass(frozen=True)
class QuerySeparationRatio(MetricSpec):
    """Per-query ``sigma(predicted) / sigma(true)`` (averaged over queries by evaluate).

    Example:
        >>> from gradebench.metrics import query_separation_ratio
        >>> query_separation_ratio([[2.0, 0.0], [1.0, 1.0]], [[1.0, 0.0], [1.0, 1.0]]).tolist()
        [2.0, nan]
    """

    family = "query_separation_ratio"
    value_range = NONNEG

    def compute(self, batch: Batch) -> np.ndarray:
        return query_separation_values(batch)


@register
@dataclass(frozen=True)
class TierEta2(MetricSpec):
    """Corpus-level eta^2: share of predicted-score variance explained by the grade.

    Example:
        >>> from gradebench.metrics import tier_eta2
        >>> round(tier_eta2([[0.9, 0.7, 0.2, 0.0]], [[1, 1, 0, 0]]), 6)
        0.924528
    """

    family = "tier_eta2"
    value_range = UNIT
    level = "corpus"
    center: Literal["none", "query"] = "none"

    def compute(self, batch: Batch) -> float:
        return tier_eta2_value(batch, self.center)
