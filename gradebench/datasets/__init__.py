"""The builder registry: source family name -> :class:`~gradebench.datasets.base.Builder` class.

Built-in builders are imported on first lookup (never at ``import gradebench``), so no
command pays for readers it does not use and registration order never matters. Third-party
builders register with :func:`register_builder` or under the entry-point group
``gradebench.builders`` (``name = "package.module:BuilderClass"``).

Adding a dataset family is one folder and one recipe. ``gradebench/datasets/<family>/`` holds
``reader.py`` (files -> records, errors naming file and line, built on :mod:`gradebench.io`),
``builder.py`` (a :class:`Builder`: locate, read, select, make_lists; registered as above) and
``source.yaml`` (homepage, citation, download files with checksums, structured license: see
:mod:`gradebench.datasets.source`); ``recipes/<name>.yaml`` then needs only
``source: {family, formats, default}`` and the builder's section keys.
"""

from __future__ import annotations

import importlib
from importlib import metadata

from gradebench.datasets.base import Builder, Column, GradedList, Selection
from gradebench.registry import Registry

__all__ = ["Builder", "Column", "GradedList", "Selection", "builder_names", "get_builder", "register_builder"]

#: built-in builders: name -> "module:Class", imported lazily
BUILTIN: dict[str, str] = {
    "esnli": "gradebench.datasets.esnli.builder:ESNLIBuilder",
    "dnli": "gradebench.datasets.dnli.builder:DNLIBuilder",
    "dnli-natural": "gradebench.datasets.dnli.builder:DNLINaturalBuilder",
    "winowhy": "gradebench.datasets.winowhy.builder:WinoWhyBuilder",
    "mnli": "gradebench.datasets.mnli.builder:MNLIBuilder",
    "nli-table": "gradebench.datasets.nli_table.builder:NLITableBuilder",
    "chaosnli": "gradebench.datasets.chaosnli.builder:ChaosNLIBuilder",
    "anli": "gradebench.datasets.anli.builder:ANLIBuilder",
    "worldtree": "gradebench.datasets.worldtree.builder:WorldTreeBuilder",
}
ENTRY_POINT_GROUP = "gradebench.builders"  # the plugin contract: unchanged by the move to datasets/

_REGISTRY: Registry[type[Builder]] = Registry("builder")
_loaded = False


def register_builder(cls: type[Builder]) -> type[Builder]:
    """Class decorator registering a builder under its ``name``."""
    _REGISTRY.add(cls.name, cls)
    return cls


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name, target in BUILTIN.items():
        if name not in _REGISTRY:
            module, attr = target.split(":")
            try:
                cls = getattr(importlib.import_module(module), attr)
            except ModuleNotFoundError as e:  # a built-in still being written must not hide the others
                if e.name != module:
                    raise
                continue
            if name not in _REGISTRY:
                _REGISTRY.add(name, cls)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _REGISTRY:
            _REGISTRY.add(ep.name, ep.load())


def get_builder(name: str) -> type[Builder]:
    """The builder class registered as ``name`` (unknown names list close matches)."""
    if name not in _REGISTRY:
        target = BUILTIN.get(name)
        if target is not None:
            module, attr = target.split(":")
            cls = getattr(importlib.import_module(module), attr)
            if name not in _REGISTRY:
                _REGISTRY.add(name, cls)
        else:
            _load_all()
    return _REGISTRY.get(name)


def builder_names() -> list[str]:
    _load_all()
    return _REGISTRY.names()
