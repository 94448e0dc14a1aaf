"""``hf-bi-encoder``: a ``SentenceTransformer`` model; the score is the cosine of query and candidate embeddings.

Each distinct text (with ``query_prompt`` / ``candidate_prompt`` prepended, e.g. E5's
``"query: "``) is embedded once, as ``SentenceTransformer.encode`` embeds it: the model's own
``preprocess`` and forward on batches of texts sorted by length, truncated at the model's
``max_seq_length`` (or ``max_length``). The batches follow the seeded plan of
:mod:`gradebench.scorers.adapters.runner` (texts of one length in ``sha256(seed, text)``
order), so a sharded run embeds exactly the batches of a single process. The score of a pair
is the cosine of the two embeddings (``[-1, 1]``), computed in float64.

A plain encoder folder (no ``modules.json``) is read with mean pooling, as sentence-transformers
does; a folder with a classification or language-modelling head is refused.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from gradebench.scorers import register_scorer
from gradebench.ticks import tick
from gradebench.training.tokens import encode_single, host_to_device, texts_digest
from gradebench.scorers.adapters.base import ModelConfig, ModelScorer, load_error
from gradebench.scorers.adapters.runner import distributed, plan_batches, run_plan


class BiEncoderConfig(ModelConfig):
    """``query_prompt`` / ``candidate_prompt``: text put before every query / candidate."""

    query_prompt: str = ""
    candidate_prompt: str = ""


@register_scorer("hf-bi-encoder")
class BiEncoderScorer(ModelScorer):
    """Cosine of SentenceTransformer embeddings of query and candidate (see the module docstring)."""

    adapter = "bi-encoder"
    backend = "sentence-transformers"
    summary = "an external SentenceTransformer embedding model: cosine of query and candidate embeddings"
    Config = BiEncoderConfig

    def _options_of(self) -> dict[str, Any]:
        pooling = "modules.json" if (self.folder.path / "modules.json").is_file() else "mean (no modules.json)"
        return {"similarity": "cosine", "query_prompt": self.config.query_prompt,
                "candidate_prompt": self.config.candidate_prompt, "modules": pooling}

    def _load(self) -> Any:
        from sentence_transformers import SentenceTransformer

        folder = self.folder
        try:
            model = SentenceTransformer(str(folder.path), device=self.device, local_files_only=True,
                                        trust_remote_code=self.config.trust_remote_code,
                                        model_kwargs={"dtype": self.torch_dtype()})
        except (OSError, ValueError, KeyError, RuntimeError, TypeError) as e:
            raise load_error(e, folder, "a SentenceTransformer") from None
        model.max_seq_length = self.options()["max_length"]
        model.eval()
        return model

    def embed(self, texts: list[str], *, batch_size: int) -> np.ndarray:
        """``[n, dim]`` float32 embeddings of ``texts`` (any order), by the seeded plan.

        Texts are tokenized once (cached by content, :func:`gradebench.training.tokens.encode_single`,
        the encoding ``SentenceTransformer.preprocess`` gives) and batches are gathered on the
        device; a model whose first module is not a plain text ``Transformer`` goes through its
        own ``preprocess`` per batch. The embeddings stay on the device until the last batch.
        """
        batches, forward = self._plan(texts, batch_size=batch_size)
        return run_plan(batches, forward, len(texts), device_type=self.device_type)

    def _plan(self, texts: list[str], *, batch_size: int) -> tuple[list[np.ndarray], Any]:
        """The seeded batches of ``texts`` and the function embedding one batch (on the device)."""
        import torch
        from sentence_transformers.util import batch_to_device

        model = self.model
        max_tokens = self.max_batch_tokens(batch_size)
        tokens = None
        digest = texts_digest(texts)  # the encoding's cache key and the seeded order's memo: computed once
        if _plain_text_module(model):
            encoded = encode_single(model.tokenizer, texts, max_length=self.options()["max_length"],
                                    tokenizer_key=self.tokenizer_key(model.tokenizer), texts_key=digest)
            tokens = encoded.on_device(model.device)
        if max_tokens is not None and tokens is not None:
            lengths = encoded.lengths  # a token budget needs token lengths
        else:
            max_tokens = None
            lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        batches = plan_batches(texts, lengths, seed=self.seed, batch_size=batch_size, bucket=self.config.bucket,
                               max_tokens=max_tokens, keys_digest=digest)

        def forward(rows: np.ndarray) -> Any:
            with torch.inference_mode():
                if tokens is not None:
                    features = {**tokens.batch(rows), "modality": "text"}
                else:
                    features = batch_to_device(model.preprocess([texts[i] for i in rows]), model.device)
                return model(features)["sentence_embedding"].float()

        return batches, forward

    def _score_pairs(self, queries: list[str], candidates: list[str], keys: list[str], *,
                     batch_size: int) -> np.ndarray:
        qp, cp = self.config.query_prompt, self.config.candidate_prompt
        q = [qp + t for t in queries] if qp else queries
        c = [cp + t for t in candidates] if cp else candidates
        # the distinct texts in order of first use: the plan orders them by seeded hash and length,
        # so their order here changes no batch and no score (and costs no sort)
        texts = list(dict.fromkeys(itertools.chain(q, c)))
        if distributed()[1] > 1:  # shards gather host arrays (runner's module docstring), then as one process
            import torch

            emb = torch.from_numpy(self.embed(texts, batch_size=batch_size)).to(self.model.device)
        else:  # the forwards are queued on the device; the pairs' indices are made meanwhile (no copy
            # before them waits for the device: _embeddings_on_device and _cosines copy without waiting)
            emb = _embeddings_on_device(*self._plan(texts, batch_size=batch_size), len(texts))
        where = dict(zip(texts, range(len(texts))))
        qi = np.fromiter(map(where.__getitem__, q), dtype=np.int64, count=len(q))
        ci = np.fromiter(map(where.__getitem__, c), dtype=np.int64, count=len(c))
        return _cosines(emb, qi, ci)


def _embeddings_on_device(batches: list[np.ndarray], forward: Any, n: int) -> Any:
    """``[n, dim]`` float32 embeddings in item order, left on the device."""
    import torch

    if not batches:
        return torch.zeros((0, 0))
    parts, done = [], 0
    for rows in batches:
        parts.append(forward(rows))
        done += len(rows)
        tick(done, n)
    order = host_to_device(np.concatenate(batches), parts[0].device)  # on CUDA: waits for no forward
    emb = torch.empty((n, parts[0].shape[1]), dtype=parts[0].dtype, device=parts[0].device)
    emb[order] = torch.cat(parts)
    return emb


def _cosines(emb: Any, qi: np.ndarray, ci: np.ndarray) -> np.ndarray:
    """The cosines (float64) of pairs ``(qi, ci)`` of embeddings ``emb``, computed where they are:
    only the scores cross to the host, in one copy, instead of every embedding. The indices go to
    the device without waiting (:func:`host_to_device`): the copy of the scores is the pass's one
    wait for the device."""
    import torch

    if not len(qi):
        return np.zeros(0, dtype=np.float64)
    emb = emb.double()
    norms = torch.linalg.vector_norm(emb, dim=1)
    emb = emb / torch.where(norms > 0, norms, torch.ones_like(norms))[:, None]
    a = emb[host_to_device(qi, emb.device)]
    b = emb[host_to_device(ci, emb.device)]
    return (a * b).sum(dim=1).cpu().numpy()


def _plain_text_module(model: Any) -> bool:
    """Whether the SentenceTransformer reads text through a plain ``Transformer`` first module with
    a fast tokenizer and no lower-casing of its own (then :func:`encode_single` is its encoding)."""
    try:
        first = model[0]
    except (IndexError, TypeError, KeyError):
        return False
    tok = getattr(first, "tokenizer", None)
    return (type(first).__name__ == "Transformer" and not getattr(first, "do_lower_case", False)
            and getattr(tok, "is_fast", False) and getattr(tok, "pad_token_id", None) is not None
            and getattr(model, "tokenizer", None) is tok)
