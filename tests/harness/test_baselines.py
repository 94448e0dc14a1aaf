"""Untrained baselines and LambdaMART: closed forms, determinism, persistence."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from gradebench.errors import InvalidArgumentError, UnknownNameError
from gradebench.benchmark.lists import lists_from_table, open_benchmark
from gradebench.metrics import NDCG, PairwiseAgreement, evaluate
from gradebench.scorers import check_scores, get_scorer_class, make_scorer, scorer_names
from gradebench.scorers.text import bm25_matrix, words


def _lists(query, candidates, relevance=None):
    n = len(candidates)
    rel = relevance or list(range(n))
    return lists_from_table(pa.table({
        "query_id": ["q"] * n, "query": [query] * n, "candidate_id": [f"c{i}" for i in range(n)],
        "candidate": candidates, "relevance": rel, "score": [float(r) for r in rel], "split": ["test"] * n,
    }))


def test_builtin_names_and_unknown_name():
    assert {"random", "length", "overlap", "bm25", "lambdamart"} <= set(scorer_names())
    with pytest.raises(UnknownNameError, match="did you mean 'bm25'"):
        get_scorer_class("bm26")


def test_length_and_overlap_closed_form():
    lists = _lists("A dog runs in the park.", ["a dog", "the cat sleeps on a mat", "dog park runs"])
    np.testing.assert_array_equal(make_scorer("length").score(lists), [[2, 6, 3]])
    np.testing.assert_array_equal(make_scorer("length", {"prefer": "shorter"}).score(lists), [[-2, -6, -3]])
    np.testing.assert_allclose(make_scorer("overlap").score(lists), [[1.0, 2 / 6, 1.0]])
    # jaccard: {a,dog} vs {a,dog,runs,in,the,park} = 2/6
    np.testing.assert_allclose(make_scorer("overlap", {"measure": "jaccard"}).score(lists)[0, 0], 2 / 6)
    assert words("Don't STOP, über-cool!") == ["don", "t", "stop", "über", "cool"]


def test_bm25_closed_form():
    # corpus of two candidates; query term "dog" occurs once in the first
    q, c = [["dog"]], [["dog", "x"], ["y", "z", "w", "v"]]
    n, df, k1, b = 2, 1, 1.5, 0.75
    idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
    avgdl = 3.0
    expected = idf * 1 / (1 + k1 * (1 - b + b * 2 / avgdl))
    np.testing.assert_allclose(bm25_matrix(q, c, np.array([0, 0])), [expected, 0.0])


@pytest.mark.reference
def test_bm25_matches_bm25s_lucene():
    bm25s = pytest.importorskip("bm25s")
    corpus = [["a", "cat", "sat"], ["the", "dog", "ran", "far", "far"], ["cat", "dog"], ["dog"], []]
    query = ["cat", "dog", "dog"]
    ref = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    ref.index(corpus, show_progress=False)
    expected = ref.get_scores(sorted(set(query)))
    ours = bm25_matrix([query], corpus, np.zeros(len(corpus), dtype=int))
    np.testing.assert_allclose(ours, expected, rtol=1e-6)


def test_random_is_content_seeded():
    lists = _lists("q", ["a", "b", "c", "d"])
    a = make_scorer("random", seed=1).score(lists)
    assert np.array_equal(a, make_scorer("random", seed=1).score(lists))
    assert not np.array_equal(a, make_scorer("random", seed=2).score(lists))
    assert ((a >= 0) & (a < 1)).all()
    # the draw of a candidate does not depend on the others scored with it
    assert make_scorer("random", seed=1).score(lists.take([0]))[0, 0] == a[0, 0]


def test_bad_config_names_the_key():
    with pytest.raises(InvalidArgumentError, match="scorer 'length'") as e:
        make_scorer("length", {"prefer": "middle"})
    assert e.value.key == "prefer"
    with pytest.raises(InvalidArgumentError) as e:
        make_scorer("bm25", {"k3": 1})
    assert e.value.key == "k3" and "k1" in e.value.hint


def test_check_scores_rejects_nan_and_shape():
    lists = _lists("q", ["a", "b"])
    with pytest.raises(InvalidArgumentError, match="NaN"):
        check_scores([[np.nan, 1.0]], lists, who="x")
    with pytest.raises(InvalidArgumentError, match="shape"):
        check_scores([[1.0]], lists, who="x")


def test_lexical_baselines_beat_chance_on_demo(demo_benchmark):
    lists = open_benchmark(demo_benchmark).lists("train")
    agree = {
        name: evaluate(make_scorer(name).score(lists), lists.relevance, [PairwiseAgreement()], mask=lists.mask)
        .means["pairwise_agreement"]
        for name in ("random", "overlap", "bm25")
    }
    assert agree["overlap"] > 0.7 and agree["bm25"] > 0.7
    assert abs(agree["random"] - 0.5) < 0.1


def test_lambdamart_trains_deterministically_and_round_trips(demo_benchmark, tmp_path):
    from gradebench.scorers import TrainOptions

    bench = open_benchmark(demo_benchmark)
    train, valid, test = bench.lists("train"), bench.lists("validation"), bench.lists("test")
    cfg = {"min_child_samples": 5, "n_estimators": 50}
    a = make_scorer("lambdamart", cfg, seed=3)
    history = a.fit(train, valid, TrainOptions())
    assert history and all("eval_ndcg@5" in h for h in history)
    b = make_scorer("lambdamart", cfg, seed=3)
    b.fit(train, valid, TrainOptions())
    sa = a.score(test)
    np.testing.assert_array_equal(sa, b.score(test))
    assert evaluate(sa, test.relevance, [NDCG(k=5)], mask=test.mask).means["ndcg@5"] > 0.8
    a.save(tmp_path / "m")
    c = get_scorer_class("lambdamart").load(tmp_path / "m", cfg, seed=3)
    np.testing.assert_array_equal(c.score(test), sa)
