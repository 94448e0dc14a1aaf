"""DCG@k and NDCG@k with exp2 or linear gain and an explicit tie policy.

Definitions (rank r = 1-based position after sorting by score):

    DCG@k  = sum_{r <= k} gain(y_(r)) / log2(r + 1)
    NDCG@k = DCG@k / IDCG@k,   IDCG@k = DCG@k of the labels sorted descending

* ``gain="exp2"``: ``2^y - 1`` (Burges et al. 2005; rax, TF-Ranking, ranx ``ndcg_burges``).
* ``gain="linear"``: ``y`` (Järvelin & Kekäläinen; trec_eval ``ndcg_cut``, ranx ``ndcg``).
* Grades must be ``>= 0`` (a negative grade is an error); they may be floats, e.g. [0, 1]
  quality scores.
* ``k=None`` is the full list; a cutoff longer than the list keeps the whole list.
* A query with no item of positive gain has IDCG = 0: its NDCG is 0 (``no_relevant="zero"``,
  the trec_eval/rax/ranx convention) or NaN, excluded from the mean and counted in
  ``n_excluded`` (``no_relevant="exclude"``).
* A query with no valid item (mask all False) is NaN, excluded and counted.
* Ties: default ``"average"``, the expected value over all orderings of tied items
  (McSherry & Najork 2008): each item gets the mean discount of the positions its tie
  group spans. ``"stable"`` would rank tied items in candidate order, which silently
  rewards a constant scorer whenever candidates are listed best-first (as the paper's
  builder lists gold, good, fair, poor, nonsense); ``"trec"`` reproduces trec_eval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from gradebench.metrics._batch import Batch, mark_undefined, nan_where, safe_divide
from gradebench.metrics.spec import NONNEG, UNIT, MetricSpec, cutoff, register

Gain = Literal["exp2", "linear"]
NoRelevant = Literal["zero", "exclude"]
Ties = Literal["average", "stable", "trec"]


def gains(labels: np.ndarray, gain: str) -> np.ndarray:
    """``2^y - 1`` or ``y`` elementwise."""
    return np.exp2(labels) - 1.0 if gain == "exp2" else labels


def discounts(k: int | None, list_size: int) -> np.ndarray:
    """``[L]`` ``1 / log2(r + 1)`` for ranks ``r <= k``, 0 beyond."""
    d = np.zeros(list_size)
    n = cutoff(k, list_size)
    d[:n] = 1.0 / np.log2(np.arange(2, n + 2))
    return d


def dcg_values(batch: Batch, k: int | None, gain: str, ties: str) -> np.ndarray:
    """``[n]`` DCG@k per query (0 for empty lists; callers mark those)."""
    rk = batch.ranking(ties)
    g = batch.cached(("gains_ranked", ties, gain), lambda: gains(rk.take(batch.labels_z), gain))
    reach = rk.reach(cutoff(k, batch.list_size))
    w = rk.group_mean_weight(discounts(k, batch.list_size))
    return _rowdot(g[:, :reach], np.broadcast_to(w, g.shape)[:, :reach])


def idcg_values(batch: Batch, k: int | None, gain: str) -> np.ndarray:
    """``[n]`` ideal DCG@k per query."""
    n = cutoff(k, batch.list_size)
    g = batch.cached(("ideal_gains", gain), lambda: gains(batch.ideal_labels(), gain))
    return _rowdot(g[:, :n], np.broadcast_to(discounts(k, batch.list_size)[:n], (len(g), n)))


def _rowdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot product; DCG and IDCG share it so a perfect ranking gives exactly 1."""
    return np.einsum("ij,ij->i", a, b)


@register
@dataclass(frozen=True)
class DCG(MetricSpec):
    """Discounted cumulative gain at ``k`` (see module docstring for conventions).

    Shapes: scores/labels/mask ``[n_queries, list_size]`` -> ``[n_queries]``.

    Example:
        >>> from gradebench.metrics import dcg
        >>> dcg([[3.0, 2.0, 1.0]], [[1, 0, 2]], gain="linear").round(6).tolist()
        [2.0]
    """

    family = "dcg"
    value_range = NONNEG
    nonnegative_labels = True
    k: int | None = None
    gain: Gain = "exp2"
    ties: Ties = "average"

    def compute(self, batch: Batch) -> np.ndarray:
        return nan_where(dcg_values(batch, self.k, self.gain, self.ties), batch.empty)


@register
@dataclass(frozen=True)
class NDCG(MetricSpec):
    """Normalized DCG at ``k``: ``DCG@k / IDCG@k`` (see module docstring for conventions).

    Shapes: scores/labels/mask ``[n_queries, list_size]`` -> ``[n_queries]``.

    Example (rax reference list 1, exp2 gain):
        >>> from gradebench.metrics import ndcg
        >>> ndcg([[0.5, 2.0, 1.0, -1.0, 0.3]], [[0, 2, 1, 0, 3]]).round(6).tolist()
        [0.707528]
    """

    family = "ndcg"
    value_range = UNIT
    nonnegative_labels = True
    k: int | None = None
    gain: Gain = "exp2"
    ties: Ties = "average"
    no_relevant: NoRelevant = "zero"

    def compute(self, batch: Batch) -> np.ndarray:
        ideal = idcg_values(batch, self.k, self.gain)
        values = safe_divide(dcg_values(batch, self.k, self.gain, self.ties), ideal)
        return mark_undefined(values, batch, self.no_relevant, lambda: ideal == 0)
