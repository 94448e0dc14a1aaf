"""evaluate_scorer: closed-form values for a perfect scorer, CIs, separation figures, ids."""

from __future__ import annotations

import numpy as np
import pytest

from gradebench.errors import InvalidArgumentError, UnknownNameError
from gradebench.benchmark.lists import open_benchmark
from gradebench.metrics import SeparationRatio, TierEta2, evaluate
from gradebench.experiments import suite as S
from gradebench.experiments.evaluate import evaluate_scorer
from gradebench.experiments.store import read_per_query, read_predictions
from gradebench.scorers.base import Scorer
from gradebench.stats import bootstrap_ci
from tests.results.conftest import Noisy, Oracle, Shuffle, fake_run


def test_perfect_scorer_gets_ndcg_one(demo_bench, tmp_path):
    rec = evaluate_scorer(demo_bench, Oracle(), split="test", results_dir=tmp_path, n_resamples=200)
    for name in ("ndcg@3", "ndcg@5", "ndcg@10", "map", "mrr", "kendall", "spearman", "pairwise_agreement",
                 "top1_accuracy"):
        m = rec.metrics[name]
        assert m.value == pytest.approx(1.0), name
        assert (m.ci_low, m.ci_high) == (pytest.approx(1.0), pytest.approx(1.0)), name
    # score = relevance: predicted and true spreads are equal, the grade explains all variance
    assert rec.metrics["separation_ratio"].value == pytest.approx(1.0)
    assert rec.metrics["query_separation_ratio"].value == pytest.approx(1.0)
    assert rec.metrics["tier_eta2"].value == pytest.approx(1.0)
    assert set(rec.metrics) == set(S.suite_names(tiers=True))
    # separation figures in closed form: the mean prediction of grade g is g; adjacent gaps are 1
    sep = rec.separation
    assert [g.grade for g in sep.by_grade] == [4.0, 3.0, 2.0, 1.0, 0.0]
    assert [g.tier for g in sep.by_grade] == ["gold", "good", "fair", "poor", "nonsense"]
    assert all(g.mean == pytest.approx(g.grade) and g.std == pytest.approx(0.0) for g in sep.by_grade)
    assert all(g.centered_mean == pytest.approx(g.grade - 2.0) for g in sep.by_grade)
    assert [x.gap for x in sep.adjacent_gaps] == pytest.approx([1.0] * 4)
    assert sep.mean_gap == pytest.approx(1.0) and sep.min_centered_gap == pytest.approx(1.0)
    assert [t.name for t in rec.benchmark.tiers] == ["gold", "good", "fair", "poor", "nonsense"]


def test_cis_contain_the_mean_and_are_seeded(demo_bench, tmp_path):
    a = evaluate_scorer(demo_bench, Noisy(seed=3), split="train", seed=11, n_resamples=500, write=False)
    b = evaluate_scorer(demo_bench, Noisy(seed=3), split="train", seed=11, n_resamples=500, write=False)
    c = evaluate_scorer(demo_bench, Noisy(seed=3), split="train", seed=12, n_resamples=500, write=False)
    assert a.metrics == b.metrics  # same seed: bit-identical CIs
    assert a.id == b.id and a.id != c.id
    assert any(a.metrics[m].ci_low != c.metrics[m].ci_low for m in a.metrics)
    for name, m in a.metrics.items():
        assert m.ci_low is not None and m.ci_low <= m.value <= m.ci_high, name
    for name in ("ndcg@5", "kendall", "spearman", "separation_ratio", "tier_eta2"):
        assert a.metrics[name].ci_low < a.metrics[name].ci_high, name  # a noisy scorer has spread
    # the per-query CI is exactly bootstrap_ci of the per-query values
    lists = open_benchmark(demo_bench).lists("train")
    res = evaluate(Noisy(seed=3).score(lists), lists.relevance, S.suite(tiers=True), mask=lists.mask)
    ci = bootstrap_ci(res.per_query["ndcg@5"], n_resamples=500, seed=11)
    assert (a.metrics["ndcg@5"].ci_low, a.metrics["ndcg@5"].ci_high) == (ci.low, ci.high)


@pytest.mark.parametrize("spec, rows, stat", [
    (SeparationRatio(), S.separation_rows, S.separation_statistic),
    (TierEta2(), S.eta2_rows, S.eta2_statistic),
])
def test_corpus_statistic_matches_metric(spec, rows, stat):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, size=(30, 6)).astype(float)
    scores = labels * 0.3 + rng.normal(size=labels.shape) + 100.0  # offset: centring keeps it exact
    mask = rng.random(labels.shape) > 0.2
    mask[:, :2] = True
    expected = evaluate(scores, labels, [spec], mask=mask).corpus[spec.name]
    data = rows(scores, labels, mask)
    assert stat(data.sum(axis=0)[None])[0] == pytest.approx(expected, rel=1e-9)
    # resampling queries: the statistic on a resample equals the metric on those queries
    idx = rng.integers(0, 30, size=30)
    again = evaluate(scores[idx], labels[idx], [spec], mask=mask[idx]).corpus[spec.name]
    assert stat(data[idx].sum(axis=0)[None])[0] == pytest.approx(again, rel=1e-6)


def test_corpus_ci_is_the_query_bootstrap_of_the_metric():
    """corpus_cis == percentiles of the metric recomputed on bootstrap_ci's resampled query sets."""
    from gradebench.stats._resampling import make_rng

    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, size=(12, 4)).astype(float)
    scores = labels + rng.normal(size=labels.shape)
    mask = np.ones_like(labels, dtype=bool)
    cis = S.corpus_cis({"sep": (S.separation_rows(scores, labels, mask), S.separation_statistic),
                        "eta": (S.eta2_rows(scores, labels, mask), S.eta2_statistic)}, n_resamples=200, seed=5)
    draws = make_rng(5).integers(0, 12, size=(200, 12), dtype=np.int64)  # one chunk: the same stream
    for name, spec in (("sep", SeparationRatio()), ("eta", TierEta2())):
        values = [evaluate(scores[i], labels[i], [spec]).corpus[spec.name] for i in draws]
        assert cis[name] == pytest.approx(tuple(np.quantile(values, [0.025, 0.975])), rel=1e-9)
    # and bootstrap_ci of per-query values draws the very same query sets
    ci = bootstrap_ci(np.arange(12.0), n_resamples=200, seed=5)
    means = np.arange(12.0)[draws].mean(axis=1)
    assert (ci.low, ci.high) == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])))


def test_written_files_match_record(demo_bench, tmp_path):
    rec = evaluate_scorer(demo_bench, Shuffle(seed=1), split="test", results_dir=tmp_path, n_resamples=100)
    assert rec.path == tmp_path / "demo" / f"{rec.id}.json"
    pred = read_predictions(rec)
    lists = open_benchmark(demo_bench).lists("test")
    assert len(pred) == lists.n_candidates == rec.benchmark.n_candidates
    assert list(pred.columns) == ["record_id", "query_id", "candidate_id", "split", "prediction", "relevance",
                                  "score", "tier"]
    assert set(pred["record_id"].astype(str)) == {rec.id}
    np.testing.assert_array_equal(pred["prediction"].to_numpy(), Shuffle(seed=1).score(lists)[lists.mask])
    pq = read_per_query(rec)
    assert sorted(set(pq["metric"].astype(str))) == sorted(S.per_query_names())
    for name in S.per_query_names():
        values = pq[pq["metric"].astype(str) == name]["value"]
        assert len(values) == lists.n_queries
        assert values.mean() == pytest.approx(rec.metrics[name].value)
        assert values.isna().sum() == rec.metrics[name].n_excluded


def test_record_id_covers_what_determines_the_numbers(demo_bench):
    base = evaluate_scorer(demo_bench, Noisy(seed=1), n_resamples=50, write=False)
    same = evaluate_scorer(demo_bench, Noisy(seed=1), n_resamples=50, write=False)
    assert base.id == same.id
    others = [
        evaluate_scorer(demo_bench, Noisy(seed=2), n_resamples=50, write=False),  # scorer seed
        evaluate_scorer(demo_bench, Noisy(seed=1), n_resamples=51, write=False),
        evaluate_scorer(demo_bench, Noisy(seed=1), n_resamples=50, seed=1, write=False),
        evaluate_scorer(demo_bench, Noisy(seed=1), n_resamples=50, split="validation", write=False),
    ]
    assert len({base.id, *(o.id for o in others)}) == 5


def test_run_provenance(demo_bench):
    bench = open_benchmark(demo_bench)
    run = fake_run(bench.fingerprint, seed=7)
    rec = evaluate_scorer(bench, Noisy(seed=7), run=run, n_resamples=50, write=False)
    assert rec.loss.name == "listnet" and rec.system_seed == 7
    assert rec.run.run_fingerprint == run.run_fingerprint and rec.run.options["epochs"] == 3
    assert rec.timings.train == {"fit_s": 1.5, "total_s": 2.0}
    other = evaluate_scorer(bench, Noisy(seed=7), run=fake_run(bench.fingerprint, seed=7, epochs=4),
                            n_resamples=50, write=False)
    assert other.id != rec.id  # another run fingerprint
    env = rec.environment
    assert env.cpu_count and env.python and env.gradebench_version
    assert rec.timings.scoring_s >= 0 and rec.benchmark.fingerprint == bench.fingerprint


def test_bad_inputs(demo_bench, tmp_path):
    class Bad(Scorer):
        name = "bad"

        def score(self, lists):
            return np.full(lists.mask.shape, np.nan)

    with pytest.raises(InvalidArgumentError, match="NaN"):
        evaluate_scorer(demo_bench, Bad(), results_dir=tmp_path)
    with pytest.raises(UnknownNameError, match="no split 'dev'"):
        evaluate_scorer(demo_bench, Oracle(), split="dev", results_dir=tmp_path)
    with pytest.raises(InvalidArgumentError, match="Scorer instance"):
        evaluate_scorer(demo_bench, "bm25", results_dir=tmp_path)
    with pytest.raises(InvalidArgumentError, match="seed"):
        evaluate_scorer(demo_bench, Oracle(), seed=-1, results_dir=tmp_path)
    assert not (tmp_path / "demo").exists() or not list((tmp_path / "demo").iterdir())


def test_record_suite_is_typed_specs_and_its_numbers_come_from_the_one_evaluation_path(demo_bench):
    from gradebench.experiments.record import json_float
    from gradebench.metrics import MetricSpec
    from gradebench.training.evaluation import evaluate_lists

    assert all(isinstance(m, MetricSpec) for m in S.RECORD_METRICS)
    assert S.suite(tiers=False) == list(S.RECORD_METRICS) and S.suite(tiers=True) == [*S.RECORD_METRICS, TierEta2()]
    assert S.suite_names(tiers=True) == [  # the suite every committed record holds (SUITE_VERSION)
        "ndcg@3", "ndcg@5", "ndcg@10", "map", "mrr", "kendall", "spearman", "pairwise_agreement", "top1_accuracy",
        "query_separation_ratio", "separation_ratio", "tier_eta2"]
    lists = open_benchmark(demo_bench).lists("train")
    rec = evaluate_scorer(demo_bench, Noisy(seed=3), split="train", n_resamples=50, write=False)
    result = evaluate_lists(Noisy(seed=3).score(lists), lists, S.suite(tiers=True))
    assert {k: m.value for k, m in rec.metrics.items()} == {k: json_float(v) for k, v in result.summary().items()}


def test_a_corpus_metric_without_a_query_bootstrap_is_a_typed_error(demo_bench):
    from gradebench.training.evaluation import evaluate_lists

    lists = open_benchmark(demo_bench).lists("train")
    scores = Noisy(seed=3).score(lists)
    specs = [TierEta2(center="query")]  # list-centred eta2: no sufficient statistics for it
    result = evaluate_lists(scores, lists, specs)
    with pytest.raises(InvalidArgumentError, match=r"no query bootstrap for corpus metric 'tier_eta2\[center=query\]'"):
        S.metric_values(result, scores, lists.relevance, lists.mask, specs=specs, n_resamples=10, seed=0)
