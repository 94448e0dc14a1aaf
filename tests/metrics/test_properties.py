"""Invariances every metric must satisfy (hypothesis):

* permuting the items of each list (scores, labels, mask and gold together) changes
  nothing: for every metric under the "average" tie policy, and under every policy when
  scores have no ties;
* masking equals slicing, and a batch equals a loop over single queries;
* results do not depend on how evaluate() cuts the queries into blocks.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradebench.metrics.evaluation as evaluate_module
from gradebench.metrics import METRICS, MetricSpec, evaluate

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def all_specs(ties: str | None = None) -> list[MetricSpec]:
    """One spec per registered metric (k=3 where needed) plus cutoff variants."""
    specs = []
    for name, cls in METRICS.items():
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kwargs = {}
        if "k" in fields and fields["k"].default is dataclasses.MISSING:
            kwargs["k"] = 3
        if ties is not None and "ties" in fields:
            kwargs["ties"] = ties
        specs.append(cls(**kwargs))
        if "k" in fields and fields["k"].default is not dataclasses.MISSING:
            specs.append(cls(k=2, **kwargs))
    return specs


@st.composite
def batches(draw, tie_free: bool = False, max_queries: int = 6, max_size: int = 6):
    n = draw(st.integers(1, max_queries))
    size = draw(st.integers(1, max_size))
    if tie_free:
        flat = draw(st.lists(st.integers(-1000, 1000), min_size=n * size, max_size=n * size,
                             unique=True))
        scores = np.array(flat, dtype=np.float64).reshape(n, size) / 7.0
    else:
        scores = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5]),
                                        min_size=n * size, max_size=n * size))).reshape(n, size)
    labels = np.array(draw(st.lists(st.integers(0, 3), min_size=n * size, max_size=n * size)),
                      dtype=np.float64).reshape(n, size)
    mask = np.array(draw(st.lists(st.booleans(), min_size=n * size, max_size=n * size)),
                    dtype=bool).reshape(n, size)
    gold = np.array(draw(st.lists(st.booleans(), min_size=n * size, max_size=n * size)),
                    dtype=bool).reshape(n, size)
    return scores, labels, mask, gold


def run(scores, labels, mask, gold, specs):
    return evaluate(scores, labels, specs, mask, gold=gold)


def assert_same(a, b):
    assert a.per_query.keys() == b.per_query.keys()
    for name in a.per_query:
        np.testing.assert_allclose(a.per_query[name], b.per_query[name], rtol=1e-10, atol=1e-12,
                                   err_msg=name)
        assert a.n_excluded[name] == b.n_excluded[name], name
    for name in a.corpus:
        np.testing.assert_allclose(a.corpus[name], b.corpus[name], rtol=1e-10, atol=1e-12,
                                   err_msg=name)


def permute_items(arrays, perm):
    return [a[:, perm] for a in arrays]


@SETTINGS
@given(batches(), st.randoms(use_true_random=False))
def test_item_permutation_invariance_average_ties(batch, rnd):
    perm = list(range(batch[0].shape[1]))
    rnd.shuffle(perm)
    specs = all_specs("average")
    assert_same(run(*batch, specs), run(*permute_items(batch, perm), specs))


@SETTINGS
@given(batches(tie_free=True), st.randoms(use_true_random=False), st.sampled_from(["stable", "trec"]))
def test_item_permutation_invariance_without_ties(batch, rnd, ties):
    perm = list(range(batch[0].shape[1]))
    rnd.shuffle(perm)
    specs = all_specs(ties)
    assert_same(run(*batch, specs), run(*permute_items(batch, perm), specs))


@SETTINGS
@given(batches(), st.sampled_from(["average", "stable", "trec"]))
def test_masking_equals_slicing_and_batch_equals_loop(batch, ties):
    scores, labels, mask, gold = batch
    specs = [s for s in all_specs(ties) if s.level == "query"]
    full = run(scores, labels, mask, gold, specs)
    for q in range(len(scores)):
        keep = mask[q]
        if not keep.any():
            for name, values in full.per_query.items():
                assert np.isnan(values[q]), name
            continue
        one = run(scores[q : q + 1, keep], labels[q : q + 1, keep], None, gold[q : q + 1, keep], specs)
        row = run(scores[q : q + 1], labels[q : q + 1], mask[q : q + 1], gold[q : q + 1], specs)
        for name, values in full.per_query.items():
            np.testing.assert_allclose(values[q], one.per_query[name][0], rtol=1e-10, atol=1e-12,
                                       err_msg=name)
            np.testing.assert_allclose(values[q], row.per_query[name][0], rtol=1e-10, atol=1e-12,
                                       err_msg=name)


@SETTINGS
@given(batches(max_queries=12))
def test_corpus_metrics_ignore_query_order_and_padding_values(batch):
    scores, labels, mask, gold = batch
    specs = [s for s in all_specs() if s.level == "corpus"]
    a = run(scores, labels, mask, gold, specs)
    rev = run(scores[::-1], labels[::-1], mask[::-1], gold[::-1], specs)
    padded = np.where(mask, scores, np.nan), np.where(mask, labels, -7.0)
    b = run(*padded, mask, gold, specs)
    for name in a.corpus:
        np.testing.assert_allclose(a.corpus[name], rev.corpus[name], rtol=1e-9, err_msg=name)
        np.testing.assert_allclose(a.corpus[name], b.corpus[name], rtol=1e-12, err_msg=name)


@pytest.mark.parametrize("block_items", [1, 7, 64])
def test_results_do_not_depend_on_block_size(monkeypatch, block_items):
    rng = np.random.default_rng(11)
    scores = rng.integers(0, 3, size=(50, 6)).astype(np.float64)
    labels = rng.integers(0, 4, size=(50, 6)).astype(np.float64)
    mask = rng.random((50, 6)) < 0.8
    gold = rng.random((50, 6)) < 0.5
    specs = all_specs()
    whole = run(scores, labels, mask, gold, specs)
    monkeypatch.setattr(evaluate_module, "BLOCK_ITEMS", block_items)
    assert_same(whole, run(scores, labels, mask, gold, specs))


def test_all_registered_metrics_are_covered():
    families = {s.family for s in all_specs()}
    assert families == set(METRICS.names())
    assert len(METRICS) >= 18
