"""gradebench list metrics inside any ``transformers.Trainer``: evaluation, arguments, callbacks.

Shared by the plain-torch engine (:func:`gradebench.training.engine.fit_torch_scorer`) and the
cross-encoder (sentence-transformers' ``CrossEncoderTrainer``), so every trained scorer selects
checkpoints, stops early and logs history the same way:

* :class:`ListEvalMixin` replaces ``Trainer.evaluate`` by gradebench metrics on whole
  validation lists (``eval_ndcg@5``, ``eval_kendall``, ...; see
  :data:`~gradebench.training.evaluation.VALIDATION_METRICS`) and fires ``on_evaluate``, so
  ``EarlyStoppingCallback`` and best-checkpoint tracking (``metric_for_best_model``) work.
* :func:`training_arguments` turns :class:`~gradebench.scorers.base.TrainOptions` into
  ``TrainingArguments``: evaluate and save every epoch, keep the best of at most two
  checkpoints and load it at the end, select on ``"eval_" + eval_metric`` (greater is better).
* :class:`RichProgressCallback` forwards progress to ``progress(done, total, message)``;
  :class:`EpochLogCallback` writes one record per epoch to a list and ``history.jsonl``.

Under DDP (``accelerate launch``/torchrun) every process scores the whole validation set with
its replica of the weights; the replicas are identical, so every process logs the same metrics
and takes the same early-stopping and best-checkpoint decisions.

Early stopping is *not* configured here: the creator of the trainer adds
``EarlyStoppingCallback(early_stopping_patience=options.patience)`` when it has validation
lists (the engine does; a validation pass that fails to beat the best value so far
``patience`` times in a row stops training).

Usage::

    class MyTrainer(ListEvalMixin, Trainer):
        pass

    args = training_arguments(options, run_dir / "checkpoints", n_train_queries=train.n_queries,
                              default_lr=2e-5)
    trainer = MyTrainer(model=model, args=args, train_dataset=..., eval_dataset=...,
                        callbacks=[EarlyStoppingCallback(options.patience), EpochLogCallback(history, path)])
    trainer.gb_validation, trainer.gb_score_fn, trainer.gb_history = validation, score_fn, []
    trainer.train()
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import transformers

from gradebench.benchmark.lists import Lists
from gradebench.errors import InvalidArgumentError
from gradebench.metrics import MetricSpec
from gradebench.paths import write_text_atomic
from gradebench.stops import stop_point
from gradebench.training.checkpoints import TRAINER_STATE, read_state
from gradebench.training.evaluation import DEFAULT_EVAL_METRIC, json_ready, list_metrics, metric_key
from gradebench.training.options import ProgressFn, TrainOptions

#: per-epoch records, one JSON object a line, appended as each epoch's checkpoint is saved
HISTORY_FILE = "history.jsonl"
#: keys of Trainer's training logs kept in history records (besides ``eval_*``)
TRAIN_LOG_KEYS = ("loss", "learning_rate", "grad_norm")
#: timing keys left out of history records, so one seed gives one history
TIMING_SUFFIXES = ("_runtime", "_samples_per_second", "_steps_per_second")


class CheckpointStopPoints:
    """Mix into a ``transformers.Trainer`` subclass (before it): the named stop points of a
    checkpoint save (:mod:`gradebench.stops`), for the crash tests."""

    def _save_rng_state(self, output_dir: str) -> None:
        super()._save_rng_state(output_dir)  # type: ignore[misc]
        stop_point("checkpoint-saving")  # weights, optimizer, RNG written; trainer_state.json not yet

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        super()._save_checkpoint(model, trial)  # type: ignore[misc]
        stop_point("checkpoint-saved")  # complete; the epoch's history line comes in on_save


def checkpoint_trainer_class() -> type:
    """``transformers.Trainer`` with the checkpoint stop points (:class:`CheckpointStopPoints`)."""

    class CheckpointTrainer(CheckpointStopPoints, transformers.Trainer):
        """``transformers.Trainer`` whose checkpoint saves reach gradebench's stop points."""

    return CheckpointTrainer


class ListEvalMixin(CheckpointStopPoints):
    """Mix into a ``transformers.Trainer`` subclass (before it): gradebench validation metrics.

    Attributes (set by whoever creates the trainer):
        gb_validation: the validation lists, or None (then :meth:`evaluate` returns ``{}``).
        gb_score_fn: ``lists -> [n_queries, list_size]`` scores with the current model; it must
            put the model in eval mode and back (the mixin also restores ``model.training``).
        gb_history: every evaluation's metrics (with ``epoch`` and ``step``) is appended here.
        gb_eval_metric: the selection metric (a spec, or a name parsed once per pass), always
            computed (default ``NDCG(k=5)``).
    """

    gb_validation: Lists | None = None
    gb_score_fn: Callable[[Lists], np.ndarray] | None = None
    gb_history: list[dict[str, Any]] | None = None
    gb_eval_metric: MetricSpec | str = DEFAULT_EVAL_METRIC

    def evaluate(
        self,
        eval_dataset: Any = None,
        ignore_keys: list[str] | None = None,
        metric_key_prefix: str = "eval",
    ) -> dict[str, float]:
        """Metrics of the current model on :attr:`gb_validation`, keyed ``<prefix>_<metric>``.

        The values are logged (``self.log``) and passed to ``on_evaluate`` callbacks; undefined
        metrics are NaN. ``eval_dataset`` and ``ignore_keys`` are accepted for Trainer
        compatibility and ignored: the lists are scored whole by :attr:`gb_score_fn`.
        """
        lists = self.gb_validation
        if lists is None or lists.n_queries == 0:
            return {}
        if self.gb_score_fn is None:
            raise InvalidArgumentError("ListEvalMixin.gb_score_fn is not set",
                                       hint="set trainer.gb_score_fn = lambda lists: scores")
        start = time.perf_counter()
        model = getattr(self, "model", None)
        was_training = bool(getattr(model, "training", False))
        try:
            scores = self.gb_score_fn(lists)
        finally:
            if model is not None:
                model.train(was_training)
        values = list_metrics(scores, lists, eval_metric=self.gb_eval_metric)
        metrics = {f"{metric_key_prefix}_{k}": v for k, v in values.items()}
        metrics[f"{metric_key_prefix}_runtime"] = round(time.perf_counter() - start, 4)
        self.log(dict(metrics))
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        if self.gb_history is not None:
            self.gb_history.append({"epoch": _epoch(self.state), "step": int(self.state.global_step), **metrics})
        return metrics


def accelerator_available() -> bool:
    """Whether torch sees a CUDA/ROCm, XPU or MPS device."""
    import torch

    if torch.cuda.is_available():
        return True
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        return True
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def world_size() -> int:
    """Number of training processes (``WORLD_SIZE`` set by ``accelerate launch``/torchrun, else 1)."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def warmup_steps(options: TrainOptions, n_train_queries: int, *, processes: int = 1) -> int:
    """Linear-warmup steps: ``ceil(warmup_ratio * epochs * ceil(n / (batch_queries * processes)))``."""
    steps_per_epoch = max(1, math.ceil(n_train_queries / (options.batch_queries * max(1, processes))))
    return int(math.ceil(options.warmup_ratio * steps_per_epoch * options.epochs))


def training_arguments(
    options: TrainOptions,
    output_dir: str | Path,
    *,
    n_train_queries: int,
    default_lr: float,
    has_validation: bool = True,
    **overrides: Any,
) -> transformers.TrainingArguments:
    """``TrainingArguments`` for one gradebench training run (one list = one example).

    Per epoch: log, evaluate (when ``has_validation``) and save a checkpoint; keep at most two
    (the best and the latest), load the best at the end (``metric_for_best_model`` =
    ``"eval_" + canonical(options.eval_metric)``, e.g. ``eval_ndcg@5``, greater is better).
    AdamW (Trainer's default) with ``lr = options.lr or default_lr``, weight decay, a linear
    schedule whose warmup is ``options.warmup_ratio`` of the total steps (computed from
    ``n_train_queries``, ``batch_queries``, ``epochs`` and ``WORLD_SIZE``), gradient clipping,
    ``per_device_train_batch_size = batch_queries`` (so the effective batch is
    ``batch_queries * processes`` under DDP), ``seed = data_seed = options.seed``, no
    reporting, no tqdm, ``use_cpu`` only without an accelerator. Mixed precision is off by
    default; ``bf16=True``/``fp16=True`` in ``overrides`` are honoured on an accelerator and
    dropped on CPU. Any other ``overrides`` replace the computed values.

    Raises:
        UnknownNameError / InvalidArgumentError: unknown ``eval_metric`` or arguments
            ``TrainingArguments`` refuses.
    """
    selection = metric_key(options.eval_metric)
    accel = accelerator_available()
    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir),
        eval_strategy="epoch" if has_validation else "no",
        save_strategy="epoch",
        logging_strategy="epoch",
        load_best_model_at_end=has_validation,
        metric_for_best_model=selection if has_validation else None,
        greater_is_better=True,
        save_total_limit=2,
        save_only_model=False,
        restore_callback_states_from_checkpoint=has_validation,
        learning_rate=float(options.lr or default_lr),
        weight_decay=options.weight_decay,
        lr_scheduler_type="linear",
        warmup_steps=warmup_steps(options, n_train_queries, processes=world_size()),
        max_grad_norm=options.max_grad_norm,
        num_train_epochs=options.epochs,
        per_device_train_batch_size=options.batch_queries,
        per_device_eval_batch_size=options.batch_queries,
        seed=options.seed,
        data_seed=options.seed,
        report_to=[],
        disable_tqdm=True,
        use_cpu=not accel,
        bf16=False,
        fp16=False,
        remove_unused_columns=False,
        dataloader_num_workers=0,
        ddp_find_unused_parameters=False,
    )
    kwargs.update(overrides)
    if not accel:
        kwargs["bf16"] = kwargs["fp16"] = False
    try:
        return transformers.TrainingArguments(**kwargs)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"bad training arguments: {e}",
                                   hint="check the overrides passed to training_arguments()") from None


def _epoch(state: Any) -> int:
    return int(round(state.epoch or 0.0))


class RichProgressCallback(transformers.TrainerCallback):
    """Calls ``progress(done_steps, total_steps, message)`` on the main process.

    The message names the epoch, the last training loss and the last selection metric, e.g.
    ``"epoch 3/10 loss 0.412 eval_ndcg@5 0.873"``. The harness passes a rich progress bar on a TTY.
    """

    def __init__(self, progress: ProgressFn, *, metric_key: str | None = None) -> None:
        self.progress = progress
        self.metric_key = metric_key
        self._last: dict[str, float] = {}

    def _message(self, args: Any, state: Any) -> str:
        epochs = int(math.ceil(args.num_train_epochs))
        epoch = min(epochs, max(1, int(math.ceil(state.epoch or 0.0))))
        parts = [f"epoch {epoch}/{epochs}"]
        for k, v in self._last.items():
            parts.append(f"{k} {v:.4g}")
        return " ".join(parts)

    def _report(self, args: Any, state: Any) -> None:
        if state.is_world_process_zero:
            self.progress(int(state.global_step), int(state.max_steps or 0), self._message(args, state))

    def on_train_begin(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201 - Trainer API
        self._report(args, state)

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
        self._report(args, state)

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001, ANN201
        for k, v in (logs or {}).items():
            if k == "loss" or k == self.metric_key:
                if isinstance(v, (int, float)) and math.isfinite(v):
                    self._last[k] = float(v)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):  # noqa: ANN001, ANN201
        self._report(args, state)


class StopPointCallback(transformers.TrainerCallback):
    """Reaches the stop point ``train-step`` after every optimizer step (see :mod:`gradebench.stops`)."""

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201 - Trainer API
        stop_point("train-step")


def _add_log(records: dict[int, dict[str, Any]], epoch: int, step: int, logs: dict[str, Any]) -> None:
    """Merge one Trainer log into its epoch's history record (the kept keys, JSON-ready)."""
    rec = records.setdefault(epoch, {"epoch": epoch})
    rec["step"] = int(step)
    for k, v in logs.items():
        if k in TRAIN_LOG_KEYS or (k.startswith("eval_") and not k.endswith(TIMING_SUFFIXES)):
            rec[k] = json_ready(v)


def _lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(rec, sort_keys=True, allow_nan=False) + "\n" for rec in records)


def history_of_checkpoint(checkpoint: str | Path) -> list[dict[str, Any]]:
    """The history records of the epochs a checkpoint holds, rebuilt from its ``log_history``.

    They are the records :class:`EpochLogCallback` wrote for those epochs (the same logs go
    through the same filter), so a resumed run's history is the uninterrupted run's even when
    the process died between a checkpoint and its history line.
    """
    state = read_state(checkpoint)
    if state is None:
        raise ValueError(f"{checkpoint} has no readable {TRAINER_STATE}")
    records: dict[int, dict[str, Any]] = {}
    for entry in state.get("log_history") or []:
        if not isinstance(entry, dict) or "train_runtime" in entry or "epoch" not in entry:
            continue
        logs = {k: v for k, v in entry.items() if k not in ("epoch", "step")}
        _add_log(records, int(round(entry["epoch"] or 0.0)), int(entry.get("step", 0)), logs)
    return [records[e] for e in sorted(records)]


def restore_history(path: str | Path, checkpoint: str | Path) -> list[dict[str, Any]]:
    """Rewrite ``path`` (atomically) with the history of ``checkpoint``; returns the records."""
    records = history_of_checkpoint(checkpoint)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(p, _lines(records))
    return records


class EpochLogCallback(transformers.TrainerCallback):
    """One record per epoch, ``{"epoch", "step", "loss", "learning_rate", "grad_norm", "eval_*"...}``.

    Timings (``eval_runtime``, ...) are left out, so the same seed gives the same records.

    Training and evaluation logs of an epoch are gathered and the record is written when that
    epoch's checkpoint has been saved (``on_save``; leftovers at ``on_train_end``), so the
    history on disk never runs ahead of the checkpoints a resumed run restarts from. Records
    go to ``records`` (every process) and, on the main process, are appended to ``path``
    (default ``<args.output_dir>/history.jsonl``) and flushed. NaN values become ``None``.
    """

    def __init__(self, records: list[dict[str, Any]], path: str | Path | None = None) -> None:
        self.records = records
        self.path = None if path is None else Path(path)
        self._pending: dict[int, dict[str, Any]] = {}

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001, ANN201
        if not logs or "train_runtime" in logs:  # the end-of-training summary is no epoch
            return
        _add_log(self._pending, _epoch(state), state.global_step, logs)

    def _flush(self, args: Any, state: Any, up_to: int | None) -> None:
        done = sorted(e for e in self._pending if up_to is None or e <= up_to)
        if not done:
            return
        path = self.path if self.path is not None else Path(args.output_dir) / HISTORY_FILE
        recs = [self._pending.pop(e) for e in done]
        self.records.extend(recs)
        if state.is_world_process_zero:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as f:
                f.write(_lines(recs))
                f.flush()
                os.fsync(f.fileno())

    def on_save(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
        self._flush(args, state, _epoch(state))

    def on_train_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201
        self._flush(args, state, None)


def read_history(path: str | Path) -> list[dict[str, Any]]:
    """The records of a ``history.jsonl``, one per epoch (a repeated epoch keeps its last record).

    A missing file gives ``[]``; a truncated last line (killed mid-write) is skipped.
    """
    p = Path(path)
    if not p.is_file():
        return []
    by_epoch: dict[int, dict[str, Any]] = {}
    for line in p.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("epoch"), int):
            by_epoch[rec["epoch"]] = rec
    return [by_epoch[e] for e in sorted(by_epoch)]


__all__ = [
    "HISTORY_FILE",
    "CheckpointStopPoints",
    "EpochLogCallback",
    "ListEvalMixin",
    "RichProgressCallback",
    "accelerator_available",
    "checkpoint_trainer_class",
    "read_history",
    "training_arguments",
    "warmup_steps",
    "world_size",
]
