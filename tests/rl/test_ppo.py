"""PPO (trl.experimental.ppo, TRL 1.12): the reward-model adaptor through TRL's own get_reward, and a short run."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from gradebench.errors import InvalidArgumentError  # noqa: E402
from gradebench.experiments.store import list_policy_records  # noqa: E402
from gradebench.rl.ppo import ppo  # noqa: E402
from gradebench.rl.prompts import PromptItem  # noqa: E402
from gradebench.rl.rewards import resolve_reward, token_reward_model  # noqa: E402
from gradebench.rl.runs import POLICY_DIR  # noqa: E402
from gradebench.rl.steplog import StepLog  # noqa: E402
from tests.rl.conftest import weights_changed  # noqa: E402


def test_adaptor_serves_trl_get_reward(tiny_gpt2, length_reward):
    """TRL's get_reward reads the adaptor's score at each row's last response token: the reward of the decoded text."""
    from transformers import AutoTokenizer
    from trl.experimental.utils import get_reward

    tok = AutoTokenizer.from_pretrained(tiny_gpt2, padding_side="left")
    items = [PromptItem("q1", "premise: a dog runs", "premise: a dog runs\nExplanation:", "a dog runs", 2.0, "fair"),
             PromptItem("q2", "premise: rain", "premise: rain\nExplanation:", "it rains", 2.0, "fair")]
    prompt_ids = [tok(it.prompt)["input_ids"] for it in items]
    log = StepLog(None, key_map={}, total_steps=1)
    model = token_reward_model(resolve_reward(length_reward), tok, items, prompt_ids, log)
    responses = [tok(" a dog is outside", add_special_tokens=False)["input_ids"],
                 tok(" wet", add_special_tokens=False)["input_ids"]]
    pad = tok.pad_token_id
    width_q = max(map(len, prompt_ids))
    width_r = max(map(len, responses)) + 2
    rows = [[pad] * (width_q - len(q)) + q + r + [pad] * (width_r - len(r)) for q, r in zip(prompt_ids, responses)]
    query_responses = torch.tensor(rows)
    _, scores, lengths = get_reward(model, query_responses, pad, width_q)
    expected = length_reward(["premise: a dog runs", "premise: rain"], ["a dog is outside", "wet"])
    assert scores.tolist() == pytest.approx(expected)
    assert lengths.tolist() == [width_q + len(r) - 1 for r in responses]
    line = log.flush(1, {})
    assert line["n_generations"] == 2 and line["reward_mean"] == pytest.approx(sum(expected) / 2)


def test_ppo_trains_logs_and_records(tiny_gpt2, demo_benchmark, tmp_path, length_reward):
    out, results = tmp_path / "run", tmp_path / "results"
    result = ppo(tiny_gpt2, length_reward, demo_benchmark, out=out, steps=3, batch_size=4, lr=1e-3, ppo_epochs=1,
                 max_completion_length=10, results_dir=results, seed=5)
    assert result.method == "ppo" and result.n_steps == 3
    for line in result.history:
        assert line["n_generations"] == 4
        for key in ("loss", "value_loss", "reward_mean", "reward_std", "kl", "above_reference"):
            assert isinstance(line[key], float) and math.isfinite(line[key]), (key, line)
    assert result.history[0]["kl"] == pytest.approx(0.0, abs=1e-5)  # first rollout: policy == reference
    assert weights_changed(tiny_gpt2, out / POLICY_DIR) > 0
    from gradebench.benchmark.lists import open_benchmark

    queries = {str(q) for q in open_benchmark(demo_benchmark).lists("train").queries}
    assert all(set(prompts) <= queries for prompts, _ in length_reward.calls)  # the reward sees raw queries
    [record] = list_policy_records(results)
    assert record.method == "ppo" and record.options["kl_coef"] == 0.1 and record.options["precision"] == "fp32"
    assert record.policy.output_path == str(out / POLICY_DIR)


def test_ppo_refuses_bad_input(tiny_gpt2, encoder_folder, demo_benchmark, tmp_path, length_reward):
    kw = {"out": tmp_path / "run", "steps": 1, "results_dir": tmp_path / "res"}
    with pytest.raises(InvalidArgumentError, match="not a causal language model"):
        ppo(encoder_folder, length_reward, demo_benchmark, **kw)
    with pytest.raises(InvalidArgumentError, match="--batch-size"):
        ppo(tiny_gpt2, length_reward, demo_benchmark, batch_size=1, **kw)
    with pytest.raises(InvalidArgumentError, match="more than the"):
        ppo(tiny_gpt2, length_reward, demo_benchmark, batch_size=64, split="test", **kw)
    with pytest.raises(InvalidArgumentError, match="for the response"):
        ppo(tiny_gpt2, length_reward, demo_benchmark, max_completion_length=255, **kw)
    assert not (tmp_path / "run").exists() and not (tmp_path / "res").exists()


def test_a_policy_padding_with_eos_gets_its_own_pad_token_for_ppo(tiny_gpt2, demo_benchmark, tmp_path,
                                                                  length_reward):
    """GPT-2 pads with EOS: PPO trains with a separate pad token, and the saved tokenizer is the original one."""
    import shutil

    from transformers import AutoTokenizer

    from gradebench.rl.ppo import PPO_PAD, ppo_tokenizer

    policy = tmp_path / "eos-pad-policy"
    shutil.copytree(tiny_gpt2, policy)
    tok = AutoTokenizer.from_pretrained(policy)
    tok.pad_token = tok.eos_token
    tok.save_pretrained(policy)
    trained = ppo_tokenizer(str(policy))
    assert trained.pad_token == PPO_PAD and trained.pad_token_id != trained.eos_token_id
    assert trained.padding_side == "left"
    result = ppo(policy, length_reward, demo_benchmark, out=tmp_path / "run", steps=1, batch_size=2, lr=1e-3,
                 ppo_epochs=1, max_completion_length=6, results_dir=tmp_path / "results")
    saved = AutoTokenizer.from_pretrained(result.policy_out)
    assert saved.pad_token == saved.eos_token and len(saved) == len(tok)
    assert all(PPO_PAD not in text for _, texts in length_reward.calls for text in texts)
