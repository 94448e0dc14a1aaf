"""One registry mechanism for recipes' builders, metrics, losses and scorers.

Usage::

    LOSSES: Registry[LossFn] = Registry("loss")

    @LOSSES.register("listnet")
    def listnet(scores, labels, *, mask=None, reduction="mean"): ...

    LOSSES.get("listnett")  # UnknownNameError: unknown loss 'listnett'; did you mean 'listnet'? ...

Duplicate names raise :class:`DuplicateNameError`; an unknown name raises
:class:`UnknownNameError` listing close matches and every known name.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from gradebench.errors import DuplicateNameError, UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """A name -> object table filled by decorator registration."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator registering the decorated object under ``name``."""

        def decorator(obj: T) -> T:
            self.add(name, obj)
            return obj

        return decorator

    def add(self, name: str, obj: T) -> None:
        if not isinstance(name, str) or not name:
            raise DuplicateNameError(f"{self.kind} names must be non-empty strings, got {name!r}")
        if name in self._items:
            raise DuplicateNameError(
                f"{self.kind} '{name}' is already registered",
                hint=f"choose another name or remove the second registration of {name!r}",
            )
        self._items[name] = obj

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise self.unknown(name) from None

    def unknown(self, name: object) -> UnknownNameError:
        known = sorted(self._items)
        close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.6)
        msg = f"unknown {self.kind} {name!r}"
        if close:
            msg += "; did you mean " + " or ".join(repr(c) for c in close) + "?"
        return UnknownNameError(msg, hint=f"known {self.kind}s: {', '.join(known) or '(none)'}")

    def names(self) -> list[str]:
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        return sorted(self._items.items())

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)
