"""Paired randomization test of a statistic that is not a mean of per-query values.

:func:`paired_randomization_test` flips the signs of per-query differences, which tests a
difference of *means*. A corpus statistic (a ratio of pooled standard deviations, accuracy or
macro-F1 over pooled counts) is not a mean of per-query values, but it is a function of
per-query rows (counts, sums, sums of squares). Under the null hypothesis that the two systems
are exchangeable within each query, swapping the two systems' rows of a query leaves the joint
distribution unchanged (Fisher's randomization test, with the query as the unit, as in
Smucker, Allan & Carterette 2007); :func:`paired_swap_test` draws those swaps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gradebench.errors import InvalidArgumentError
from gradebench.stats import _checks, _paired, _resampling
from gradebench.stats._checks import Alternative
from gradebench.stats._resampling import BatchedStatistic
from gradebench.stats.results import PairedTestResult

#: Above this many queries the 2^n swap patterns are never enumerated (int64 codes).
_MAX_EXACT_QUERIES = 62


def _rows(values: Any, name: str) -> np.ndarray:
    arr = _checks.as_per_query(values, name=name, one_d=False)
    if np.isnan(arr).any():
        first = int(np.argwhere(np.isnan(arr.reshape(arr.shape[0], -1)))[0][0])
        raise InvalidArgumentError(
            f"{name} holds NaN (first at query index {first})",
            hint="per-query rows of a corpus statistic are counts or sums: drop the query, or give it zeros")
    if arr.shape[0] < _checks.MIN_QUERIES:
        raise InvalidArgumentError(f"need at least {_checks.MIN_QUERIES} queries, got {arr.shape[0]}",
                                           hint="a randomization test over queries needs several queries")
    return arr


def paired_swap_test(
    a: Any,
    b: Any,
    statistic: BatchedStatistic,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    alternative: Alternative = "two-sided",
) -> PairedTestResult:
    """Paired randomization test of ``T(a) = T(b)`` for a statistic ``T`` of per-query rows.

    With ``a`` and ``b`` the rows of two systems on the same queries (shape ``[n, ...]``, row
    ``i`` of each for query ``i``) and the observed ``t = T(a) - T(b)``, each swap pattern
    ``s`` in ``{0, 1}^n`` exchanges ``a_i`` and ``b_i`` where ``s_i = 1`` and gives
    ``t_s = T(a^s) - T(b^s)``. "At least as extreme" is ``|t_s| >= |t|`` (two-sided),
    ``t_s >= t`` (greater: H1 ``T(a) > T(b)``) or ``t_s <= t`` (less), ties within
    ``1e-9 * max(|T(a)|, |T(b)|)`` counted.

    * Exact when ``2^n <= n_resamples``: every pattern is enumerated, ``p = #extreme / 2^n``.
    * Otherwise ``B = n_resamples`` patterns (a fair coin per query, drawn as
      :func:`paired_randomization_test` draws its signs): ``p = (1 + #extreme) / (B + 1)``.

    With ``T`` the mean of 1-D rows this is :func:`paired_randomization_test` (swapping the
    values of a query flips the sign of its difference).

    Args:
        a, b: per-query rows, the same shape ``[n, ...]``, finite (no NaN).
        statistic: a vectorized callable taking ``[batch, n, ...]`` (queries on axis 1) and
            returning ``[batch]``, as for :func:`gradebench.stats.bootstrap_ci`.
        n_resamples: ``B >= 1``. seed: ``PCG64`` seed (unused when exact).
        alternative: ``"two-sided"``, ``"greater"`` or ``"less"``.

    Returns:
        A :class:`PairedTestResult` with ``test="paired_swap"``, ``statistic = T(a) - T(b)``,
        and ``mean_a``/``mean_b`` holding ``T(a)``/``T(b)``.

    Example:
        >>> import numpy as np
        >>> ratio = lambda x: x[..., 0].sum(axis=1) / x[..., 1].sum(axis=1)   # pooled hits / pooled n
        >>> a = np.array([[4, 5], [5, 5], [3, 5], [5, 5]]); b = np.array([[1, 5], [2, 5], [0, 5], [1, 5]])
        >>> r = paired_swap_test(a, b, ratio)
        >>> r.exact, round(r.statistic, 2), r.p_value   # 16 patterns; only "none" and "all" are as extreme
        (True, 0.65, 0.125)
    """
    n_resamples, seed = _paired.check_test_args(n_resamples, seed, alternative)
    arr_a, arr_b = _rows(a, "a"), _rows(b, "b")
    _checks.check_same_queries(arr_a, arr_b)
    name = getattr(statistic, "__name__", None) or type(statistic).__name__
    both = np.stack([arr_a, arr_b])  # [2, n, ...]
    t_a, t_b = _resampling.apply_statistic(statistic, both, name=name)
    observed = float(t_a - t_b)
    tol = _resampling.REL_TOL * max(abs(float(t_a)), abs(float(t_b)))
    n = arr_a.shape[0]
    exact = n <= _MAX_EXACT_QUERIES and 2**n <= n_resamples
    n_draws = 2**n if exact else n_resamples
    rng = None if exact else _resampling.make_rng(seed)
    bits = np.arange(n, dtype=np.int64)
    extra = (1,) * (arr_a.ndim - 1)
    count = 0
    for start, stop in _resampling.chunks(n_draws, 2 * arr_a.size):
        if rng is None:
            codes = np.arange(start, stop, dtype=np.int64)
            swap = ((codes[:, None] >> bits[None, :]) & 1).astype(bool)
        else:
            swap = _resampling.random_signs(rng, stop - start, n)
        swap = swap.reshape(swap.shape + extra)
        null = (_resampling.apply_statistic(statistic, np.where(swap, arr_b, arr_a), name=name)
                - _resampling.apply_statistic(statistic, np.where(swap, arr_a, arr_b), name=name))
        count += _resampling.count_extreme(null, observed, alternative, tol)
    p_value = count / n_draws if exact else (count + 1) / (n_draws + 1)
    return PairedTestResult(test="paired_swap", alternative=alternative, statistic=observed, p_value=p_value,
                            mean_a=float(t_a), mean_b=float(t_b), n=n, n_omitted=0, n_resamples=n_draws,
                            exact=exact, seed=seed, ci=None)
