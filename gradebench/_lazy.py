"""Module-level ``__getattr__`` for packages whose public names are imported on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_attributes(package: str, table: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A ``__getattr__`` that imports ``name`` from ``table[name]`` once and caches it in ``namespace``."""

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
