"""Old import paths of modules that moved in the layout redesign, kept working.

``import gradebench.sources.esnli`` (before 0.9) now gives :mod:`gradebench.datasets.esnli.reader`
itself: the same module object, so ``monkeypatch`` and ``isinstance`` behave as before. Each old
path warns once with :class:`DeprecationWarning` naming its new home. The table below is the only
place the old names live; nothing inside gradebench imports them. Names that moved out of a module
that still exists are in :data:`MOVED_NAMES`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

from gradebench._lazy import lazy_attributes

#: old module -> its new home
MOVED: dict[str, str] = {
    "gradebench.lists": "gradebench.benchmark.lists",
    "gradebench.catalog": "gradebench.recipes.catalog",
    "gradebench.benchmark.schema": "gradebench.benchmark.format",
    "gradebench.benchmark.validity": "gradebench.experiments.validity",
    "gradebench.sources.textio": "gradebench.io.textio",
    "gradebench.sources.download": "gradebench.io.download",
    "gradebench.sources.base": "gradebench.datasets.records",
    "gradebench.sources.detect": "gradebench.datasets.esnli.detect",
    "gradebench.builders.base": "gradebench.datasets.base",
    "gradebench.builders.common": "gradebench.datasets.common",
    "gradebench.results.experiment": "gradebench.experiments.grid",
    "gradebench.rl.records": "gradebench.experiments.policy_record",
}
for _family in ("esnli", "dnli", "winowhy", "mnli", "chaosnli", "anli", "worldtree", "nli_table"):
    MOVED[f"gradebench.sources.{_family}"] = f"gradebench.datasets.{_family}.reader"
    MOVED[f"gradebench.builders.{_family}"] = f"gradebench.datasets.{_family}.builder"
for _mod in ("builder", "candidates", "contrast", "scoring", "select", "spec"):
    MOVED[f"gradebench.builders.tiers.{_mod}"] = f"gradebench.datasets.tiers.{_mod}"
for _mod in ("train", "runs", "demo"):
    MOVED[f"gradebench.harness.{_mod}"] = f"gradebench.experiments.{_mod}"
for _mod in ("environment", "evaluate", "leaderboard", "plot", "query", "record", "render", "store", "suite", "sweep"):
    MOVED[f"gradebench.results.{_mod}"] = f"gradebench.experiments.{_mod}"
#: old packages: a stand-in package that forwards attribute access to its new home (or to
#: nothing, for ``gradebench.sources``), so that importing an old submodule never rebinds an
#: attribute of a new package
OLD_PACKAGES: dict[str, str | None] = {
    "gradebench.sources": None,
    "gradebench.builders": "gradebench.datasets",
    "gradebench.builders.tiers": "gradebench.datasets.tiers",
    "gradebench.harness": "gradebench.experiments",
    "gradebench.results": "gradebench.experiments",
}
#: names that moved out of a module that still exists: module -> {name: the module that defines it
#: now}. The old module's ``__getattr__`` (:func:`moved_names`) finds them there on first use, so
#: the old module never names its new home itself (the store imports the record modules).
MOVED_NAMES: dict[str, dict[str, str]] = {
    "gradebench.experiments.record": dict.fromkeys(
        ("record_dir", "write_parquet_atomic", "write_record", "read_record"), "gradebench.experiments.store"),
    "gradebench.experiments.policy_record": dict.fromkeys(
        ("write_policy_record", "read_policy_record", "list_policy_records"), "gradebench.experiments.store"),
}


def moved_names(module: str, namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``module`` that answers its names in :data:`MOVED_NAMES`."""
    return lazy_attributes(module, MOVED_NAMES[module], namespace)


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; import it from there", DeprecationWarning, stacklevel=5)


class _Loader(importlib.abc.Loader):
    def __init__(self, target: str | None, package: bool) -> None:
        self.target = target
        self.package = package

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if not self.package:
            assert self.target is not None
            _warn(spec.name, self.target)
            return importlib.import_module(self.target)
        module = types.ModuleType(spec.name, f"moved: see {__name__}.MOVED")
        module.__path__ = []
        target = self.target
        if target is not None:
            _warn(spec.name, target)

            def forward(name: str) -> object:
                if name.startswith("__"):
                    raise AttributeError(name)
                return getattr(importlib.import_module(target), name)

            module.__getattr__ = forward  # type: ignore[method-assign]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001 - importlib's signature
        if fullname in OLD_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, _Loader(OLD_PACKAGES[fullname], True), is_package=True)
        if fullname in MOVED:
            return importlib.machinery.ModuleSpec(fullname, _Loader(MOVED[fullname], False))
        return None


def install() -> None:
    """Put the finder on ``sys.meta_path`` (idempotent; called by ``gradebench/__init__``)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
