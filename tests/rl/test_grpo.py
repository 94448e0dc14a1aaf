"""GRPO (TRL GRPOTrainer) with a plain gradebench-style reward: rewards flow, weights change, records are written."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from gradebench.errors import InvalidArgumentError, RunError  # noqa: E402
from gradebench.experiments.store import list_policy_records  # noqa: E402
from gradebench.rl.grpo import grpo  # noqa: E402
from gradebench.rl.rewards import call_reward, grpo_reward_function, resolve_reward  # noqa: E402
from gradebench.rl.runs import POLICY_DIR  # noqa: E402
from gradebench.rl.steplog import StepLog, above_fraction  # noqa: E402
from tests.rl.conftest import weights_changed  # noqa: E402


def _queries(benchmark, split="train"):
    from gradebench.benchmark.lists import open_benchmark

    return {str(q) for q in open_benchmark(benchmark).lists(split).queries}


def test_grpo_trains_logs_and_records(tiny_gpt2, demo_benchmark, tmp_path, length_reward):
    out, results = tmp_path / "run", tmp_path / "results"
    result = grpo(tiny_gpt2, length_reward, demo_benchmark, out=out, steps=3, num_generations=4, batch_prompts=2,
                  lr=1e-3, max_completion_length=12, results_dir=results, seed=3)
    assert result.method == "grpo" and result.n_steps == 3
    for line in result.history:
        assert line["n_generations"] == 8  # two prompts x four generations per step
        for key in ("loss", "reward_mean", "reward_std", "kl", "above_reference"):
            assert isinstance(line[key], float) and math.isfinite(line[key]), (key, line)
        assert 0.0 <= line["above_reference"] <= 1.0
    assert weights_changed(tiny_gpt2, out / POLICY_DIR) > 0
    # the reward saw the raw queries (not the templated prompts) and decoded, stripped completions
    queries = _queries(demo_benchmark)
    generation_calls = [c for c in length_reward.calls if len(c[0]) == 8]
    assert generation_calls and all(set(prompts) <= queries for prompts, _ in generation_calls)
    # each query's reference (fair) candidate was scored once, in separate calls
    assert sum(len(p) for p, _ in length_reward.calls if len(p) != 8) <= len(queries)
    [record] = list_policy_records(results)
    assert record.method == "grpo" and record.reward.fingerprint == "length-reward-v1"
    assert record.options["num_generations"] == 4 and record.metrics["reward_mean"] is not None


def test_grpo_reward_function_logs_above_reference():
    from gradebench.rl.prompts import PromptItem

    items = [PromptItem("q1", "premise a", "premise a\nExplanation:", "ref text", 2.0, "fair")]
    log = StepLog(None, key_map={}, total_steps=1)

    def reward(prompts, completions):
        return [float(len(c)) for c in completions]

    fn = grpo_reward_function(resolve_reward(reward), items, log)
    assert fn.__name__ == "gradebench_reward"  # TRL names the reward columns after it
    out = fn(["premise a\nExplanation:"] * 3, ["  a", "a much longer text ", "x" * 8], query=["premise a"] * 3,
             query_id=["q1"] * 3, trainer_state=None, log_metric=None)
    assert out == [1.0, 18.0, 8.0]
    line = log.flush(1, {})
    assert line["above_reference"] == pytest.approx(1 / 3)  # only the 18-char text beats "ref text" (8)
    assert line["reward_mean"] == pytest.approx(9.0)


def test_above_fraction_is_strict():
    assert above_fraction([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]) == pytest.approx(1 / 3)
    assert math.isnan(above_fraction([], []))


def test_call_reward_checks_its_output():
    with pytest.raises(RunError, match="returned 1 values for 2"):
        call_reward(lambda prompts, completions: [0.0], ["q", "q"], ["a", "b"])
    with pytest.raises(RunError, match="NaN"):
        call_reward(lambda prompts, completions: [float("nan")], ["q"], ["a"])
    with pytest.raises(RunError, match="did not return numbers"):
        call_reward(lambda prompts, completions: ["high"], ["q"], ["a"])
    with pytest.raises(RunError, match="reward failed"):
        call_reward(lambda prompts, completions: 1 / 0, ["q"], ["a"])


def test_resolve_reward_refuses_what_is_not_a_reward():
    with pytest.raises(InvalidArgumentError, match="folder or a callable"):
        resolve_reward(42)


def test_grpo_refuses_prompts_that_leave_no_room(tiny_gpt2, demo_benchmark, tmp_path, length_reward):
    with pytest.raises(InvalidArgumentError, match="for the response"):
        grpo(tiny_gpt2, length_reward, demo_benchmark, out=tmp_path / "run", steps=1, max_completion_length=250,
             results_dir=tmp_path / "res")
    with pytest.raises(InvalidArgumentError, match="longer than the policy's context"):
        grpo(tiny_gpt2, length_reward, demo_benchmark, out=tmp_path / "run", steps=1,
             prompt_template="{query}" + " more words" * 200, results_dir=tmp_path / "res")
    with pytest.raises(InvalidArgumentError, match="--num-generations"):
        grpo(tiny_gpt2, length_reward, demo_benchmark, out=tmp_path / "run", steps=1, num_generations=1,
             results_dir=tmp_path / "res")
    assert not (tmp_path / "run").exists() and not (tmp_path / "res").exists()
    assert length_reward.calls == []


def test_grpo_refuses_a_non_causal_policy(encoder_folder, demo_benchmark, tmp_path, length_reward):
    with pytest.raises(InvalidArgumentError, match="not a causal language model"):
        grpo(encoder_folder, length_reward, demo_benchmark, out=tmp_path / "run", steps=1,
             results_dir=tmp_path / "res")
    assert not (tmp_path / "run").exists()


def test_a_failing_reward_leaves_nothing_behind(tiny_gpt2, demo_benchmark, tmp_path):
    def broken(prompts, completions):
        raise RuntimeError("scorer exploded")

    with pytest.raises(RunError, match="scorer exploded"):
        grpo(tiny_gpt2, broken, demo_benchmark, out=tmp_path / "run", steps=2, max_completion_length=4,
             results_dir=tmp_path / "res")
    assert not (tmp_path / "run").exists()
    assert not list(tmp_path.rglob("*.json"))


def test_policy_record_schema_is_generated():
    from gradebench.experiments.policy_record import PolicyRecord, policy_schema_json

    schema = policy_schema_json()
    assert schema["$id"].endswith("policy-v2.json")
    assert set(PolicyRecord.model_fields) <= set(schema["properties"])
    assert schema["properties"]["kind"]["const"] == "gradebench.policy"
