"""``hf-sequence-classifier``: any ``AutoModelForSequenceClassification`` on (query, candidate).

For reward models with one output (the raw logit is the score) and NLI or other classifiers
(the probability of one class; by default ``entailment``: how strongly the query entails the
candidate). The pair is encoded by the model's tokenizer as a text pair, ``(query, candidate)``
or, with ``pair_order=candidate-query``, the other way round, truncated ``longest_first`` to
``max_length``.

The weights must hold the head: a folder whose weights lack it (a bare encoder) is refused
rather than given a random head.

Example::

    gradebench eval --benchmark DIR --model path/to/nli-deberta --adapter sequence-classifier --set label=entailment
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from gradebench.errors import InvalidArgumentError
from gradebench.scorers import register_scorer
from gradebench.scorers.adapters.base import ModelConfig, ModelScorer, load_error
from gradebench.scorers.adapters.heads import head_classes, resolve_head, select_output
from gradebench.scorers.adapters.runner import plan_batches, run_plan


class SequenceClassifierConfig(ModelConfig):
    """``label``: the class whose probability is the score (name or index; None: the one logit,
    or ``entailment``). ``pair_order``: which text comes first in the pair."""

    label: str | int | None = None
    pair_order: Literal["query-candidate", "candidate-query"] = "query-candidate"


def load_classifier(scorer: ModelScorer, what: str) -> Any:
    """``(model, tokenizer)``: an ``AutoModelForSequenceClassification`` whose weights hold its head."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = scorer.folder
    kwargs = {"trust_remote_code": scorer.config.trust_remote_code, "local_files_only": True}
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder.path), **kwargs)
        model, info = AutoModelForSequenceClassification.from_pretrained(
            str(folder.path), dtype=scorer.torch_dtype(), output_loading_info=True, **kwargs)
    except (OSError, ValueError, KeyError, RuntimeError, TypeError) as e:
        raise load_error(e, folder, what) from None
    missing = list(info.get("missing_keys") or [])
    if missing:
        raise InvalidArgumentError(
            f"the weights have no trained sequence-classification head (missing: {', '.join(sorted(missing)[:3])})",
            path=folder.path, key="adapter", hint="a bare encoder fits --adapter bi-encoder; a classifier needs its head")
    if not getattr(tokenizer, "is_fast", False):
        raise InvalidArgumentError("the model has no fast (Rust) tokenizer", path=folder.path, key="model",
                                   hint="save a tokenizer.json with the model (tokenizer.save_pretrained)")
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token_id is None:
            raise InvalidArgumentError("the tokenizer has no padding or end-of-text token", path=folder.path,
                                       key="model", hint="set pad_token in tokenizer_config.json")
        tokenizer.pad_token = tokenizer.eos_token  # as RewardBench does; recorded as options.pad = "eos"
    if getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    model.to(scorer.device).eval()
    return model, tokenizer


def pad_source(scorer: ModelScorer) -> str:
    """``tokenizer`` when the tokenizer names a padding token, else ``eos`` (padding with end-of-text)."""
    from gradebench.scorers.adapters.model_files import read_json

    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        doc = read_json(scorer.folder.path / name, missing={})
        if isinstance(doc, dict) and doc.get("pad_token"):
            return "tokenizer"
    return "eos"


def classify(scorer: ModelScorer, model: Any, encoded: Any, keys: list[str], head: dict[str, Any], *,
             batch_size: int) -> np.ndarray:
    """Scores of ``encoded`` items through ``model(**batch).logits`` and :func:`select_output`, by the seeded plan."""
    import torch

    batches = plan_batches(keys, encoded.lengths, seed=scorer.seed, batch_size=batch_size, bucket=scorer.config.bucket,
                           max_tokens=scorer.max_batch_tokens(batch_size))
    tokens = encoded.on_device(model.device)

    def forward(rows: np.ndarray) -> Any:
        with torch.inference_mode():
            # left on the device: run_plan copies every batch's scores back at once
            return select_output(scorer._forward(model, tokens.batch(rows)), head)

    return run_plan(batches, forward, len(keys), device_type=scorer.device_type).astype(np.float64)


@register_scorer("hf-sequence-classifier")
class SequenceClassifierScorer(ModelScorer):
    """An ``AutoModelForSequenceClassification`` on (query, candidate) pairs (see the module docstring)."""

    adapter = "sequence-classifier"
    summary = ("an external sequence-classification model on (query, candidate): its one logit, or one "
               "class's probability (NLI: entailment)")
    Config = SequenceClassifierConfig

    def _options_of(self) -> dict[str, Any]:
        head = resolve_head(head_classes(self.folder.path, trust_remote_code=self.config.trust_remote_code),
                            self.config.label, path=self.folder.path)
        return {**head, "pair_order": self.config.pair_order, "pad": pad_source(self)}

    def _load(self) -> Any:
        return load_classifier(self, "a sequence classifier")

    def _forward(self, model: Any, batch: dict[str, Any]) -> Any:
        return model(**batch).logits

    def _score_pairs(self, queries: list[str], candidates: list[str], keys: list[str], *,
                     batch_size: int) -> np.ndarray:
        from gradebench.training.tokens import encode_pairs

        model, tokenizer = self.model
        first, second = (queries, candidates) if self.config.pair_order == "query-candidate" else (candidates, queries)
        encoded = encode_pairs(tokenizer, first, second, max_length=self.options()["max_length"],
                               tokenizer_key=self.tokenizer_key(tokenizer))
        return classify(self, model, encoded, keys, self.options(), batch_size=batch_size)
