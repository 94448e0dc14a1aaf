"""``fit_torch_scorer``: the ``transformers.Trainer`` loop for plain torch scorers.

One training example is one query's whole list. The :class:`ListDataset` yields row indices;
the collator trims a batch of rows to its widest list and asks the scorer's ``collate(rows,
width)`` for the feature tensors (padding positions included, ``[B, width]`` layout), then adds
``labels`` (relevance grades, ``[B, width]`` float32) and ``mask`` (``[B, width]`` bool).

:class:`RankingLossModel` wraps the scorer's module: ``forward(labels, mask, **features)``
returns ``{"loss": loss(scores, labels, mask=mask, **loss_params), "scores": scores}`` with the
registered gradebench loss ``options.loss``. A module may define ``loss_inputs(labels=, mask=,
**features) -> (scores, labels, mask)`` to apply the loss to other lists than its item scores
(``pair-mlp`` applies pairwise losses to each pair's logits as a two-item list).
``sigmoid_ce`` (labels in [0, 1]) gets ``relevance / max relevance of the train split``.

Everything else is Trainer's: AdamW, linear warmup/decay, gradient clipping, seeded shuffling
(``data_seed``), device placement (CPU, CUDA, MPS) and DDP under ``accelerate launch`` or
torchrun (every parameter takes part in every forward, so ``find_unused_parameters=False``),
per-epoch evaluation through :class:`~gradebench.training.listeval.ListEvalMixin`, early
stopping (``EarlyStoppingCallback(options.patience)``, added here when there are validation
lists), checkpoints in ``<output_dir>/checkpoints`` (best + latest), the best model loaded at
the end. ``resume=True`` continues from the last *complete* checkpoint
(:mod:`gradebench.training.checkpoints`: one a killed save left without ``trainer_state.json``
is removed first); ``history.jsonl`` is rewritten from that checkpoint's log (so a kill between
a checkpoint and its history line loses nothing), and a run that had ended there (an early
stop, the last epoch) only reloads its best weights instead of training on. A resumed run ends
with the weights and history of an uninterrupted one.

Multi-process CPU training (gloo) was checked with ``torchrun --nproc_per_node 2`` and
``accelerate launch --multi_gpu --num_processes 2`` on a CPU-only machine (accelerate 1.15's
``--cpu --num_processes 2`` starts a single process); under DDP the effective batch is
``batch_queries * processes`` and only the main process writes checkpoints and history.

Trainer seeds the global RNGs; :func:`fit_torch_scorer` restores the caller's Python,
numpy and torch RNG states afterwards, so training leaves no global trace.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers

from gradebench.benchmark.lists import Lists
from gradebench.errors import InvalidArgumentError, RunError
from gradebench.metrics import as_metric
from gradebench.training import checkpoints
from gradebench.training.checkpoints import CHECKPOINT_DIR
from gradebench.training.listeval import (
    HISTORY_FILE,
    EpochLogCallback,
    ListEvalMixin,
    RichProgressCallback,
    StopPointCallback,
    read_history,
    restore_history,
    training_arguments,
)
from gradebench.training.options import ProgressFn, TrainOptions

#: losses whose labels must lie in [0, 1]: they get relevance / max train relevance
UNIT_INTERVAL_LOSSES = frozenset({"sigmoid_ce"})

#: ``collate(rows, width) -> {name: tensor}`` feature tensors of the lists at ``rows``
CollateFn = Callable[[np.ndarray, int], dict[str, torch.Tensor]]
ScoreFn = Callable[[Lists], np.ndarray]


class ListDataset(torch.utils.data.Dataset):
    """``n`` examples, each the row index of one query's list."""

    def __init__(self, n: int) -> None:
        self.n = int(n)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        return int(i)


class ListCollator:
    """Row indices -> a padded batch: the scorer's features plus ``labels`` and ``mask``."""

    def __init__(self, lists: Lists, collate: CollateFn, *, label_scale: float = 1.0) -> None:
        self.lists = lists
        self.collate = collate
        self.label_scale = float(label_scale)

    def __call__(self, rows: list[int]) -> dict[str, torch.Tensor]:
        idx = np.asarray(rows, dtype=np.int64)
        mask = self.lists.mask[idx]
        used = np.flatnonzero(mask.any(axis=0))
        width = int(used[-1]) + 1 if used.size else 1
        batch = dict(self.collate(idx, width))
        labels = self.lists.relevance[idx, :width] * self.label_scale
        batch["labels"] = torch.as_tensor(labels, dtype=torch.float32)
        batch["mask"] = torch.as_tensor(mask[:, :width].copy())
        return batch


class RankingLossModel(torch.nn.Module):
    """A scorer module plus a registered gradebench loss (what Trainer trains and checkpoints).

    ``inner(mask=mask, **features)`` must return ``[B, width]`` scores. Checkpoint keys are the
    inner module's, prefixed ``inner.``. ``accepts_loss_kwargs = False`` tells Trainer not to
    pass ``num_items_in_batch``: the loss is a per-batch mean (Trainer scales it for gradient
    accumulation).
    """

    accepts_loss_kwargs = False

    def __init__(self, inner: torch.nn.Module, loss: str, loss_params: dict[str, Any] | None = None) -> None:
        super().__init__()
        from gradebench.losses import get_loss

        self.inner = inner
        self.loss_name = loss
        self.loss_fn = get_loss(loss)
        self.loss_params = dict(loss_params or {})

    def forward(self, labels: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                **features: torch.Tensor) -> dict[str, torch.Tensor]:
        if labels is None:
            return {"scores": self.inner(mask=mask, **features)}
        loss_inputs = getattr(self.inner, "loss_inputs", None)
        if loss_inputs is not None:
            scores, y, m = loss_inputs(labels=labels, mask=mask, **features)
        else:
            scores = self.inner(mask=mask, **features)
            y, m = labels, mask
        loss = self.loss_fn(scores, y, mask=m, **self.loss_params)
        return {"loss": loss, "scores": scores}


def check_loss(loss: str | None, loss_params: dict[str, Any], *, scorer: str,
               kinds: tuple[str, ...] = ("pointwise", "pairwise", "listwise")) -> Any:
    """The :class:`~gradebench.losses.LossSpec` of ``loss`` after checking its kind and params.

    Raises:
        UnknownNameError: unknown loss (with close matches).
        InvalidArgumentError: no loss, a kind the scorer cannot train with, unknown params.
    """
    from gradebench.losses import LOSSES, get_loss

    if loss is None:
        raise InvalidArgumentError(f"scorer {scorer!r} needs a loss", hint="e.g. --loss listnet")
    spec = get_loss(loss)
    if spec.kind not in kinds:
        allowed = [n for n, s in LOSSES.items() if s.kind in kinds]
        raise InvalidArgumentError(
            f"scorer {scorer!r} trains only with {'/'.join(kinds)} losses; {loss!r} is {spec.kind}",
            key="loss", hint=f"choose one of: {', '.join(allowed)}",
        )
    unknown = sorted(set(loss_params) - set(spec.params))
    if unknown:
        raise InvalidArgumentError(f"loss {loss!r} has no parameter(s) {', '.join(unknown)}", key="loss_params",
                                   hint=f"its parameters: {', '.join(spec.params) or '(none)'}")
    return spec


@contextmanager
def isolated_rng() -> Iterator[None]:
    """Restore Python's, numpy's and torch's (CPU and CUDA) global RNG states on exit."""
    py_state = random.getstate()
    np_state = np.random.get_state()
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        try:
            yield
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)


def _trainer_class() -> type:
    class ListTrainer(ListEvalMixin, transformers.Trainer):
        """``transformers.Trainer`` evaluated with gradebench list metrics."""

    return ListTrainer


def prepare_output_dir(output_dir: Path, *, resume: bool) -> Path:
    """The checkpoint folder; a fresh run removes old checkpoints and history first, a resumed one
    removes half-written checkpoints (see :func:`gradebench.training.checkpoints.prepare`).

    Raises:
        RunError: ``resume`` but no complete checkpoint in ``output_dir/checkpoints``.
    """
    checkpoints.prepare(output_dir, HISTORY_FILE, resume=resume)
    return output_dir / CHECKPOINT_DIR


def fit_torch_scorer(
    module: torch.nn.Module,
    *,
    train: Lists,
    validation: Lists | None,
    options: TrainOptions,
    output_dir: str | Path | None,
    collate: CollateFn,
    score_fn: ScoreFn,
    default_lr: float,
    resume: bool = False,
    progress: ProgressFn | None = None,
    loss_kinds: tuple[str, ...] = ("pointwise", "pairwise", "listwise"),
    scorer: str = "scorer",
) -> list[dict[str, Any]]:
    """Train ``module`` on ``train`` lists with ``options.loss``; returns per-epoch records.

    Args:
        module: ``forward(mask=, **features) -> [B, width]`` scores (see the module docstring).
        train, validation: the lists (``validation`` None: no evaluation, no early stopping,
            the last epoch's weights are kept).
        options: epochs, lr (``None`` -> ``default_lr``), batch size in queries, loss, ...
        output_dir: the run folder (``checkpoints/`` and ``history.jsonl`` go there); None
            trains in a temporary folder removed afterwards.
        collate: ``(rows, width) -> {name: tensor}`` features of a batch of train rows.
        score_fn: scores a whole :class:`Lists` with the current module (eval mode, no grad).
        resume: continue from the last complete checkpoint in ``output_dir/checkpoints``
            (half-written ones are removed first).
        progress: ``progress(done_steps, total_steps, message)``.
        loss_kinds: loss kinds the scorer accepts.

    Returns:
        One record per epoch run, ``{"epoch", "step", "loss", "learning_rate", "grad_norm",
        "eval_ndcg@5", ...}`` (after a resume, the earlier epochs too). The module holds the
        best epoch's weights (by ``eval_<options.eval_metric>``), or the last epoch's without
        validation lists.

    Raises:
        UnknownNameError: unknown loss or eval metric.
        InvalidArgumentError: a loss of a kind the scorer rejects, unknown loss params, no
            training lists.
        RunError: ``resume`` without a checkpoint to resume from.
    """
    check_loss(options.loss, options.loss_params, scorer=scorer, kinds=loss_kinds)
    if train.n_queries == 0 or train.n_candidates == 0:
        raise InvalidArgumentError("no training lists", hint="check the benchmark's train split")
    has_val = validation is not None and validation.n_queries > 0
    if output_dir is None:
        if resume:
            raise RunError("cannot resume a run without a run folder", hint="pass the run folder (--out)")
        with tempfile.TemporaryDirectory(prefix="gradebench-train-") as tmp:
            return _fit(module, train, validation if has_val else None, options, Path(tmp), collate, score_fn,
                        default_lr, False, progress)
    return _fit(module, train, validation if has_val else None, options, Path(output_dir), collate, score_fn,
                default_lr, resume, progress)


def _fit(module: torch.nn.Module, train: Lists, validation: Lists | None, options: TrainOptions, out: Path,
         collate: CollateFn, score_fn: ScoreFn, default_lr: float, resume: bool,
         progress: ProgressFn | None) -> list[dict[str, Any]]:
    from transformers import EarlyStoppingCallback, PrinterCallback

    out.mkdir(parents=True, exist_ok=True)
    start = checkpoints.prepare(out, HISTORY_FILE, resume=resume)
    ckpt = out / CHECKPOINT_DIR
    scale = 1.0
    if options.loss in UNIT_INTERVAL_LOSSES:
        top = float(train.relevance[train.mask].max())
        scale = 1.0 / top if top > 0 else 1.0
    records: list[dict[str, Any]] = []
    args = training_arguments(options, ckpt, n_train_queries=train.n_queries, default_lr=default_lr,
                              has_validation=validation is not None, **checkpoints.resume_overrides(start))
    if start is not None and args.should_save:
        restore_history(out / HISTORY_FILE, start)
    callbacks: list[Any] = [EpochLogCallback(records, out / HISTORY_FILE), StopPointCallback()]
    if validation is not None:
        callbacks.append(EarlyStoppingCallback(early_stopping_patience=options.patience))
    if progress is not None:
        callbacks.append(RichProgressCallback(progress, metric_key=args.metric_for_best_model))
    with isolated_rng(), _quiet_transformers():
        model = RankingLossModel(module, options.loss, options.loss_params)
        trainer = _trainer_class()(
            model=model,
            args=args,
            train_dataset=ListDataset(train.n_queries),
            eval_dataset=ListDataset(validation.n_queries) if validation is not None else None,
            data_collator=ListCollator(train, collate, label_scale=scale),
            callbacks=callbacks,
        )
        trainer.remove_callback(PrinterCallback)
        trainer.gb_validation = validation
        trainer.gb_score_fn = score_fn
        trainer.gb_history = []
        trainer.gb_eval_metric = as_metric(options.eval_metric)  # parsed once, not every epoch
        trainer.train(resume_from_checkpoint=None if start is None else str(start))
    module.eval()
    history = read_history(out / HISTORY_FILE) if args.should_save else []
    return history or records


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' info/warning chatter during training (errors still show)."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


__all__ = [
    "CHECKPOINT_DIR",
    "ListCollator",
    "ListDataset",
    "RankingLossModel",
    "check_loss",
    "fit_torch_scorer",
    "isolated_rng",
    "prepare_output_dir",
]
