"""The reward in RL loops: TRL's GRPO calls it as a reward function; PolicyTokenReward scores
policy token ids (a tiny random GPT-2 policy generates them)."""

from __future__ import annotations

import numpy as np
import pytest

from gradebench.benchmark.lists import open_benchmark
from gradebench.reward import PolicyTokenReward, load

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

WORDS = ("the a man men dog woman plays runs sits because it is not outside inside entailment contradiction "
         "neutral premise hypothesis label playing people").split()


def policy_tokenizer():
    """A word-level tokenizer (lower-case words, whitespace) whose decode gives the words back."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["<pad>", "<eos>", "<unk>", *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")


def tiny_policy(vocab_size: int):
    from transformers import GPT2Config, GPT2LMHeadModel

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return GPT2LMHeadModel(GPT2Config(vocab_size=vocab_size, n_positions=64, n_embd=16, n_layer=1, n_head=2,
                                          pad_token_id=0, eos_token_id=1, bos_token_id=1)).eval()


def test_policy_token_reward_decodes_and_rescores(hashed_reward):
    tok = policy_tokenizer()
    prompts = ["premise the man plays hypothesis a man runs label entailment", "premise a dog sits label neutral"]
    responses = ["because the man is playing", "it is not outside"]
    reward = load(hashed_reward)
    rm = PolicyTokenReward(reward, tok)
    assert isinstance(rm, torch.nn.Module)
    # TRL's layout: left-padded queries, then right-padded responses
    q = tok(prompts, padding=True, padding_side="left", return_tensors="pt")["input_ids"]
    r = tok(responses, padding=True, padding_side="right", return_tensors="pt")["input_ids"]
    ids = torch.cat([q, r], dim=1)
    got = rm(ids, context_length=q.shape[1])
    assert got.dtype == torch.float32 and got.shape == (2,) and not got.requires_grad
    np.testing.assert_allclose(got.numpy(), reward(prompts, responses), atol=1e-6)
    # responses only, with the prompts as text
    np.testing.assert_allclose(rm(r, prompts=prompts).numpy(), got.numpy(), atol=1e-6)
    from gradebench.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError):
        rm(ids)
    with pytest.raises(InvalidArgumentError):
        rm(ids, context_length=999)


def test_policy_token_reward_on_generated_ids(hashed_reward):
    tok = policy_tokenizer()
    policy = tiny_policy(len(tok))
    prompts = ["premise the man plays label entailment", "premise people sits inside hypothesis men sits label neutral"]
    enc = tok(prompts, padding=True, padding_side="left", return_tensors="pt")
    with torch.no_grad():
        out = policy.generate(**enc, max_new_tokens=5, do_sample=False, pad_token_id=0)
    cl = enc["input_ids"].shape[1]
    rm = PolicyTokenReward(load(hashed_reward, normalize=True), tok)
    got = rm(out, context_length=cl)
    texts = [tok.decode(row[cl:][row[cl:] != 0].tolist(), skip_special_tokens=True).strip() for row in out]
    np.testing.assert_allclose(got.numpy(), load(hashed_reward, normalize=True)(prompts, texts), atol=1e-6)
    assert torch.equal(got, rm(out, context_length=cl))  # deterministic


@pytest.mark.slow
def test_grpo_trainer_takes_the_reward_function(hashed_reward, demo_benchmark, tmp_path):
    trl = pytest.importorskip("trl")
    from datasets import Dataset

    lists = open_benchmark(demo_benchmark).lists("train")
    tok = policy_tokenizer()
    reward = load(hashed_reward, normalize=True, query_column="query")
    calls = []

    def spy(**kwargs):  # the same object TRL calls, wrapped to see what it passes
        calls.append(sorted(kwargs))
        return reward(**kwargs)

    spy.__name__ = reward.__name__
    ds = Dataset.from_dict({"prompt": ["premise the man plays hypothesis a man runs label entailment"] * 4,
                            "query": [str(q) for q in lists.queries[:4]]})
    args = trl.GRPOConfig(output_dir=str(tmp_path / "grpo"), per_device_train_batch_size=4, num_generations=2,
                          max_completion_length=6, max_steps=1, logging_steps=1, report_to=[], use_cpu=True,
                          save_strategy="no", seed=0)
    trainer = trl.GRPOTrainer(model=tiny_policy(len(tok)), reward_funcs=[reward, spy], args=args, train_dataset=ds,
                              processing_class=tok)
    trainer.train()
    logged = trainer.state.log_history[0]
    assert np.isfinite(logged[f"rewards/{reward.__name__}/mean"])
    assert {"prompts", "completions", "completion_ids", "trainer_state", "query"} <= set(calls[0])


def test_policy_token_reward_serves_trl_get_reward(hashed_reward):
    """The one PPO adaptor: built with the prompts' ids, it finds each row's prompt, scores its query text,
    and answers TRL's get_reward (backbone -> hidden_states, score = identity)."""
    pytest.importorskip("trl")
    from trl.experimental.utils import get_reward

    from gradebench.errors import RunError
    from gradebench.rl.rewards import TokenRewardModel

    assert TokenRewardModel is PolicyTokenReward  # the rl name of the same class
    tok = policy_tokenizer()
    queries = ["premise the man plays label entailment", "premise a dog sits label neutral"]
    templated = [q + " hypothesis" for q in queries]  # what the policy sees; the reward reads `queries`
    prompt_ids = [tok(p)["input_ids"] for p in templated]
    seen = []
    reward = load(hashed_reward)
    rm = PolicyTokenReward(reward, tok, prompt_ids=prompt_ids, queries=queries,
                           observe=lambda idx, values: seen.append((idx, values)))
    responses = [tok("because the man is playing", add_special_tokens=False)["input_ids"],
                 tok("it is not outside", add_special_tokens=False)["input_ids"]]
    width_q, width_r = max(map(len, prompt_ids)), max(map(len, responses)) + 1
    rows = [[0] * (width_q - len(q)) + q + r + [0] * (width_r - len(r))
            for q, r in zip(reversed(prompt_ids), reversed(responses))]  # the second prompt first
    ids = torch.tensor(rows)
    expected = reward(list(reversed(queries)), ["it is not outside", "because the man is playing"])
    _, scores, _ = get_reward(rm, ids, 0, width_q)
    np.testing.assert_allclose(scores.numpy(), expected, atol=1e-6)
    np.testing.assert_allclose(rm(ids).numpy(), expected, atol=1e-6)  # a direct call finds the prompts too
    assert [idx for idx, _ in seen] == [[1, 0], [1, 0]]
    np.testing.assert_allclose(seen[0][1], expected, atol=1e-12)  # observed in float64, before the cast
    with pytest.raises(RunError, match="none of the reward adaptor's prompts"):
        rm(torch.tensor([tok("a dog", add_special_tokens=False)["input_ids"]]))
    from gradebench.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="not both"):
        rm(ids, context_length=width_q, prompts=queries)
    with pytest.raises(InvalidArgumentError, match="queries needs prompt_ids"):
        PolicyTokenReward(reward, tok, queries=queries)
    with pytest.raises(InvalidArgumentError, match="returned 1 values for 2"):
        PolicyTokenReward(lambda prompts, completions: [0.0], tok, prompt_ids=prompt_ids)(ids)
