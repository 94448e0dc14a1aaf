"""The advantage signal of a GRPO step (closed form) and the held-out judge's figures."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gradebench.errors import InvalidArgumentError
from gradebench.rl.judging import distinct_bigrams, word_f1
from gradebench.rl.signal import (
    SignalLog,
    advantage_snr,
    group_spread,
    groups,
    grpo_advantages,
    judge_agreement,
    judged_pairs,
)


def test_grpo_advantages_are_trl_s():
    # group [1, 3]: mean 2, sample std sqrt(2); group [5, 5]: no spread -> 0
    a = grpo_advantages([[1.0, 3.0], [5.0, 5.0]])
    s = math.sqrt(2) + 1e-4
    np.testing.assert_allclose(a, [[-1 / s, 1 / s], [0.0, 0.0]])
    assert grpo_advantages([[1.0, 3.0]], scale="none").tolist() == [[-1.0, 1.0]]
    with pytest.raises(InvalidArgumentError, match="scale"):
        grpo_advantages([[1.0, 3.0]], scale="batch")


def test_groups_are_consecutive_blocks():
    assert groups([1, 2, 3, 4, 5, 6], 3).tolist() == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(InvalidArgumentError, match="groups of 4"):
        groups([1, 2, 3], 4)


def test_judged_pairs_closed_form():
    # pairs (0,1) and (0,2) have a judge direction (-1); (1,2) is a judge tie and is left out
    x, agree = judged_pairs([[0.0, 1.0, 2.0]], [[0.0, 5.0, 5.0]])
    assert x.tolist() == [1.0, 2.0] and agree.tolist() == [1.0, 1.0]
    # the reward against the judge: negative pushes, no agreement; a reward tie counts 1/2
    x, agree = judged_pairs([[2.0, 1.0, 1.0]], [[0.0, 1.0, 2.0]])
    assert x.tolist() == [-1.0, -1.0, 0.0] and agree.tolist() == [0.0, 0.0, 0.5]
    assert judge_agreement(agree) == pytest.approx(1 / 6)


def test_advantage_snr_is_mean_over_std():
    assert advantage_snr([1.0, 3.0]) == 2.0
    assert advantage_snr([-1.0, 1.0]) == 0.0
    assert math.isnan(advantage_snr([1.0])) and math.isnan(advantage_snr([2.0, 2.0]))


def test_the_signal_does_not_depend_on_the_reward_s_units():
    rng = np.random.default_rng(0)
    rewards, judge = rng.normal(size=(20, 4)), rng.normal(size=(20, 4))
    for scale in ("group", "none"):
        x1, a1 = judged_pairs(grpo_advantages(rewards, scale=scale), judge)
        x2, a2 = judged_pairs(grpo_advantages(1000 * rewards + 7, scale=scale), judge)
        assert advantage_snr(x2) == pytest.approx(advantage_snr(x1), rel=1e-3)  # TRL's 1e-4 in the std
        assert a1.tolist() == a2.tolist()
    # the group spread does: it is the figure in the reward's own units
    assert group_spread(10 * rewards) == pytest.approx(10 * group_spread(rewards))


def test_a_signal_log_pools_its_steps():
    log = SignalLog()
    # two groups of two: one pair pushed the judge's way by ~1.414 (a group's advantages are +-1/sqrt(2)
    # over its sample std), one the other way: no net signal
    first = log.step(np.array([[0.0, 1.0], [0.0, 2.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert first["judge_agreement"] == 0.5 and first["group_reward_std"] == pytest.approx(0.75)
    assert first["advantage_snr"] == pytest.approx(0.0, abs=1e-3)
    second = log.step(np.array([[0.0, 1.0]]), np.array([[0.0, 1.0]]))
    assert second["judge_agreement"] == 1.0 and second["advantage_snr"] is None  # one pair: no spread
    summary = log.summary()
    assert summary["n_pairs"] == 3 and summary["judge_agreement"] == pytest.approx(2 / 3)
    # x ~ [1.414, -1.414, 1.414]: mean 0.471, std 1.333
    assert summary["advantage_snr"] == pytest.approx(advantage_snr(log.x)) == pytest.approx(1 / math.sqrt(8), rel=1e-3)
    assert summary["group_reward_std"] == pytest.approx((0.75 + 0.5) / 2)
    no_judge = SignalLog()
    assert no_judge.step(np.array([[0.0, 2.0]]), None) == {"group_reward_std": 1.0}
    assert no_judge.summary()["advantage_snr"] is None and no_judge.summary()["n_pairs"] == 0


def test_word_f1_and_distinct_bigrams():
    assert word_f1("a dog is an animal", "A dog is an animal.") == 1.0
    assert word_f1("dog", "a dog") == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert word_f1("", "a dog") == 0.0
    assert distinct_bigrams(["not all not all"]) == pytest.approx(2 / 3)
    assert math.isnan(distinct_bigrams(["one", ""]))
