"""Holm step-down correction: textbook values, mapping keys, edge cases."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gradebench.stats import HolmResult, holm, paired_randomization_test


def test_textbook_example():
    # m = 4; sorted p: 0.005 (D), 0.01 (A), 0.03 (C), 0.04 (B)
    # scaled: 4*0.005 = 0.02, 3*0.01 = 0.03, 2*0.03 = 0.06, 1*0.04 = 0.04 -> running max 0.02, 0.03, 0.06, 0.06
    r = holm([0.01, 0.04, 0.03, 0.005], alpha=0.05)
    assert r.adjusted == pytest.approx((0.03, 0.06, 0.06, 0.02))
    assert r.reject == (True, False, False, True)
    assert r.p_values == (0.01, 0.04, 0.03, 0.005)
    assert r.names is None


def test_step_down_stops_at_the_first_non_rejection():
    # 0.01 <= 0.05/3 rejects; 0.03 > 0.05/2 stops, so 0.04 <= 0.05/1 is NOT rejected
    r = holm([0.01, 0.03, 0.04])
    assert r.adjusted == pytest.approx((0.03, 0.06, 0.06))
    assert r.reject == (True, False, False)


def test_adjusted_values_are_capped_at_one():
    r = holm([0.5, 0.6, 0.9])
    assert r.adjusted == (1.0, 1.0, 1.0)
    assert r.reject == (False, False, False)


def test_single_p_value_is_unchanged_and_zero_is_allowed():
    assert holm([0.03]).adjusted == (0.03,)
    assert holm([0.0, 1.0]).adjusted == (0.0, 1.0)


def test_ties_get_equal_adjusted_values():
    r = holm([0.02, 0.02, 0.02])
    assert r.adjusted == pytest.approx((0.06, 0.06, 0.06))


def test_mapping_keeps_keys_and_order():
    r = holm({"dense vs bm25": 0.004, "rerank vs bm25": 0.03, "rerank vs dense": 0.2}, alpha=0.05)
    assert r.names == ("dense vs bm25", "rerank vs bm25", "rerank vs dense")
    assert r.by_name() == pytest.approx({"dense vs bm25": 0.012, "rerank vs bm25": 0.06, "rerank vs dense": 0.2})
    assert r.reject == (True, False, False)
    record = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert record["method"] == "holm" and record["alpha"] == 0.05
    assert record["comparisons"][0] == {
        "name": "dense vs bm25",
        "p_value": 0.004,
        "adjusted_p_value": pytest.approx(0.012),
        "reject": True,
    }


def test_accepts_numpy_arrays_iterables_and_test_results():
    assert holm(np.array([0.01, 0.04])).adjusted == holm([0.01, 0.04]).adjusted
    assert holm(p for p in (0.01, 0.04)).adjusted == holm([0.01, 0.04]).adjusted
    result = paired_randomization_test([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
    r = holm({"a vs b": result, "c vs d": 0.5})
    assert r.p_values == (0.25, 0.5)
    assert isinstance(r, HolmResult)
