"""The options of one training run, shared by every trainable scorer and the trainers under them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class TrainOptions(BaseModel):
    """Options of one training run, shared by every trainable scorer.

    ``lr=None`` means the scorer's own default (``Scorer.default_lr``). Every number must be
    finite (``--lr inf`` or ``nan`` is refused with the option's name, never trained with).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    loss: str | None = None
    loss_params: dict[str, Any] = Field(default_factory=dict)
    epochs: int = Field(10, ge=1, le=10_000)
    lr: float | None = Field(None, gt=0)
    weight_decay: float = Field(0.01, ge=0)
    warmup_ratio: float = Field(0.1, ge=0, lt=1)
    batch_queries: int = Field(32, ge=1)
    max_grad_norm: float = Field(1.0, gt=0)
    patience: int = Field(3, ge=1)
    eval_metric: str = "ndcg@5"
    list_size: int | None = Field(None, ge=1)
    max_train_queries: int | None = Field(None, ge=1)
    max_validation_queries: int | None = Field(None, ge=1)
    seed: int = 42


#: ``progress(done, total, message)``; the harness passes a rich progress bar on a TTY
ProgressFn = Callable[[int, int, str], None]
