"""Paired randomization (sign-flip permutation) test over queries.

Fisher's randomization test as used for IR evaluation by Smucker, Allan & Carterette (2007),
"A comparison of statistical significance tests for information retrieval evaluation".
"""

from __future__ import annotations

from typing import Any

from gradebench.stats import _paired, _resampling
from gradebench.stats._checks import Alternative, NanPolicy
from gradebench.stats.results import PairedTestResult

#: Above this many queries the 2^n sign vectors are never enumerated (int64 codes).
_MAX_EXACT_QUERIES = 62


def paired_randomization_test(
    a: Any,
    b: Any,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    alternative: Alternative = "two-sided",
    nan_policy: NanPolicy = "raise",
) -> PairedTestResult:
    """Paired randomization test of ``mean(a) = mean(b)`` by flipping the sign of per-query differences.

    Under H0 the labels "a" and "b" are exchangeable within each query, so every sign vector
    ``s`` in ``{-1, +1}^n`` is equally likely for ``d_i = a_i - b_i``. With observed ``t = mean(d)``
    and null statistics ``t_s = mean(s * d)``, "at least as extreme" means ``|t_s| >= |t|``
    (two-sided), ``t_s >= t`` (greater: H1 mean(a) > mean(b)) or ``t_s <= t`` (less), with ties
    within ``1e-9 * max|d|`` counted.

    * Exact, when ``2^n <= n_resamples``: all ``2^n`` sign vectors are enumerated and
      ``p = #{s : t_s extreme} / 2^n`` (the observed vector is among them, so ``p >= 1/2^n``).
      The seed is not used.
    * Otherwise Monte Carlo with ``B = n_resamples`` random sign vectors (fair coin per query):
      ``p = (1 + #{b : t_b extreme}) / (B + 1)``, a valid p-value never 0
      (Phipson & Smyth 2010).

    Example:
        >>> r = paired_randomization_test([3.0, 2.0, 1.0], [0.0, 0.0, 0.0])
        >>> r.exact, r.n_resamples, r.p_value   # only +/-(1,1,1) are as extreme: 2/8
        (True, 8, 0.25)
    """
    n_resamples, seed = _paired.check_test_args(n_resamples, seed, alternative)
    x = _paired.paired_differences(a, b, nan_policy=nan_policy)

    exact = x.n <= _MAX_EXACT_QUERIES and 2**x.n <= n_resamples
    if exact:
        n_draws = 2**x.n
        null = _resampling.sign_flip_means(x.d, n_draws, None)
        count = _resampling.count_extreme(null, x.observed, alternative, _resampling.tie_tolerance(x.d))
    else:  # the same count as counting sign_flip_means(x.d, n_draws, rng), without materialising the flips
        n_draws = n_resamples
        count = _resampling.sign_flip_count(x.d, n_draws, _resampling.make_rng(seed), x.observed, alternative,
                                            _resampling.tie_tolerance(x.d))
    p_value = count / n_draws if exact else (count + 1) / (n_draws + 1)
    return _paired.paired_result(
        "paired_randomization", x, alternative=alternative, p_value=p_value, n_resamples=n_draws, exact=exact,
        seed=seed, ci=None,
    )
