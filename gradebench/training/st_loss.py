"""Any registered gradebench loss as a sentence-transformers ``CrossEncoder`` loss module.

:class:`GradebenchLoss` follows the structure of sentence-transformers' listwise losses
(``sentence_transformers.cross_encoder.losses.ListNetLoss``): it takes the listwise columns
``(query, docs)`` and the ragged ``labels``, flattens every list into (query, doc) pairs,
tokenizes them with ``model.preprocess``, runs the model in mini-batches, applies
``activation_fn`` to the logits (``Identity`` by default: raw scores), and puts them back as a
``[batch, max_docs]`` matrix with a mask. Then, instead of ListNet's cross-entropy, it calls
the chosen gradebench loss, ``get_loss(name)(scores, labels, mask=mask, **params)``, where the
labels are the relevance grades; padding never affects the value or the gradients (the
gradebench losses' masking contract).

Mini-batches: all pairs are tokenized in one call, then sorted by token length (stable) and
cut into chunks of ``mini_batch_size`` pairs, each trimmed to its longest pair, so chunks
carry little padding; ``mini_batch_size=None`` runs all pairs of the batch in one pass, and
``max_tokens`` cuts chunks by tokens instead (``pairs x longest pair <= max_tokens``).

Pre-tokenized pairs: :meth:`GradebenchLoss.use_encoded` hands the loss the encoding of every
(query, document) pair of the training split (:func:`gradebench.training.tokens.encode_pairs`,
the encoding ``model.preprocess`` gives). A batch's pairs are then looked up instead of
tokenized, and gathered and padded on the model's device from ids copied there once; pairs
not in the encoding are tokenized as above.

Value checks: on CPU the registered loss checks every batch's scores and labels (one fused
reduction). On an accelerator that check would wait for the device at every step, so it runs
on the first batch only; the labels are the split's grades, checked once before training
(:func:`gradebench.scorers._ce_train.check_grades`), and a model whose scores stop being finite
logs a null epoch loss and is refused when its scores are checked after training.

Example::

    from sentence_transformers.cross_encoder import CrossEncoderTrainer
    loss = GradebenchLoss(model, "lambdaloss", loss_params={"k": 5})
    CrossEncoderTrainer(model=model, train_dataset=ds, loss=loss).train()   # ds: query, docs, labels
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from gradebench.errors import InvalidArgumentError
from gradebench.losses import get_loss
from gradebench.training.tokens import host_to_device

#: tokenizer outputs that are [pairs, tokens] and may be trimmed to a chunk's longest pair
_TOKEN_KEYS = ("input_ids", "attention_mask", "token_type_ids")


class GradebenchLoss(nn.Module):
    """A registered gradebench loss over a CrossEncoder's listwise outputs.

    Args:
        model: the ``sentence_transformers.CrossEncoder`` being trained (one output label).
        loss: name of a registered gradebench loss (``gradebench.losses.loss_names()``).
        loss_params: the loss's own keyword parameters (e.g. ``{"k": 5}`` for ``lambdaloss``).
        activation_fn: applied to the logits before the loss; default ``Identity`` (raw scores).
        mini_batch_size: pairs per forward pass; None = every pair of the batch at once.

    Raises:
        UnknownNameError: ``loss`` is not registered (with close matches).
        InvalidArgumentError: unknown ``loss_params`` or a model with more than one output.
    """

    def __init__(
        self,
        model: Any,
        loss: str = "listnet",
        *,
        loss_params: dict[str, Any] | None = None,
        activation_fn: nn.Module | None = None,
        mini_batch_size: int | None = None,
        max_tokens: int | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.spec = get_loss(loss)
        self.loss_params = dict(loss_params or {})
        unknown = sorted(set(self.loss_params) - set(self.spec.params))
        if unknown:
            known = ", ".join(self.spec.params) or "(none)"
            raise InvalidArgumentError(f"loss {loss!r} has no parameter(s) {', '.join(unknown)}",
                                       key="loss_params", hint=f"its parameters: {known}")
        self.activation_fn = activation_fn if activation_fn is not None else nn.Identity()
        if mini_batch_size is not None and mini_batch_size < 1:
            raise InvalidArgumentError(f"mini_batch_size must be >= 1 or None, got {mini_batch_size}")
        self.mini_batch_size = mini_batch_size
        self.max_tokens = max_tokens
        self._encoded: Any = None
        self._index: dict[tuple[str, str], int] = {}
        self._checked = False
        if model.num_labels != 1:
            raise InvalidArgumentError(f"GradebenchLoss needs a model with 1 output label, got {model.num_labels}",
                                       hint="build the CrossEncoder with num_labels=1")

    def forward(
        self,
        inputs: list[list[str] | list[list[str]]],
        labels: list[Tensor],
        prompt: str | None = None,
        task: str | None = None,
    ) -> Tensor:
        """The gradebench loss of one batch.

        Args:
            inputs: ``[queries, docs_list]`` — ``queries[b]`` a string, ``docs_list[b]`` its documents.
            labels: one tensor of grades per query, ``labels[b].shape == (len(docs_list[b]),)``.
            prompt, task: passed to ``model.preprocess`` (as sentence-transformers' losses do).

        Returns:
            The scalar loss (the gradebench loss's ``reduction="mean"``).
        """
        if isinstance(labels, Tensor):
            raise InvalidArgumentError("GradebenchLoss expects one label list per query, got a single tensor",
                                       hint="use a listwise dataset: columns query, docs (list), labels (list)")
        if len(inputs) != 2:
            raise InvalidArgumentError(f"GradebenchLoss expects two inputs (queries, docs lists), got {len(inputs)}",
                                       hint="use a listwise dataset: columns query, docs (list), labels (list)")
        queries, docs_list = inputs
        sizes = [len(docs) for docs in docs_list]
        if sizes != [len(lab) for lab in labels]:
            raise InvalidArgumentError(
                f"documents per query {sizes} do not match labels per query {[len(lab) for lab in labels]}")
        pairs = [(q, d) for q, docs in zip(queries, docs_list) for d in docs]
        device = self.model.device
        logits = self.activation_fn(self._logits(pairs, prompt=prompt, task=task).float())

        batch, width = len(sizes), max(sizes) if sizes else 0
        # sizes and grades cross without waiting for the forward just queued (host_to_device)
        sizes_t = host_to_device(sizes, device)
        mask = torch.arange(width, device=device)[None, :] < sizes_t[:, None]
        scores = torch.zeros((batch, width), dtype=logits.dtype, device=device)
        scores = scores.masked_scatter(mask, logits)
        grades = torch.zeros((batch, width), dtype=torch.float32, device=device)
        if pairs:
            flat_labels = torch.cat([torch.as_tensor(lab).detach().reshape(-1) for lab in labels])
            if flat_labels.device.type == "cpu":  # the collator's host arrays: one copy, waiting for nothing
                flat_labels = host_to_device(flat_labels.to(torch.float32).numpy(), device, np.float32)
            else:
                flat_labels = flat_labels.to(device, torch.float32)
            grades = grades.masked_scatter(mask, flat_labels)
        validate = device.type == "cpu" or not self._checked
        self._checked = True
        return self.spec(scores, grades, mask=mask, validate=validate, **self.loss_params)

    def use_encoded(self, encoded: Any, pairs: Sequence[tuple[str, str]]) -> None:
        """Read the token ids of ``pairs`` (the rows of ``encoded``, an
        :class:`~gradebench.training.tokens.EncodedPairs`) instead of tokenizing them."""
        if len(encoded) != len(pairs):
            raise ValueError(f"{len(pairs)} pairs but {len(encoded)} encodings")
        self._encoded = encoded
        self._index = {p: i for i, p in enumerate(pairs)}

    def _chunks(self, lengths: Any, size: int) -> list[Any]:
        """Row indices of each forward pass: longest first (stable), cut by pairs or by tokens."""
        from gradebench.training.tokens import cut_batches

        lengths = np.asarray(lengths)
        n = len(lengths)
        if size >= n and (self.max_tokens is None or n * int(lengths.max(initial=1)) <= self.max_tokens):
            return [np.arange(n)]  # one pass, in the batch's own order
        order = np.argsort(-lengths, kind="stable")
        return cut_batches(order, lengths, batch_size=size, max_tokens=self.max_tokens)

    def _logits(self, pairs: Sequence[tuple[str, str]], *, prompt: str | None, task: str | None) -> Tensor:
        """``[n_pairs]`` model outputs, in the order of ``pairs``."""
        from sentence_transformers.util import batch_to_device

        n = len(pairs)
        if n == 0:
            return torch.zeros(0, device=self.model.device)
        if self._encoded is not None and prompt is None:
            rows = [self._index.get(p) for p in pairs]
            if None not in rows:
                return self._encoded_logits(np.asarray(rows, dtype=np.int64))
        tokens = self.model.preprocess(list(pairs), prompt=prompt, task=task)
        if "attention_mask" not in tokens:
            return self.model(batch_to_device(tokens, self.model.device))["scores"].reshape(-1)
        lengths = tokens["attention_mask"].sum(dim=1)
        chunks = self._chunks(lengths.numpy(), n if self.mini_batch_size is None else self.mini_batch_size)
        if len(chunks) == 1:  # one pass over the tokenizer's own batch
            return self.model(batch_to_device(tokens, self.model.device))["scores"].reshape(-1)
        right_padded = getattr(self.model.tokenizer, "padding_side", "right") == "right"

        def features(chunk: Any) -> dict[str, Any]:
            rows = torch.from_numpy(chunk)
            width = int(lengths[rows].max())
            out = {}
            for key, value in tokens.items():
                if isinstance(value, Tensor) and value.ndim >= 1 and value.shape[0] == n:
                    value = value[rows]
                    if right_padded and key in _TOKEN_KEYS and value.ndim == 2:
                        value = value[:, :width]
                out[key] = value
            return batch_to_device(out, self.model.device)

        return self._forward_chunks(chunks, [features(chunk) for chunk in chunks])

    def _encoded_logits(self, rows: Any) -> Tensor:
        """``[len(rows)]`` model outputs of pre-tokenized pairs (rows of the encoding), in that order."""
        tokens = self._encoded.on_device(self.model.device)
        n = len(rows)
        chunks = self._chunks(self._encoded.lengths[rows], n if self.mini_batch_size is None else self.mini_batch_size)
        index = tokens.index(rows[np.concatenate(chunks)])  # one copy of the batch's rows, in forward order
        feats, start = [], 0
        for chunk in chunks:
            feats.append({**tokens.batch(rows[chunk], index[start:start + len(chunk)]), "modality": "text"})
            start += len(chunk)
        return self._forward_chunks(chunks, feats)

    def _forward_chunks(self, chunks: list[Any], features: list[dict[str, Any]]) -> Tensor:
        """The model's outputs on each chunk's features, put back in the rows' order."""
        flat = torch.cat([self.model(f)["scores"].reshape(-1) for f in features])
        order = np.concatenate(chunks)
        if np.array_equal(order, np.arange(len(order))):
            return flat
        out = torch.empty(len(order), dtype=flat.dtype, device=flat.device)
        return out.index_copy(0, host_to_device(order, flat.device), flat)

    def get_config_dict(self) -> dict[str, Any]:
        """Configuration shown in sentence-transformers model cards."""
        return {"loss": self.spec.name, "loss_params": dict(self.loss_params),
                "activation_fn": type(self.activation_fn).__name__, "mini_batch_size": self.mini_batch_size}

    @property
    def citation(self) -> str:
        return self.spec.source
