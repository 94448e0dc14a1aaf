"""Hand-computed values for each metric, including ties, all-irrelevant and empty lists,
and the published reference values (REFERENCES.md: rax 0.4.0 and pytrec_eval)."""

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
    SeparationRatio,
    SpearmanRho,
    TierEta2,
    Top1Accuracy,
    average_precision,
    evaluate,
    explanation_compb,
    kendall_tau,
    ndcg,
    pairwise_agreement,
    precision,
    rank_class_accuracy,
    reciprocal_rank,
    separation_ratio,
    spearman_rho,
    tier_eta2,
    top1_accuracy,
)

D2, D3 = 1 / math.log2(3), 1 / math.log2(4)  # discounts of ranks 2 and 3

# REFERENCES.md, "Reference values from rax 0.4.0 (float64)"
RAX_SCORES = [[0.5, 2.0, 1.0, -1.0, 0.3], [1.2, 0.1, 0.8, 2.5, -0.4], [0.3, 0.2, 0.1, 0.0, -0.1]]
RAX_LABELS = [[0, 2, 1, 0, 3], [1, 0, 0, 2, 0], [0, 0, 0, 0, 0]]


def approx(x):
    return pytest.approx(x, abs=1e-12)


# --- published reference values --------------------------------------------------------


def test_rax_reference_values():
    r = evaluate(RAX_SCORES, RAX_LABELS, [NDCG(), NDCG(k=3), MRR(), MAP()])
    assert r.per_query["ndcg"].round(6).tolist() == [0.707528, 1.0, 0.0]
    assert r.means["ndcg"] == pytest.approx(0.569176, abs=5e-7)
    assert r.means["ndcg@3"] == pytest.approx(0.462189, abs=5e-7)
    assert r.means["mrr"] == pytest.approx(0.666667, abs=5e-7)
    assert r.means["map"] == pytest.approx(0.638889, abs=5e-7)
    assert all(v == 0 for v in r.n_excluded.values())  # all-zero list counts as 0


def test_pytrec_eval_reference_values():
    specs = [NDCG(k=5, gain="linear", ties="trec"), MAP(ties="trec"), MRR(ties="trec")]
    r = evaluate(RAX_SCORES[:2], RAX_LABELS[:2], specs)
    assert r.per_query["ndcg@5[gain=linear,ties=trec]"].round(6).tolist() == [0.823829, 1.0]
    assert r.per_query["map[ties=trec]"].round(6).tolist() == [0.916667, 1.0]
    assert r.per_query["mrr[ties=trec]"].tolist() == [1.0, 1.0]


# --- NDCG / DCG ---------------------------------------------------------------------------


def test_ndcg_by_hand():
    s, y = [[3.0, 2.0, 1.0]], [[0, 1, 2]]
    want_exp2 = (1 * D2 + 3 * D3) / (3 + 1 * D2)
    want_linear = (1 * D2 + 2 * D3) / (2 + 1 * D2)
    assert ndcg(s, y)[0] == approx(want_exp2)
    assert ndcg(s, y, gain="linear")[0] == approx(want_linear)
    assert ndcg(s, y, k=1)[0] == 0.0
    assert ndcg(s, y, k=2)[0] == approx((1 * D2) / (3 + 1 * D2))
    assert evaluate(s, y, [DCG(gain="linear")]).means["dcg[gain=linear]"] == approx(D2 + 2 * D3)


def test_ndcg_tie_policies():
    s, y = [[1.0, 1.0]], [[1, 0]]
    assert ndcg(s, y, gain="linear", ties="average")[0] == approx((1 + D2) / 2)
    assert ndcg(s, y, gain="linear", ties="stable")[0] == 1.0
    assert ndcg(s, y, gain="linear", ties="trec")[0] == approx(D2)  # higher index first
    # with k=1 the tied pair straddles the cut: each item is first half the time
    assert ndcg(s, y, k=1, ties="average")[0] == approx(0.5)


def test_constant_scorer_is_not_rewarded_by_default():
    """Candidates listed best-first (as the paper's builder does): "stable" would give a
    constant scorer a perfect NDCG; the default "average" gives the random-order value."""
    y = [[4, 3, 2, 1, 0]]
    s = [[0.5] * 5]
    assert ndcg(s, y, ties="stable")[0] == 1.0
    avg = ndcg(s, y)[0]
    gains = sum(2.0**v - 1 for v in y[0]) / 5
    ideal = sum((2.0**v - 1) / math.log2(r + 2) for r, v in enumerate(y[0]))
    assert avg == approx(gains * sum(1 / math.log2(r + 2) for r in range(5)) / ideal)
    assert avg < 0.8


def test_no_relevant_item_zero_or_excluded():
    s, y = [[0.3, 0.1], [0.2, 0.9]], [[0, 0], [1, 0]]
    r = evaluate(s, y, [NDCG(), NDCG(no_relevant="exclude"), MAP(no_relevant="exclude")])
    assert r.per_query["ndcg"][0] == 0.0
    assert r.per_query["ndcg"][1] == approx(D2)
    assert r.n_excluded["ndcg"] == 0
    excl = r.per_query["ndcg[no_relevant=exclude]"]
    assert math.isnan(excl[0]) and excl[1] == approx(D2)
    assert r.n_excluded["ndcg[no_relevant=exclude]"] == 1
    assert r.means["ndcg[no_relevant=exclude]"] == approx(D2)
    assert r.n_excluded["map[no_relevant=exclude]"] == 1


def test_empty_list_is_excluded_and_counted():
    s = np.array([[0.3, 0.1], [0.2, 0.9]])
    y = np.array([[1, 0], [1, 0]])
    mask = np.array([[False, False], [True, True]])
    specs = [NDCG(), MAP(), MRR(), Precision(k=1), KendallTau(), PairwiseAgreement(), Top1Accuracy()]
    r = evaluate(s, y, specs, mask)
    for spec in specs:
        assert math.isnan(r.per_query[spec.name][0]), spec.name
        assert r.n_excluded[spec.name] == 1
    assert r.means["mrr"] == approx(0.5)


def test_cutoff_longer_than_list_and_none_are_equal():
    s, y = [[0.2, 0.9, 0.4]], [[2, 1, 0]]
    assert ndcg(s, y, k=10)[0] == ndcg(s, y)[0]
    assert average_precision(s, y, k=10)[0] == average_precision(s, y)[0]


def test_float_quality_grades():
    s, y = [[0.9, 0.1]], [[0.25, 0.75]]
    want = ((2**0.25 - 1) + (2**0.75 - 1) * D2) / ((2**0.75 - 1) + (2**0.25 - 1) * D2)
    assert ndcg(s, y)[0] == approx(want)
    assert average_precision(s, y, threshold=0.5)[0] == approx(0.5)


# --- MAP / MRR / P@k / R@k ---------------------------------------------------------------


def test_ap_and_rr_by_hand():
    s, y = [[0.5, 2.0, 1.0, -1.0, 0.3]], [[0, 2, 1, 0, 3]]  # relevant at ranks 1, 2, 4
    assert average_precision(s, y)[0] == approx((1 + 1 + 3 / 4) / 3)
    assert average_precision(s, y, k=2)[0] == approx(2 / 3)
    assert average_precision(s, y, threshold=2)[0] == approx((1 + 2 / 4) / 2)
    assert reciprocal_rank(s, y, threshold=3)[0] == approx(1 / 4)
    assert reciprocal_rank(s, y, threshold=3, k=3)[0] == 0.0


def test_ap_and_rr_with_ties():
    s = [[1.0, 1.0, 1.0]]
    assert reciprocal_rank(s, [[1, 0, 0]])[0] == approx((1 + 1 / 2 + 1 / 3) / 3)
    assert reciprocal_rank(s, [[1, 0, 0]], ties="stable")[0] == 1.0
    assert reciprocal_rank(s, [[1, 0, 0]], ties="trec")[0] == approx(1 / 3)
    assert average_precision(s, [[1, 0, 0]])[0] == approx((1 + 1 / 2 + 1 / 3) / 3)
    # two relevant among three tied: non-relevant item last/middle/first
    want = ((1 + 1) / 2 + (1 + 2 / 3) / 2 + (1 / 2 + 2 / 3) / 2) / 3
    assert average_precision(s, [[1, 1, 0]])[0] == approx(want)
    # tie group after a relevant item: [rel] then {rel, non} tied
    s2 = [[2.0, 1.0, 1.0]]
    assert average_precision(s2, [[1, 1, 0]])[0] == approx(((1 + 1) / 2 + (1 + 2 / 3) / 2) / 2)


def test_precision_recall_by_hand():
    s, y = [[0.9, 0.8, 0.7]], [[1, 0, 1]]
    assert precision(s, y, k=2)[0] == 0.5
    assert precision(s, y, k=5)[0] == approx(2 / 5)  # trec_eval P_k: divide by k
    assert precision(s, y)[0] == approx(2 / 3)  # k=None: the whole list
    r = evaluate(s, y, [Recall(k=1), Recall(k=3)])
    assert r.per_query["recall@1"][0] == 0.5 and r.per_query["recall@3"][0] == 1.0
    assert precision([[1.0, 1.0, 1.0]], y, k=1)[0] == approx(2 / 3)


# --- correlations ------------------------------------------------------------------------


def test_correlations_by_hand():
    y = [[0, 1, 2, 3]]
    assert kendall_tau([[0.1, 0.2, 0.3, 0.4]], y)[0] == approx(1.0)
    assert kendall_tau([[0.4, 0.3, 0.2, 0.1]], y)[0] == approx(-1.0)
    assert spearman_rho([[0.4, 0.3, 0.2, 0.1]], y)[0] == approx(-1.0)
    # one swapped adjacent pair: tau = (5 - 1) / 6, rho = 1 - 6 * 2 / (4 * 15)
    assert kendall_tau([[0.2, 0.1, 0.3, 0.4]], y)[0] == approx(4 / 6)
    assert spearman_rho([[0.2, 0.1, 0.3, 0.4]], y)[0] == approx(1 - 12 / 60)
    # tau-b with ties in both: scipy gives 0.912871 for this case
    assert kendall_tau([[0.9, 0.5, 0.7, 0.1]], [[3, 1, 1, 0]])[0] == pytest.approx(0.912870929)


def test_constant_lists_give_nan_and_are_counted():
    s = [[1.0, 1.0, 1.0], [0.1, 0.2, 0.3], [0.1, 0.2, 0.3]]
    y = [[0, 1, 2], [1, 1, 1], [0, 1, 2]]
    r = evaluate(s, y, [KendallTau(), SpearmanRho(), QuerySeparationRatio()])
    for name in ("kendall", "spearman"):
        assert np.isnan(r.per_query[name][:2]).all()
        assert r.n_excluded[name] == 2
        assert r.means[name] == approx(1.0)
    assert r.per_query["query_separation_ratio"][0] == 0.0  # constant scores: 0, defined
    assert math.isnan(r.per_query["query_separation_ratio"][1])  # constant labels


# --- agreement ---------------------------------------------------------------------------


def test_pairwise_agreement_ties():
    s, y = [[0.9, 0.5, 0.5]], [[2, 1, 0]]
    assert pairwise_agreement(s, y)[0] == approx(2.5 / 3)
    assert pairwise_agreement(s, y, ties="stable")[0] == approx(1.0)
    assert pairwise_agreement(s, y, ties="trec")[0] == approx(2 / 3)
    # pairs with equal labels are not counted; all-equal labels: NaN
    assert pairwise_agreement([[0.1, 0.9, 0.5]], [[1, 1, 0]])[0] == approx(0.5)
    assert math.isnan(pairwise_agreement([[0.1, 0.9]], [[1, 1]])[0])


def test_pairwise_agreement_paper_setting():
    """Five tiers, 10 pairs; a scorer that swaps one adjacent pair agrees on 9/10."""
    y = [[4, 3, 2, 1, 0]]
    assert pairwise_agreement([[0.9, 0.7, 0.8, 0.3, 0.1]], y)[0] == approx(0.9)


def test_top1_accuracy():
    assert top1_accuracy([[0.2, 0.9, 0.1]], [[2, 2, 0]])[0] == 1.0
    assert top1_accuracy([[0.9, 0.2, 0.1]], [[1, 2, 0]])[0] == 0.0
    s, y = [[0.9, 0.9, 0.1]], [[2, 1, 0]]
    assert top1_accuracy(s, y)[0] == 0.5
    assert top1_accuracy(s, y, ties="stable")[0] == 1.0
    assert top1_accuracy(s, y, ties="trec")[0] == 0.0


def test_rank_class_accuracy_equal_segments():
    """Seed 002: sort, cut into equal segments per class (here 3 classes x 2 items)."""
    y = [[2, 2, 1, 1, 0, 0]]
    s = [[0.9, 0.6, 0.8, 0.5, 0.2, 0.1]]  # ranked labels 2,1,2,1,0,0
    assert rank_class_accuracy(s, y)[0] == approx(4 / 6)
    assert rank_class_accuracy([[6, 5, 4, 3, 2, 1.0]], y)[0] == 1.0
    # all tied: each position gets a random item -> expected share of matches
    assert rank_class_accuracy([[1.0] * 6], y)[0] == approx(1 / 3)


# --- separation ---------------------------------------------------------------------------


def test_separation_ratio_paper_example():
    """Paper 000: MSE compresses [4,3,2,1,0] to [0.52,0.51,0.50,0.49,0.48]."""
    s, y = [[0.52, 0.51, 0.50, 0.49, 0.48]], [[4, 3, 2, 1, 0]]
    assert separation_ratio(s, y) == approx(0.01)
    r = evaluate(s, y, [SeparationRatio(), QuerySeparationRatio()])
    assert r.corpus["separation_ratio"] == approx(0.01)
    assert r.means["query_separation_ratio"] == approx(0.01)
    assert "separation_ratio" not in r.means and r.summary()["separation_ratio"] == approx(0.01)


def test_separation_ratio_pools_candidates_and_respects_mask():
    s = np.array([[1.0, 0.0, np.nan], [3.0, 2.0, 5.0]])
    y = np.array([[1.0, 0.0, 9.0], [1.0, 0.0, 2.0]])
    mask = np.array([[True, True, False], [True, True, True]])
    pooled_s, pooled_y = [1.0, 0.0, 3.0, 2.0, 5.0], [1.0, 0.0, 1.0, 0.0, 2.0]
    assert separation_ratio(s, y, mask=mask) == approx(np.std(pooled_s) / np.std(pooled_y))
    assert math.isnan(separation_ratio([[1.0, 2.0]], [[1.0, 1.0]]))


def test_tier_eta2():
    s, y = [[1.0, 0.0], [11.0, 10.0]], [[1, 0], [1, 0]]
    assert tier_eta2(s, y) == approx(1 / 101)
    assert tier_eta2(s, y, center="query") == approx(1.0)
    r = evaluate(s, y, [TierEta2(center="query")])
    assert r.corpus["tier_eta2[center=query]"] == approx(1.0)
    # scale-free
    assert tier_eta2(np.array(s) * 7.0, y) == approx(1 / 101)
    assert math.isnan(tier_eta2([[1.0, 1.0]], [[1, 0]]))


# --- whole-explanation metrics -------------------------------------------------------------


def test_explanation_metrics_by_hand():
    s = [[0.9, 0.8, 0.7, 0.1, 0.0]]
    y = [[3, 0, 1, 2, 0]]
    gold = [[True, False, False, True, True]]
    r = evaluate(s, y, [Relevance(k=3), Completeness(k=3), F1ex(k=3), CompB(k=3), CompB(k=4)], gold=gold)
    rel, comp = 2 / 3, 1 / 3
    assert r.per_query["relevance@3"][0] == approx(rel)
    assert r.per_query["completeness@3"][0] == approx(comp)
    assert r.per_query["f1ex@3"][0] == approx(2 * rel * comp / (rel + comp))
    # important gold facts (grade >= 2): items 0 and 3
    assert r.per_query["compb@3"][0] == 0.0
    assert r.per_query["compb@4"][0] == 1.0


def test_compb_ties_and_explicit_important():
    s = [[1.0, 1.0, 1.0, 0.0]]
    y = [[2, 2, 0, 0]]
    gold = [[True, True, False, False]]
    # 2 slots for a tie group of 3 holding both important facts: P = (2/3)(1/2) = 1/3
    assert explanation_compb(s, y, k=2, gold=gold)[0] == approx(1 / 3)
    important = [[True, False, False, False]]
    assert explanation_compb(s, y, k=2, gold=gold, important=important)[0] == approx(2 / 3)
    # no important fact: undefined
    assert math.isnan(explanation_compb(s, [[0, 0, 0, 0]], k=2, gold=gold)[0])


def test_completeness_without_gold_is_excluded():
    r = evaluate([[0.9, 0.1], [0.9, 0.1]], [[1, 0], [1, 0]], [Completeness(k=1)],
                 gold=[[False, False], [True, False]])
    assert math.isnan(r.per_query["completeness@1"][0])
    assert r.n_excluded["completeness@1"] == 1 and r.means["completeness@1"] == 1.0


def test_result_to_dict_is_json_ready():
    import json

    r = evaluate([[1.0, 1.0]], [[1, 1]], [KendallTau(), NDCG(), SeparationRatio(), RankClassAccuracy()])
    d = r.to_dict()
    assert d["means"]["kendall"] is None and d["n_excluded"]["kendall"] == 1
    assert d["corpus"]["separation_ratio"] is None
    json.dumps(d, allow_nan=False)
