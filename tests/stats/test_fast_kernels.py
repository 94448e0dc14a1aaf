"""The fast kernels give exactly what the plain ones give: the sign-flip count and shared bootstrap draws."""

from __future__ import annotations

import numpy as np
import pytest

from gradebench.stats import BootstrapDraws, bootstrap_ci
from gradebench.stats import _resampling as R


def _cases():
    rng = np.random.default_rng(7)
    yield "normal", rng.standard_normal(300)
    yield "discrete", rng.choice([0, 0, 0, 0.5, -0.5, 1 / 3, -1 / 3, 0.25], 257)  # ties, as NDCG differences give
    yield "sparse", np.r_[1.0, -1.0, 0.5, np.zeros(61)]  # most flips change nothing
    yield "scaled", rng.choice([0.0, 1.0, -1.0], 100) * 1e-9
    yield "zeros", np.zeros(20)
    yield "odd length", rng.standard_normal(13 * 8 + 3)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("n_draws", [1, 999, 3000])
def test_sign_flip_count_is_the_slow_count(alternative, n_draws):
    for name, d in _cases():
        observed = float(R.mean_rows(d[None])[0])
        tol = R.tie_tolerance(d)
        slow = R.count_extreme(R.sign_flip_means(d, n_draws, R.make_rng(3)), observed, alternative, tol)
        fast = R.sign_flip_count(d, n_draws, R.make_rng(3), observed, alternative, tol)
        assert fast == slow, name


def test_shared_draws_give_the_same_intervals():
    rng = np.random.default_rng(1)
    draws = BootstrapDraws()
    columns = [rng.random(50), rng.random(50), np.r_[rng.random(49), np.nan], rng.random(50)]
    for method in ("percentile", "bca"):
        for seed in (0, 5):
            for values in columns:
                kw = dict(n_resamples=500, seed=seed, confidence=0.9, method=method, nan_policy="omit")
                assert bootstrap_ci(values, draws=draws, **kw) == bootstrap_ci(values, **kw)


def test_shared_draws_beyond_their_memory_still_agree():
    values = np.random.default_rng(2).random(40)
    draws = BootstrapDraws(max_bytes=0)  # keeps nothing
    for _ in range(2):
        assert bootstrap_ci(values, n_resamples=300, draws=draws) == bootstrap_ci(values, n_resamples=300)
