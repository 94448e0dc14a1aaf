"""Rank correlations per query: Kendall's tau-b and Spearman's rho.

Both compare the predicted scores with the labels over the valid items of each list and
are tie-aware by definition (no tie-policy parameter):

    tau_b = (C - D) / sqrt((n0 - tx) (n0 - ty)),   as ``scipy.stats.kendalltau`` (variant b)
    rho   = Pearson correlation of the average ranks, as ``scipy.stats.spearmanr``

with C/D the concordant/discordant pairs, n0 = m(m-1)/2 pairs of the m valid items, tx/ty
the pairs tied in score/label; tied items get the mean of their ranks. A list whose scores
or labels are constant (or that has fewer than 2 valid items) has no correlation: NaN,
excluded from the mean and counted in ``n_excluded``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradebench.metrics._batch import Batch, nan_where
from gradebench.metrics._pairs import concordance, label_ties, n_pairs, score_ties
from gradebench.metrics._ranking import Ranking
from gradebench.metrics.spec import SIGNED, MetricSpec, register


def _centered_ranks(rk: Ranking, batch: Batch) -> np.ndarray:
    """``[n, L]`` average rank of each item (item order) minus the mean rank; 0 if masked.

    Ranks are 0-based sorted positions; a tie group spanning positions ``[a, b)`` gets
    ``(a + b - 1) / 2``. The mean rank of ``m`` valid items is ``(m - 1) / 2``; all values
    are multiples of 1/2, so the sums of products below are exact.
    """
    n, size = rk.order.shape
    if rk.trivial:
        avg = np.broadcast_to(np.arange(size, dtype=np.float64), (n, size))
    else:
        avg = (rk.start + rk.end - 1) / 2.0
    centered = avg - (batch.n_valid[:, None] - 1) / 2.0
    if batch.mask is not None:  # masked items sit at positions >= m
        centered = np.where(np.arange(size) < batch.n_valid[:, None], centered, 0.0)
    out = np.empty((n, size))
    np.put_along_axis(out, rk.order, centered, axis=1)
    return out


def spearman_values(batch: Batch) -> np.ndarray:
    """``[n]`` Spearman's rho per query (NaN where undefined)."""
    rx = _centered_ranks(batch.ranking("average"), batch)
    ry = _centered_ranks(batch.label_ranking(), batch)
    cov = np.einsum("ij,ij->i", rx, ry)
    vx = np.einsum("ij,ij->i", rx, rx)
    vy = np.einsum("ij,ij->i", ry, ry)
    undefined = (vx == 0) | (vy == 0)
    den = np.sqrt(np.where(undefined, 1.0, vx * vy))
    return nan_where(np.clip(cov / den, -1.0, 1.0), undefined)


def kendall_values(batch: Batch) -> np.ndarray:
    """``[n]`` Kendall's tau-b per query (NaN where undefined)."""
    n0 = n_pairs(batch)
    prod = (n0 - score_ties(batch)) * (n0 - label_ties(batch))
    undefined = prod <= 0
    value = concordance(batch) / np.sqrt(np.where(undefined, 1.0, prod))
    return nan_where(np.clip(value, -1.0, 1.0), undefined)


@register
@dataclass(frozen=True)
class SpearmanRho(MetricSpec):
    """Spearman's rank correlation per query (see module docstring).

    Shapes: scores/labels/mask ``[n_queries, list_size]`` -> ``[n_queries]``.

    Example:
        >>> from gradebench.metrics import spearman_rho
        >>> spearman_rho([[0.9, 0.5, 0.7], [1.0, 1.0, 1.0]], [[2, 0, 1], [2, 1, 0]]).tolist()
        [1.0, nan]
    """

    family = "spearman"
    value_range = SIGNED

    def compute(self, batch: Batch) -> np.ndarray:
        return spearman_values(batch)


@register
@dataclass(frozen=True)
class KendallTau(MetricSpec):
    """Kendall's tau-b per query (see module docstring).

    Shapes: scores/labels/mask ``[n_queries, list_size]`` -> ``[n_queries]``.

    Example:
        >>> from gradebench.metrics import kendall_tau
        >>> kendall_tau([[0.9, 0.5, 0.7, 0.1]], [[3, 1, 1, 0]]).round(6).tolist()
        [0.912871]
    """

    family = "kendall"
    value_range = SIGNED

    def compute(self, batch: Batch) -> np.ndarray:
        return kendall_values(batch)


#: Short alias (``from gradebench.metrics import Spearman``).
Spearman = SpearmanRho
