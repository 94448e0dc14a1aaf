"""Significance testing over queries for per-query metric values.

* :func:`bootstrap_ci` — seeded bootstrap confidence interval of a statistic (percentile or BCa).
* :func:`paired_bootstrap_test` — paired test of two systems on the same queries (shifted bootstrap).
* :func:`paired_randomization_test` — paired sign-flip randomization test (exact for small n).
* :func:`paired_swap_test` — the same test for a corpus statistic of per-query rows (swaps rows).
* :func:`holm` — Holm step-down correction across several comparisons.

All randomness comes from ``np.random.Generator(np.random.PCG64(seed))`` with an explicit
integer seed; results are frozen dataclasses with ``to_dict()`` for JSON records.

Example:
    >>> from gradebench.stats import paired_randomization_test, holm
    >>> bm25 = [0.31, 0.52, 0.40, 0.66, 0.12, 0.45, 0.58, 0.33]
    >>> dense = [0.42, 0.61, 0.39, 0.70, 0.25, 0.52, 0.66, 0.41]
    >>> r = paired_randomization_test(dense, bm25, n_resamples=1000)
    >>> r.exact, r.p_value        # all 2^8 sign vectors enumerated
    (True, 0.015625)
    >>> holm({"dense vs bm25": r}).reject
    (True,)
"""

from __future__ import annotations

from gradebench.stats.bootstrap import BootstrapDraws, bootstrap_ci, paired_bootstrap_test
from gradebench.stats.holm import holm
from gradebench.stats.randomization import paired_randomization_test
from gradebench.stats.results import ConfidenceInterval, HolmResult, PairedTestResult
from gradebench.stats.swap import paired_swap_test

__all__ = [
    "BootstrapDraws",
    "ConfidenceInterval",
    "HolmResult",
    "PairedTestResult",
    "bootstrap_ci",
    "holm",
    "paired_bootstrap_test",
    "paired_randomization_test",
    "paired_swap_test",
]
