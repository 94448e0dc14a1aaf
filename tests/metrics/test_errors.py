"""Bad input gives a typed error with a clear message, never a silent NaN."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gradebench.errors import InvalidArgumentError, UnknownNameError
from gradebench.metrics import (
    DCG,
    MAP,
    NDCG,
    CompB,
    Completeness,
    KendallTau,
    Precision,
    Relevance,
    TierEta2,
    evaluate,
    kendall_tau,
    ndcg,
    parse_metric,
)

S = np.array([[0.3, 0.2, 0.1], [0.1, 0.5, 0.4]])
Y = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]])


def test_invalid_argument_is_a_value_error():
    assert issubclass(InvalidArgumentError, ValueError)


@pytest.mark.parametrize(
    ("scores", "labels", "match"),
    [
        (S, Y[:, :2], "shape"),
        (S[0], Y[0], "1-d"),
        (S[None], Y[None], "3-d"),
        (np.zeros((0, 3)), np.zeros((0, 3)), "no queries"),
        (S.astype(str), Y, "numeric"),
        (np.array([[1, "a"]], dtype=object), np.array([[1, 0]]), "numeric"),
        (S + 1j, Y, "real"),
    ],
)
def test_bad_shapes_and_dtypes(scores, labels, match):
    with pytest.raises(InvalidArgumentError, match=match):
        evaluate(scores, labels, [NDCG()])


def test_one_dimensional_input_gets_a_hint():
    with pytest.raises(InvalidArgumentError) as err:
        ndcg(S[0], Y[0])
    assert "x[None, :]" in str(err.value)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("which", ["scores", "labels"])
def test_non_finite_values_at_valid_positions(bad, which):
    s, y = S.copy(), Y.copy()
    (s if which == "scores" else y)[1, 2] = bad
    with pytest.raises(InvalidArgumentError, match=rf"{which} has 1 NaN/inf.*query 1, item 2"):
        evaluate(s, y, [KendallTau()])


def test_non_finite_values_at_masked_positions_are_ignored():
    s, y = S.copy(), Y.copy()
    s[1, 2], y[1, 2] = np.nan, np.inf
    mask = np.ones(S.shape, dtype=bool)
    mask[1, 2] = False
    r = evaluate(s, y, [NDCG(), KendallTau()], mask)
    assert not np.isnan(r.per_query["ndcg"]).any()


def test_mask_must_be_boolean_and_same_shape():
    with pytest.raises(InvalidArgumentError, match="boolean"):
        evaluate(S, Y, [NDCG()], np.ones(S.shape, dtype=int))
    with pytest.raises(InvalidArgumentError, match="shape"):
        evaluate(S, Y, [NDCG()], np.ones((2, 2), dtype=bool))


@pytest.mark.parametrize("spec", [NDCG(), NDCG(gain="linear"), DCG()])
def test_negative_grades_for_gains(spec):
    y = Y.copy()
    y[0, 1] = -1.0
    with pytest.raises(InvalidArgumentError, match="non-negative grades.*query 0, item 1"):
        evaluate(S, y, [spec])


def test_negative_grades_are_fine_where_no_gain_is_needed():
    y = Y - 1.0
    r = evaluate(S, y, [MAP(threshold=0.0), KendallTau()])
    assert r.per_query["map[threshold=0]"].tolist() == [pytest.approx(5 / 6), 1.0]
    mask = np.ones(S.shape, dtype=bool)
    mask[0, 1] = False
    y2 = Y.copy()
    y2[0, 1] = -5.0  # masked out: ignored
    assert not np.isnan(ndcg(S, y2, mask=mask)).any()


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "3"])
def test_bad_cutoff(k):
    with pytest.raises(InvalidArgumentError, match="k must"):
        NDCG(k=k)


@pytest.mark.parametrize("text", ["ndcg@0", "ndcg@-1", "ndcg@x", "ndcg@", "map@1.5"])
def test_bad_cutoff_in_names(text):
    with pytest.raises(InvalidArgumentError):
        parse_metric(text)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: NDCG(gain="log"), "gain must be one of 'exp2', 'linear'"),
        (lambda: NDCG(ties="random"), "ties must be one of"),
        (lambda: MAP(threshold=math.nan), "finite number"),
        (lambda: MAP(threshold="1"), "finite number"),
        (lambda: NDCG(no_relevant="skip"), "no_relevant"),
        (lambda: TierEta2(center="mean"), "center"),
        (lambda: Relevance(k=None), "positive integer"),
    ],
)
def test_bad_spec_parameters(make, match):
    with pytest.raises(InvalidArgumentError, match=match):
        make()


def test_explanation_metrics_need_k():
    with pytest.raises(TypeError):
        Relevance()  # type: ignore[call-arg]


def test_missing_or_bad_gold():
    with pytest.raises(InvalidArgumentError, match="needs the boolean array 'gold'"):
        evaluate(S, Y, [Completeness(k=2)])
    with pytest.raises(InvalidArgumentError, match="gold must be a boolean"):
        evaluate(S, Y, [CompB(k=2)], gold=np.ones(S.shape))
    with pytest.raises(InvalidArgumentError, match="gold has shape"):
        evaluate(S, Y, [CompB(k=2)], gold=np.ones((1, 3), dtype=bool))


def test_evaluate_refuses_strings_duplicates_and_nothing():
    with pytest.raises(InvalidArgumentError, match="parse_metric"):
        evaluate(S, Y, ["ndcg@5"])
    with pytest.raises(InvalidArgumentError, match="parse_metric"):
        evaluate(S, Y, "ndcg@5")
    with pytest.raises(InvalidArgumentError, match="listed twice: ndcg@5"):
        evaluate(S, Y, [NDCG(k=5), NDCG(k=5)])
    with pytest.raises(InvalidArgumentError, match="no metrics"):
        evaluate(S, Y, [])
    with pytest.raises(InvalidArgumentError, match="not a metric spec"):
        evaluate(S, Y, [ndcg])


def test_single_spec_is_accepted():
    assert evaluate(S, Y, Precision(k=1)).means["precision@1"] == 1.0


def test_unknown_metric_name_lists_close_matches_and_all_names():
    with pytest.raises(UnknownNameError) as err:
        parse_metric("ndgc@5")
    text = str(err.value)
    assert "unknown metric 'ndgc'" in text and "did you mean 'ndcg'" in text
    assert "known metrics:" in text and "kendall" in text and "pairwise_agreement" in text


def test_undefined_values_are_only_nan_where_documented():
    """A constant list is the documented NaN of Kendall; valid input never gives NaN
    in NDCG/MAP under the default policies."""
    assert math.isnan(kendall_tau([[1.0, 1.0]], [[0, 1]])[0])
    rng = np.random.default_rng(0)
    s = rng.integers(0, 2, size=(100, 4)).astype(float)
    y = rng.integers(0, 2, size=(100, 4)).astype(float)
    r = evaluate(s, y, [NDCG(), MAP()])
    assert all(v == 0 for v in r.n_excluded.values())


def test_result_value_takes_specs_in_order_and_names_what_was_evaluated():
    res = evaluate(S, Y, [Precision(k=1), NDCG(k=2)])
    assert res.value(NDCG(k=2)) == res.means["ndcg@2"]
    assert list(res.values([NDCG(k=2), Precision(k=1)])) == ["ndcg@2", "precision@1"]
    with pytest.raises(InvalidArgumentError, match="'ndcg@3' was not evaluated.*evaluated: precision@1, ndcg@2"):
        res.value(NDCG(k=3))
    with pytest.raises(InvalidArgumentError, match="parse_metric"):
        res.value("ndcg@2")  # type: ignore[arg-type]
