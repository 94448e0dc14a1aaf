"""One registry mechanism for builders, recipes, scorers, losses and metrics.

Usage::

    LOSSES: Registry[LossSpec] = Registry(
        "loss", builtins=lambda: package_modules("gradebench.losses"), entry_points="gradebench.losses"
    )

    @LOSSES.register("listnet")
    def listnet(scores, labels, *, mask=None, reduction="mean"): ...

    LOSSES.get("listnett")  # UnknownNameError: unknown loss 'listnett'; did you mean 'listnet' or
                            # 'listmle'? (hint: known losses: approxndcg, ...)

Entries come from four places, tried in this order by a lookup that misses:

1. ``@registry.register(name)`` (or :meth:`Registry.add`) in modules already imported;
2. the built-in modules (``builtins``: module names, or a function listing them, such as
   :func:`package_modules`), each imported once, on the first lookup that needs it, and
   registering its own entries with the decorator. ``get("cross-encoder")`` first imports the
   modules named like it (``...cross_encoder``; ``dnli-natural`` also tries ``...dnli...``),
   and all the others only if the name is still missing. A built-in module that fails to
   import raises its own error (with a note naming the registry); it is never skipped;
3. ``discover(registry)``: entries that are data rather than modules (the recipe files),
   called once;
4. the entry-point groups ``entry_points`` of installed plugins (``name = "pkg.module:Obj"``),
   those declared under the name asked for first: loading the entry either registers ``name``
   itself (a decorator in the plugin module, or a module entry ``name = "pkg.module"``) or the
   registry adds the loaded object under ``name``. A plugin that fails to load raises a
   :class:`GradebenchError` naming it (cause attached); one that takes a registered name
   raises :class:`DuplicateNameError`.

Listing (:meth:`~Registry.names`, :meth:`~Registry.items`, ``len``, iteration) loads all
four. Duplicate names raise :class:`DuplicateNameError`; an unknown name raises
:class:`UnknownNameError` with close matches (:func:`suggest`, the package's one "did you
mean") and every known name.
"""

from __future__ import annotations

import difflib
import importlib
import os
import pkgutil
import threading
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib import metadata
from typing import Generic, TypeVar

from gradebench.errors import DuplicateNameError, GradebenchError, UnknownNameError

T = TypeVar("T")

__all__ = ["Registry", "package_modules", "plural_of", "suggest"]


def suggest(name: object, known: Iterable[str], *, cutoff: float = 0.6, n: int = 3) -> str:
    """``"; did you mean 'a' or 'b'?"`` for the close matches of ``name`` among ``known``, else ``""``.

    Append it to an "unknown ..." message; every "did you mean" of gradebench comes from here.
    ``cutoff`` is :func:`difflib.get_close_matches`'s similarity threshold (0..1).

    Example:
        >>> print("unknown loss 'listnett'" + suggest("listnett", ["listmle", "listnet", "ranknet"]))
        unknown loss 'listnett'; did you mean 'listnet' or 'listmle'?
        >>> suggest("bleu", ["ndcg", "map"])
        ''
    """
    close = difflib.get_close_matches(str(name), sorted(set(known)), n=n, cutoff=cutoff)
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?" if close else ""


def plural_of(word: str) -> str:
    """The English plural of a (regular) noun: ``loss`` -> ``losses``, ``entry`` -> ``entries``.

    >>> [plural_of(w) for w in ("builder", "loss", "entry", "key", "match")]
    ['builders', 'losses', 'entries', 'keys', 'matches']
    """
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def package_modules(package: str, leaf: str | None = None) -> list[str]:
    """The public modules of ``package``, found on disk (sorted; names starting ``_`` skipped).

    With ``leaf``, instead ``package.<sub>.<leaf>`` for every public subpackage ``<sub>`` that
    has a module ``<leaf>`` (``package_modules("gradebench.datasets", "builder")``). Only
    ``package`` itself is imported: nothing is missed by forgetting to list it, and nothing
    else is loaded by looking.
    """
    paths = list(importlib.import_module(package).__path__)
    found = []
    for info in pkgutil.iter_modules(paths):
        if info.name.startswith("_"):
            continue
        if leaf is None:
            found.append(f"{package}.{info.name}")
        elif info.ispkg:
            inner = [os.path.join(p, info.name) for p in paths]
            if any(m.name == leaf for m in pkgutil.iter_modules(inner)):
                found.append(f"{package}.{info.name}.{leaf}")
    return sorted(found)


class Registry(Generic[T]):
    """A name -> object table filled by decorator registration, loaded lazily.

    Args:
        kind: what is registered, singular (``"loss"``); used in messages.
        plural: its plural when :func:`plural_of` gets it wrong.
        builtins: module names (or a function returning them) imported on demand; see the
            module docstring for the order.
        entry_points: entry-point group(s) of third-party plugins.
        prepare: ``(name, obj) -> obj`` run on every addition before it is stored: checks the
            object (raising a typed error) and may complete it (a scorer class gets its name).
        discover: ``(registry) -> None`` adding entries that are not modules, called once.
        cutoff: similarity threshold of the close matches of an unknown name.
    """

    def __init__(
        self,
        kind: str,
        *,
        plural: str | None = None,
        builtins: Sequence[str] | Callable[[], Sequence[str]] = (),
        entry_points: str | Sequence[str] = (),
        prepare: Callable[[str, T], T] | None = None,
        discover: Callable[[Registry[T]], None] | None = None,
        cutoff: float = 0.6,
    ) -> None:
        self.kind = kind
        self.plural = plural or plural_of(kind)
        self.groups: tuple[str, ...] = (entry_points,) if isinstance(entry_points, str) else tuple(entry_points)
        self.cutoff = cutoff
        self._builtins = builtins
        self._prepare = prepare
        self._discover = discover
        self._items: dict[str, T] = {}
        self._modules: tuple[str, ...] | None = None
        self._imported: set[str] = set()
        self._discovered = False
        self._plugins: set[tuple[str, str, str]] = set()  # (group, name, value) loaded
        self._entry_points: list[tuple[str, metadata.EntryPoint]] | None = None
        self._plugins_done = False
        self._lock = threading.RLock()

    # -- registration ------------------------------------------------------------------------
    def register(self, name: str) -> Callable[[T], T]:
        """Decorator registering the decorated object under ``name`` (returned unchanged)."""

        def decorator(obj: T) -> T:
            self.add(name, obj)
            return obj

        return decorator

    def add(self, name: str, obj: T) -> None:
        """Register ``obj`` as ``name`` (through ``prepare``); a taken name raises."""
        if not isinstance(name, str) or not name:
            raise DuplicateNameError(f"{self.kind} names must be non-empty strings, got {name!r}")
        if name in self._items:
            raise DuplicateNameError(
                f"{self.kind} '{name}' is already registered",
                hint=f"choose another name or remove the second registration of {name!r}",
            )
        self._items[name] = obj if self._prepare is None else self._prepare(name, obj)

    # -- lookup ------------------------------------------------------------------------------
    def get(self, name: str) -> T:
        """The object registered as ``name``, loading what may define it (see the module docstring).

        Raises:
            UnknownNameError: no such name anywhere; the message suggests close matches and
                the hint lists every known name.
        """
        if isinstance(name, str) and name not in self._items:
            self.load(name)
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise self.unknown(name) from None

    def unknown(self, name: object) -> UnknownNameError:
        """The error for an unknown ``name``: close matches, and every known name in the hint."""
        known = self.names()
        return UnknownNameError(
            f"unknown {self.kind} {name!r}" + suggest(name, known, cutoff=self.cutoff),
            hint=f"known {self.plural}: {', '.join(known) or '(none)'}",
        )

    def names(self) -> list[str]:
        """Every registered name, sorted (loads every built-in and plugin)."""
        self.load()
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        self.load()
        return sorted(self._items.items())

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str) and name not in self._items:
            self.load(name)
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._items)} loaded)"

    # -- lazy loading ------------------------------------------------------------------------
    def builtin_modules(self) -> tuple[str, ...]:
        """The built-in module names (computed once; nothing is imported)."""
        if self._modules is None:
            found = self._builtins() if callable(self._builtins) else self._builtins
            self._modules = tuple(found)
        return self._modules

    def load(self, name: str | None = None) -> None:
        """Import what may define ``name`` (stopping once it is registered), or everything."""
        with self._lock:
            if name is not None:
                for module in self._modules_named(name):
                    self._import(module)
                    if name in self._items:
                        return
            for module in self.builtin_modules():
                self._import(module)
                if name is not None and name in self._items:
                    return
            if self._discover is not None and not self._discovered:
                self._discover(self)
                self._discovered = True
            if name is not None:
                self._load_plugins(name)  # the plugins declared under that name first
                if name in self._items:
                    return
            self._load_plugins()

    def _modules_named(self, name: str) -> list[str]:
        """Built-in modules whose path names ``name`` (``cross-encoder`` -> ``*.cross_encoder``), best first."""
        key = name.lower().replace("-", "_").replace(".", "_")
        exact, prefix = [], []
        for module in self.builtin_modules():
            parts = module.split(".")[1:]
            if key in parts:
                exact.append(module)
            elif any(key.startswith(p + "_") for p in parts):
                prefix.append(module)
        return exact + prefix

    def _import(self, module: str) -> None:
        if module in self._imported:
            return
        try:
            importlib.import_module(module)
        except Exception as e:
            e.add_note(f"(while importing {module}, a built-in module of the {self.kind} registry)")
            raise
        self._imported.add(module)

    def _load_plugins(self, name: str | None = None) -> None:
        """Load the plugins declared as ``name`` (None: all of them), each once."""
        if self._plugins_done:
            return
        if self._entry_points is None:
            self._entry_points = [
                (group, ep) for group in self.groups
                for ep in sorted(metadata.entry_points(group=group), key=lambda ep: (ep.name, ep.value))
            ]
        for group, ep in self._entry_points:
            if (name is None or ep.name == name) and (group, ep.name, ep.value) not in self._plugins:
                self._load_plugin(group, ep)
                self._plugins.add((group, ep.name, ep.value))
        self._plugins_done = name is None

    def _load_plugin(self, group: str, ep: metadata.EntryPoint) -> None:
        taken = self._items.get(ep.name)
        where = f"{self.kind} plugin {ep.name!r} ({ep.value}, entry-point group {group!r})"
        try:
            obj = ep.load()
        except Exception as e:
            raise GradebenchError(
                f"{where} failed to load: {type(e).__name__}: {e}",
                hint="fix or uninstall the package that declares this entry point",
            ) from e
        if isinstance(obj, types.ModuleType):
            if ep.name not in self._items:
                raise GradebenchError(
                    f"{where}: importing the module registered no {self.kind} {ep.name!r}",
                    hint="point the entry point at the object, or register it under the entry point's name",
                )
            return
        if taken is not None and taken is not obj:
            raise DuplicateNameError(
                f"{where} takes the name of another registered {self.kind}",
                hint="rename the entry point, or uninstall the package that declares it",
            )
        if ep.name not in self._items:
            self.add(ep.name, obj)
