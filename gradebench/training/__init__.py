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

from gradebench._lazy import by_module, lazy_attributes

_LAZY = by_module({
    "gradebench.training.options": ("TrainOptions", "ProgressFn"),
    "gradebench.training.evaluation": ("VALIDATION_METRICS", "list_metrics", "metric_key"),
    "gradebench.training.listeval": ("ListEvalMixin", "training_arguments", "RichProgressCallback",
                                     "EpochLogCallback", "read_history", "HISTORY_FILE"),
    "gradebench.training.engine": ("fit_torch_scorer", "CHECKPOINT_DIR"),
})

__all__ = sorted(_LAZY)


__getattr__ = lazy_attributes(__name__, _LAZY, globals())
