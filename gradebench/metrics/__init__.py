"""Ranking metrics over dense ``[n_queries, list_size]`` arrays, with masks for ragged lists.

Three layers:

* specs: typed frozen dataclasses, e.g. ``NDCG(k=5, gain="linear", ties="trec")``, whose
  canonical ``name`` (``ndcg@5[gain=linear,ties=trec]``) round-trips through
  :func:`parse_metric` (for CLI strings only; :func:`as_metric` takes either); all registered
  in :data:`METRICS`;
* :func:`evaluate`: many specs at once -> :class:`EvalResult` (per-query arrays, means,
  excluded counts, corpus-level values);
* plain functions (:func:`ndcg`, :func:`average_precision`, ...), one per metric.

Conventions shared by all metrics (details in each module):

* ``mask``: True = valid item; masked-out values are ignored (NaN padding is fine).
* Bad input (shape mismatch, NaN/inf at valid positions, negative grades for a gain,
  ``k <= 0``, unknown names) raises a :class:`~gradebench.errors.GradebenchError`.
* An undefined value is NaN, excluded from the mean and counted in ``n_excluded``: a query
  with no valid item (every per-query metric), a constant list (correlations), no pair of
  different labels (pairwise agreement), and, only if asked (``no_relevant="exclude"``), no
  relevant item (NDCG, MAP, MRR, recall); by default that last case scores 0 like
  trec_eval, rax and ranx.
* Tie policy ``ties``: ``"average"`` (default: expected value over all orderings of tied
  items), ``"stable"`` (candidate order), ``"trec"`` (trec_eval: higher index first).
"""

from __future__ import annotations

from gradebench.metrics.agreement import PairwiseAgreement, RankClassAccuracy, Top1Accuracy
from gradebench.metrics.binary import MAP, MRR, Precision, Recall
from gradebench.metrics.correlation import KendallTau, Spearman, SpearmanRho
from gradebench.metrics.dcg import DCG, NDCG
from gradebench.metrics.evaluation import EvalResult, evaluate
from gradebench.metrics.explanation import CompB, Completeness, F1ex, Relevance
from gradebench.metrics.functional import (
    average_precision,
    dcg,
    explanation_compb,
    explanation_completeness,
    explanation_f1,
    explanation_relevance,
    kendall_tau,
    ndcg,
    pairwise_agreement,
    precision,
    query_separation_ratio,
    rank_class_accuracy,
    recall,
    reciprocal_rank,
    separation_ratio,
    spearman_rho,
    tier_eta2,
    top1_accuracy,
)
from gradebench.metrics.parse import as_metric, parse_metric
from gradebench.metrics.separation import QuerySeparationRatio, SeparationRatio, TierEta2
from gradebench.metrics.spec import METRICS, MetricSpec

__all__ = [
    "METRICS",
    "MetricSpec",
    "EvalResult",
    "evaluate",
    "parse_metric",
    "as_metric",
    # specs
    "DCG",
    "NDCG",
    "MAP",
    "MRR",
    "Precision",
    "Recall",
    "KendallTau",
    "SpearmanRho",
    "Spearman",
    "PairwiseAgreement",
    "Top1Accuracy",
    "RankClassAccuracy",
    "SeparationRatio",
    "QuerySeparationRatio",
    "TierEta2",
    "Relevance",
    "Completeness",
    "F1ex",
    "CompB",
    # functions
    "dcg",
    "ndcg",
    "average_precision",
    "reciprocal_rank",
    "precision",
    "recall",
    "kendall_tau",
    "spearman_rho",
    "pairwise_agreement",
    "top1_accuracy",
    "rank_class_accuracy",
    "separation_ratio",
    "query_separation_ratio",
    "tier_eta2",
    "explanation_relevance",
    "explanation_completeness",
    "explanation_f1",
    "explanation_compb",
]
