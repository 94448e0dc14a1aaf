"""Binary-relevance metrics: average precision (MAP), reciprocal rank (MRR), P@k, R@k.

An item is relevant when it is valid and its grade is ``>= threshold``. The default
``threshold=1`` is the trec_eval / rax / ranx convention for integer grades; for quality
scores in [0, 1] pass a float threshold (e.g. ``MAP(threshold=0.5)``).

Definitions (rank r = 1-based position; R = number of relevant items in the list):

    AP@k = (1/R) sum_{r <= k, rel(r)} P@r      (denominator R, as trec_eval map_cut and rax)
    RR@k = 1 / (rank of the first relevant item) if it is <= k, else 0
    P@k  = (#relevant in the top k) / k         (k = list length when k is None; a list
                                                 shorter than k counts as padded with
                                                 non-relevant items, as trec_eval P_k)
    R@k  = (#relevant in the top k) / R

Queries with R = 0 score 0 under ``no_relevant="zero"`` (default; trec_eval, rax) or NaN,
excluded and counted, under ``"exclude"``; P@k is 0 for them. Queries with no valid item
are NaN, excluded and counted.

Ties: ``"average"`` (default) gives the exact expected value over all orderings of tied
items (McSherry & Najork 2008). For a tie group of n items holding r relevant ones,
starting after c positions that hold r_b relevant items, the expected precision term at
offset j (0-based) inside the group is ``(r/n) (r_b + 1 + j (r-1)/(n-1)) / (c + j + 1)``,
and the probability that the first relevant item sits at offset j is
``C(n-1-j, r-1) / C(n, r)``. ``"stable"``/``"trec"`` rank tied items by index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from gradebench.metrics._batch import Batch, mark_undefined, nan_where, safe_divide
from gradebench.metrics._ranking import exclusive_cumsum
from gradebench.metrics._rows import row_sum
from gradebench.metrics.spec import UNIT, MetricSpec, cutoff, position_weights, register

NoRelevant = Literal["zero", "exclude"]
Ties = Literal["average", "stable", "trec"]


def _ranked_relevance(batch: Batch, threshold: float, ties: str) -> tuple[np.ndarray, np.ndarray]:
    """Relevance in ranked order ``[n, L]`` and its exclusive cumsum ``[n, L+1]``."""

    def make() -> tuple[np.ndarray, np.ndarray]:
        rel = batch.ranking(ties).take(batch.relevant(threshold))
        return rel, exclusive_cumsum(rel)

    return batch.cached(("ranked_relevance", threshold, ties), make)


def n_relevant(batch: Batch, threshold: float) -> np.ndarray:
    """``[n]`` number of relevant valid items per query."""
    return batch.cached(("n_relevant", threshold), lambda: row_sum(batch.relevant(threshold)))


def hits_at_k(batch: Batch, k: int | None, threshold: float, ties: str) -> np.ndarray:
    """``[n]`` expected number of relevant items in the top k."""
    rk = batch.ranking(ties)
    rel, _ = _ranked_relevance(batch, threshold, ties)
    reach = rk.reach(cutoff(k, batch.list_size))
    w = np.broadcast_to(rk.group_mean_weight(position_weights(k, batch.list_size)), rel.shape)
    return np.einsum("ij,ij->i", rel[:, :reach], w[:, :reach])


def ap_values(batch: Batch, k: int | None, threshold: float, ties: str) -> np.ndarray:
    """``[n]`` average precision at k (0 when there is no relevant item)."""
    rk = batch.ranking(ties)
    rel, cum = _ranked_relevance(batch, threshold, ties)
    n = cutoff(k, batch.list_size)
    ranks = np.arange(1, n + 1)
    if rk.trivial:
        terms = rel[:, :n] * cum[:, 1 : n + 1] / ranks
    else:
        before = rk.at_start(cum)[:, :n]
        r = rk.at_end(cum)[:, :n] - before
        size = rk.group_size()[:, :n]
        offset = np.arange(n) - rk.start[:, :n]
        within = safe_divide(offset * (r - 1.0), size - 1.0)
        terms = (r / size) * (before + 1.0 + within) / ranks
    return safe_divide(row_sum(terms), n_relevant(batch, threshold))


def rr_values(batch: Batch, k: int | None, threshold: float, ties: str) -> np.ndarray:
    """``[n]`` reciprocal rank of the first relevant item within the top k (0 if none)."""
    rk = batch.ranking(ties)
    rel, cum = _ranked_relevance(batch, threshold, ties)
    n = cutoff(k, batch.list_size)
    has = cum[:, -1] > 0
    first = np.argmax(rel > 0, axis=1)  # first relevant position (0 when none; masked by has)
    rows = np.arange(batch.n_queries)
    if rk.trivial:
        return np.where(has & (first < n), 1.0 / (first + 1.0), 0.0)
    start = rk.start[rows, first]
    size = (rk.end[rows, first] - start).astype(np.float64)
    r = cum[rows, rk.end[rows, first]] - cum[rows, start]
    out = np.zeros(batch.n_queries)
    none_yet = np.ones(batch.n_queries)  # P(no relevant item in the group's first j slots)
    for j in range(int(size[has].max(initial=1))):
        live = has & (j < size) & (start + j < n)
        left = np.where(live, size - j, 1.0)
        out += np.where(live, none_yet * r / left / (start + j + 1.0), 0.0)
        none_yet = none_yet * np.where(live, (size - r - j) / left, 0.0)
    return out


def _finish(values: np.ndarray, batch: Batch, threshold: float, no_relevant: str) -> np.ndarray:
    return mark_undefined(values, batch, no_relevant, lambda: n_relevant(batch, threshold) == 0)


@register
@dataclass(frozen=True)
class MAP(MetricSpec):
    """Average precision per query at ``k`` (its mean over queries is MAP).

    Shapes: ``[n_queries, list_size]`` -> ``[n_queries]``. See the module docstring.

    Example (rax reference lists; mean 0.638889):
        >>> from gradebench.metrics import average_precision
        >>> average_precision([[0.5, 2.0, 1.0, -1.0, 0.3], [1.2, 0.1, 0.8, 2.5, -0.4],
        ...                    [0.3, 0.2, 0.1, 0.0, -0.1]],
        ...                   [[0, 2, 1, 0, 3], [1, 0, 0, 2, 0], [0, 0, 0, 0, 0]]).round(6).tolist()
        [0.916667, 1.0, 0.0]
    """

    family = "map"
    value_range = UNIT
    k: int | None = None
    threshold: float = 1.0
    ties: Ties = "average"
    no_relevant: NoRelevant = "zero"

    def compute(self, batch: Batch) -> np.ndarray:
        values = ap_values(batch, self.k, self.threshold, self.ties)
        return _finish(values, batch, self.threshold, self.no_relevant)


@register
@dataclass(frozen=True)
class MRR(MetricSpec):
    """Reciprocal rank of the first relevant item per query (its mean is MRR).

    Example:
        >>> from gradebench.metrics import reciprocal_rank
        >>> reciprocal_rank([[0.5, 2.0, 1.0]], [[1, 0, 0]]).tolist()
        [0.3333333333333333]
    """

    family = "mrr"
    value_range = UNIT
    k: int | None = None
    threshold: float = 1.0
    ties: Ties = "average"
    no_relevant: NoRelevant = "zero"

    def compute(self, batch: Batch) -> np.ndarray:
        values = rr_values(batch, self.k, self.threshold, self.ties)
        return _finish(values, batch, self.threshold, self.no_relevant)


@register
@dataclass(frozen=True)
class Precision(MetricSpec):
    """P@k: relevant items in the top k, divided by k (list length when ``k=None``).

    Example:
        >>> from gradebench.metrics import precision
        >>> precision([[0.5, 2.0, 1.0]], [[1, 0, 2]], k=2).tolist()
        [0.5]
    """

    family = "precision"
    value_range = UNIT
    k: int | None = None
    threshold: float = 1.0
    ties: Ties = "average"

    def compute(self, batch: Batch) -> np.ndarray:
        den = batch.n_valid if self.k is None else self.k
        values = safe_divide(hits_at_k(batch, self.k, self.threshold, self.ties), den)
        return nan_where(values, batch.empty)


@register
@dataclass(frozen=True)
class Recall(MetricSpec):
    """R@k: relevant items in the top k, divided by all relevant items of the list.

    Example:
        >>> from gradebench.metrics import recall
        >>> recall([[0.5, 2.0, 1.0]], [[1, 0, 2]], k=2).tolist()
        [0.5]
    """

    family = "recall"
    value_range = UNIT
    k: int | None = None
    threshold: float = 1.0
    ties: Ties = "average"
    no_relevant: NoRelevant = "zero"

    def compute(self, batch: Batch) -> np.ndarray:
        hits = hits_at_k(batch, self.k, self.threshold, self.ties)
        values = safe_divide(hits, n_relevant(batch, self.threshold))
        return _finish(values, batch, self.threshold, self.no_relevant)
