"""``hf-chat-reward``: a reward model that reads a conversation, as TRL and RewardBench run them.

The query is the user turn and the candidate the assistant turn (after an optional ``system``
turn); the conversation goes through the tokenizer's chat template
(``apply_chat_template(messages, tokenize=False)``), is tokenized without adding special tokens
again (the template holds them), keeps its last ``max_length`` tokens when longer (the
reward is read at the end), and is scored by the model's sequence-classification head: its one
logit (or one class's probability, ``label``). Batches are padded on the right and the head
reads each sequence's last real token, as ``*ForSequenceClassification`` does.

A model without a chat template is refused (it fits ``hf-sequence-classifier``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gradebench.errors import InvalidArgumentError
from gradebench.hashing import sha256_hex
from gradebench.scorers import register_scorer
from gradebench.scorers.adapters.base import ModelConfig, ModelScorer, resolved_max_length
from gradebench.scorers.adapters.heads import head_classes, resolve_head
from gradebench.scorers.adapters.model_files import chat_template_of
from gradebench.scorers.adapters.runner import encode_texts
from gradebench.scorers.adapters.sequence_classifier import classify, load_classifier, pad_source


class ChatRewardConfig(ModelConfig):
    """``system``: a system turn before the user turn (None: none). ``label``: as ``hf-sequence-classifier``."""

    system: str | None = None
    label: str | int | None = None


def conversation(query: str, candidate: str, system: str | None) -> list[dict[str, str]]:
    turns = [] if system is None else [{"role": "system", "content": system}]
    return [*turns, {"role": "user", "content": query}, {"role": "assistant", "content": candidate}]


@register_scorer("hf-chat-reward")
class ChatRewardScorer(ModelScorer):
    """A conversation reward model: query = user turn, candidate = assistant turn (see the module docstring)."""

    adapter = "chat-reward"
    summary = ("an external reward model over the chat template (query = user turn, candidate = assistant turn), "
               "as TRL and RewardBench")
    Config = ChatRewardConfig

    def _max_length(self) -> int:
        return resolved_max_length(self.folder, self.config.max_length, cap=4096)

    def _options_of(self) -> dict[str, Any]:
        template = chat_template_of(self.folder)
        if template is None:
            raise InvalidArgumentError(
                "the model's tokenizer has no chat template, so the chat-reward adapter cannot build a conversation",
                path=self.folder.path, key="adapter",
                hint="use --adapter sequence-classifier for a (query, candidate) pair model, or add a chat_template")
        head = resolve_head(head_classes(self.folder.path, trust_remote_code=self.config.trust_remote_code),
                            self.config.label, path=self.folder.path)
        return {**head, "chat_template_sha256": sha256_hex(template), "system": self.config.system,
                "pad": pad_source(self), "truncation": "keep the last max_length tokens"}

    def _load(self) -> Any:
        return load_classifier(self, "a chat reward model")

    def _forward(self, model: Any, batch: dict[str, Any]) -> Any:
        return model(**batch).logits

    def prompts(self, tokenizer: Any, queries: list[str], candidates: list[str]) -> list[str]:
        """The templated conversations, as text."""
        try:
            return [tokenizer.apply_chat_template(conversation(q, c, self.config.system), tokenize=False)
                    for q, c in zip(queries, candidates)]
        except Exception as e:  # noqa: BLE001 - jinja raises its own types (a template refusing a system turn)
            raise InvalidArgumentError(f"the chat template failed ({type(e).__name__}: {e})", path=self.folder.path,
                                       key="system" if self.config.system is not None else "model",
                                       hint="check the model's chat_template (some refuse a system turn)") from None

    def _score_pairs(self, queries: list[str], candidates: list[str], keys: list[str], *,
                     batch_size: int) -> np.ndarray:
        model, tokenizer = self.model
        texts = self.prompts(tokenizer, queries, candidates)
        encoded = encode_texts(tokenizer, texts, max_length=self.options()["max_length"], add_special_tokens=False)
        return classify(self, model, encoded, keys, self.options(), batch_size=batch_size)
