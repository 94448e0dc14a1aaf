"""bootstrap_ci: closed-form cases, determinism, coverage, BCa, custom statistics, scipy cross-check."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest
import scipy.stats

from gradebench.stats import ConfidenceInterval, _resampling, bootstrap_ci


def _normal(n: int, seed: int, loc: float = 0.0) -> np.ndarray:
    return np.random.default_rng(seed).normal(loc, 1.0, size=n)


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("statistic", ["mean", "median"])
def test_constant_values_give_a_degenerate_interval(method, statistic):
    ci = bootstrap_ci([0.1] * 7, statistic=statistic, method=method, n_resamples=500)
    assert ci.low == ci.high == ci.estimate == pytest.approx(0.1, rel=1e-15)
    assert ci.width == 0.0


def test_interval_of_normal_draws_covers_zero_with_the_textbook_width():
    x = _normal(500, seed=11)
    ci = bootstrap_ci(x, n_resamples=5000, seed=0)
    assert ci.contains(0.0)
    assert ci.low < ci.estimate < ci.high
    expected_width = 2 * 1.959964 * x.std(ddof=1) / np.sqrt(x.size)
    assert ci.width == pytest.approx(expected_width, rel=0.1)


def test_coverage_over_many_datasets_is_near_nominal():
    rng = np.random.default_rng(2024)
    hits = sum(bootstrap_ci(rng.normal(size=40), n_resamples=1000, seed=i).contains(0.0) for i in range(200))
    assert 0.88 <= hits / 200 <= 0.99  # nominal 0.95; the percentile interval is slightly narrow at n=40


def test_same_seed_same_interval_different_seed_different():
    x = _normal(100, seed=1)
    first = bootstrap_ci(x, seed=5, n_resamples=2000)
    again = bootstrap_ci(x, seed=5, n_resamples=2000)
    other = bootstrap_ci(x, seed=6, n_resamples=2000)
    assert first == again  # bit-for-bit
    assert (other.low, other.high) != (first.low, first.high)
    assert other.estimate == first.estimate


def test_chunk_size_does_not_change_the_result(monkeypatch):
    x = _normal(37, seed=2)
    expected = bootstrap_ci(x, n_resamples=1001, seed=3, method="bca")
    for elements in (1, 50, 111):
        monkeypatch.setattr(_resampling, "CHUNK_ELEMENTS", elements)
        assert bootstrap_ci(x, n_resamples=1001, seed=3, method="bca") == expected


def test_does_not_touch_the_global_rng():
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    bootstrap_ci(_normal(50, seed=3), n_resamples=200)
    assert np.array_equal(np.random.get_state()[1], before)


def test_higher_confidence_gives_a_wider_nested_interval():
    x = _normal(80, seed=4)
    narrow = bootstrap_ci(x, confidence=0.8, seed=9)
    wide = bootstrap_ci(x, confidence=0.99, seed=9)
    assert wide.low < narrow.low < narrow.high < wide.high


def _scipy_bootstrap(x: np.ndarray, method: str, seed: int):
    kwargs = {"n_resamples": 10_000, "method": method}
    key = "rng" if "rng" in inspect.signature(scipy.stats.bootstrap).parameters else "random_state"
    kwargs[key] = np.random.default_rng(seed)
    return scipy.stats.bootstrap((x,), np.mean, **kwargs).confidence_interval


@pytest.mark.parametrize(("method", "scipy_method"), [("percentile", "percentile"), ("bca", "BCa")])
def test_agrees_with_scipy_bootstrap(method, scipy_method):
    x = np.random.default_rng(8).exponential(size=150)
    ours = bootstrap_ci(x, method=method, n_resamples=10_000, seed=21)
    theirs = _scipy_bootstrap(x, scipy_method, seed=99)  # another stream: agreement up to Monte Carlo error
    assert abs(ours.low - theirs.low) < 0.1 * ours.width
    assert abs(ours.high - theirs.high) < 0.1 * ours.width


def test_bca_shifts_a_right_skewed_mean_interval_to_the_right():
    x = np.random.default_rng(5).lognormal(sigma=1.2, size=60)
    pct = bootstrap_ci(x, method="percentile", seed=1)
    bca = bootstrap_ci(x, method="bca", seed=1)
    assert bca.low > pct.low and bca.high > pct.high


def test_bca_on_symmetric_data_is_close_to_percentile():
    x = _normal(300, seed=6)
    pct = bootstrap_ci(x, method="percentile", seed=1)
    bca = bootstrap_ci(x, method="bca", seed=1)
    assert bca.low == pytest.approx(pct.low, abs=0.05 * pct.width)
    assert bca.high == pytest.approx(pct.high, abs=0.05 * pct.width)


def mean_over_queries(x):
    return x.mean(axis=1)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_callable_mean_matches_the_builtin_mean(method):
    x = np.random.default_rng(7).exponential(size=90)
    builtin = bootstrap_ci(x, method=method, seed=2)
    custom = bootstrap_ci(x, statistic=mean_over_queries, method=method, seed=2)
    assert custom.statistic == "mean_over_queries"
    assert custom.estimate == builtin.estimate
    # same draws; BCa's jackknife is closed-form for "mean" and generic for the callable
    assert custom.low == pytest.approx(builtin.low, rel=1e-12)
    assert custom.high == pytest.approx(builtin.high, rel=1e-12)


def test_callable_statistic_over_rows_ratio_of_sums():
    rng = np.random.default_rng(9)
    rows = np.column_stack([rng.integers(0, 5, size=60), rng.integers(5, 10, size=60)]).astype(float)

    def ratio(x):
        return x[..., 0].sum(axis=1) / x[..., 1].sum(axis=1)

    ci = bootstrap_ci(rows, statistic=ratio, method="bca", n_resamples=2000)
    assert ci.estimate == pytest.approx(rows[:, 0].sum() / rows[:, 1].sum())
    assert ci.low < ci.estimate < ci.high
    assert ci.n == 60


def test_median_estimate():
    x = [5.0, 1.0, 3.0, 2.0]
    assert bootstrap_ci(x, statistic="median", n_resamples=100).estimate == 2.5


def test_nan_policy_omit_drops_and_counts():
    x = _normal(30, seed=10)
    with_nan = np.insert(x, [3, 17], np.nan)
    ci = bootstrap_ci(with_nan, nan_policy="omit", seed=4)
    assert ci.n == 30 and ci.n_omitted == 2
    clean = bootstrap_ci(x, seed=4)
    assert (ci.estimate, ci.low, ci.high) == (clean.estimate, clean.low, clean.high)


def test_accepts_bool_and_int_values():
    ci = bootstrap_ci([True, False, True, True], n_resamples=100)
    assert ci.estimate == 0.75
    assert bootstrap_ci([1, 0, 1, 1], n_resamples=100) == ci


def test_to_dict_is_json_ready_and_complete():
    ci = bootstrap_ci(_normal(20, seed=12), n_resamples=100, method="bca")
    record = json.loads(json.dumps(ci.to_dict(), allow_nan=False))
    assert record == ci.to_dict()
    assert ConfidenceInterval(**record) == ci
    assert record["method"] == "bca" and record["seed"] == 0 and record["n_resamples"] == 100
    assert all(type(v) in (float, int, str) for v in record.values())
