"""Property tests (hypothesis): p-value range, symmetry, Holm invariants, interval sanity."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gradebench.stats import bootstrap_ci, holm, paired_bootstrap_test, paired_randomization_test

FAST = settings(max_examples=60, deadline=None)

metric_values = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@st.composite
def paired_runs(draw):
    n = draw(st.integers(min_value=2, max_value=25))
    a = draw(st.lists(metric_values, min_size=n, max_size=n))
    b = draw(st.lists(metric_values, min_size=n, max_size=n))
    return np.array(a), np.array(b)


@FAST
@given(paired_runs(), st.sampled_from(["two-sided", "greater", "less"]), st.integers(0, 2**32))
def test_p_values_lie_in_zero_one_and_swap_symmetrically(pair, alternative, seed):
    a, b = pair
    mirror = {"two-sided": "two-sided", "greater": "less", "less": "greater"}[alternative]
    for test in (paired_bootstrap_test, paired_randomization_test):
        r = test(a, b, alternative=alternative, n_resamples=200, seed=seed)
        assert 0.0 < r.p_value <= 1.0
        assert test(b, a, alternative=mirror, n_resamples=200, seed=seed).p_value == r.p_value


@FAST
@given(paired_runs())
def test_one_sided_p_values_cover_both_directions(pair):
    a, b = pair
    # exact test: every sign vector is in "greater" or "less" (ties in both), so p_g + p_l >= 1
    greater = paired_randomization_test(a[:10], b[:10], alternative="greater", n_resamples=1024)
    less = paired_randomization_test(a[:10], b[:10], alternative="less", n_resamples=1024)
    assert greater.exact and greater.p_value + less.p_value >= 1.0


p_value_lists = st.lists(st.floats(min_value=0.0, max_value=1.0, allow_nan=False), min_size=1, max_size=30)


@FAST
@given(p_value_lists, st.floats(min_value=1e-4, max_value=0.5))
def test_holm_invariants(p, alpha):
    r = holm(p, alpha=alpha)
    m = len(p)
    raw = np.array(p)
    adj = np.array(r.adjusted)
    assert np.all(adj >= raw) and np.all(adj <= 1.0)
    assert np.all(adj <= np.minimum(1.0, m * raw) * (1 + 1e-12))  # never above Bonferroni
    order = np.argsort(raw, kind="stable")
    assert np.all(np.diff(adj[order]) >= 0)  # monotone in the raw p-values
    # rejections are exactly the step-down ones: reject while p_(i) <= alpha / (m - i)
    expected = np.zeros(m, dtype=bool)
    for i, j in enumerate(order):
        if raw[j] * (m - i) > alpha:
            break
        expected[j] = True
    assert tuple(expected) == r.reject


@FAST
@given(p_value_lists, st.randoms(use_true_random=False))
def test_holm_is_permutation_equivariant(p, rnd):
    perm = list(range(len(p)))
    rnd.shuffle(perm)
    r = holm(p)
    shuffled = holm([p[i] for i in perm])
    assert shuffled.adjusted == tuple(r.adjusted[i] for i in perm)


@FAST
@given(
    st.lists(metric_values, min_size=2, max_size=40),
    st.sampled_from(["percentile", "bca"]),
    st.floats(min_value=0.5, max_value=0.99),
)
def test_mean_interval_lies_within_the_data_range(values, method, confidence):
    ci = bootstrap_ci(values, method=method, confidence=confidence, n_resamples=200)
    tol = 1e-12
    assert min(values) - tol <= ci.low <= ci.high <= max(values) + tol
    assert ci.n == len(values)
