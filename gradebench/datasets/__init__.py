"""The builder registry: source family name -> :class:`~gradebench.datasets.base.Builder` class.

Every builder class is decorated with :func:`register_builder` (registered under its ``name``).
The built-in ones live in ``gradebench/datasets/<family>/builder.py``, found on disk and
imported on first lookup (never at ``import gradebench``): ``get_builder("esnli")`` imports
``gradebench.datasets.esnli.builder`` only, so no command pays for readers it does not use.
Third-party builders register with the decorator, or under the entry-point group
``gradebench.builders``: ``name = "package.module:BuilderClass"``.

Adding a dataset family is one folder and one recipe. ``gradebench/datasets/<family>/`` holds
``reader.py`` (files -> records, errors naming file and line, built on :mod:`gradebench.io`),
``builder.py`` (a :class:`Builder`: locate, read, select, make_lists; registered as above) and
``source.yaml`` (homepage, citation, download files with checksums, structured license: see
:mod:`gradebench.datasets.source`); ``recipes/<name>.yaml`` then needs only
``source: {family, formats, default}`` and the builder's section keys.
"""

from __future__ import annotations

from gradebench.datasets.base import Builder, Column, GradedList, Selection
from gradebench.errors import InvalidArgumentError
from gradebench.registry import Registry, package_modules

__all__ = [
    "BUILDERS", "Builder", "Column", "GradedList", "Selection", "builder_names", "get_builder", "register_builder",
]


def _check_builder(name: str, cls: type[Builder]) -> type[Builder]:
    if not (isinstance(cls, type) and issubclass(cls, Builder)):
        raise InvalidArgumentError(f"builder {name!r} is {cls!r}, not a Builder subclass",
                                   hint="register a subclass of gradebench.datasets.Builder")
    if getattr(cls, "name", None) != name:
        raise InvalidArgumentError(
            f"builder class {cls.__name__} is named {getattr(cls, 'name', None)!r} but registered as {name!r}",
            hint=f"set {cls.__name__}.name = {name!r}, or register it under its own name",
        )
    return cls


BUILDERS: Registry[type[Builder]] = Registry(
    "builder",
    builtins=lambda: package_modules(__name__, leaf="builder"),
    entry_points="gradebench.builders",
    prepare=_check_builder,
)


def register_builder(cls: type[Builder]) -> type[Builder]:
    """Class decorator registering a builder under its ``name``."""
    BUILDERS.add(getattr(cls, "name", None), cls)  # type: ignore[arg-type]  # a missing name fails in add
    return cls


def get_builder(name: str) -> type[Builder]:
    """The builder class registered as ``name`` (unknown names list close matches)."""
    return BUILDERS.get(name)


def builder_names() -> list[str]:
    return BUILDERS.names()
