"""Judged policy runs side by side: the flat rows, the seed-paired differences, the Markdown tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gradebench.experiments.policy_report import converged, late_rate, paired, paired_table, runs_table, t_interval
from gradebench.rl.steplog import trajectory


def _rows():
    rows = []
    for reward, base in (("r + listnet", 1.0), ("r + mse", 0.0)):
        for seed, bump in ((7, 0.0), (42, 1.0), (123, 2.0)):
            rows.append({"reward": reward, "seed": seed, "judge_gain": base + bump, "steps_to_reach": 100 - 10 * base})
    rows.append({"reward": "r + mse", "seed": 5, "judge_gain": 9.0, "steps_to_reach": None})  # no partner: left out
    return rows


def test_paired_differences_are_seed_by_seed():
    p = paired(_rows(), "judge_gain", "r + listnet", "r + mse")
    assert p.seeds == (7, 42, 123) and p.diffs == (1.0, 1.0, 1.0) and p.mean_diff == 1.0
    assert p.ci == (1.0, 1.0) and p.a_better == 3
    steps = paired(_rows(), "steps_to_reach", "r + listnet", "r + mse", better=-1)
    assert steps.diffs == (-10.0, -10.0, -10.0) and steps.a_better == 3  # fewer steps is better
    assert paired(_rows(), "steps_to_reach", "r + listnet", "r + mse", better=0).a_better is None
    assert paired(_rows(), "judge_gain", "r + listnet", "nothing") is None


def test_t_interval_closed_form():
    lo, hi = t_interval([1.0, 2.0, 3.0])
    half = 4.302652729911275 * 1.0 / math.sqrt(3)  # t(0.975, 2) * sd / sqrt(n)
    assert (lo, hi) == pytest.approx((2 - half, 2 + half))
    assert t_interval([1.0]) is None


def test_tables_render_every_row_and_figure():
    figures = {"judge_gain": ("judge gain", 1), "steps_to_reach": ("steps", 0)}
    text = paired_table(_rows(), "r + listnet", "r + mse", figures)
    lines = text.splitlines()
    assert len(lines) == 4 and lines[2].startswith("| judge gain | 2.000 | 1.000 |") and lines[2].endswith("| 3 of 3 |")
    assert lines[3].startswith("| steps | 90 | 100 |") and lines[3].endswith("| – |")
    row = {k: None for k in ("reward_start", "reward_end", "steps_to_reach", "kl_end", "group_reward_std",
                             "advantage_snr", "judge_agreement")}
    for key in ("judge_mean", "judge_above_reference", "best_f1", "distinct_2", "mean_words"):
        row[f"{key}_before"] = row[f"{key}_after"] = None
    assert runs_table([{**row, "reward": "x", "seed": 1}]).splitlines()[2].startswith("| x | 1 | – → – | – |")


def test_trajectory_needs_a_rise_and_enough_steps():
    assert trajectory([{"step": 1, "reward_mean": 0.0}], n_bins=10) is None
    flat = trajectory([{"step": i + 1, "reward_mean": 1.0 - i / 20} for i in range(20)], n_bins=10)
    assert flat["reward_gain"] < 0 and flat["steps_to_reach"] is None and flat["end_change"] is None
    assert set(flat["bins"]) == {"reward_mean"} and len(flat["bins"]["reward_mean"]) == 10


def _bins(*values):
    return {"bins": {"reward_mean": list(values)}}


@pytest.mark.parametrize("rewards, rate, done", [
    ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9), 1.0, False),  # a straight climb: as fast at the end as on average
    ((0, 3, 6, 9, 9, 9, 9, 9, 9, 9), 0.0, True),  # up, then flat over the whole last half
    ((0, 1, 2, 3, 4, 9, 9, 9, 9, 9), 0.0, True),  # a late jump, then flat: levelled off too
    ((0, 4, 8, 8, 8, 8, 7.9, 8.1, 7.95, 8.05), None, True),  # noise around a plateau (checked below)
    ((0, 8, 10, 10, 10, 9, 7, 5, 3, 1), None, False),  # rose, then collapsed: falling fast at the end
    ((1, 0.5, 0, 0, 0, 0, 0, 0, 0, 0), None, False),  # the reward fell: no gain, never converged
    ((0, 0, 0, 0, 0, 0, 0, 0, 0, 0), None, False),  # flat from the start: no gain
])
def test_late_rate_and_converged_closed_form(rewards, rate, done):
    t = _bins(*rewards)
    if rate is not None:
        assert late_rate(t) == pytest.approx(rate, abs=1e-12)
    assert converged(t) is done


def test_late_rate_is_the_late_slope_over_the_average_rise():
    rewards = [0, 4, 8, 8, 8, 8, 7.9, 8.1, 7.95, 8.05]
    x = np.arange(5, 10)
    slope = np.polyfit(x, rewards[5:], 1)[0]
    assert late_rate(_bins(*rewards)) == pytest.approx(slope / (8.05 / 9))
    collapse = [0, 8, 10, 10, 10, 9, 7, 5, 3, 1]
    assert late_rate(_bins(*collapse)) == pytest.approx(np.polyfit(x, collapse[5:], 1)[0] / (1 / 9))  # -18
    assert late_rate(_bins(1, 0.5, 0)) is None and late_rate(None) is None and late_rate(_bins()) is None
    assert converged(None) is None and converged({"bins": {}}) is None
    assert converged(_bins(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), max_late_rate=1.0) is True  # the cut is a parameter
