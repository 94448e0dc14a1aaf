"""Typed metric specifications, their canonical names, and the metric registry.

A spec is a frozen dataclass naming a metric and its parameters, e.g.
``NDCG(k=5, gain="linear", ties="trec")``. Its canonical :attr:`MetricSpec.name` shows the
cutoff after ``@`` and every parameter that differs from its default in brackets, sorted
by key: ``ndcg@5[gain=linear,ties=trec]``. :func:`gradebench.metrics.parse_metric` turns
such a string back into the same spec (CLI boundary only; library code passes specs).

Spec classes are registered by family name in :data:`METRICS`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import typing
from typing import Any, ClassVar, Literal

import numpy as np

from gradebench.errors import InvalidArgumentError
from gradebench.registry import Registry, package_modules

if typing.TYPE_CHECKING:
    from gradebench.metrics._batch import Batch

Level = Literal["query", "corpus"]
#: the closed interval a metric's values lie in (:attr:`MetricSpec.value_range`): shares and
#: normalized gains, rank correlations, nonnegative unbounded figures (DCG, separation ratios)
UNIT: tuple[float, float] = (0.0, 1.0)
SIGNED: tuple[float, float] = (-1.0, 1.0)
NONNEG: tuple[float, float] = (0.0, math.inf)


@dataclasses.dataclass(frozen=True)
class MetricSpec:
    """Base class of every metric spec.

    Class attributes set by subclasses:
        family: registry name, the part of :attr:`name` before ``@``/``[``.
        level: ``"query"`` (one value per query; :func:`evaluate` averages them) or
            ``"corpus"`` (one value over all valid candidates of all queries).
        requires: names of extra boolean arrays the metric needs (``"gold"``, ...).
        nonnegative_labels: True if valid labels must be ``>= 0`` (gain-based metrics).
        value_range: ``(low, high)``, the closed interval every defined value (per query, mean or
            corpus value) lies in; unbounded (but finite) unless a family says so. A record whose
            figure falls outside it was not written by this metric
            (:mod:`gradebench.experiments.verify`).
    """

    family: ClassVar[str] = ""
    level: ClassVar[Level] = "query"
    requires: ClassVar[tuple[str, ...]] = ()
    nonnegative_labels: ClassVar[bool] = False
    value_range: ClassVar[tuple[float, float]] = (-math.inf, math.inf)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            required = f.default is dataclasses.MISSING
            value = _check_field(type(self), f.name, getattr(self, f.name), required)
            object.__setattr__(self, f.name, value)

    @property
    def name(self) -> str:
        """Canonical name, e.g. ``ndcg@5`` or ``map[threshold=2]``; round-trips through
        :func:`gradebench.metrics.parse_metric`."""
        return format_name(self)

    def compute(self, batch: Batch) -> Any:
        """Per-query ``[n]`` float64 values (NaN = undefined: excluded from the mean and
        counted) for query-level metrics; a float for corpus-level metrics."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.name


def _check_spec(name: str, cls: type[MetricSpec]) -> type[MetricSpec]:
    if not (isinstance(cls, type) and issubclass(cls, MetricSpec) and cls.family == name):
        raise InvalidArgumentError(
            f"metric {name!r} must be a MetricSpec subclass whose family is {name!r}, got {cls!r}",
            hint="subclass gradebench.metrics.MetricSpec, set family and decorate it with metrics.spec.register",
        )
    return cls


#: every metric family: the built-in modules of this package (found on disk), then plugins
METRICS: Registry[type[MetricSpec]] = Registry(
    "metric", builtins=lambda: package_modules("gradebench.metrics"), entry_points="gradebench.metrics",
    prepare=_check_spec,
)


def register(cls: type[MetricSpec]) -> type[MetricSpec]:
    """Class decorator: register a spec class under its ``family``."""
    METRICS.add(cls.family, cls)
    return cls


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@functools.cache
def field_kind(cls: type[MetricSpec], name: str) -> tuple[str, tuple[Any, ...]]:
    """``("k"|"int"|"float"|"choice", choices)`` for field ``name`` of a spec class (found once per
    class and field: resolving a class's type hints costs more than the metric it checks, and a
    build's statistics make a few metrics per batch)."""
    hint = _hints(cls)[name]
    if typing.get_origin(hint) is Literal:
        return "choice", typing.get_args(hint)
    if name == "k":
        return "k", ()
    if hint is float:
        return "float", ()
    if hint is int:
        return "int", ()
    raise TypeError(f"unsupported field type {hint!r} for {cls.__name__}.{name}")  # pragma: no cover


def _check_field(cls: type[MetricSpec], name: str, value: Any, required: bool = False) -> Any:
    kind, choices = field_kind(cls, name)
    where = f"{cls.family}: {name}"
    if kind == "choice":
        if value not in choices:
            raise InvalidArgumentError(
                f"{where} must be one of {', '.join(map(repr, choices))}, got {value!r}"
            )
        return value
    if kind in ("k", "int"):
        if value is None and kind == "k" and not required:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise InvalidArgumentError(
                f"{where} must be a positive integer"
                f"{' or None (full list)' if kind == 'k' and not required else ''}, "
                f"got {value!r}"
            )
        if value <= 0:
            raise InvalidArgumentError(
                f"{where} must be >= 1, got {value}",
                hint="use k=None for the full list" if kind == "k" else None,
            )
        return int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise InvalidArgumentError(f"{where} must be a finite number, got {value!r}")
    return float(value)


def format_value(value: Any) -> str:
    """A parameter value as it appears in a canonical name."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return str(value)


def format_name(spec: MetricSpec) -> str:
    """``family[@k][key=value,...]`` with only non-default parameters in brackets."""
    text = spec.family
    params = []
    for f in dataclasses.fields(spec):
        value = getattr(spec, f.name)
        if f.name == "k":
            if value is not None:
                text += f"@{value}"
            continue
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        params.append(f"{f.name}={format_value(value)}")
    if params:
        text += "[" + ",".join(sorted(params)) + "]"
    return text


def cutoff(k: int | None, list_size: int) -> int:
    """The number of leading positions a cutoff ``k`` keeps (``None`` = all)."""
    return list_size if k is None else min(k, list_size)


def position_weights(k: int | None, list_size: int) -> np.ndarray:
    """``[L]`` 1.0 for positions ``< k`` else 0.0."""
    w = np.zeros(list_size)
    w[: cutoff(k, list_size)] = 1.0
    return w
