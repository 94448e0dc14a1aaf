"""Bad input raises InvalidArgumentError with a one-line message and a fix hint."""

from __future__ import annotations

import numpy as np
import pytest

from gradebench.errors import InvalidArgumentError
from gradebench.stats import bootstrap_ci, holm, paired_bootstrap_test, paired_randomization_test

GOOD = [0.1, 0.5, 0.3, 0.8]
OTHER = [0.2, 0.4, 0.4, 0.6]


def _bad_statistic(x):
    return x.mean()  # reduces everything: wrong shape


def _nan_statistic(x):
    return np.full(x.shape[0], np.nan)


BAD_CALLS = {
    "empty": (lambda: bootstrap_ci([]), "empty"),
    "one query": (lambda: bootstrap_ci([0.3]), "at least 2"),
    "scalar": (lambda: bootstrap_ci(0.3), "scalar"),
    "2-D for mean": (lambda: bootstrap_ci([[0.1, 0.2], [0.3, 0.4]]), "1-D"),
    "strings": (lambda: bootstrap_ci(["a", "b"]), "real numbers"),
    "None inside": (lambda: bootstrap_ci([0.1, None]), "real numbers"),
    "complex": (lambda: bootstrap_ci(np.array([1j, 2j])), "real numbers"),
    "nan": (lambda: bootstrap_ci([0.1, np.nan, 0.3]), "NaN"),
    "all nan omitted": (lambda: bootstrap_ci([np.nan, np.nan, 0.3], nan_policy="omit"), "after omitting 2"),
    "inf": (lambda: bootstrap_ci([0.1, np.inf]), "infinite"),
    "-inf even with omit": (lambda: bootstrap_ci([0.1, -np.inf, 0.2], nan_policy="omit"), "infinite"),
    "confidence 1": (lambda: bootstrap_ci(GOOD, confidence=1.0), "confidence"),
    "confidence 0": (lambda: bootstrap_ci(GOOD, confidence=0), "confidence"),
    "confidence 95": (lambda: bootstrap_ci(GOOD, confidence=95), "confidence"),
    "confidence nan": (lambda: bootstrap_ci(GOOD, confidence=float("nan")), "confidence"),
    "confidence True": (lambda: bootstrap_ci(GOOD, confidence=True), "confidence"),
    "n_resamples 0": (lambda: bootstrap_ci(GOOD, n_resamples=0), "n_resamples"),
    "n_resamples float": (lambda: bootstrap_ci(GOOD, n_resamples=1e4), "n_resamples"),
    "seed None": (lambda: bootstrap_ci(GOOD, seed=None), "seed"),
    "seed negative": (lambda: bootstrap_ci(GOOD, seed=-1), "seed"),
    "method": (lambda: bootstrap_ci(GOOD, method="basic"), "method"),
    "statistic name": (lambda: bootstrap_ci(GOOD, statistic="average"), "statistic"),
    "statistic shape": (lambda: bootstrap_ci(GOOD, statistic=_bad_statistic), "shape"),
    "statistic nan": (lambda: bootstrap_ci(GOOD, statistic=_nan_statistic), "non-finite"),
    "nan_policy": (lambda: bootstrap_ci(GOOD, nan_policy="drop"), "nan_policy"),
    "length mismatch": (lambda: paired_bootstrap_test(GOOD, OTHER[:3]), "same shape"),
    "paired 2-D": (lambda: paired_randomization_test([GOOD], [OTHER]), "1-D"),
    "paired nan": (lambda: paired_randomization_test(GOOD, [0.2, np.nan, 0.4, 0.6]), "NaN"),
    "paired empty": (lambda: paired_randomization_test([], []), "empty"),
    "alternative": (lambda: paired_randomization_test(GOOD, OTHER, alternative="two_sided"), "alternative"),
    "ci_method": (lambda: paired_bootstrap_test(GOOD, OTHER, ci_method="BCa"), "ci_method"),
    "paired n_resamples": (lambda: paired_bootstrap_test(GOOD, OTHER, n_resamples=-5), "n_resamples"),
    "holm empty": (lambda: holm([]), "empty"),
    "holm empty dict": (lambda: holm({}), "empty"),
    "holm p > 1": (lambda: holm([0.2, 1.5]), "position 1"),
    "holm p < 0": (lambda: holm({"x": -0.1}), "for 'x'"),
    "holm p nan": (lambda: holm([float("nan")]), "[0, 1]"),
    "holm p string": (lambda: holm(["0.01"]), "[0, 1]"),
    "holm string": (lambda: holm("0.01"), "sequence"),
    "holm scalar": (lambda: holm(0.01), "sequence"),
    "holm 2-D": (lambda: holm(np.array([[0.1, 0.2]])), "1-D"),
    "holm alpha": (lambda: holm([0.01], alpha=0.0), "alpha"),
    "holm alpha > 1": (lambda: holm([0.01], alpha=5), "alpha"),
}


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_bad_input_raises_a_typed_one_line_error_with_a_hint(name):
    call, fragment = BAD_CALLS[name]
    with pytest.raises(InvalidArgumentError) as info:
        call()
    err = info.value
    assert isinstance(err, ValueError)
    assert fragment in err.message
    assert err.hint
    assert "\n" not in str(err)
