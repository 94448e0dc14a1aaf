"""Training machinery shared by the trainable scorers (``transformers.Trainer`` underneath).

* :mod:`gradebench.training.options` — :class:`TrainOptions`, the options of one training run;
* :mod:`gradebench.training.evaluation` — validation metrics (numpy only, cheap to import);
* :mod:`gradebench.training.listeval` — :class:`ListEvalMixin`, :func:`training_arguments`,
  progress/history callbacks (imports transformers);
* :mod:`gradebench.training.engine` — :func:`fit_torch_scorer`, the Trainer loop for plain
  torch scorers (lists as examples, gradebench losses).

Names are re-exported lazily, so importing this package does not import torch or transformers.
"""

from __future__ import annotations

from gradebench._lazy import lazy_attributes

_LAZY = {
    "TrainOptions": "gradebench.training.options",
    "ProgressFn": "gradebench.training.options",
    "VALIDATION_METRICS": "gradebench.training.evaluation",
    "list_metrics": "gradebench.training.evaluation",
    "metric_key": "gradebench.training.evaluation",
    "ListEvalMixin": "gradebench.training.listeval",
    "training_arguments": "gradebench.training.listeval",
    "RichProgressCallback": "gradebench.training.listeval",
    "EpochLogCallback": "gradebench.training.listeval",
    "read_history": "gradebench.training.listeval",
    "HISTORY_FILE": "gradebench.training.listeval",
    "fit_torch_scorer": "gradebench.training.engine",
    "CHECKPOINT_DIR": "gradebench.training.engine",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_attributes(__name__, _LAZY, globals())
