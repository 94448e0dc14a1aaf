"""Whole-explanation metrics for fact ranking (paper 001, Jansen et al., Sec. 6.2).

The explanation a ranker returns is its top-k facts M (the paper's TFR-BERT uses k = 8).
With G the gold explanation's facts (boolean array ``gold``) and a fact relevant when its
expert grade is ``>= threshold`` (default 1: "non-zero expert relevance rating"):

    Relevance@k    = |relevant facts in M| / |M|,  |M| = min(k, number of valid facts)
    Completeness@k = |G ∩ M| / |G|
    F1ex@k         = 2 Rel Comp / (Rel + Comp)   (0 when both are 0)
    CompB@k        = 1 if every important gold fact is in M, else 0

"Important" facts are the ``important`` array passed to :func:`evaluate` if given, else
gold facts with grade ``>= important_threshold`` (default 2: "important or higher").

Undefined values are NaN, excluded and counted: Completeness/F1ex with no gold fact, CompB
with no important fact, any metric on an empty list.

Ties: ``"average"`` (default) gives the exact expected Relevance, Completeness and CompB
over all orderings of tied facts (a fact of a tie group straddling the cut is in M with
probability slots/size); F1ex is then the harmonic mean of the expected Relevance and
Completeness (not the expected harmonic mean). ``"stable"``/``"trec"`` rank tied facts by
index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from gradebench.metrics._batch import Batch, nan_where, safe_divide
from gradebench.metrics._ranking import exclusive_cumsum
from gradebench.metrics._rows import row_sum
from gradebench.metrics.spec import UNIT, MetricSpec, cutoff, position_weights, register

Ties = Literal["average", "stable", "trec"]


def _expected_in_top_k(batch: Batch, x: np.ndarray, k: int, ties: str) -> np.ndarray:
    """``[n]`` expected sum of per-item values ``x`` over the top-k items."""
    rk = batch.ranking(ties)
    ranked = rk.take(x)
    reach = rk.reach(cutoff(k, batch.list_size))
    w = np.broadcast_to(rk.group_mean_weight(position_weights(k, batch.list_size)), ranked.shape)
    return np.einsum("ij,ij->i", ranked[:, :reach], w[:, :reach])


def relevance_values(batch: Batch, k: int, threshold: float, ties: str) -> np.ndarray:
    hits = _expected_in_top_k(batch, batch.relevant(threshold), k, ties)
    returned = np.minimum(batch.n_valid, k)
    return nan_where(safe_divide(hits, returned), batch.empty)


def completeness_values(batch: Batch, k: int, ties: str, metric: str) -> np.ndarray:
    gold = batch.extra("gold", metric).astype(np.float64)
    n_gold = row_sum(gold)
    found = _expected_in_top_k(batch, gold, k, ties)
    return nan_where(safe_divide(found, n_gold), batch.empty | (n_gold == 0))


def compb_values(batch: Batch, k: int, ties: str, important_threshold: float, metric: str) -> np.ndarray:
    gold = batch.extra("gold", metric)
    important = batch.extras.get("important")
    if important is None:
        important = gold & (batch.labels >= important_threshold)
    elif batch.mask is not None:
        important = important & batch.mask
    rk = batch.ranking(ties)
    cum = exclusive_cumsum(rk.take(important.astype(np.float64)))
    total = cum[:, -1]
    undefined = batch.empty | (total == 0)
    n_pos = batch.list_size
    if k >= n_pos:
        return nan_where(np.ones(batch.n_queries), undefined)
    rows = np.arange(batch.n_queries)
    if rk.trivial:
        start = np.full(batch.n_queries, k - 1)
        end = start + 1
    else:
        start, end = rk.start[:, k - 1], rk.end[:, k - 1]  # the tie group at the cut
    inside = cum[rows, end] - cum[rows, start]
    after = total - cum[rows, end]
    slots = (k - start).astype(np.float64)
    size = (end - start).astype(np.float64)
    prob = np.where(after > 0, 0.0, 1.0)
    for t in range(int(inside.max(initial=0))):
        live = t < inside
        prob *= np.where(live, (slots - t) / np.where(live, size - t, 1.0), 1.0)
    return nan_where(np.maximum(prob, 0.0), undefined)


@dataclass(frozen=True)
class _Explanation(MetricSpec):
    k: int
    ties: Ties = "average"


@register
@dataclass(frozen=True)
class Relevance(_Explanation):
    """Share of the top-k facts that are relevant (grade ``>= threshold``).

    Example:
        >>> from gradebench.metrics import explanation_relevance
        >>> explanation_relevance([[0.9, 0.8, 0.1]], [[2, 0, 1]], k=2).tolist()
        [0.5]
    """

    family = "relevance"
    value_range = UNIT
    threshold: float = 1.0

    def compute(self, batch: Batch) -> np.ndarray:
        return relevance_values(batch, self.k, self.threshold, self.ties)


@register
@dataclass(frozen=True)
class Completeness(_Explanation):
    """Share of gold facts among the top-k facts (needs ``gold``).

    Example:
        >>> from gradebench.metrics import explanation_completeness
        >>> explanation_completeness([[0.9, 0.8, 0.1]], [[2, 0, 1]], k=2,
        ...                          gold=[[True, False, True]]).tolist()
        [0.5]
    """

    family = "completeness"
    value_range = UNIT
    requires = ("gold",)

    def compute(self, batch: Batch) -> np.ndarray:
        return completeness_values(batch, self.k, self.ties, self.name)


@register
@dataclass(frozen=True)
class F1ex(_Explanation):
    """Harmonic mean of Relevance@k and Completeness@k (needs ``gold``).

    Example:
        >>> from gradebench.metrics import explanation_f1
        >>> explanation_f1([[0.9, 0.8, 0.1]], [[2, 0, 1]], k=2,
        ...                gold=[[True, False, True]]).tolist()
        [0.5]
    """

    family = "f1ex"
    value_range = UNIT
    requires = ("gold",)
    threshold: float = 1.0

    def compute(self, batch: Batch) -> np.ndarray:
        rel = relevance_values(batch, self.k, self.threshold, self.ties)
        comp = completeness_values(batch, self.k, self.ties, self.name)
        return safe_divide(2.0 * rel * comp, rel + comp)  # NaN stays NaN


@register
@dataclass(frozen=True)
class CompB(_Explanation):
    """1 if every important gold fact is among the top-k facts (needs ``gold``).

    Example:
        >>> from gradebench.metrics import explanation_compb
        >>> explanation_compb([[0.9, 0.8, 0.1]], [[2, 0, 3]], k=2,
        ...                   gold=[[True, False, True]]).tolist()
        [0.0]
    """

    family = "compb"
    value_range = UNIT
    requires = ("gold",)
    important_threshold: float = 2.0

    def compute(self, batch: Batch) -> np.ndarray:
        return compb_values(batch, self.k, self.ties, self.important_threshold, self.name)
