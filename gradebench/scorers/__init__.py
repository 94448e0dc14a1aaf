"""Scorers: one registry of everything that can score a benchmark's candidates.

Built-in scorers register themselves with :func:`register_scorer` in their own modules (every
public module of this package, found on disk), which import torch, transformers or LightGBM
only inside their methods; the modules are imported on the first lookup (``cross-encoder``
imports ``cross_encoder`` only), so ``import gradebench`` and ``gradebench --help`` stay fast.
Third-party scorers register the same way (decorator) or through the entry-point group
``gradebench.scorers`` (``name = "package.module:ScorerClass"``), loaded when a name is not
built in or when every name is listed.

Example::

    from gradebench.scorers import Scorer, register_scorer

    @register_scorer("shortest")
    class Shortest(Scorer):
        summary = "prefers short candidates"
        def score(self, lists):
            lengths = np.vectorize(len)(lists.candidates).astype(float)
            return -lengths
"""

from __future__ import annotations

import os
import pkgutil
from collections.abc import Callable
from typing import Any, TypeVar

from gradebench.errors import InvalidArgumentError
from gradebench.registry import Registry, package_modules
from gradebench.scorers.base import FitJob, Scorer, ScorerConfig, TrainOptions, check_scores

S = TypeVar("S", bound=type[Scorer])


def _check_scorer(name: str, cls: type[Scorer]) -> type[Scorer]:
    if not (isinstance(cls, type) and issubclass(cls, Scorer)):
        raise InvalidArgumentError(f"scorer {name!r} is {cls!r}, which is not a Scorer subclass",
                                   hint="register a subclass of gradebench.scorers.Scorer")
    cls.name = name
    return cls


def _builtins() -> list[str]:
    """This package's modules, then the model adapters' (``gradebench.scorers.adapters``), found on
    disk without importing the adapters' package (a lookup of another scorer never loads it)."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "adapters")
    adapters = sorted(f"{__name__}.adapters.{m.name}" for m in pkgutil.iter_modules([folder])
                      if not m.name.startswith("_"))
    return package_modules(__name__) + adapters


#: every scorer: the built-in modules of this package and of its model adapters (found on disk), then plugins
SCORERS: Registry[type[Scorer]] = Registry(
    "scorer", builtins=_builtins, entry_points="gradebench.scorers", prepare=_check_scorer,
)


def register_scorer(name: str) -> Callable[[S], S]:
    """Class decorator: register a :class:`Scorer` subclass under ``name`` (sets its ``name``)."""
    return SCORERS.register(name)  # type: ignore[return-value]


def get_scorer_class(name: str) -> type[Scorer]:
    """The scorer class registered as ``name`` (unknown names list close matches)."""
    return SCORERS.get(name)


def make_scorer(name: str, config: dict[str, Any] | ScorerConfig | None = None, *, seed: int = 42) -> Scorer:
    """An instance of scorer ``name`` with ``config`` (validated) and ``seed``."""
    return get_scorer_class(name)(config, seed=seed)


def scorer_names() -> list[str]:
    return SCORERS.names()


def scorer_table() -> list[dict[str, Any]]:
    """Metadata of every registered scorer (for ``gradebench scorers`` and the README)."""
    rows = []
    for name in scorer_names():
        cls = SCORERS.get(name)
        rows.append({
            "name": name, "kind": cls.kind, "trainable": cls.trainable, "uses_loss": cls.uses_loss,
            "default_loss": cls.default_loss, "summary": cls.summary, "version": cls.version,
            "config": cls.Config().model_dump(mode="json"),
        })
    return rows


__all__ = [
    "SCORERS", "FitJob", "Scorer", "ScorerConfig", "TrainOptions", "check_scores", "get_scorer_class", "make_scorer",
    "register_scorer", "scorer_names", "scorer_table",
]
