"""Claim 4 of the reproduction report (seeds/000 Table 7: a ListNet vs an MSE reward for policy
optimisation) on synthetic policy records: the convergence check (contradicted when every MSE run
converged, as claimed, mixed), the seed-paired steps (never significant with 3 seeds, significant
with 7), and the not-testable branches (no records, no reward loss, nothing to pair)."""

from __future__ import annotations

import numpy as np
import pytest

from gradebench.experiments.policy_record import PolicyRecord, policy_record_id
from gradebench.experiments.reproduction import markdown, reproduction_report, text
from gradebench.experiments.reproduction.model import CHECK
from gradebench.experiments.store import write_record
from gradebench.hashing import sha256_json
from gradebench.rl.steplog import trajectory

STEPS = 200
LISTNET, MSE = "hashed-mlp + listnet", "hashed-mlp + mse"


def plateau(at: int, top: float = 1.0) -> list[float]:
    """A reward that climbs linearly from 0 to ``top`` over ``at`` steps, then stays there."""
    return [top * min(i, at) / at for i in range(STEPS)]


def climb(top: float = 1.0) -> list[float]:
    """A reward still climbing at the same rate at the end (never levels off)."""
    return [top * i / STEPS for i in range(STEPS)]


def policy(results, loss: str | None, seed: int, curve: list[float], *, judge_gain: float = 0.4, snr: float = 0.2,
           method: str = "grpo", options: dict | None = None, judged: bool = True) -> PolicyRecord:
    """Write a v2 policy record of a run with reward ``hashed-mlp + loss`` whose per-step reward is ``curve``."""
    from gradebench.experiments.environment import environment

    opts = {"steps": len(curve), "lr": 1e-4, **(options or {})}
    run_fp = sha256_json(["run", method, loss, seed, opts, curve])
    judge = None if not judged else {
        "source": "judge", "fingerprint": "j" * 64, "scorer": "lambdamart", "split": "validation", "n_queries": 200,
        "samples": 2, "anchors": {}, "before": {"judge_mean": -0.9}, "after": {"judge_mean": -0.9 + judge_gain}}
    signal = None if not judged else {
        "definition": "x", "advantage_scale": "group", "advantage_snr": snr, "judge_agreement": 0.6,
        "n_pairs": 100, "group_reward_std": 0.5}
    record = PolicyRecord(
        id=policy_record_id(run_fp), created_at="2025-01-01T00:00:00+00:00", method=method,
        benchmark={"name": "esnli-human", "fingerprint": "f" * 64, "path": "/nowhere", "split": "train",
                   "n_queries": 100, "reference": "median grade"},
        policy={"path": "/models/tiny", "fingerprint": "p" * 64, "model_type": "gpt2", "context": 128,
                "output_path": "/runs/x/policy"},
        reward={"source": f"/rewards/{loss}", "fingerprint": "r" * 64, "normalize": True,
                "scorer": None if loss is None else "hashed-mlp", "loss": loss},
        loss=None, options=opts, seed=seed, n_steps=len(curve), window=10,
        metrics={"reward_mean": curve[-1], "kl": 0.1}, first_step=None, last_step=None,
        run={"run_dir": f"/runs/{method}-{loss}-{seed}", "run_fingerprint": run_fp}, timings={"fit_s": 1.0},
        environment=environment(), judge=judge, signal=signal,
        trajectory=trajectory([{"step": i + 1, "reward_mean": r} for i, r in enumerate(curve)]))
    write_record(record, results_dir=results)
    return record


def claim(results):
    report = reproduction_report(results)
    return report, next(c for c in report.claims if c.id == "000-table7")


def check_of(c):
    return next(s for s in c.steps if s.test == CHECK)


def test_contradicted_when_every_mse_run_converged(tmp_path):
    for seed, (gain_l, gain_m) in zip((7, 42, 123), ((0.5, 0.4), (0.3, 0.4), (0.6, 0.5))):
        policy(tmp_path, "listnet", seed, plateau(60), judge_gain=gain_l, snr=0.3)
        policy(tmp_path, "mse", seed, plateau(80), judge_gain=gain_m, snr=0.2)
    report, c = claim(tmp_path)
    assert c.verdict == "contradicted"
    check = check_of(c)
    assert check.outcome == "opposite" and check.p_value is None and check.p_adjusted is None
    assert check.note.startswith("3 of 3 hashed-mlp + listnet runs and 3 of 3 hashed-mlp + mse runs converged")
    assert "not a significance test" in check.note and check.unit == "runs" and check.n_queries == 6
    paired = [s for s in c.steps if s.test != CHECK]
    assert [s.part for s in paired] == ["quality", "convergence", "reward signal"]
    # three seed pairs: an exact sign-flip test gives p >= 0.25, never significant
    assert all(s.seeds == (7, 42, 123) and s.n_queries == 3 and s.p_value >= 0.25 for s in paired)
    assert all(s.outcome == "not significant" for s in paired)
    speed = paired[1]
    reach = {at: trajectory([{"step": i + 1, "reward_mean": r} for i, r in enumerate(plateau(at))])["steps_to_reach"]
             for at in (60, 80)}
    assert reach[60] < reach[80]
    assert speed.relation == f"{LISTNET} < {MSE}" and speed.difference == reach[80] - reach[60]  # mse - listnet
    assert "smallest two-sided p an exact sign-flip test can give is 0.25" in c.reason
    assert "tested with GRPO" in c.source and any("GRPO standardises each group's rewards" in m for m in c.method)
    assert [t.title for t in c.tables][0].startswith("Paper: PPO")  # the paper's figures stay
    assert "| mixed" not in markdown(report) and "opposite" in markdown(report)


def test_as_claimed_check_but_paired_steps_cannot_reproduce_with_three_seeds(tmp_path):
    for seed, bump in ((7, 0.0), (42, 0.1), (123, 0.2)):
        policy(tmp_path, "listnet", seed, plateau(50), judge_gain=0.5 + bump, snr=0.3 + bump)
        policy(tmp_path, "mse", seed, climb(), judge_gain=0.2 + bump, snr=0.1 + bump)
    _, c = claim(tmp_path)
    check = check_of(c)
    assert check.outcome == "as claimed" and check.above_value == 1.0 and check.below_value == 0.0
    paired = [s for s in c.steps if s.test != CHECK]
    assert all(s.difference > 0 and s.p_value == pytest.approx(0.25) for s in paired)  # as claimed, 3 of 3 seeds
    assert all(s.outcome == "not significant" for s in paired)
    assert c.verdict == "inconclusive" and "'better' parts cannot be reproduced" in c.reason
    runs = c.tables[1]
    assert [r[:3] for r in runs.rows] == [(LISTNET, 7, 200), (LISTNET, 42, 200), (LISTNET, 123, 200),
                                          (MSE, 7, 200), (MSE, 42, 200), (MSE, 123, 200)]
    assert {r[6] for r in runs.rows[:3]} == {"yes"} and {r[6] for r in runs.rows[3:]} == {"no"}
    assert {r[5] for r in runs.rows[3:]} == {"1.00"}  # a straight climb: late rate 1


def test_mixed_when_the_runs_disagree(tmp_path):
    for seed in (7, 42, 123):
        policy(tmp_path, "listnet", seed, plateau(50))
        policy(tmp_path, "mse", seed, plateau(50) if seed == 42 else climb())
    _, c = claim(tmp_path)
    check = check_of(c)
    assert check.outcome == "mixed" and check.below_value == pytest.approx(1 / 3)
    assert c.verdict == "inconclusive" and "mixed (3 of 3 hashed-mlp + listnet runs and 1 of 3" in c.reason


def test_a_reward_that_never_rose_never_converged(tmp_path):
    for seed in (7, 42):
        policy(tmp_path, "listnet", seed, plateau(50))
        policy(tmp_path, "mse", seed, [1.0 - i / STEPS for i in range(STEPS)])  # falls: no gain, no 90% step
    _, c = claim(tmp_path)
    assert check_of(c).outcome == "as claimed"
    speed = next(s for s in c.steps if s.metric.startswith("steps to 90%"))
    assert speed.outcome == "not tested" and "fewer than 2 seeds" in speed.note  # no mse run has a 90% step


def test_reproduced_with_enough_seeds(tmp_path):
    """Seven seed pairs all in the claimed direction: p = 2/128 each, Holm x3 = 0.047 < 0.05."""
    for i, seed in enumerate((1, 2, 3, 4, 5, 6, 7)):
        policy(tmp_path, "listnet", seed, plateau(40 + i), judge_gain=0.5 + 0.01 * i, snr=0.4 + 0.01 * i)
        policy(tmp_path, "mse", seed, climb(), judge_gain=0.1, snr=0.1)
    _, c = claim(tmp_path)
    paired = [s for s in c.steps if s.test != CHECK]
    assert all(s.p_value == pytest.approx(2 / 128) and s.p_adjusted == pytest.approx(6 / 128) for s in paired)
    assert all(s.outcome == "as claimed" for s in paired) and check_of(c).outcome == "as claimed"
    assert c.verdict == "reproduced" and "cannot be reproduced" not in c.reason


def test_runs_pair_by_seed_within_the_same_budget(tmp_path):
    for seed in (7, 42):
        policy(tmp_path, "listnet", seed, plateau(50))
        policy(tmp_path, "mse", seed, climb())
    policy(tmp_path, "listnet", 5, plateau(50))  # no mse partner: in the runs table, not in the paired steps
    policy(tmp_path, "mse", 7, climb(), options={"lr": 1e-3})  # another budget: its own group, with no partner
    _, c = claim(tmp_path)
    assert len(c.tables) == 3  # the paper's, one runs table, one paired table: the lr 1e-3 run is left out
    assert [r[1] for r in c.tables[1].rows] == [5, 7, 42, 7, 42]
    assert all(s.seeds == (7, 42) for s in c.steps if s.test != CHECK)
    assert check_of(c).n_queries == 5


def test_ppo_records_are_named_as_ppo(tmp_path):
    for seed in (7, 42):
        policy(tmp_path, "listnet", seed, plateau(50), method="ppo")
        policy(tmp_path, "mse", seed, climb(), method="ppo")
    _, c = claim(tmp_path)
    assert c.source.endswith("tested with PPO") and not any("GRPO" in m for m in c.method)
    assert "ppo, esnli-human, hashed-mlp reward, 200 steps" in c.tables[1].title


def test_two_groups_are_tested_together(tmp_path):
    for method in ("grpo", "ppo"):
        for seed in (7, 42):
            policy(tmp_path, "listnet", seed, plateau(50), method=method)
            policy(tmp_path, "mse", seed, plateau(50), method=method)
    _, c = claim(tmp_path)
    parts = sorted({s.part.split(":")[0] for s in c.steps})
    assert parts == [f"{m}, esnli-human, hashed-mlp reward, 200 steps" for m in ("grpo", "ppo")]
    assert c.verdict == "contradicted" and "tested with GRPO/PPO" in c.source


@pytest.mark.parametrize("setup, needle", [
    ([], "No policy records in this folder"),
    ([(None, 7), (None, 42)], "none with a reward trained with listnet or mse that names its loss"),
    ([("listnet", 7), ("listnet", 42)], "No listnet-reward run has an mse-reward run"),
    ([("listnet", 7), ("mse", 42)], "(grpo on esnli-human: listnet seed 7, mse seed 42)"),
])
def test_not_testable_without_pairable_records(tmp_path, setup, needle):
    for loss, seed in setup:
        policy(tmp_path, loss, seed, plateau(50))
    report, c = claim(tmp_path)
    assert c.verdict == "not testable" and needle in c.reason and not c.steps
    assert "recipes/experiments/esnli-human-policy.sh" in c.reason and "gradebench grpo" in c.reason
    assert [t.title for t in c.tables] == ["Paper: PPO with each reward model (seeds/000 Table 7)"]
    assert c.source == "seeds/000, Table 7 (PPO, GPT-2 medium policy)"
    assert max(len(line) for line in text(report, width=80).splitlines()) <= 80


def test_unjudged_runs_leave_the_judge_steps_untested(tmp_path):
    for seed in (7, 42, 123):
        policy(tmp_path, "listnet", seed, plateau(50), judged=False)
        policy(tmp_path, "mse", seed, climb(), judged=False)
    _, c = claim(tmp_path)
    by_part = {s.part: s for s in c.steps if s.test != CHECK}
    assert by_part["quality"].outcome == "not tested" and by_part["reward signal"].outcome == "not tested"
    assert by_part["convergence"].p_value == pytest.approx(0.25)
    assert c.verdict == "inconclusive"


def test_text_fits_80_columns_and_is_deterministic(tmp_path):
    for seed in (7, 42, 123):
        policy(tmp_path, "listnet", seed, plateau(50))
        policy(tmp_path, "mse", seed, list(np.linspace(0, 1, STEPS)))
    a, b = reproduction_report(tmp_path), reproduction_report(tmp_path)
    assert markdown(a) == markdown(b)
    assert max(len(line) for line in text(a, width=80).splitlines()) <= 80
