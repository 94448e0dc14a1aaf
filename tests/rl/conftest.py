"""Fixtures of the policy-optimisation tests: a tiny offline GPT-2 policy and a plain reward.

The policy is built from nothing in a session temp dir by :func:`tests.tiny_models.build_tiny_gpt2`
on the demo benchmark's texts (a byte-level BPE tokenizer and a seeded random ``GPT2LMHeadModel``).
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory, demo_benchmark) -> Path:
    """Folder of a tiny random GPT-2 policy with a BPE tokenizer trained on the demo texts."""
    from tests.tiny_models import build_tiny_gpt2, demo_texts

    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2"), demo_texts(demo_benchmark))


@pytest.fixture(scope="session")
def encoder_folder(tmp_path_factory) -> Path:
    """A BERT encoder config folder (``architectures: [BertModel]``): not a causal LM."""
    from transformers import BertConfig

    out = tmp_path_factory.mktemp("bert")
    config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    config.architectures = ["BertModel"]
    config.save_pretrained(out)
    return out


class LengthReward:
    """A plain reward: longer completions score higher, plus the share of their words found in the query.

    Records every call so tests can check what the trainers pass (raw queries, decoded texts).
    """

    fingerprint = "length-reward-v1"

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[str]]] = []

    def __call__(self, prompts, completions, **kwargs):  # noqa: ANN001, ANN204
        self.calls.append((list(prompts), list(completions)))
        out = []
        for p, c in zip(prompts, completions):
            words = c.lower().split()
            query = set(p.lower().split())
            out.append(len(c) / 50.0 + sum(w in query for w in words) / (1 + len(words)))
        return out


@pytest.fixture
def length_reward() -> LengthReward:
    return LengthReward()


def weights_changed(before: Path, after: Path) -> float:
    """Sum of absolute differences between two saved policies' weights."""
    from safetensors.torch import load_file

    a, b = load_file(str(before / "model.safetensors")), load_file(str(after / "model.safetensors"))
    assert set(a) == set(b)
    return float(sum((a[k].float() - b[k].float()).abs().sum() for k in a))


#: hashed-mlp small enough for sub-second epochs (as tests/reward)
TINY_HASHED = {"dim": 2**10, "shared_dim": 2**8, "embed_dim": 8, "hidden": 16}


@pytest.fixture(scope="session")
def exported_reward(demo_benchmark, tmp_path_factory) -> Path:
    """A hashed-mlp scorer trained one epoch on the demo benchmark, exported with ``gradebench.reward``."""
    pytest.importorskip("gradebench.reward")
    from gradebench.experiments.train import train
    from gradebench.reward import export_reward

    root = tmp_path_factory.mktemp("reward")
    train(demo_benchmark, "hashed-mlp", loss="listnet", config=TINY_HASHED, options={"epochs": 1}, out=root / "run")
    export_reward(root / "run", out=root / "reward", results_dir=root / "no-results")
    return root / "reward"
