"""Module-level ``__getattr__`` for packages whose public names are imported on first use."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any


class _SameNamePackage(ModuleType):
    """A package exporting a function named like the submodule that defines it (``gradebench.rl.lipo``).

    Importing a submodule binds it on its package under its own name, after the submodule ran.
    For the names in the package's ``_SAME_NAME``, the function of that name is bound instead,
    as an eager ``from .lipo import lipo`` in the package would leave it; so ``gradebench.rl.lipo``
    is the function whether or not ``gradebench.rl.lipo`` the module was imported first.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if (isinstance(value, ModuleType) and value.__name__ == f"{self.__name__}.{name}"
                and name in self.__dict__.get("_SAME_NAME", ())):
            value = getattr(value, name)
        super().__setattr__(name, value)


def lazy_attributes(package: str, table: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A ``__getattr__`` that imports ``name`` from ``table[name]`` once and caches it in ``namespace``.

    Names exported from a submodule of the same name (``"lipo": "gradebench.rl.lipo"``) stay the
    exported object after that submodule is imported directly (:class:`_SameNamePackage`).
    """
    same = frozenset(name for name, module in table.items() if module == f"{package}.{name}")
    if same and isinstance(sys.modules.get(package), ModuleType):
        namespace["_SAME_NAME"] = same
        sys.modules[package].__class__ = _SameNamePackage

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__


def by_module(modules: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """``{module: names}`` turned into :func:`lazy_attributes`'s ``{name: module}`` table.

    >>> by_module({"gradebench.words": ("words", "lexical_words")})
    {'words': 'gradebench.words', 'lexical_words': 'gradebench.words'}
    """
    return {name: module for module, names in modules.items() for name in names}
