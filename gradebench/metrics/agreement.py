"""Agreement metrics: pairwise agreement, top-1 accuracy, rank-to-class accuracy.

* ``pairwise_agreement`` (paper 000, App. D: ListNet 87%, RankNet 76%, MSE 62%): over all
  pairs of valid items with different labels, the share whose predicted order matches the
  label order. A pair the scorer ties counts 1/2 under ``ties="average"`` (default: the
  expected agreement of a random tie-break), and is resolved by item index under
  ``"stable"`` (lower index first) or ``"trec"`` (higher index first). A list with no pair
  of different labels is NaN, excluded and counted.
* ``top1_accuracy`` (pick-the-most-plausible): 1 if the top-scored item has the list's
  maximum label. With tied top scores: the share of tied top items holding the maximum
  label (``"average"``), or the first/last tied item by index (``"stable"``/``"trec"``).
* ``rank_class_accuracy`` (paper 002): sort items by score, cut the ranking into segments
  sized by the class counts (the labels sorted descending give the class of each rank),
  and count the items whose class is their own label. For a balanced list this is the
  paper's "equal segments". Meant for discrete grades (with all-distinct labels it is the
  share of items at exactly their ideal rank). With ``"average"``, the expected accuracy
  over all orderings of tied items.

Empty lists (mask all False) are NaN, excluded and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from gradebench.metrics._batch import Batch, nan_where, safe_divide
from gradebench.metrics._pairs import label_ties, n_pairs, signed_sum
from gradebench.metrics._rows import row_max, row_sum
from gradebench.metrics.spec import UNIT, MetricSpec, register

Ties = Literal["average", "stable", "trec"]


def pairwise_agreement_values(batch: Batch, ties: str) -> np.ndarray:
    """``[n]`` share of differently-labelled pairs that the scores order the same way.

    With ``J`` such pairs and ``S`` = concordant minus discordant among them (score ties
    resolved by ``ties``, or counting 0 under ``"average"``), the share is ``(1 + S/J) / 2``:
    a tied pair counts 1/2.
    """
    judged = n_pairs(batch) - label_ties(batch)
    values = 0.5 * (1.0 + safe_divide(signed_sum(batch, ties), judged))
    return nan_where(values, judged == 0)


def top1_values(batch: Batch, ties: str) -> np.ndarray:
    """``[n]`` (expected) 1 if the top-scored item has the maximum label."""
    s, y, m = batch.scores, batch.labels, batch.mask
    if m is not None:
        s = np.where(m, s, -np.inf)
        y = np.where(m, y, -np.inf)
    top = s == row_max(s)[:, None]
    best = y == row_max(y)[:, None]
    if m is not None:
        top &= m
    if ties == "average":
        values = safe_divide(row_sum(top & best), row_sum(top))
    else:
        n_pos = batch.list_size
        if ties == "stable":
            pick = np.argmax(top, axis=1)
        else:
            pick = n_pos - 1 - np.argmax(top[:, ::-1], axis=1)
        values = best[np.arange(batch.n_queries), pick].astype(np.float64)
    return nan_where(values, batch.empty)


def rank_class_values(batch: Batch, ties: str) -> np.ndarray:
    """``[n]`` share of items whose rank segment's class equals their label."""
    rk = batch.ranking(ties)
    ranked = rk.take(batch.labels)  # labels in predicted order
    target = batch.ideal_labels()  # class assigned to each rank
    n_pos = batch.list_size
    valid_pos = np.arange(n_pos) < batch.n_valid[:, None]
    if rk.trivial:
        hits = row_sum((ranked == target) & valid_pos)
    else:
        # expected matches: position p receives a uniformly random item of its tie group
        size = rk.group_size()
        hits = np.zeros(batch.n_queries)
        span = int(size.max())
        for d in range(-(span - 1), span):
            lo, hi = max(0, -d), n_pos - max(0, d)  # positions p with p + d in range
            same_group = rk.start[:, lo:hi] == rk.start[:, lo + d : hi + d]
            match = same_group & (ranked[:, lo + d : hi + d] == target[:, lo:hi])
            match &= valid_pos[:, lo:hi]
            hits += np.einsum("ij,ij->i", match, 1.0 / size[:, lo:hi])
    return nan_where(safe_divide(hits, batch.n_valid), batch.empty)


@register
@dataclass(frozen=True)
class PairwiseAgreement(MetricSpec):
    """Share of differently-labelled pairs ordered like their labels (ties: see module).

    Example:
        >>> from gradebench.metrics import pairwise_agreement
        >>> pairwise_agreement([[0.9, 0.5, 0.5]], [[2, 1, 0]]).round(6).tolist()
        [0.833333]
    """

    family = "pairwise_agreement"
    value_range = UNIT
    ties: Ties = "average"

    def compute(self, batch: Batch) -> np.ndarray:
        return pairwise_agreement_values(batch, self.ties)


@register
@dataclass(frozen=True)
class Top1Accuracy(MetricSpec):
    """1 if the top-scored item is among the maximum-label items (ties: see module).

    Example:
        >>> from gradebench.metrics import top1_accuracy
        >>> top1_accuracy([[0.9, 0.9, 0.1]], [[2, 1, 0]]).tolist()
        [0.5]
    """

    family = "top1_accuracy"
    value_range = UNIT
    ties: Ties = "average"

    def compute(self, batch: Batch) -> np.ndarray:
        return top1_values(batch, self.ties)


@register
@dataclass(frozen=True)
class RankClassAccuracy(MetricSpec):
    """Rank-to-class accuracy (paper 002): segments of the ranking sized by class counts.

    Example:
        >>> from gradebench.metrics import rank_class_accuracy
        >>> rank_class_accuracy([[0.9, 0.8, 0.2, 0.1]], [[1, 0, 1, 0]]).tolist()
        [0.5]
    """

    family = "rank_class_accuracy"
    value_range = UNIT
    ties: Ties = "average"

    def compute(self, batch: Batch) -> np.ndarray:
        return rank_class_values(batch, self.ties)
