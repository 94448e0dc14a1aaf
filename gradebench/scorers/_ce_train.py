"""Training of the ``cross-encoder`` scorer with sentence-transformers' ``CrossEncoderTrainer``.

* **data**: one example per query, the listwise format of sentence-transformers' listwise
  losses: columns ``query`` (str), ``docs`` (its real candidates, ragged) and ``labels``
  (their relevance grades);
* **loss**: :class:`~gradebench.training.st_loss.GradebenchLoss` around the registered loss
  ``options.loss`` (default ``listnet``) with ``options.loss_params``;
* **trainer**: ``CrossEncoderTrainer`` with :class:`~gradebench.training.listeval.ListEvalMixin`
  (validation = gradebench metrics on whole lists, scored by the scorer's own bucketed
  inference), arguments from :func:`~gradebench.training.listeval.training_arguments`
  (AdamW, linear warmup, clipping, one checkpoint per epoch, best of two kept and reloaded at
  the end), ``EarlyStoppingCallback(options.patience)`` when there is validation, one history
  record per epoch in ``run_dir/history.jsonl``;
* **checkpoints**: ``run_dir/checkpoints/checkpoint-<step>`` (sentence-transformers folders plus
  optimizer, scheduler, RNG and trainer state); ``resume=True`` continues from the last complete
  one (:func:`gradebench.training.checkpoints.prepare`: a half-written one is removed, the
  history is rebuilt from the checkpoint, an early stop stays stopped); a fresh run removes old
  checkpoints and history first.

Global RNG state (Python, NumPy, torch) is restored after training: ``Trainer`` seeds it from
``options.seed`` while it runs.
"""

from __future__ import annotations

import dataclasses
import functools
import tempfile
from pathlib import Path
from typing import Any

from gradebench.benchmark.lists import Lists
from gradebench.errors import InvalidArgumentError
from gradebench.training.options import ProgressFn, TrainOptions

#: checkpoints of a run, under its run folder
CHECKPOINT_DIR = "checkpoints"
#: pairs per forward pass in training when the config leaves ``mini_batch_size`` unset (on CUDA:
#: the whole batch, cut only by the device's training token budget)
CPU_MINI_BATCH = 16
ACCELERATOR_MINI_BATCH = 64


def listwise_dataset(lists: Lists) -> Any:
    """A ``datasets.Dataset`` with one row per query: ``query``, ``docs`` and ``labels`` (grades)."""
    from datasets import Dataset, Features, Sequence, Value

    queries, docs, labels = [], [], []
    for q in range(lists.n_queries):
        valid = lists.mask[q]
        queries.append(str(lists.queries[q]))
        docs.append([str(c) for c in lists.candidates[q][valid]])
        labels.append([float(y) for y in lists.relevance[q][valid]])
    features = Features({"query": Value("string"), "docs": Sequence(Value("string")),
                         "labels": Sequence(Value("float32"))})
    return Dataset.from_dict({"query": queries, "docs": docs, "labels": labels}, features=features)


def train_pairs(lists: Lists) -> list[tuple[str, str]]:
    """The distinct (query, candidate) pairs of ``lists``' real candidates, in first-seen order."""
    rows, cols = lists.flat_index()
    pairs = zip(lists.queries[rows].tolist(), lists.candidates[rows, cols].tolist())
    return list(dict.fromkeys((str(q), str(c)) for q, c in pairs))


def check_grades(loss: Any, lists: Lists) -> None:
    """Run the loss's value checks once on every distinct grade of ``lists`` (on the CPU), so that
    per-step checks, which would wait for an accelerator at every step, can be skipped there."""
    import numpy as np
    import torch

    grades = np.unique(lists.relevance[lists.mask]).astype(np.float32)
    if grades.size:
        labels = torch.from_numpy(grades)[None, :]
        loss.spec(torch.zeros_like(labels), labels, mask=torch.ones_like(labels, dtype=torch.bool),
                  validate=True, **loss.loss_params)


@functools.cache
def trainer_class() -> type:
    """``ListEvalMixin`` + ``CrossEncoderTrainer``, saving checkpoints without a model card."""
    from sentence_transformers.cross_encoder import CrossEncoderTrainer
    from sentence_transformers.cross_encoder.data_collator import CrossEncoderDataCollator

    from gradebench.training.listeval import ListEvalMixin

    @dataclasses.dataclass
    class HostGradesCollator(CrossEncoderDataCollator):
        """sentence-transformers' collator, with each query's grades as a host (numpy) array.

        Its own makes one tensor of grades per query, and the data loader sends every tensor of a
        batch to the device before the step: on CUDA each of those copies waits for the device
        (``batch_queries`` waits a step, the first for the step before to finish). Arrays pass
        through the loader and the trainer untouched, and ``GradebenchLoss`` copies them in one
        copy that waits for nothing. The values are the same float32 grades.
        """

        def __call__(self, features: list[dict[str, Any]]) -> dict[str, Any]:
            import numpy as np

            batch = super().__call__(features)
            grades = batch.get("label")
            if isinstance(grades, list):
                batch["label"] = [np.asarray(g, dtype=np.float32) for g in grades]
            return batch

    class GradebenchCrossEncoderTrainer(ListEvalMixin, CrossEncoderTrainer):
        data_collator_class = HostGradesCollator

        def _save(self, output_dir: str | None = None, state_dict: Any = None) -> None:
            import os

            import torch
            from transformers.trainer import TRAINING_ARGS_NAME

            output_dir = output_dir if output_dir is not None else self.args.output_dir
            os.makedirs(output_dir, exist_ok=True)
            self.model.save(output_dir, create_model_card=False)
            torch.save(self.args, os.path.join(output_dir, TRAINING_ARGS_NAME))

    return GradebenchCrossEncoderTrainer


def cross_encoder_arguments(hf_args: Any) -> Any:
    """The same ``TrainingArguments`` as a ``CrossEncoderTrainingArguments`` (which the trainer requires)."""
    from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments

    values = {f.name: getattr(hf_args, f.name) for f in dataclasses.fields(hf_args) if f.init}
    return CrossEncoderTrainingArguments(**values)


def fit_cross_encoder(
    scorer: Any,
    train: Lists,
    validation: Lists | None,
    options: TrainOptions,
    *,
    run_dir: Path | None,
    resume: bool,
    progress: ProgressFn | None,
) -> list[dict[str, Any]]:
    """Train ``scorer.model`` in place (see the module docstring); returns one record per epoch."""
    if train.n_queries == 0:
        raise InvalidArgumentError("the training split has no queries", hint="check the benchmark's train split")
    if run_dir is None:
        if resume:
            raise InvalidArgumentError("resume=True needs a run_dir holding the checkpoints",
                                       hint="pass run_dir= of the interrupted run")
        with tempfile.TemporaryDirectory(prefix="gradebench-ce-") as tmp:
            return _fit(scorer, train, validation, options, Path(tmp), resume=False, progress=progress,
                        keep_history_file=False)
    return _fit(scorer, train, validation, options, Path(run_dir), resume=resume, progress=progress,
                keep_history_file=True)


def _fit(
    scorer: Any, train: Lists, validation: Lists | None, options: TrainOptions, run_dir: Path, *,
    resume: bool, progress: ProgressFn | None, keep_history_file: bool,
) -> list[dict[str, Any]]:
    from transformers import EarlyStoppingCallback
    from transformers.trainer_callback import PrinterCallback

    from gradebench.training.tokens import encode_pairs, token_budget
    from gradebench.scorers._ce_model import preserved_rng, quiet_loading, resolve_precision
    from gradebench.training import checkpoints as ckpts
    from gradebench.training.evaluation import metric_key
    from gradebench.training.listeval import (
        HISTORY_FILE,
        EpochLogCallback,
        RichProgressCallback,
        StopPointCallback,
        read_history,
        restore_history,
        training_arguments,
    )
    from gradebench.training.st_loss import GradebenchLoss

    model = scorer.model
    config = scorer.config
    has_val = validation is not None and validation.n_queries > 0
    checkpoints = run_dir / CHECKPOINT_DIR
    run_dir.mkdir(parents=True, exist_ok=True)
    last = ckpts.prepare(run_dir, HISTORY_FILE, resume=resume)  # half-written checkpoints are dropped
    precision = resolve_precision(config.precision, str(model.device))
    args = cross_encoder_arguments(training_arguments(
        options, checkpoints, n_train_queries=train.n_queries, default_lr=scorer.default_lr,
        has_validation=has_val, bf16=precision == "bf16", fp16=precision == "fp16", **ckpts.resume_overrides(last),
    ))
    mini_batch, max_tokens = config.mini_batch_size, None
    if mini_batch is None:
        if model.device.type == "cuda":  # the whole batch in one pass, cut only where it would not fit
            max_tokens = token_budget(model, model.device, training=True)
        else:
            mini_batch = CPU_MINI_BATCH if model.device.type == "cpu" else ACCELERATOR_MINI_BATCH
    loss = GradebenchLoss(model, options.loss or scorer.default_loss, loss_params=dict(options.loss_params),
                          mini_batch_size=mini_batch, max_tokens=max_tokens)
    check_grades(loss, train)
    pairs = train_pairs(train)
    loss.use_encoded(encode_pairs(model.tokenizer, [q for q, _ in pairs], [d for _, d in pairs],
                                  max_length=config.max_length), pairs)
    history_path = run_dir / HISTORY_FILE
    if last is not None and args.should_save:
        restore_history(history_path, last)  # the history the checkpoint holds, however the process died
    records: list[dict[str, Any]] = []
    callbacks: list[Any] = [EpochLogCallback(records, history_path), StopPointCallback()]
    if has_val:
        callbacks.append(EarlyStoppingCallback(early_stopping_patience=options.patience))
    if progress is not None:
        callbacks.append(RichProgressCallback(progress, metric_key=metric_key(options.eval_metric)))
    train_ds = listwise_dataset(train)
    with preserved_rng(), quiet_loading(warnings=True):
        trainer = trainer_class()(
            model=model, args=args, train_dataset=train_ds,
            eval_dataset=listwise_dataset(validation) if has_val else None,  # unused: evaluate() scores lists
            loss=loss, callbacks=callbacks,
        )
        trainer.remove_callback(PrinterCallback)  # logs go to history.jsonl and progress(), not stdout
        trainer.gb_validation = validation if has_val else None
        trainer.gb_score_fn = scorer.score
        trainer.gb_history = []
        trainer.gb_eval_metric = options.eval_metric
        trainer.train(resume_from_checkpoint=None if last is None else str(last))
    model.eval()
    return read_history(history_path) if keep_history_file else records
