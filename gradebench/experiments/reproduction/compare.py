"""Figures with CIs and the paired tests of steps, over systems' seeds and shared queries.

* per-query metrics (the records' ``.queries.parquet``): :func:`figure` (mean over seeds, CI
  over queries of the seed-averaged values), :func:`aligned` (several systems on the queries
  they all have, averaged over the seeds they all have) and :func:`step` / :func:`value_step`
  (a sign-flip paired randomization test);
* corpus statistics of per-query rows computed from predictions (``[n_queries, n_seeds,
  n_fields]``: counts and sums): :func:`corpus_figure` (a query bootstrap of the statistic) and
  :func:`corpus_step` (:func:`gradebench.stats.paired_swap_test`).

Seeds: a comparison uses the seeds both sides have; when they share none (e.g. a one-seed
cross-encoder against a three-seed baseline) each side is averaged over its own seeds and the
step says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from gradebench.errors import InvalidArgumentError
from gradebench.experiments.conventions import TEST_RESAMPLES
from gradebench.experiments.perquery import align, mean_of_defined
from gradebench.experiments.record import json_float
from gradebench.experiments.reproduction.data import Evidence, System
from gradebench.experiments.reproduction.model import Figure, Step
from gradebench.experiments.reproduction.rules import TEST_SEED
from gradebench.stats import bootstrap_ci, paired_randomization_test, paired_swap_test

#: bootstrap resamples of the CIs computed here (from predictions); the records' own CIs use theirs
CI_RESAMPLES = 1000
CI_SEED = 0
#: a corpus statistic: ``[batch, n_queries, n_seeds, n_fields]`` rows -> ``[batch]``
CorpusStatistic = Callable[[np.ndarray], np.ndarray]


def mean_over_seeds(values: np.ndarray) -> np.ndarray:
    """``[n, S]`` -> ``[n]``: the mean of each row's defined values (NaN where none is)."""
    return mean_of_defined(values, axis=1)


def seed_matrix(ev: Evidence, system: System, metric: str,
                seeds: Sequence[int] | None = None) -> tuple[list[str], np.ndarray]:
    """``(query ids, [n_queries, n_seeds])`` over the queries every chosen seed has (first seed's order)."""
    records = [r for r in system.records if seeds is None or r.system_seed in seeds]
    ids, columns = align([ev.per_query(r, metric) for r in records])
    return ids, np.column_stack(columns).astype(np.float64)


def figure(ev: Evidence, system: System, metric: str) -> Figure:
    """The system's figure on a record metric: the mean over seeds of the records' values, with
    the CI of :data:`gradebench.experiments.reproduction.rules.RULES` (the leaderboard's)."""
    mv = [r.metrics.get(metric) for r in system.records]
    vals = [m.value for m in mv if m is not None and m.value is not None]
    value = json_float(np.mean(vals)) if vals else None
    first = system.records[0]
    n = min(r.benchmark.n_queries for r in system.records)
    if first.metrics.get(metric) is None:
        return Figure(None, n=n, seeds=system.seeds)
    if len(system.records) == 1:
        return Figure(value, mv[0].ci_low, mv[0].ci_high, n=mv[0].n, seeds=system.seeds)
    if first.metrics[metric].level == "corpus":
        lows = [m.ci_low for m in mv if m is not None and m.ci_low is not None]
        highs = [m.ci_high for m in mv if m is not None and m.ci_high is not None]
        full = len(lows) == len(mv) == len(highs)
        return Figure(value, min(lows) if full else None, max(highs) if full else None, n=n, seeds=system.seeds)
    ids, matrix = seed_matrix(ev, system, metric)
    low, high = _ci(mean_over_seeds(matrix), n_resamples=first.bootstrap.n_resamples, seed=first.bootstrap.seed,
                    confidence=first.bootstrap.confidence, method=first.bootstrap.method)
    return Figure(value, low, high, n=len(ids), seeds=system.seeds)


def _ci(values: np.ndarray, *, n_resamples: int = CI_RESAMPLES, seed: int = CI_SEED, confidence: float = 0.95,
        method: str = "percentile") -> tuple[float | None, float | None]:
    try:
        ci = bootstrap_ci(values, n_resamples=n_resamples, seed=seed, confidence=confidence, method=method,
                          nan_policy="omit")
    except InvalidArgumentError:  # fewer than 2 defined queries
        return None, None
    return json_float(ci.low), json_float(ci.high)


def values_figure(values: np.ndarray, *, seeds: Sequence[int] = ()) -> Figure:
    """The mean of per-query values (NaN omitted) with a percentile bootstrap CI (seed 0)."""
    ok = values[~np.isnan(values)]
    low, high = _ci(values)
    return Figure(json_float(ok.mean()) if ok.size else None, low, high, n=int(ok.size), seeds=tuple(seeds))


def common_seeds(systems: Sequence[System]) -> tuple[int, ...]:
    """The seeds every system has (empty when they share none)."""
    shared = set(systems[0].seeds)
    for s in systems[1:]:
        shared &= set(s.seeds)
    return tuple(sorted(shared))


def aligned(ev: Evidence, systems: Sequence[System], metric: str) -> tuple[list[str], np.ndarray, tuple[int, ...]]:
    """``(query ids, [n_systems, n_queries] seed-averaged values, seeds used)`` on the queries every
    system has, over the seeds they all have (each its own seeds when they share none)."""
    seeds = common_seeds(systems)
    ids, matrices = align([seed_matrix(ev, s, metric, seeds or None) for s in systems])
    rows = [mean_over_seeds(matrix) for matrix in matrices]
    return ids, np.vstack(rows) if rows else np.zeros((0, 0)), seeds


def value_step(part: str, metric: str, above: str, below: str, a: np.ndarray, b: np.ndarray,
               seeds: Sequence[int], *, note: str | None = None, claimed: str | None = None) -> Step:
    """The step ``above > below`` from aligned per-query values (a sign-flip randomization test)."""
    ok = ~(np.isnan(a) | np.isnan(b))
    base = dict(part=part, metric=metric, above=above, below=below, seeds=tuple(seeds), claimed=claimed)
    try:
        r = paired_randomization_test(a, b, n_resamples=TEST_RESAMPLES, seed=TEST_SEED, nan_policy="omit")
    except InvalidArgumentError:
        return Step(**base, above_value=None, below_value=None, difference=None, n_queries=int(ok.sum()),
                    test=None, p_value=None, note="fewer than 2 shared queries with defined values")
    return Step(**base, above_value=r.mean_a, below_value=r.mean_b, difference=r.statistic, n_queries=r.n,
                test=r.test, p_value=r.p_value, note=note)


def step(ev: Evidence, part: str, metric: str, above: System, below: System) -> Step:
    """The step ``above > below`` on a per-query record metric."""
    _, values, seeds = aligned(ev, [above, below], metric)
    note = None if seeds else "no shared seed: each side averaged over its own seeds"
    return value_step(part, metric, above.label, below.label, values[0], values[1], seeds, note=note)


def missing_step(part: str, metric: str, above: str, below: str, note: str, *, claimed: str | None = None) -> Step:
    """A step the records do not allow to test."""
    return Step(part=part, metric=metric, above=above, below=below, above_value=None, below_value=None,
                difference=None, n_queries=0, seeds=(), test=None, p_value=None, note=note, claimed=claimed)


# -- corpus statistics of per-query rows ----------------------------------------------------------
def corpus_figure(rows: np.ndarray, statistic: CorpusStatistic, *, seeds: Sequence[int] = ()) -> Figure:
    """The statistic of ``[n_queries, n_seeds, n_fields]`` rows with a query-bootstrap CI (seed 0)."""
    value = json_float(statistic(rows[None])[0])
    try:
        ci = bootstrap_ci(rows, statistic=statistic, n_resamples=CI_RESAMPLES, seed=CI_SEED)
        low, high = json_float(ci.low), json_float(ci.high)
    except InvalidArgumentError:  # fewer than 2 queries, or a resample without a defined value
        low = high = None
    return Figure(value, low, high, n=int(rows.shape[0]), seeds=tuple(seeds))


def corpus_step(part: str, metric: str, above: str, below: str, rows_a: np.ndarray, rows_b: np.ndarray,
                statistic: CorpusStatistic, seeds: Sequence[int], *, note: str | None = None) -> Step:
    """The step ``above > below`` on a corpus statistic (swaps of whole queries' rows)."""
    base = dict(part=part, metric=metric, above=above, below=below, seeds=tuple(seeds))
    try:
        r = paired_swap_test(rows_a, rows_b, statistic, n_resamples=TEST_RESAMPLES, seed=TEST_SEED)
    except InvalidArgumentError as e:
        return Step(**base, above_value=None, below_value=None, difference=None, n_queries=int(rows_a.shape[0]),
                    test=None, p_value=None, note=str(e))
    return Step(**base, above_value=r.mean_a, below_value=r.mean_b, difference=r.statistic, n_queries=r.n,
                test=r.test, p_value=r.p_value, note=note)


def seed_rows(ev: Evidence, system: System, seeds: Sequence[int],
              per_query_rows: Callable) -> tuple[list[str], np.ndarray]:
    """``(query ids, [n_queries, n_seeds, n_fields])``: ``per_query_rows(ev, record) -> (query ids,
    [n_queries, n_fields])`` of each chosen seed's record (its stored figures), on the queries every seed has."""
    records = [r for r in system.records if r.system_seed in seeds]
    ids, stacked = align([per_query_rows(ev, r) for r in records])
    return ids, np.stack(stacked, axis=1)


def paired_rows(ev: Evidence, a: System, b: System, per_query_rows: Callable, b_rows: Callable | None = None
                ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Both systems' rows (:func:`seed_rows`; ``b_rows`` for ``b`` if given, else ``per_query_rows``)
    on their shared queries and seeds; when they share no seed, each its own seeds, cut to the
    smaller number of seeds (so the seed axes line up)."""
    seeds = common_seeds([a, b])
    ids_a, rows_a = seed_rows(ev, a, seeds or a.seeds, per_query_rows)
    ids_b, rows_b = seed_rows(ev, b, seeds or b.seeds, b_rows or per_query_rows)
    if not seeds:  # unmatched seeds: keep as many of each as both have, in seed order
        k = min(rows_a.shape[1], rows_b.shape[1])
        rows_a, rows_b = rows_a[:, :k], rows_b[:, :k]
    where_b = {q: i for i, q in enumerate(ids_b)}
    keep = [i for i, q in enumerate(ids_a) if q in where_b]
    return rows_a[keep], rows_b[[where_b[ids_a[i]] for i in keep]], seeds
