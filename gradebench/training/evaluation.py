"""The one evaluation path over lists: typed metric specs of ``[n_queries, list_size]`` scores.

:func:`evaluate_lists` is :func:`gradebench.metrics.evaluate` (one function computing every
per-query and corpus value from ``(scores, relevance, mask)``) applied to a
:class:`~gradebench.benchmark.lists.Lists`' relevance grades and mask. Every evaluation of scores
on lists goes through it:

* training runs: each validation pass scores :func:`validation_metrics` (:data:`VALIDATION_METRICS`
  plus the run's ``eval_metric``) with :func:`list_metrics`; training logs and checkpoint
  selection key them ``eval_<canonical name>`` (:func:`metric_key`), the convention of
  ``transformers.Trainer``;
* the learned validity figures of a build (:mod:`gradebench.experiments.validity`);
* a result record's metric suite (:func:`gradebench.experiments.evaluate.evaluate_scorer`).

Metrics are spec objects (``NDCG(k=5)``), never strings parsed on the way; a metric name a user
typed (``--eval-metric``, ``TrainOptions.eval_metric``) becomes a spec once, through
:func:`gradebench.metrics.as_metric`. All metrics use gradebench's defaults (exp2 gain,
``ties="average"``, MAP/MRR threshold 1, i.e. every grade >= 1 is relevant); an undefined value
(e.g. Kendall tau of constant scores on every list) is NaN here and ``None`` in JSON history
records (:func:`json_ready`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from gradebench.benchmark.lists import Lists
from gradebench.metrics import (
    MAP,
    MRR,
    NDCG,
    EvalResult,
    KendallTau,
    MetricSpec,
    PairwiseAgreement,
    SeparationRatio,
    Spearman,
    as_metric,
    evaluate,
)

#: metrics every validation pass reports, in this order (``ndcg@3``, ``ndcg@5``, ``map``, ``mrr``,
#: ``kendall``, ``spearman``, ``pairwise_agreement``, ``separation_ratio``)
VALIDATION_METRICS: tuple[MetricSpec, ...] = (
    NDCG(k=3), NDCG(k=5), MAP(), MRR(), KendallTau(), Spearman(), PairwiseAgreement(), SeparationRatio(),
)
#: the selection metric of a training run unless its options name another
DEFAULT_EVAL_METRIC: MetricSpec = NDCG(k=5)


def evaluate_lists(scores: Any, lists: Lists, metrics: Sequence[MetricSpec]) -> EvalResult:
    """``metrics`` of ``scores`` (``[n_queries, list_size]``) against ``lists``' relevance, masked by ``lists.mask``.

    Raises:
        InvalidArgumentError: bad shapes, NaN/inf scores at valid positions, strings or
            duplicates among ``metrics`` (see :func:`gradebench.metrics.evaluate`).
    """
    return evaluate(np.asarray(scores, dtype=np.float64), lists.relevance, metrics, mask=lists.mask)


def validation_metrics(eval_metric: MetricSpec | str = DEFAULT_EVAL_METRIC) -> tuple[MetricSpec, ...]:
    """:data:`VALIDATION_METRICS`, plus ``eval_metric`` at the end if it is not among them.

    Raises:
        UnknownNameError / InvalidArgumentError: ``eval_metric`` is a name that does not parse.
    """
    extra = as_metric(eval_metric)
    return VALIDATION_METRICS if extra in VALIDATION_METRICS else (*VALIDATION_METRICS, extra)


def canonical_metric(metric: MetricSpec | str) -> str:
    """The canonical name of a metric (``NDCG@5`` -> ``ndcg@5``); unknown names raise."""
    return as_metric(metric).name


def metric_key(metric: MetricSpec | str, prefix: str = "eval") -> str:
    """The log/selection key of a metric: ``metric_key(NDCG(k=5)) == metric_key("NDCG@5") == "eval_ndcg@5"``."""
    return f"{prefix}_{canonical_metric(metric)}"


def list_metrics(scores: np.ndarray, lists: Lists, *,
                 eval_metric: MetricSpec | str = DEFAULT_EVAL_METRIC) -> dict[str, float]:
    """The validation metrics of ``scores`` (``[n_queries, list_size]``) on ``lists``' relevance.

    Returns canonical metric name -> float (the mean over queries, or the corpus value for
    ``separation_ratio``) for :func:`validation_metrics` of ``eval_metric``, in that order.

    Example:
        >>> r = list_metrics(lists.relevance, lists)  # a perfect ranking
        >>> r["ndcg@5"], r["kendall"]
        (1.0, 1.0)
    """
    specs = validation_metrics(eval_metric)
    return {name: float(v) for name, v in evaluate_lists(scores, lists, specs).values(specs).items()}


def json_ready(value: Any) -> Any:
    """``value`` with NaN/inf floats (also inside dicts/lists) replaced by ``None``."""
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else None
    if isinstance(value, np.integer):
        return int(value)
    return value
