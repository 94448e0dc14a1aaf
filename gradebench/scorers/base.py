"""The scorer contract: what every registered scorer implements.

A scorer maps a :class:`~gradebench.benchmark.lists.Lists` (dense query/candidate lists) to one float
per candidate, ``[n_queries, list_size]`` (values at padding are ignored). Untrained scorers
only implement :meth:`Scorer.score`; trainable ones also implement :meth:`Scorer._fit` (what
:meth:`Scorer.fit` calls, with its arguments as one :class:`FitJob`), :meth:`Scorer.save` and
:meth:`Scorer.load`.

Configuration is a pydantic model with ``extra="forbid"`` (:class:`ScorerConfig` subclass,
set as the class attribute ``Config``), so a typo in ``--set key=value`` fails with the key.
Scorers never touch global RNG state: every random choice derives from ``seed``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from gradebench.benchmark.lists import Lists
from gradebench.errors import InvalidArgumentError
from gradebench.training.options import ProgressFn, TrainOptions

__all__ = ["FitJob", "ProgressFn", "Scorer", "ScorerConfig", "ScorerKind", "TrainOptions", "check_scores"]

ScorerKind = Literal["baseline", "probe", "neural", "gbdt", "external"]


class ScorerConfig(BaseModel):
    """Base of every scorer's configuration (unknown keys are errors)."""

    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())


@dataclass(frozen=True)
class FitJob:
    """One call of :meth:`Scorer.fit`, as a trainable scorer's :meth:`Scorer._fit` receives it.

    Attributes:
        train: the lists to learn from.
        validation: lists for early stopping and per-epoch metrics, or None.
        options: the training options (loss, epochs, seed, ...).
        run_dir: where checkpoints and ``history.jsonl`` go (None: a temp folder, if any).
        resume: continue from the last checkpoint in ``run_dir``.
        progress: ``(done, total, message)`` callback, or None.
    """

    train: Lists
    validation: Lists | None
    options: TrainOptions
    run_dir: Path | None = None
    resume: bool = False
    progress: ProgressFn | None = None


class Scorer(ABC):
    """Base class of every scorer.

    Class attributes:
        name: registry name (set by :func:`~gradebench.scorers.register_scorer`).
        version: bump when the scorer's output for the same config/weights changes.
        kind: ``baseline`` | ``probe`` | ``neural`` | ``gbdt`` | ``external`` (a model adapter).
        trainable: whether :meth:`fit` learns anything.
        uses_loss: whether :meth:`fit` optimises a registered gradebench loss.
        default_loss: the loss used when a trainable scorer is given none.
        default_lr: learning rate used when ``TrainOptions.lr`` is None.
        summary: one line for ``gradebench scorers`` and the README.
        Config: the pydantic configuration model.
    """

    name: ClassVar[str] = ""
    version: ClassVar[int] = 1
    kind: ClassVar[ScorerKind] = "baseline"
    trainable: ClassVar[bool] = False
    uses_loss: ClassVar[bool] = False
    default_loss: ClassVar[str | None] = None
    default_lr: ClassVar[float] = 1e-3
    summary: ClassVar[str] = ""
    Config: ClassVar[type[ScorerConfig]] = ScorerConfig

    def __init__(self, config: ScorerConfig | dict[str, Any] | None = None, *, seed: int = 42) -> None:
        self.config = self.make_config(config)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InvalidArgumentError(f"seed must be an integer, got {seed!r}", hint="e.g. --seed 42")
        self.seed = seed

    @classmethod
    def make_config(cls, config: ScorerConfig | dict[str, Any] | None) -> ScorerConfig:
        from pydantic import ValidationError

        if config is None:
            return cls.Config()
        if isinstance(config, cls.Config):
            return config
        if isinstance(config, dict):
            try:
                return cls.Config.model_validate(config)
            except ValidationError as e:
                err = e.errors()[0]
                key = ".".join(str(p) for p in err.get("loc", ())) or None
                msg = err.get("msg")
                if err.get("type") == "extra_forbidden":  # a typo'd --set key: its close matches
                    from gradebench.registry import suggest

                    msg = f"unknown key {key!r}" + suggest(key, cls.Config.model_fields)
                raise InvalidArgumentError(
                    f"bad config for scorer {cls.name!r}: {msg}", key=key,
                    hint=f"its keys: {', '.join(cls.Config.model_fields) or '(none)'}",
                ) from None
        raise InvalidArgumentError(f"config must be a dict or {cls.Config.__name__}, got {type(config).__name__}")

    def list_columns(self) -> tuple[str, ...]:
        """Columns beyond the core ones that this scorer reads from the lists (``Lists.extra``).

        Training and evaluation read them with the lists, where the benchmark has them.
        """
        return ()

    # -- training --------------------------------------------------------------------------
    def fit(
        self,
        train: Lists,
        validation: Lists | None,
        options: TrainOptions,
        *,
        run_dir: Path | None = None,
        resume: bool = False,
        progress: ProgressFn | None = None,
    ) -> list[dict[str, Any]]:
        """Learn from ``train`` (early stopping on ``validation``); returns per-epoch logs.

        Trainable scorers implement :meth:`_fit`, which gets these arguments as one
        :class:`FitJob`. Untrained scorers learn nothing and return ``[]``.
        """
        return self._fit(FitJob(train, validation, options, run_dir=run_dir, resume=resume, progress=progress))

    def _fit(self, job: FitJob) -> list[dict[str, Any]]:
        """What :meth:`fit` does: train on ``job`` and return one log dict per epoch."""
        return []

    # -- inference -------------------------------------------------------------------------
    def prepare(self) -> None:
        """Load what scoring needs (a model's weights, onto its device) before the first
        :meth:`score`, so that the time of scoring is scoring (the record's ``timings.load_s``
        holds the rest). Nothing for scorers with nothing to load."""

    @abstractmethod
    def score(self, lists: Lists) -> np.ndarray:
        """``[n_queries, list_size]`` float64 scores (higher = better; padding ignored)."""

    # -- persistence -----------------------------------------------------------------------
    def save(self, directory: Path) -> None:
        """Write what :meth:`load` needs into ``directory`` (nothing for stateless scorers)."""

    @classmethod
    def load(cls, directory: Path, config: ScorerConfig | dict[str, Any] | None = None, *, seed: int = 42) -> Scorer:
        """Rebuild a scorer saved by :meth:`save`."""
        return cls(config, seed=seed)

    def describe(self) -> dict[str, Any]:
        """Name, version and resolved config (goes into result records)."""
        return {"name": self.name, "version": self.version, "kind": self.kind,
                "config": self.config.model_dump(mode="json")}

    def inference_info(self) -> dict[str, Any] | None:
        """How inference batches were cut where that is not the config's (the record's
        ``scorer.inference``); None unless a scorer says otherwise. Not part of :meth:`describe`, so
        it changes neither a run's fingerprint nor a record's id."""
        return None


def check_scores(scores: Any, lists: Lists, *, who: str) -> np.ndarray:
    """Validate a scorer's output: shape ``[n_queries, list_size]``, finite at real candidates."""
    s = np.asarray(scores, dtype=np.float64)
    if s.shape != lists.mask.shape:
        raise InvalidArgumentError(f"scorer {who!r} returned shape {s.shape}, expected {lists.mask.shape}")
    if not np.all(np.isfinite(s[lists.mask])):
        raise InvalidArgumentError(f"scorer {who!r} returned NaN/inf scores",
                                   hint="check the model (diverged training?) or its inputs")
    out = s.copy()
    out[~lists.mask] = 0.0
    return out
