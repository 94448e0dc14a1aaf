"""What the two paired tests share: their argument checks, the per-query differences and the
observed statistic they test, and the :class:`PairedTestResult` they return.

:func:`paired_bootstrap_test` and :func:`paired_randomization_test` differ only in how they
draw the null distribution and turn its count into a p-value; everything around that lives
here, so both report the same fields computed the same way.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from gradebench.stats import _checks, _resampling
from gradebench.stats.results import ConfidenceInterval, PairedTestResult


class Paired(NamedTuple):
    """Validated per-query values of systems ``a`` and ``b`` (NaN policy applied) and ``d = a - b``."""

    a: np.ndarray
    b: np.ndarray
    d: np.ndarray
    n_omitted: int
    observed: float  # mean(d), the tested statistic

    @property
    def n(self) -> int:
        return int(self.d.shape[0])


def check_test_args(n_resamples: object, seed: object, alternative: object) -> tuple[int, int]:
    """``(n_resamples, seed)`` checked, and ``alternative`` one of :data:`_checks.ALTERNATIVES`."""
    n_resamples = _checks.check_n_resamples(n_resamples)
    seed = _checks.check_seed(seed)
    _checks.check_choice("alternative", alternative, _checks.ALTERNATIVES)
    return n_resamples, seed


def paired_differences(a: Any, b: Any, *, nan_policy: str) -> Paired:
    """Per-query values of both systems, their differences and the observed ``mean(a - b)``."""
    arr_a, arr_b, n_omitted = _checks.paired_values(a, b, nan_policy=nan_policy)
    d = arr_a - arr_b
    return Paired(arr_a, arr_b, d, n_omitted, float(_resampling.mean_rows(d[None])[0]))


def paired_result(
    test: str,
    paired: Paired,
    *,
    alternative: str,
    p_value: float,
    n_resamples: int,
    exact: bool,
    seed: int,
    ci: ConfidenceInterval | None,
) -> PairedTestResult:
    """The result record of a paired test on ``paired``."""
    return PairedTestResult(
        test=test,
        alternative=alternative,
        statistic=paired.observed,
        p_value=p_value,
        mean_a=float(paired.a.mean()),
        mean_b=float(paired.b.mean()),
        n=paired.n,
        n_omitted=paired.n_omitted,
        n_resamples=n_resamples,
        exact=exact,
        seed=seed,
        ci=ci,
    )
