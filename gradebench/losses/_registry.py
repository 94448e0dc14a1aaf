"""The loss registry: :data:`LOSSES` maps a name to a :class:`LossSpec` (function + metadata).

Docs (``gradebench.losses.loss_table``, ``LossSpec.as_dict``) are generated from this metadata,
so they cannot drift from the code. Each loss module registers its losses with
:func:`register_loss`; plugins register the same way, from a module named in the entry-point
group ``gradebench.losses`` (``name = "package.module"``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from gradebench.errors import InvalidArgumentError
from gradebench.registry import Registry, package_modules

LossKind = Literal["pointwise", "pairwise", "listwise"]
KINDS: tuple[str, ...] = ("pointwise", "pairwise", "listwise")

#: What ``reduction="mean"`` divides the batch total by, per kind.
MEAN_OVER: dict[str, str] = {
    "pointwise": "valid items in the batch",
    "pairwise": "valid pairs (y_i > y_j, both valid) in the batch",
    "listwise": "lists with at least one valid item",
}

#: Arguments every loss takes; its other keyword-only arguments are its parameters.
COMMON_ARGS = ("scores", "labels", "mask", "reduction", "validate")


@dataclass(frozen=True)
class LossSpec:
    """A registered loss: the function plus the metadata docs are generated from.

    Calling a spec calls the loss: ``get_loss("listnet")(scores, labels)``.

    Attributes:
        name: registry name.
        fn: ``(scores, labels, *, mask=None, reduction="mean", validate=True, **params)``.
        kind: ``pointwise``, ``pairwise`` or ``listwise``.
        source: citation of the definition implemented.
        summary: one-line description.
        peer: the peer implementation it is cross-checked against (and how), or ``""``.
    """

    name: str
    fn: Callable[..., Any] = field(repr=False)
    kind: LossKind
    source: str
    summary: str
    peer: str = ""

    @property
    def mean_over(self) -> str:
        """What ``reduction="mean"`` averages over."""
        return MEAN_OVER[self.kind]

    @property
    def params(self) -> dict[str, Any]:
        """The loss's own keyword parameters with their defaults."""
        return {
            p.name: p.default
            for p in inspect.signature(self.fn).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in COMMON_ARGS
        }

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def as_dict(self) -> dict[str, Any]:
        """Plain-JSON metadata (for ``gradebench list`` and generated docs)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "summary": self.summary,
            "source": self.source,
            "peer": self.peer,
            "mean_over": self.mean_over,
            "params": dict(self.params),
        }


def _check_loss(name: str, spec: LossSpec) -> LossSpec:
    if not isinstance(spec, LossSpec) or spec.name != name:
        raise InvalidArgumentError(
            f"loss {name!r} must be registered as a LossSpec of that name, got {spec!r}",
            hint="decorate the loss function with gradebench.losses.register_loss(name, ...)",
        )
    return spec


#: every loss: the built-in modules of this package (found on disk), then plugins
LOSSES: Registry[LossSpec] = Registry(
    "loss", builtins=lambda: package_modules("gradebench.losses"), entry_points="gradebench.losses",
    prepare=_check_loss,
)


def register_loss(
    name: str, *, kind: LossKind, source: str, summary: str, peer: str = ""
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register a loss function in :data:`LOSSES` with its metadata.

    Returns the function unchanged (plus a ``spec`` attribute), so modules can call each
    other's losses directly.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")

    def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
        spec = LossSpec(name=name, fn=fn, kind=kind, source=source, summary=summary, peer=peer)
        LOSSES.add(name, spec)
        fn.spec = spec  # type: ignore[attr-defined]
        return fn

    return decorator


def get_loss(name: str) -> LossSpec:
    """The registered loss called ``name`` (callable, with metadata).

    Raises:
        UnknownNameError: ``name`` is not registered; the message lists close matches and the
            hint every known loss.
    """
    return LOSSES.get(name)


def loss_names() -> list[str]:
    """Sorted names of every registered loss."""
    return LOSSES.names()
