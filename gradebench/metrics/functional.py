"""One plain function per metric: ``ndcg(scores, labels, *, k=5, mask=None) -> [n_queries]``.

Each function builds the metric's spec and runs :func:`evaluate`, so the functions, the
specs and ``evaluate`` give identical numbers. Per-query metrics return a float64
``[n_queries]`` array (NaN = excluded query, see each spec); corpus-level metrics return a
float. Conventions and formulas are documented on the spec classes and their modules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gradebench.metrics.agreement import PairwiseAgreement, RankClassAccuracy, Top1Accuracy
from gradebench.metrics.binary import MAP, MRR, Precision, Recall
from gradebench.metrics.correlation import KendallTau, SpearmanRho
from gradebench.metrics.dcg import DCG, NDCG
from gradebench.metrics.evaluation import evaluate
from gradebench.metrics.explanation import CompB, Completeness, F1ex, Relevance
from gradebench.metrics.separation import QuerySeparationRatio, SeparationRatio, TierEta2
from gradebench.metrics.spec import MetricSpec

Array = Any


def _per_query(spec: MetricSpec, scores: Array, labels: Array, mask: Array, **extras: Array) -> np.ndarray:
    return evaluate(scores, labels, [spec], mask, **extras).per_query[spec.name]


def _corpus(spec: MetricSpec, scores: Array, labels: Array, mask: Array) -> float:
    return evaluate(scores, labels, [spec], mask).corpus[spec.name]


def dcg(scores: Array, labels: Array, *, k: int | None = None, gain: str = "exp2",
        ties: str = "average", mask: Array = None) -> np.ndarray:
    """DCG@k per query; see :class:`~gradebench.metrics.DCG`."""
    return _per_query(DCG(k=k, gain=gain, ties=ties), scores, labels, mask)


def ndcg(scores: Array, labels: Array, *, k: int | None = None, gain: str = "exp2",
         ties: str = "average", no_relevant: str = "zero", mask: Array = None) -> np.ndarray:
    """NDCG@k per query; see :class:`~gradebench.metrics.NDCG`."""
    spec = NDCG(k=k, gain=gain, ties=ties, no_relevant=no_relevant)
    return _per_query(spec, scores, labels, mask)


def average_precision(scores: Array, labels: Array, *, k: int | None = None, threshold: float = 1.0,
                      ties: str = "average", no_relevant: str = "zero", mask: Array = None) -> np.ndarray:
    """Average precision per query (mean = MAP); see :class:`~gradebench.metrics.MAP`."""
    spec = MAP(k=k, threshold=threshold, ties=ties, no_relevant=no_relevant)
    return _per_query(spec, scores, labels, mask)


def reciprocal_rank(scores: Array, labels: Array, *, k: int | None = None, threshold: float = 1.0,
                    ties: str = "average", no_relevant: str = "zero", mask: Array = None) -> np.ndarray:
    """Reciprocal rank per query (mean = MRR); see :class:`~gradebench.metrics.MRR`."""
    spec = MRR(k=k, threshold=threshold, ties=ties, no_relevant=no_relevant)
    return _per_query(spec, scores, labels, mask)


def precision(scores: Array, labels: Array, *, k: int | None = None, threshold: float = 1.0,
              ties: str = "average", mask: Array = None) -> np.ndarray:
    """P@k per query; see :class:`~gradebench.metrics.Precision`."""
    return _per_query(Precision(k=k, threshold=threshold, ties=ties), scores, labels, mask)


def recall(scores: Array, labels: Array, *, k: int | None = None, threshold: float = 1.0,
           ties: str = "average", no_relevant: str = "zero", mask: Array = None) -> np.ndarray:
    """R@k per query; see :class:`~gradebench.metrics.Recall`."""
    spec = Recall(k=k, threshold=threshold, ties=ties, no_relevant=no_relevant)
    return _per_query(spec, scores, labels, mask)


def kendall_tau(scores: Array, labels: Array, *, mask: Array = None) -> np.ndarray:
    """Kendall tau-b per query; see :class:`~gradebench.metrics.KendallTau`."""
    return _per_query(KendallTau(), scores, labels, mask)


def spearman_rho(scores: Array, labels: Array, *, mask: Array = None) -> np.ndarray:
    """Spearman rho per query; see :class:`~gradebench.metrics.SpearmanRho`."""
    return _per_query(SpearmanRho(), scores, labels, mask)


def pairwise_agreement(scores: Array, labels: Array, *, ties: str = "average",
                       mask: Array = None) -> np.ndarray:
    """Pairwise agreement per query; see :class:`~gradebench.metrics.PairwiseAgreement`."""
    return _per_query(PairwiseAgreement(ties=ties), scores, labels, mask)


def top1_accuracy(scores: Array, labels: Array, *, ties: str = "average",
                  mask: Array = None) -> np.ndarray:
    """Top-1 accuracy per query; see :class:`~gradebench.metrics.Top1Accuracy`."""
    return _per_query(Top1Accuracy(ties=ties), scores, labels, mask)


def rank_class_accuracy(scores: Array, labels: Array, *, ties: str = "average",
                        mask: Array = None) -> np.ndarray:
    """Rank-to-class accuracy per query; see :class:`~gradebench.metrics.RankClassAccuracy`."""
    return _per_query(RankClassAccuracy(ties=ties), scores, labels, mask)


def separation_ratio(scores: Array, labels: Array, *, mask: Array = None) -> float:
    """Corpus-level sigma(predicted)/sigma(true); see :class:`~gradebench.metrics.SeparationRatio`."""
    return _corpus(SeparationRatio(), scores, labels, mask)


def query_separation_ratio(scores: Array, labels: Array, *, mask: Array = None) -> np.ndarray:
    """Per-query sigma ratio; see :class:`~gradebench.metrics.QuerySeparationRatio`."""
    return _per_query(QuerySeparationRatio(), scores, labels, mask)


def tier_eta2(scores: Array, labels: Array, *, center: str = "none", mask: Array = None) -> float:
    """Corpus-level eta^2 of scores by grade; see :class:`~gradebench.metrics.TierEta2`."""
    return _corpus(TierEta2(center=center), scores, labels, mask)


def explanation_relevance(scores: Array, labels: Array, *, k: int, threshold: float = 1.0,
                          ties: str = "average", mask: Array = None) -> np.ndarray:
    """Relevance@k per query; see :class:`~gradebench.metrics.Relevance`."""
    return _per_query(Relevance(k=k, threshold=threshold, ties=ties), scores, labels, mask)


def explanation_completeness(scores: Array, labels: Array, *, k: int, gold: Array,
                             ties: str = "average", mask: Array = None) -> np.ndarray:
    """Completeness@k per query; see :class:`~gradebench.metrics.Completeness`."""
    return _per_query(Completeness(k=k, ties=ties), scores, labels, mask, gold=gold)


def explanation_f1(scores: Array, labels: Array, *, k: int, gold: Array, threshold: float = 1.0,
                   ties: str = "average", mask: Array = None) -> np.ndarray:
    """F1ex@k per query; see :class:`~gradebench.metrics.F1ex`."""
    spec = F1ex(k=k, threshold=threshold, ties=ties)
    return _per_query(spec, scores, labels, mask, gold=gold)


def explanation_compb(scores: Array, labels: Array, *, k: int, gold: Array, important: Array = None,
                      important_threshold: float = 2.0, ties: str = "average",
                      mask: Array = None) -> np.ndarray:
    """CompB@k per query; see :class:`~gradebench.metrics.CompB`."""
    spec = CompB(k=k, ties=ties, important_threshold=important_threshold)
    return _per_query(spec, scores, labels, mask, gold=gold, important=important)
