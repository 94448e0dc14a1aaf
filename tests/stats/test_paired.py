"""Paired tests: exact enumeration against brute force, shifts, symmetry, determinism."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats

from gradebench.stats import (
    PairedTestResult,
    _resampling,
    bootstrap_ci,
    paired_bootstrap_test,
    paired_randomization_test,
)

ALTERNATIVES = ["two-sided", "greater", "less"]
TESTS = [paired_bootstrap_test, paired_randomization_test]


def brute_force_randomization_p(a: list[str], b: list[str], alternative: str) -> Fraction:
    """Exact sign-flip p-value in rational arithmetic (decimal strings -> Fractions, no rounding)."""
    d = [Fraction(x) - Fraction(y) for x, y in zip(a, b, strict=True)]
    observed = sum(d) / len(d)
    hits = 0
    for signs in itertools.product((1, -1), repeat=len(d)):
        t = sum(s * x for s, x in zip(signs, d, strict=True)) / len(d)
        if alternative == "greater":
            hits += t >= observed
        elif alternative == "less":
            hits += t <= observed
        else:
            hits += abs(t) >= abs(observed)
    return Fraction(hits, 2 ** len(d))


CASES = [
    (["3", "2", "1"], ["0", "0", "0"]),
    (["0.5", "0.25", "0.75", "1", "0"], ["0.25", "0.5", "0.25", "0.5", "0"]),
    # sums that tie only up to float rounding (0.1 + 0.2 vs 0.3): ties must still count
    (["0.1", "0.2", "0.3", "0.6", "0.4", "0.2"], ["0", "0", "0", "0.3", "0.1", "0.5"]),
    (["0.9", "0.1", "0.7", "0.3", "0.5", "0.5", "0.2", "0.8"], ["0.4", "0.6", "0.2", "0.8", "0.5", "0.1", "0.9", "0.3"]),
]


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize(("a", "b"), CASES)
def test_exact_randomization_matches_brute_force(a, b, alternative):
    r = paired_randomization_test([float(x) for x in a], [float(x) for x in b], alternative=alternative)
    assert r.exact and r.n_resamples == 2 ** len(a)
    assert Fraction(r.p_value) == brute_force_randomization_p(a, b, alternative)


def test_exact_is_used_iff_all_sign_vectors_fit_in_n_resamples():
    a, b = np.arange(10.0), np.zeros(10)
    assert paired_randomization_test(a, b, n_resamples=1024).exact
    mc = paired_randomization_test(a, b, n_resamples=1023)
    assert not mc.exact and mc.n_resamples == 1023


def test_exact_ignores_the_seed():
    a, b = [0.3, 0.5, 0.1, 0.9], [0.2, 0.1, 0.4, 0.3]
    assert paired_randomization_test(a, b, seed=1).p_value == paired_randomization_test(a, b, seed=2).p_value


def test_monte_carlo_randomization_approximates_the_exact_p():
    rng = np.random.default_rng(3)
    a, b = rng.random(12), rng.random(12)
    exact = paired_randomization_test(a, b, n_resamples=4096)
    sampled = paired_randomization_test(a, b, n_resamples=4000, seed=1)
    assert exact.exact and not sampled.exact
    assert sampled.p_value == pytest.approx(exact.p_value, abs=0.03)


@pytest.mark.parametrize("test", TESTS)
def test_clear_shift_gives_small_p(test):
    rng = np.random.default_rng(0)
    b = rng.random(50)
    a = b + 0.1 + 0.02 * rng.standard_normal(50)
    for alternative, small in [("two-sided", True), ("greater", True), ("less", False)]:
        r = test(a, b, alternative=alternative, n_resamples=2000)
        assert (r.p_value < 0.01) is small, (alternative, r.p_value)
    assert test(a, b, alternative="greater", n_resamples=2000).p_value == pytest.approx(1 / 2001)


@pytest.mark.parametrize("test", TESTS)
def test_identical_systems_give_p_one(test):
    a = np.random.default_rng(1).random(40)
    r = test(a, a.copy(), n_resamples=500)
    assert r.statistic == 0.0 and r.p_value == 1.0


@pytest.mark.parametrize("test", TESTS)
def test_p_values_track_the_paired_t_test_on_normal_differences(test):
    rng = np.random.default_rng(12)
    b = rng.normal(size=200)
    a = b + rng.normal(0.15, 1.0, size=200)
    t = scipy.stats.ttest_rel(a, b)
    r = test(a, b, n_resamples=10_000, seed=3)
    assert r.p_value == pytest.approx(t.pvalue, abs=0.02)


@pytest.mark.parametrize("test", TESTS)
def test_swapping_systems_swaps_the_one_sided_alternatives(test):
    rng = np.random.default_rng(4)
    a, b = rng.random(30), rng.random(30) + 0.05
    forward = {alt: test(a, b, alternative=alt, n_resamples=999, seed=7) for alt in ALTERNATIVES}
    backward = {alt: test(b, a, alternative=alt, n_resamples=999, seed=7) for alt in ALTERNATIVES}
    assert forward["greater"].p_value == backward["less"].p_value
    assert forward["less"].p_value == backward["greater"].p_value
    assert forward["two-sided"].p_value == backward["two-sided"].p_value
    assert forward["two-sided"].statistic == -backward["two-sided"].statistic


def test_bootstrap_test_p_value_formula_on_a_constant_difference():
    # d = 0.25 on every query (exact in binary): every resample mean is 0.25, shifted to 0,
    # never as extreme as 0.25, so p = (0 + 1) / (99 + 1)
    r = paired_bootstrap_test([0.75, 0.5, 1.0], [0.5, 0.25, 0.75], n_resamples=99)
    assert r.p_value == 1 / 100
    assert r.ci.low == r.ci.high == r.statistic == 0.25
    # a difference that is constant only up to rounding (0.5 - 0.3 vs 0.6 - 0.4) gives the same p
    assert paired_bootstrap_test([0.5, 0.6, 0.7], [0.3, 0.4, 0.5], n_resamples=99).p_value == 1 / 100


def test_bootstrap_test_ci_is_the_bootstrap_ci_of_the_differences():
    rng = np.random.default_rng(5)
    a, b = rng.random(60), rng.random(60)
    r = paired_bootstrap_test(a, b, seed=8, n_resamples=3000, ci_method="bca", confidence=0.9)
    ci = bootstrap_ci(a - b, seed=8, n_resamples=3000, method="bca", confidence=0.9)
    assert (r.ci.low, r.ci.high) == (ci.low, ci.high)
    assert r.ci.statistic == "mean(a - b)"
    assert r.statistic == pytest.approx(r.mean_a - r.mean_b)


@pytest.mark.parametrize("test", TESTS)
def test_determinism(test):
    rng = np.random.default_rng(6)
    a, b = rng.random(80), rng.random(80)
    assert test(a, b, seed=1) == test(a, b, seed=1)
    assert test(a, b, seed=1).p_value != test(a, b, seed=2).p_value


@pytest.mark.parametrize("test", TESTS)
def test_chunk_size_does_not_change_the_result(test, monkeypatch):
    rng = np.random.default_rng(13)
    a, b = rng.random(37), rng.random(37)
    expected = test(a, b, seed=3, n_resamples=1001)
    monkeypatch.setattr(_resampling, "CHUNK_ELEMENTS", 50)
    assert test(a, b, seed=3, n_resamples=1001) == expected


@pytest.mark.parametrize("test", TESTS)
def test_nan_policy_omit_drops_pairs_with_any_nan(test):
    a = [0.1, np.nan, 0.3, 0.4, 0.9, 0.2]
    b = [0.0, 0.2, np.nan, 0.1, 0.5, 0.1]
    r = test(a, b, nan_policy="omit", n_resamples=200)
    assert (r.n, r.n_omitted) == (4, 2)
    clean = test([0.1, 0.4, 0.9, 0.2], [0.0, 0.1, 0.5, 0.1], n_resamples=200)
    assert (r.statistic, r.p_value) == (clean.statistic, clean.p_value)


@pytest.mark.parametrize("test", TESTS)
def test_to_dict_is_json_ready(test):
    r = test([0.2, 0.4, 0.5, 0.9], [0.1, 0.5, 0.2, 0.6], n_resamples=100)
    record = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert record == r.to_dict()
    assert record["test"] in ("paired_bootstrap", "paired_randomization")
    assert isinstance(r, PairedTestResult)
    assert r.significant(alpha=1.0)


# -- paired_swap_test: the randomization test of a corpus statistic ------------------------------------
def test_swap_test_of_the_mean_is_the_sign_flip_test():
    from gradebench.stats import paired_randomization_test, paired_swap_test

    rng = np.random.default_rng(3)
    for n in (8, 200):  # exact, then Monte Carlo with the same draws
        a, b = rng.normal(0.2, 1, n), rng.normal(0, 1, n)
        swap = paired_swap_test(a, b, lambda x: x.mean(axis=1), n_resamples=4000, seed=5)
        flip = paired_randomization_test(a, b, n_resamples=4000, seed=5)
        assert (swap.p_value, swap.exact, swap.n_resamples) == (flip.p_value, flip.exact, flip.n_resamples)
        assert swap.statistic == pytest.approx(flip.statistic) and swap.test == "paired_swap"


def test_swap_test_of_a_ratio_of_pooled_counts():
    from gradebench.stats import paired_swap_test

    ratio = lambda x: x[..., 0].sum(axis=1) / x[..., 1].sum(axis=1)  # noqa: E731
    a = np.array([[4, 5], [5, 5], [3, 5], [5, 5]], dtype=float)
    b = np.array([[1, 5], [2, 5], [0, 5], [1, 5]], dtype=float)
    r = paired_swap_test(a, b, ratio)
    assert r.exact and r.n_resamples == 16 and r.p_value == pytest.approx(2 / 16)
    assert (r.mean_a, r.mean_b) == (pytest.approx(17 / 20), pytest.approx(4 / 20))
    assert paired_swap_test(a, b, ratio, alternative="greater").p_value == pytest.approx(1 / 16)
    assert paired_swap_test(a, a, ratio).p_value == 1.0  # identical systems: every swap ties


def test_swap_test_refuses_bad_rows():
    from gradebench.errors import InvalidArgumentError
    from gradebench.stats import paired_swap_test

    mean = lambda x: x.mean(axis=1)  # noqa: E731
    with pytest.raises(InvalidArgumentError, match="NaN"):
        paired_swap_test([1.0, np.nan, 2.0], [0.0, 0.0, 0.0], mean)
    with pytest.raises(InvalidArgumentError, match="same shape"):
        paired_swap_test([1.0, 2.0, 3.0], [0.0, 0.0], mean)
    with pytest.raises(InvalidArgumentError, match="at least 2"):
        paired_swap_test([1.0], [0.0], mean)
