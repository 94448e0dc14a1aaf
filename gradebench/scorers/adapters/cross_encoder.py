"""``hf-cross-encoder``: a sentence-transformers ``CrossEncoder`` folder, as it is (no training).

The pair is encoded as in ``CrossEncoder.predict`` (the tokenizer's pair encoding of
(query, candidate), truncated ``longest_first`` to ``max_length``; a folder's own
``max_length`` is kept unless ``max_length`` is set). The score is the head's raw output
(``activation=raw``, the default: no sigmoid, so separation is measured on what the model
computes; the ranking is the same either way) or, with ``activation=model``, the folder's own
activation as ``predict`` applies it. A head with several outputs scores by the probability of
``label`` (see :mod:`gradebench.scorers.adapters.heads`).

Example::

    gradebench eval --benchmark DIR --model cross-encoder/ms-marco-MiniLM-L6-v2   # auto: cross-encoder
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from gradebench.scorers import register_scorer
from gradebench.scorers.adapters.base import ModelConfig, ModelScorer, load_error
from gradebench.scorers.adapters.heads import head_classes, resolve_head
from gradebench.scorers.adapters.model_files import read_json
from gradebench.scorers.adapters.sequence_classifier import classify


class CrossEncoderAdapterConfig(ModelConfig):
    """``activation``: ``raw`` (the logit) or ``model`` (the folder's activation, as ``predict``).
    ``label``: the class whose probability scores, for a head with several outputs."""

    activation: Literal["raw", "model"] = "raw"
    label: str | int | None = None


@register_scorer("hf-cross-encoder")
class CrossEncoderAdapter(ModelScorer):
    """A sentence-transformers CrossEncoder folder scoring (query, candidate) pairs (see the module docstring)."""

    adapter = "cross-encoder"
    backend = "sentence-transformers"
    summary = "an external sentence-transformers CrossEncoder on (query, candidate): its raw score"
    Config = CrossEncoderAdapterConfig

    def _max_length(self) -> int:
        if self.config.max_length is None:
            st = read_json(self.folder.path / "config_sentence_transformers.json", missing={})
            saved = st.get("max_length") if isinstance(st, dict) else None
            if isinstance(saved, int) and saved > 0:
                return saved
        return super()._max_length()

    def _options_of(self) -> dict[str, Any]:
        modular = len(read_json(self.folder.path / "modules.json", missing=[]) or []) > 1
        head = resolve_head(head_classes(self.folder.path, trust_remote_code=self.config.trust_remote_code),
                            self.config.label, path=self.folder.path,
                            num_labels=1 if modular else None)
        return {**head, "activation": self.config.activation}

    def _load(self) -> Any:
        from sentence_transformers import CrossEncoder

        folder = self.folder
        try:
            model = CrossEncoder(str(folder.path), device=self.device, trust_remote_code=self.config.trust_remote_code,
                                 local_files_only=True, max_length=self.options()["max_length"],
                                 model_kwargs={"dtype": self.torch_dtype()})
        except (OSError, ValueError, KeyError, RuntimeError, TypeError) as e:
            raise load_error(e, folder, "a sentence-transformers CrossEncoder") from None
        model.eval()
        return model

    def _forward(self, model: Any, batch: dict[str, Any]) -> Any:
        batch["modality"] = "text"
        scores = model(batch)["scores"]
        if self.config.activation == "model" and self.options()["output"] == "logit":
            scores = model.activation_fn(scores)
        return scores

    def _score_pairs(self, queries: list[str], candidates: list[str], keys: list[str], *,
                     batch_size: int) -> np.ndarray:
        from gradebench.training.tokens import encode_pairs

        model = self.model
        encoded = encode_pairs(model.tokenizer, queries, candidates, max_length=self.options()["max_length"],
                               tokenizer_key=self.tokenizer_key(model.tokenizer))
        return classify(self, model, encoded, keys, self.options(), batch_size=batch_size)
