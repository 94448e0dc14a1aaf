"""Scorers: one registry of everything that can score a benchmark's candidates.

Built-in scorers register themselves with :func:`register_scorer` in their own modules, which
import torch, transformers or LightGBM only inside their methods; the modules are imported on
the first lookup, so ``import gradebench`` and ``gradebench --help`` stay fast. Third-party
scorers register the same way (decorator) or through the entry-point group
``gradebench.scorers`` (``name = "package.module:ScorerClass"``), loaded on first lookup.

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

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

from gradebench.errors import DuplicateNameError, GradebenchError
from gradebench.registry import Registry
from gradebench.scorers.base import Scorer, ScorerConfig, TrainOptions, check_scores

S = TypeVar("S", bound=type[Scorer])

SCORERS: Registry[type[Scorer]] = Registry("scorer")
#: modules of the built-in scorers (each registers its classes when imported)
BUILTIN_MODULES = (
    "gradebench.scorers.baselines",
    "gradebench.scorers.query_blind",
    "gradebench.scorers.hashed_mlp",
    "gradebench.scorers.pair_mlp",
    "gradebench.scorers.cross_encoder",
    "gradebench.scorers.lambdamart",
)
ENTRY_POINT_GROUP = "gradebench.scorers"
_loaded = {"builtin": False, "entry_points": False}


def register_scorer(name: str) -> Callable[[S], S]:
    """Class decorator: register a :class:`Scorer` subclass under ``name``."""

    def decorator(cls: S) -> S:
        if not (isinstance(cls, type) and issubclass(cls, Scorer)):
            raise DuplicateNameError(f"register_scorer({name!r}) decorates {cls!r}, which is not a Scorer subclass")
        cls.name = name
        SCORERS.add(name, cls)
        return cls

    return decorator


def _load_builtins() -> None:
    if _loaded["builtin"]:
        return
    _loaded["builtin"] = True
    for module in BUILTIN_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:  # a built-in module not written yet is a bug, not optional
            if e.name == module:
                continue
            raise


def _load_entry_points() -> None:
    if _loaded["entry_points"]:
        return
    _loaded["entry_points"] = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in SCORERS:
            continue
        try:
            cls = ep.load()
        except Exception as e:  # noqa: BLE001 - a broken plugin must not break gradebench
            raise GradebenchError(
                f"scorer plugin {ep.name!r} ({ep.value}) failed to load: {type(e).__name__}: {e}",
                hint=f"fix or uninstall the package that declares the '{ENTRY_POINT_GROUP}' entry point",
            ) from None
        if ep.name not in SCORERS:
            register_scorer(ep.name)(cls)


def get_scorer_class(name: str) -> type[Scorer]:
    """The scorer class registered as ``name`` (unknown names list close matches)."""
    _load_builtins()
    if name not in SCORERS:
        _load_entry_points()
    return SCORERS.get(name)


def make_scorer(name: str, config: dict[str, Any] | ScorerConfig | None = None, *, seed: int = 42) -> Scorer:
    """An instance of scorer ``name`` with ``config`` (validated) and ``seed``."""
    return get_scorer_class(name)(config, seed=seed)


def scorer_names() -> list[str]:
    _load_builtins()
    _load_entry_points()
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
    "SCORERS", "Scorer", "ScorerConfig", "TrainOptions", "check_scores", "get_scorer_class", "make_scorer",
    "register_scorer", "scorer_names", "scorer_table",
]
