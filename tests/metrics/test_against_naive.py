"""Every metric, every tie policy: vectorized batch == naive definition on each sliced list.

The naive versions (tests/metrics/naive.py) work on one list's valid items at a time and
average over every tie ordering by brute force, so these tests check at once the formulas,
the tie policies, masking (= slicing) and batching (= a loop over queries).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gradebench.metrics import (
    DCG,
    MAP,
    MRR,
    NDCG,
    CompB,
    Completeness,
    F1ex,
    KendallTau,
    PairwiseAgreement,
    Precision,
    QuerySeparationRatio,
    RankClassAccuracy,
    Recall,
    Relevance,
    SpearmanRho,
    Top1Accuracy,
    evaluate,
)
from tests.metrics import naive

TIES = ["average", "stable", "trec"]


def make_batch(seed: int, n: int = 60, size: int = 6, tie_levels: int | None = 3):
    """Random ragged batch with ties, all-irrelevant queries, empty and full lists."""
    rng = np.random.default_rng(seed)
    if tie_levels is None:
        scores = rng.normal(size=(n, size))
    else:
        scores = rng.integers(0, tie_levels, size=(n, size)) / 2.0
    labels = rng.integers(0, 4, size=(n, size)).astype(np.float64)
    labels[rng.random(n) < 0.15] = 0.0  # queries with no relevant item
    mask = rng.random((n, size)) < 0.8
    mask[0] = False  # an empty list
    mask[1:10] = True  # some full lists
    scores[~mask] = np.nan  # padding must be ignored
    gold = rng.random((n, size)) < 0.4
    important = gold & (rng.random((n, size)) < 0.5)
    return scores, labels, mask, gold, important


def sliced(arrays, mask, q):
    return [list(a[q][mask[q]]) for a in arrays]


def check(spec, fn, seed=0, tie_levels=3, **extras_flags):
    scores, labels, mask, gold, important = make_batch(seed, tie_levels=tie_levels)
    kwargs = {}
    if extras_flags.get("gold"):
        kwargs["gold"] = gold
    if extras_flags.get("important"):
        kwargs["important"] = important
    got = evaluate(scores, labels, [spec], mask, **kwargs).per_query[spec.name]
    for q in range(len(scores)):
        s, y, g, imp = sliced([scores, labels, gold, important], mask, q)
        want = fn(s, y, g, imp)
        if math.isnan(want):
            assert math.isnan(got[q]), (spec.name, q, got[q])
        else:
            assert got[q] == pytest.approx(want, abs=1e-12), (spec.name, q, s, y)


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("k", [None, 1, 3, 8])
@pytest.mark.parametrize("gain", ["exp2", "linear"])
def test_ndcg_dcg(ties, k, gain):
    check(NDCG(k=k, gain=gain, ties=ties), lambda s, y, g, i: naive.ndcg(s, y, k, gain, ties))
    check(DCG(k=k, gain=gain, ties=ties), lambda s, y, g, i: naive.dcg(s, y, k, gain, ties), seed=1)


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("k", [None, 1, 3])
@pytest.mark.parametrize("threshold", [1.0, 2.0])
def test_binary_metrics(ties, k, threshold):
    fns = [
        (MAP, naive.average_precision),
        (MRR, naive.reciprocal_rank),
        (Recall, naive.recall),
    ]
    for cls, fn in fns:
        for policy in ("zero", "exclude"):
            spec = cls(k=k, threshold=threshold, ties=ties, no_relevant=policy)
            check(spec, lambda s, y, g, i: fn(s, y, k, threshold, ties, policy))
    check(Precision(k=k, threshold=threshold, ties=ties),
          lambda s, y, g, i: naive.precision(s, y, k, threshold, ties))


@pytest.mark.parametrize("tie_levels", [2, 3, None])
def test_correlations(tie_levels):
    check(KendallTau(), lambda s, y, g, i: naive.kendall(s, y), tie_levels=tie_levels)
    check(SpearmanRho(), lambda s, y, g, i: naive.spearman(s, y), tie_levels=tie_levels)
    check(QuerySeparationRatio(), lambda s, y, g, i: naive.query_separation_ratio(s, y),
          tie_levels=tie_levels)


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("tie_levels", [2, 4, None])
def test_agreement_metrics(ties, tie_levels):
    for cls, fn in [
        (PairwiseAgreement, naive.pairwise_agreement),
        (Top1Accuracy, naive.top1_accuracy),
        (RankClassAccuracy, naive.rank_class_accuracy),
    ]:
        check(cls(ties=ties), lambda s, y, g, i: fn(s, y, ties), tie_levels=tie_levels)


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("k", [1, 2, 4, 10])
def test_explanation_metrics(ties, k):
    check(Relevance(k=k, ties=ties), lambda s, y, g, i: naive.relevance(s, y, k, 1.0, ties))
    check(Completeness(k=k, ties=ties), lambda s, y, g, i: naive.completeness(s, y, g, k, ties),
          gold=True)
    check(CompB(k=k, ties=ties), lambda s, y, g, i: naive.compb(s, y, g, k, ties=ties), gold=True)
    check(CompB(k=k, ties=ties), lambda s, y, g, i: naive.compb(s, y, g, k, i, ties=ties),
          gold=True, important=True)
    if ties != "average":  # under "average" F1ex is the F1 of the expected Rel and Comp
        check(F1ex(k=k, ties=ties), lambda s, y, g, i: naive.f1ex(s, y, g, k, 1.0, ties),
              gold=True)


def test_f1ex_average_is_harmonic_mean_of_expectations():
    scores, labels, mask, gold, _ = make_batch(3)
    r = evaluate(scores, labels, [Relevance(k=3), Completeness(k=3), F1ex(k=3)], mask, gold=gold)
    rel, comp, f1 = (r.per_query[n] for n in ("relevance@3", "completeness@3", "f1ex@3"))
    ok = ~np.isnan(comp)
    total = rel[ok] + comp[ok]
    want = np.where(total > 0, 2 * rel[ok] * comp[ok] / np.where(total > 0, total, 1.0), 0.0)
    np.testing.assert_allclose(f1[ok], want, atol=1e-12)
    assert np.array_equal(np.isnan(f1), np.isnan(comp))
