"""``evaluate(scores, labels, metrics, mask=None)``: many metrics over many queries at once.

Inputs are checked once; queries are then processed in blocks (so temporaries stay small
and cache-friendly) and every metric of a block shares the block's sorts and gains.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradebench.errors import InvalidArgumentError
from gradebench.metrics._batch import Batch
from gradebench.metrics._inputs import as_mask, check_inputs, check_nonnegative
from gradebench.metrics.spec import MetricSpec

#: items per block of queries (rows = BLOCK_ITEMS // list_size)
BLOCK_ITEMS = 1 << 16


@dataclass(frozen=True)
class EvalResult:
    """Metric values for one set of queries.

    Attributes:
        per_query: canonical metric name -> ``[n_queries]`` float64 values; NaN marks an
            excluded query (undefined value, e.g. a constant list for Kendall tau).
        means: name -> mean over the non-excluded queries (NaN if all are excluded).
        n_excluded: name -> number of NaN (excluded) queries.
        corpus: name -> value, for corpus-level metrics (e.g. ``separation_ratio``).
        n_queries: number of queries.
    """

    per_query: dict[str, np.ndarray]
    means: dict[str, float]
    n_excluded: dict[str, int]
    corpus: dict[str, float] = field(default_factory=dict)
    n_queries: int = 0

    def summary(self) -> dict[str, float]:
        """One number per metric: the mean for per-query metrics, else the corpus value."""
        return {**self.means, **self.corpus}

    def value(self, metric: MetricSpec) -> float:
        """The one number of ``metric``: its mean over the non-excluded queries, or its corpus value.

        Raises:
            InvalidArgumentError: ``metric`` is not a spec, or was not among the evaluated specs.
        """
        name = _check_specs(metric)[0].name
        if name in self.means:
            return self.means[name]
        if name in self.corpus:
            return self.corpus[name]
        raise InvalidArgumentError(f"metric {name!r} was not evaluated",
                                   hint=f"evaluated: {', '.join(self.summary()) or '(none)'}")

    def values(self, metrics: Iterable[MetricSpec]) -> dict[str, float]:
        """``{canonical name: value(metric)}`` in the order of ``metrics``."""
        return {m.name: self.value(m) for m in metrics}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record (no per-query arrays)."""
        return {
            "n_queries": self.n_queries,
            "means": {k: _json_float(v) for k, v in self.means.items()},
            "n_excluded": dict(self.n_excluded),
            "corpus": {k: _json_float(v) for k, v in self.corpus.items()},
        }


def _json_float(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def _check_specs(metrics: Iterable[MetricSpec] | MetricSpec) -> list[MetricSpec]:
    if isinstance(metrics, MetricSpec):
        metrics = [metrics]
    if isinstance(metrics, str):
        metrics = [metrics]
    specs = list(metrics)
    for m in specs:
        if isinstance(m, str):
            raise InvalidArgumentError(
                f"evaluate() takes metric specs, got the string {m!r}",
                hint="build specs in code (e.g. NDCG(k=5)); parse_metric() is for CLI strings",
            )
        if not isinstance(m, MetricSpec):
            raise InvalidArgumentError(f"not a metric spec: {m!r}")
    names = [m.name for m in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InvalidArgumentError(f"metric(s) listed twice: {', '.join(dupes)}")
    if not specs:
        raise InvalidArgumentError("no metrics given")
    return specs


def evaluate(
    scores: Any,
    labels: Any,
    metrics: Sequence[MetricSpec] | MetricSpec,
    mask: Any = None,
    *,
    gold: Any = None,
    important: Any = None,
) -> EvalResult:
    """Compute ``metrics`` for every query of ``[n_queries, list_size]`` scores and labels.

    Args:
        scores: predicted scores ``[n_queries, list_size]`` (finite at valid positions).
        labels: graded relevance or quality scores, same shape (finite at valid positions).
        metrics: metric specs (e.g. ``[NDCG(k=5), MAP(), KendallTau()]``).
        mask: optional bool array, True = valid item. Masked-out values are ignored and may
            be NaN. A query with no valid item is NaN (excluded, counted) in every
            per-query metric.
        gold, important: optional bool arrays for the whole-explanation metrics.

    Returns:
        :class:`EvalResult` with per-query values, means, excluded counts and corpus values.

    Raises:
        InvalidArgumentError: bad shapes/dtypes, NaN/inf at valid positions, negative
            grades for a gain-based metric, strings instead of specs, duplicates.

    Example:
        >>> from gradebench.metrics import NDCG, MRR
        >>> r = evaluate([[0.5, 2.0, 1.0, -1.0, 0.3]], [[0, 2, 1, 0, 3]], [NDCG(), MRR()])
        >>> {k: round(v, 6) for k, v in r.means.items()}
        {'ndcg': 0.707528, 'mrr': 1.0}
    """
    specs = _check_specs(metrics)
    s, y, m = check_inputs(scores, labels, mask)
    extras = {}
    for name, arr in (("gold", gold), ("important", important)):
        checked = as_mask(arr, s.shape, name)
        if checked is not None:
            extras[name] = checked
    for spec in specs:
        if spec.nonnegative_labels:
            check_nonnegative(y, m, spec.name)
        for need in spec.requires:
            if need not in extras:
                raise InvalidArgumentError(
                    f"metric {spec.name!r} needs the boolean array {need!r}",
                    hint=f"pass {need}=<bool [n_queries, list_size]> to evaluate()",
                )
    if m is not None:  # masked-out values may be NaN padding: make them inert zeros
        s = np.where(m, s, 0.0)
        y = np.where(m, y, 0.0)
        if m.all():
            m = None
    n_queries, list_size = s.shape
    per_query = {spec.name: np.empty(n_queries) for spec in specs if spec.level == "query"}
    query_specs = [spec for spec in specs if spec.level == "query"]
    rows = max(1, BLOCK_ITEMS // max(list_size, 1))
    for lo in range(0, n_queries, rows):
        hi = min(lo + rows, n_queries)
        block = Batch(
            s[lo:hi],
            y[lo:hi],
            None if m is None else m[lo:hi],
            {k: v[lo:hi] for k, v in extras.items()},
        )
        for spec in query_specs:
            per_query[spec.name][lo:hi] = spec.compute(block)
    corpus_specs = [spec for spec in specs if spec.level == "corpus"]
    corpus = {}
    if corpus_specs:
        whole = Batch(s, y, m, extras)
        corpus = {spec.name: float(spec.compute(whole)) for spec in corpus_specs}
    means, n_excluded = {}, {}
    for name, values in per_query.items():
        ok = ~np.isnan(values)
        n_excluded[name] = int(n_queries - ok.sum())
        means[name] = float(values[ok].mean()) if ok.any() else float("nan")
    return EvalResult(per_query, means, n_excluded, corpus, n_queries)
