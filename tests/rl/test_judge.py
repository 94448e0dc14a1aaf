"""GRPO with a held-out judge: per-step signal, before/after figures, record v2 (v1 records still load).

LiPO with a judge: tests/rl/test_lipo_judge.py."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from gradebench.errors import InvalidArgumentError  # noqa: E402
from gradebench.experiments.store import read_policy_record  # noqa: E402
from gradebench.rl.grpo import grpo  # noqa: E402
from tests.cli.conftest import assert_one_line_error  # noqa: E402
from tests.conftest import one_torch_thread  # noqa: E402

FIGURES = {"judge_mean", "judge_above_reference", "judge_above_best", "reward_mean", "best_f1", "distinct_2",
           "mean_words", "empty_share", "n_completions", "judge_by_query", "examples"}


def _grpo(policy, reward, bench, out, results, **kwargs):
    with one_torch_thread():
        return grpo(policy, reward, bench, out=out, steps=2, num_generations=2, batch_prompts=2, lr=1e-3,
                    max_completion_length=8, results_dir=results, seed=3, **kwargs)


@pytest.fixture(scope="module")
def judged(tiny_gpt2, demo_benchmark, exported_reward, tmp_path_factory):
    """A GRPO run rewarded by a plain callable and judged by the exported hashed-mlp."""
    from tests.rl.conftest import LengthReward

    root = tmp_path_factory.mktemp("judged")
    result = _grpo(tiny_gpt2, LengthReward(), demo_benchmark, root / "run", root / "res", judge=exported_reward,
                   judge_queries=3, judge_samples=2)
    return root, result


def test_a_judged_run_records_the_judge_and_the_signal(judged, exported_reward):
    root, result = judged
    j = result.judge
    assert j["source"] == str(exported_reward.resolve()) and j["scorer"] == "hashed-mlp + listnet"
    assert (j["split"], j["n_queries"], j["samples"]) == ("validation", 3, 2)
    anchors = j["anchors"]
    assert set(anchors["judge_by_grade"]) == set(anchors["reward_by_grade"]) and anchors["judge_by_grade"]
    for side in ("before", "after"):
        assert set(j[side]) == FIGURES and j[side]["n_completions"] == 6
        for key in ("judge_above_reference", "judge_above_best", "best_f1", "empty_share"):
            assert 0.0 <= j[side][key] <= 1.0
    # the same prompts, the same sampling seed: the first completions' queries are paired
    assert [e["query_id"] for e in j["before"]["examples"]] == [e["query_id"] for e in j["after"]["examples"]]
    s = result.signal
    assert s["advantage_scale"] == "group" and 0 <= s["n_pairs"] <= 4  # 2 steps x 2 groups x 1 pair
    assert s["group_reward_std"] is not None and "sign(J_i - J_j)" in s["definition"]
    for line in result.history:
        assert isinstance(line["group_reward_std"], float) and isinstance(line["judge_mean"], float)
    assert "judge_s" in result.timings
    record = read_policy_record(result.record)
    assert record.schema_version == 2 and record.judge.before == j["before"] and record.signal.n_pairs == s["n_pairs"]
    import importlib.util

    if importlib.util.find_spec("jsonschema") is not None:
        import jsonschema

        from gradebench.experiments.policy_record import policy_schema_json

        jsonschema.validate(json.loads(record.path.read_text()), policy_schema_json())


def test_the_judge_is_part_of_the_fingerprint(judged, tiny_gpt2, demo_benchmark, tmp_path):
    from tests.rl.conftest import LengthReward

    root, result = judged
    plain = _grpo(tiny_gpt2, LengthReward(), demo_benchmark, tmp_path / "run", tmp_path / "res")
    assert plain.run_fingerprint != result.run_fingerprint
    assert plain.judge is None and plain.signal["advantage_snr"] is None
    assert plain.signal["group_reward_std"] is not None
    assert read_policy_record(plain.record).judge is None


def test_a_version_1_record_still_loads(judged, tmp_path):
    from gradebench.experiments.policy_record import policy_record_id

    root, result = judged
    raw = json.loads(read_policy_record(result.record).path.read_text())
    for key in ("judge", "signal"):
        raw.pop(key)
    raw["schema_version"] = 1
    raw["id"] = policy_record_id(raw["run"]["run_fingerprint"], schema_version=1)
    old = tmp_path / f"{raw['id']}.policy.json"
    old.write_text(json.dumps(raw))
    record = read_policy_record(old)
    assert record.schema_version == 1 and record.judge is None and record.signal is None
    raw["schema_version"] = 3
    old.write_text(json.dumps(raw))
    from gradebench.errors import RecordError

    with pytest.raises(RecordError, match="schema v3 is not supported"):
        read_policy_record(old)


def test_the_judge_must_not_be_the_reward(tiny_gpt2, demo_benchmark, exported_reward, tmp_path):
    with pytest.raises(InvalidArgumentError, match="--judge is the reward being optimised"):
        _grpo(tiny_gpt2, exported_reward, demo_benchmark, tmp_path / "run", tmp_path / "res", judge=exported_reward)
    assert not (tmp_path / "run").exists()


def test_judge_flags_fail_in_one_line(cli, tiny_gpt2, demo_benchmark, exported_reward, tmp_path):
    common = ["--policy", tiny_gpt2, "--reward", exported_reward, "--benchmark", demo_benchmark, "--out",
              tmp_path / "run", "--results-dir", tmp_path / "res"]
    code, _, err = cli("grpo", *common, "--judge", exported_reward)
    assert code == 2
    assert_one_line_error(err, "--judge is the reward being optimised")
    code, _, err = cli("grpo", *common, "--judge", tmp_path, "--judge-queries", "0")
    assert code == 2
    assert_one_line_error(err, "--judge-queries must be an integer >= 1, got 0")
    code, _, err = cli("grpo", *common, "--judge", tmp_path / "nothing")
    assert code == 2 and "nothing" in err
    assert not (tmp_path / "run").exists()


def test_the_judge_figures_in_the_history_are_finite_or_null(judged):
    _, result = judged
    for line in result.history:
        for key in ("advantage_snr", "judge_agreement"):
            value = line.get(key)
            assert value is None or math.isfinite(value)


def test_policy_rows_read_the_judged_record(judged, exported_reward):
    from gradebench.experiments.policy_report import policy_rows
    from gradebench.rl.rewards import resolve_reward

    root, result = judged
    [row] = policy_rows(root / "res", benchmark=result.benchmark)
    assert row["reward"] == "callable:LengthReward" and row["judge"] == "hashed-mlp + listnet" and row["seed"] == 3
    j = result.judge
    assert row["judge_gain"] == pytest.approx(j["after"]["judge_mean"] - j["before"]["judge_mean"])
    assert row["advantage_snr"] == result.signal["advantage_snr"]
    ref = resolve_reward(exported_reward).ref  # an exported reward names its scorer and loss in the record
    assert (ref["scorer"], ref["loss"]) == ("hashed-mlp", "listnet")
