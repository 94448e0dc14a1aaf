"""Claim 004-list-size's policy part on synthetic `gradebench lipo --judge` records: the table per K
(judge gains, the per-prompt difference, held-out pair accuracy), grouping by policy/judge/budget,
and that it never enters the verdict (one training run per cell: shown, not tested)."""

from __future__ import annotations

import pytest

from gradebench.experiments.policy_record import PolicyRecord, policy_record_id
from gradebench.experiments.reproduction import markdown, reproduction_report
from gradebench.experiments.store import write_record
from gradebench.hashing import sha256_json

N_PROMPTS = 6


def lipo_record(results, loss: str, k: int | None, *, seed: int = 42, after: float = -0.5, pair_acc: float = 0.6,
                by_query: bool = True, judged: bool = True, steps: int = 200) -> PolicyRecord:
    """Write a v2 policy record of a judged LiPO run (judge mean -0.9 before, ``after`` after)."""
    from gradebench.experiments.environment import environment

    opts = {"steps": steps, "lr": 5e-5, "beta": 0.1, "batch_size": 4, "loss": loss, "loss_params": {},
            "list_size": k}
    run_fp = sha256_json(["lipo", loss, k, seed, opts, after])

    def side(mean: float, acc: float) -> dict:
        out = {"judge_mean": mean, "pair_accuracy": acc, "reward_mean": None}
        if by_query:
            out["judge_by_query"] = [mean + 0.1 * (i - (N_PROMPTS - 1) / 2) for i in range(N_PROMPTS)]
        return out

    judge = None if not judged else {
        "source": "judge", "fingerprint": "j" * 64, "scorer": "lambdamart", "split": "validation",
        "n_queries": N_PROMPTS, "samples": 2, "anchors": {}, "before": side(-0.9, 0.5), "after": side(after, pair_acc)}
    record = PolicyRecord(
        id=policy_record_id(run_fp), created_at="2025-01-01T00:00:00+00:00", method="lipo",
        benchmark={"name": "esnli-human", "fingerprint": "f" * 64, "path": "/nowhere", "split": "train",
                   "n_queries": 100, "reference": "median grade"},
        policy={"path": "/models/tiny", "fingerprint": "p" * 64, "model_type": "gpt2", "context": 128,
                "output_path": "/runs/x/policy"},
        reward=None, loss={"name": loss, "params": {}}, options=opts, seed=seed, n_steps=steps, window=10,
        metrics={"loss": 0.5}, first_step=None, last_step=None,
        run={"run_dir": f"/runs/lipo-{loss}-{k}-{seed}", "run_fingerprint": run_fp}, timings={"fit_s": 1.0},
        environment=environment(), judge=judge, signal=None, trajectory=None)
    write_record(record, results_dir=results)
    return record


def claim(results):
    report = reproduction_report(results)
    return report, next(c for c in report.claims if c.id == "004-list-size")


def test_the_policy_table_per_k_is_shown_and_not_tested(tmp_path):
    for k, (lam, rn) in {2: (-0.6, -0.5), 3: (-0.4, -0.5), 5: (-0.2, -0.5)}.items():
        lipo_record(tmp_path, "lambdaloss", k, after=lam, pair_acc=0.7)
        lipo_record(tmp_path, "ranknet", k, after=rn, pair_acc=0.6)
    lipo_record(tmp_path, "lambdaloss", 4, after=0.0)  # no ranknet partner at K=4: left out
    lipo_record(tmp_path, "ranknet", 2, after=9.0, steps=50)  # another budget: another group, fewer K
    lipo_record(tmp_path, "listmle", 2, after=9.0)  # not one of the two losses
    lipo_record(tmp_path, "ranknet", None, after=9.0)  # no list size
    report, c = claim(tmp_path)
    assert c.verdict == "not testable" and not c.steps  # no scorer records: the policy part does not test
    (table,) = c.tables
    assert table.title.startswith("Policy: `gradebench lipo` by training list size (esnli-human, judge lambdamart")
    assert [r[0] for r in table.rows] == ["K=2", "K=3", "K=5"]
    k2, k3, k5 = table.rows
    assert k2[1] == pytest.approx(0.3) and k2[2] == pytest.approx(0.4)  # after - before
    assert k5[3].value == pytest.approx(0.3) and k5[3].n == N_PROMPTS and k3[3].value == pytest.approx(0.1)
    assert (k2[4], k2[5], k2[6]) == (0.7, 0.6, 1)
    assert any("Policy part: not tested, and not in the verdict" in n for n in c.notes)
    assert "lambdaloss - ranknet" in markdown(report)


def test_seeds_are_averaged_and_missing_per_prompt_scores_leave_the_difference_empty(tmp_path):
    for seed, gain in ((42, -0.5), (7, -0.3)):
        lipo_record(tmp_path, "lambdaloss", 2, seed=seed, after=gain, by_query=False)
        lipo_record(tmp_path, "ranknet", 2, seed=seed, after=-0.6, by_query=False)
    _, c = claim(tmp_path)
    (row,) = c.tables[0].rows
    assert row[1] == pytest.approx(0.5) and row[2] == pytest.approx(0.3) and row[3] is None and row[6] == 2
    assert "seeds: 7, 42" in c.tables[0].title


def test_without_judged_lipo_records_the_claim_says_what_writes_them(tmp_path):
    lipo_record(tmp_path, "lambdaloss", 2, judged=False)
    _, c = claim(tmp_path)
    assert not c.tables and any("esnli-human-lipo-list-size.sh writes them" in n for n in c.notes)
    lipo_record(tmp_path, "lambdaloss", 3)
    _, c = claim(tmp_path)
    assert not c.tables and any("no list size has both" in n for n in c.notes)
