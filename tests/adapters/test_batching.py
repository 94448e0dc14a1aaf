"""Batches: a seeded plan drawn from content, scores that do not depend on batching, the invariance check."""

from __future__ import annotations

import numpy as np
import pytest

from gradebench.scorers.adapters import make_model_scorer
from gradebench.scorers.adapters.runner import left_padded, plan_batches, run_plan, seeded_order
from tests.conftest import one_torch_thread


def test_the_plan_is_seeded_by_content():
    keys = [f"q{i}\x1fc{i}" for i in range(50)]
    lengths = np.array([i % 4 for i in range(50)])
    a = plan_batches(keys, lengths, seed=1, batch_size=8, bucket=False)
    assert [len(b) for b in a] == [8] * 6 + [2]
    assert sorted(np.concatenate(a).tolist()) == list(range(50))
    assert np.concatenate(a).tolist() != list(range(50))  # not the list order
    # the same keys in another order: the same items share batches
    perm = np.random.default_rng(0).permutation(50)
    b = plan_batches([keys[i] for i in perm], lengths[perm], seed=1, batch_size=8, bucket=False)
    assert [sorted(perm[x].tolist()) for x in b] == [sorted(x.tolist()) for x in a]
    assert [x.tolist() for x in plan_batches(keys, lengths, seed=2, batch_size=8, bucket=False)] != \
        [x.tolist() for x in a]
    # bucketing sorts by length (longest first), keeping the seeded order within a length
    bucketed = np.concatenate(plan_batches(keys, lengths, seed=1, batch_size=8, bucket=True))
    assert np.all(np.diff(lengths[bucketed]) <= 0)
    seeded = seeded_order(keys, seed=1)
    for length in range(4):
        assert bucketed[lengths[bucketed] == length].tolist() == seeded[lengths[seeded] == length].tolist()


def test_a_remembered_order_is_the_computed_one_and_cannot_be_changed_through_a_caller(monkeypatch):
    import gradebench.scorers.adapters.runner as runner

    keys = [f"text {i}" for i in range(50)]
    monkeypatch.setattr(runner, "_ORDERS", {})
    first = seeded_order(keys, seed=3)
    first[:] = 0  # a caller scribbling on its copy
    again = seeded_order(keys, seed=3)
    runner._ORDERS.clear()
    assert again.tolist() == seeded_order(keys, seed=3).tolist()
    assert sorted(again.tolist()) == list(range(50))
    assert seeded_order(keys, seed=4).tolist() != again.tolist()  # the seed is part of the key
    reversed_keys = keys[::-1]  # other keys: their own order, not the remembered one
    assert seeded_order(reversed_keys, seed=3).tolist() == [49 - i for i in again.tolist()]


def test_run_plan_puts_values_back_in_item_order():
    batches = plan_batches([str(i) for i in range(10)], np.arange(10), seed=0, batch_size=3, bucket=True)
    out = run_plan(batches, lambda rows: rows.astype(float) * 2, 10)
    assert out.tolist() == [2.0 * i for i in range(10)]


def test_left_padding_counts_positions_over_real_tokens():
    from gradebench.scorers.adapters.runner import EncodedPairs

    enc = EncodedPairs(np.array([5, 6, 7, 8, 9]), None, np.array([0, 3]), np.array([3, 2]), pad_id=0)
    arrays = left_padded(enc, np.array([0, 1]))
    assert arrays["input_ids"].tolist() == [[5, 6, 7], [0, 8, 9]]
    assert arrays["attention_mask"].tolist() == [[1, 1, 1], [0, 1, 1]]
    assert arrays["position_ids"].tolist() == [[0, 1, 2], [0, 0, 1]]


@pytest.mark.parametrize("fixture", ["seq_classifier", "chat_reward", "judge_lm"])
def test_scores_do_not_depend_on_list_order_or_batch_size(request, fixture, test_lists):
    path = request.getfixturevalue(fixture)
    with one_torch_thread():
        base = make_model_scorer(path, options={"batch_size": 4}).score(test_lists)
        rows = test_lists.take(list(range(test_lists.n_queries))[::-1])
        reversed_ = make_model_scorer(path, options={"batch_size": 4}).score(rows)[::-1]
        big = make_model_scorer(path, options={"batch_size": 64, "bucket": False}).score(test_lists)
    assert np.array_equal(base[test_lists.mask], reversed_[test_lists.mask])  # same batches, same bits
    assert np.abs(base - big)[test_lists.mask].max() < 1e-5


def test_the_invariance_check_passes_for_a_model_that_masks_its_padding(seq_classifier, test_lists):
    scorer = make_model_scorer(seq_classifier, options={"batch_size": 8, "invariance_queries": 3})
    with one_torch_thread():
        scores = scorer.score(test_lists)
        check = scorer.check_invariance(test_lists, scores)
    assert check["passed"] and check["n_queries"] == 3 and check["n_candidates"] == 15
    assert check["batch_size"] == 1 and check["tolerance"] == 1e-4 and check["max_abs_diff"] < 1e-5


def test_the_invariance_check_catches_scores_that_depend_on_the_batch(seq_classifier, test_lists, monkeypatch):
    from gradebench.scorers.adapters.sequence_classifier import SequenceClassifierScorer

    plain = SequenceClassifierScorer._forward

    def leaky(self, model, batch):  # a model that reads its padding: the score moves with the batch's width
        return plain(self, model, batch) + 0.01 * batch["input_ids"].shape[1]

    monkeypatch.setattr(SequenceClassifierScorer, "_forward", leaky)
    scorer = make_model_scorer(seq_classifier, options={"batch_size": 25, "bucket": False})
    with one_torch_thread():
        check = scorer.check_invariance(test_lists, scorer.score(test_lists))
    assert not check["passed"] and check["max_abs_diff"] > 1e-3
