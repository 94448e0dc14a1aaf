"""Bootstrap over queries: confidence intervals for a statistic, and the paired bootstrap test.

Queries are the resampling unit (Efron & Tibshirani 1993; Sakai 2006, "Evaluating evaluation
metrics based on the bootstrap"): each resample draws ``n`` queries with replacement from the
``n`` observed ones and recomputes the statistic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal

import numpy as np

from gradebench.stats import _checks, _paired, _resampling
from gradebench.stats._checks import Alternative, NanPolicy
from gradebench.stats._resampling import BatchedStatistic, BootstrapDraws
from gradebench.stats.results import ConfidenceInterval, PairedTestResult

CIMethod = Literal["percentile", "bca"]
CI_METHODS: tuple[str, ...] = ("percentile", "bca")
STATISTICS: tuple[str, ...] = ("mean", "median")

_NORMAL = NormalDist()


@dataclass(frozen=True)
class _Statistic:
    name: str
    fn: BatchedStatistic
    one_d: bool
    jackknife: Callable[[np.ndarray], np.ndarray]


def _median_rows(x: np.ndarray) -> np.ndarray:
    return np.median(x, axis=1)


def _resolve_statistic(statistic: str | BatchedStatistic) -> _Statistic:
    if callable(statistic):
        name = getattr(statistic, "__name__", None) or type(statistic).__name__
        return _Statistic(
            name, statistic, False, lambda data: _resampling.jackknife_generic(data, statistic, name=name)
        )
    _checks.check_choice("statistic", statistic, STATISTICS)
    if statistic == "mean":
        return _Statistic("mean", _resampling.mean_rows, True, _resampling.jackknife_mean)
    return _Statistic(
        "median", _median_rows, True, lambda data: _resampling.jackknife_generic(data, _median_rows, name="median")
    )


def bca_levels(boot: np.ndarray, estimate: float, jackknife: np.ndarray, confidence: float) -> tuple[float, float]:
    """Quantile levels of the bias-corrected and accelerated (BCa) interval.

    Efron & Tibshirani (1993), §14.3, with ``B`` bootstrap values ``t*_b``, the estimate ``t``,
    leave-one-out values ``t_(i)`` with mean ``t_(.)`` and ``z_q`` the standard normal quantile::

        z0 = z_{ (#{t*_b < t} + #{t*_b = t} / 2) / B }     (fraction clipped to [1/(2B), 1 - 1/(2B)])
        a  = sum (t_(.) - t_(i))^3 / (6 * (sum (t_(.) - t_(i))^2)^(3/2))   (0 if all t_(i) are equal)
        level(q) = Phi(z0 + (z0 + z_q) / (1 - a * (z0 + z_q))),  q = (1 - confidence)/2 and (1 + confidence)/2

    Returns the (low, high) levels at which to read the bootstrap quantiles.
    """
    b = boot.size
    below = np.count_nonzero(boot < estimate) + 0.5 * np.count_nonzero(boot == estimate)
    frac = min(max(below / b, 0.5 / b), 1.0 - 0.5 / b)
    z0 = _NORMAL.inv_cdf(frac)
    dev = jackknife.mean() - jackknife
    ss = float(np.sum(dev**2))
    accel = float(np.sum(dev**3)) / (6.0 * ss**1.5) if ss > 0.0 else 0.0
    tail = (1.0 - confidence) / 2.0
    levels = []
    for q in (tail, 1.0 - tail):
        w = z0 + _NORMAL.inv_cdf(q)
        denom = 1.0 - accel * w
        levels.append(_NORMAL.cdf(z0 + w / denom) if denom > 0.0 else (1.0 if w > 0 else 0.0))
    return levels[0], levels[1]


def _interval(
    data: np.ndarray,
    boot: np.ndarray,
    estimate: float,
    stat: _Statistic,
    *,
    confidence: float,
    method: str,
    statistic: str,
    n_omitted: int,
    n_resamples: int,
    seed: int,
) -> ConfidenceInterval:
    """The interval of ``estimate`` read off the bootstrap values ``boot`` of ``data``."""
    if boot.min() == boot.max():  # every resample gave the same value (e.g. constant data)
        low = high = float(boot[0])
    else:
        if method == "bca":
            levels = bca_levels(boot, estimate, stat.jackknife(data), confidence)
        else:
            tail = (1.0 - confidence) / 2.0
            levels = (tail, 1.0 - tail)
        low, high = (float(q) for q in np.quantile(boot, levels))
    return ConfidenceInterval(
        estimate=estimate,
        low=low,
        high=high,
        confidence=confidence,
        method=method,
        statistic=statistic,
        n=int(data.shape[0]),
        n_omitted=n_omitted,
        n_resamples=n_resamples,
        seed=seed,
    )


def bootstrap_ci(
    values: Any,
    *,
    statistic: str | BatchedStatistic = "mean",
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    method: CIMethod = "percentile",
    nan_policy: NanPolicy = "raise",
    draws: BootstrapDraws | None = None,
) -> ConfidenceInterval:
    """Seeded bootstrap confidence interval of a statistic over queries.

    Draws ``B = n_resamples`` resamples of the ``n`` queries with replacement, computes the
    statistic ``t*_b`` on each, and reads the interval off their empirical quantiles
    ``Q(p)`` (NumPy's default linear interpolation):

    * ``method="percentile"``: ``[Q((1 - c)/2), Q((1 + c)/2)]`` with ``c = confidence``;
    * ``method="bca"``: the same quantiles at bias-corrected, accelerated levels
      (:func:`bca_levels`; jackknife in closed form for the mean, O(n^2) otherwise).

    If every resample gives the same value (constant data) the interval is that single point.

    Args:
        values: per-query values, shape ``[n]``; or ``[n, ...]`` rows with a callable statistic.
        statistic: ``"mean"``, ``"median"``, or a vectorized callable that takes a batch of
            resamples shaped ``[batch, n, ...]`` (queries on axis 1) and returns ``[batch]``,
            for metrics that are not per-query means (e.g. a ratio of sums over queries).
        confidence: nominal coverage in (0, 1).
        n_resamples: ``B >= 1``.
        seed: seed of ``np.random.Generator(np.random.PCG64(seed))``; the same seed, input and
            NumPy version give a bit-identical interval. The global RNG is never used.
        method: ``"percentile"`` or ``"bca"``.
        nan_policy: ``"raise"`` (default) or ``"omit"`` (drop queries with NaN; see ``n_omitted``).
        draws: a :class:`BootstrapDraws` shared by many calls: the resample indices of a seed and
            query count are drawn once (the interval is the same as without it).

    Raises:
        InvalidArgumentError: fewer than 2 queries, NaN (with ``nan_policy="raise"``), inf,
            non-numeric values, or a bad argument.

    Example:
        >>> ci = bootstrap_ci([0.2, 0.4, 0.6, 0.8, 1.0], n_resamples=2000, seed=7)
        >>> ci.estimate, ci.low <= 0.6 <= ci.high, ci.n
        (0.6, True, 5)
    """
    stat = _resolve_statistic(statistic)
    confidence = _checks.check_open_unit("confidence", confidence, example=0.95)
    n_resamples = _checks.check_n_resamples(n_resamples)
    seed = _checks.check_seed(seed)
    _checks.check_choice("method", method, CI_METHODS)
    data = _checks.as_per_query(values, name="values", one_d=stat.one_d)
    (data,), n_omitted = _checks.drop_nan_rows([data], names=["values"], nan_policy=nan_policy)

    estimate = float(_resampling.apply_statistic(stat.fn, data[None], name=stat.name)[0])
    if draws is None:
        boot = _resampling.bootstrap_distribution(data, stat.fn, n_resamples, _resampling.make_rng(seed),
                                                  name=stat.name)
    else:
        boot = _resampling.bootstrap_distribution_reusing(data, stat.fn, n_resamples, seed, draws, name=stat.name)
    return _interval(
        data, boot, estimate, stat, confidence=confidence, method=method, statistic=stat.name,
        n_omitted=n_omitted, n_resamples=n_resamples, seed=seed,
    )


def paired_bootstrap_test(
    a: Any,
    b: Any,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    alternative: Alternative = "two-sided",
    confidence: float = 0.95,
    ci_method: CIMethod = "percentile",
    nan_policy: NanPolicy = "raise",
) -> PairedTestResult:
    """Paired bootstrap test of ``mean(a) = mean(b)`` over the same queries (shift method).

    With per-query differences ``d_i = a_i - b_i``, observed ``t = mean(d)`` and ``B`` bootstrap
    means ``t*_b`` of ``d`` (queries resampled with replacement), the null distribution is the
    bootstrap distribution shifted to mean zero, ``u_b = t*_b - t`` (Efron & Tibshirani 1993,
    §16.4; Sakai 2006 uses the studentized variant). The p-value, smoothed so it is never 0::

        two-sided: p = (1 + #{b : |u_b| >= |t|}) / (B + 1)
        greater:   p = (1 + #{b :  u_b >=  t }) / (B + 1)    (H1: mean(a) > mean(b))
        less:      p = (1 + #{b :  u_b <=  t }) / (B + 1)    (H1: mean(a) < mean(b))

    Comparisons count ties within ``1e-9 * max|d|``. The same resamples give ``ci``, a two-sided
    ``confidence`` interval of ``mean(a - b)`` (``ci_method`` as in :func:`bootstrap_ci`).
    With few queries (n below ~20) this test is anti-conservative (a constant nonzero difference
    gets p = 1/(B + 1)); prefer :func:`paired_randomization_test` there.

    Args:
        a, b: per-query values of two systems on the same queries, shape ``[n]`` each.
        n_resamples: ``B >= 1``. seed: ``PCG64`` seed (no global RNG).
        alternative: ``"two-sided"``, ``"greater"`` or ``"less"``.
        nan_policy: ``"raise"`` or ``"omit"`` (drops queries where a or b is NaN).

    Example:
        >>> r = paired_bootstrap_test([0.9, 0.8, 0.7, 0.9, 0.6], [0.5, 0.4, 0.6, 0.5, 0.3], seed=1)
        >>> round(r.statistic, 2), r.p_value < 0.01, r.ci.low > 0
        (0.32, True, True)
    """
    n_resamples, seed = _paired.check_test_args(n_resamples, seed, alternative)
    confidence = _checks.check_open_unit("confidence", confidence, example=0.95)
    _checks.check_choice("ci_method", ci_method, CI_METHODS)
    x = _paired.paired_differences(a, b, nan_policy=nan_policy)

    stat = _resolve_statistic("mean")
    boot = _resampling.bootstrap_distribution(x.d, stat.fn, n_resamples, _resampling.make_rng(seed), name="mean")
    count = _resampling.count_extreme(boot - x.observed, x.observed, alternative, _resampling.tie_tolerance(x.d))
    p_value = (count + 1) / (n_resamples + 1)

    ci = _interval(
        x.d, boot, x.observed, stat, confidence=confidence, method=ci_method, statistic="mean(a - b)",
        n_omitted=x.n_omitted, n_resamples=n_resamples, seed=seed,
    )
    return _paired.paired_result(
        "paired_bootstrap", x, alternative=alternative, p_value=p_value, n_resamples=n_resamples, exact=False,
        seed=seed, ci=ci,
    )
