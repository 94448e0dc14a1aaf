"""Validation metrics of a training run: numpy only, shared by every trainer and fitted scorer.

:func:`list_metrics` scores a validation :class:`~gradebench.benchmark.lists.Lists` with the metric set
every training run reports (:data:`VALIDATION_METRICS`, plus the run's ``eval_metric``) and
returns plain floats keyed by canonical metric name (``ndcg@5``, ``kendall``, ...). Training
logs and checkpoint selection prefix them with ``eval_`` (:func:`metric_key`), the convention of
``transformers.Trainer``.

All metrics use gradebench's defaults (exp2 gain, ``ties="average"``, MAP/MRR threshold 1, i.e.
every grade >= 1 is relevant); an undefined value (e.g. Kendall tau of constant scores on every
list) is NaN here and ``None`` in JSON history records (:func:`json_ready`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradebench.benchmark.lists import Lists

#: metrics every validation pass reports (canonical names; see gradebench.metrics)
VALIDATION_METRICS: tuple[str, ...] = (
    "ndcg@3", "ndcg@5", "map", "mrr", "kendall", "spearman", "pairwise_agreement", "separation_ratio",
)


def canonical_metric(name: str) -> str:
    """The canonical name of a metric string (``NDCG@5`` -> ``ndcg@5``); unknown names raise."""
    from gradebench.metrics import parse_metric

    return parse_metric(name).name


def metric_key(name: str, prefix: str = "eval") -> str:
    """The log/selection key of a metric: ``metric_key("ndcg@5") == "eval_ndcg@5"``."""
    return f"{prefix}_{canonical_metric(name)}"


def list_metrics(scores: np.ndarray, lists: Lists, *, eval_metric: str = "ndcg@5") -> dict[str, float]:
    """The validation metrics of ``scores`` (``[n_queries, list_size]``) on ``lists``' relevance.

    Returns canonical metric name -> float (the mean over queries, or the corpus value for
    ``separation_ratio``), :data:`VALIDATION_METRICS` plus ``eval_metric`` if it is not among them.

    Example:
        >>> r = list_metrics(lists.relevance, lists)  # a perfect ranking
        >>> r["ndcg@5"], r["kendall"]
        (1.0, 1.0)
    """
    from gradebench.metrics import evaluate, parse_metric

    names = list(VALIDATION_METRICS)
    extra = canonical_metric(eval_metric)
    if extra not in names:
        names.append(extra)
    specs = [parse_metric(n) for n in names]
    result = evaluate(np.asarray(scores, dtype=np.float64), lists.relevance, specs, mask=lists.mask)
    summary = result.summary()
    return {n: float(summary[n]) for n in names}


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
