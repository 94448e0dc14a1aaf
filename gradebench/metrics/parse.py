"""``parse_metric("ndcg@5[gain=linear]")``: metric names at the CLI boundary only.

Grammar: ``family[@k][[key=value,key=value,...]]`` (case-insensitive, spaces ignored).
``k`` is a positive integer; other values are typed by the spec's field (a float, or one of
a fixed vocabulary). The result's :attr:`~MetricSpec.name` is canonical, so
``parse_metric(spec.name) == spec`` for every spec.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from gradebench.errors import InvalidArgumentError
from gradebench.metrics.spec import METRICS, MetricSpec, field_kind
from gradebench.registry import suggest

_NAME = re.compile(r"^(?P<family>[a-z0-9_]+)(?:@(?P<k>[^\[\]]*))?(?:\[(?P<params>[^\[\]]*)\])?$")


def parse_metric(text: str) -> MetricSpec:
    """Parse a metric name such as ``ndcg@5``, ``map[threshold=0.5]`` into its spec.

    Raises:
        UnknownNameError: unknown family (with close matches and the known names).
        InvalidArgumentError: malformed name, unknown parameter or bad value.

    Example:
        >>> parse_metric("ndcg@5[gain=linear,ties=trec]")
        NDCG(k=5, gain='linear', ties='trec', no_relevant='zero')
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"a metric name must be a string, got {type(text).__name__}")
    clean = "".join(text.split()).lower()
    match = _NAME.match(clean)
    if match is None:
        raise InvalidArgumentError(
            f"malformed metric name {text!r}",
            hint="write family[@k][key=value,...], e.g. ndcg@5 or map[threshold=0.5]",
        )
    cls = METRICS.get(match["family"])
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    if match["k"] is not None:
        if "k" not in fields:
            raise InvalidArgumentError(f"metric {cls.family!r} takes no cutoff, got {text!r}")
        kwargs["k"] = _parse_k(match["k"], text)
    elif "k" in fields and fields["k"].default is dataclasses.MISSING:
        raise InvalidArgumentError(
            f"metric {cls.family!r} needs a cutoff, got {text!r}",
            hint=f"write e.g. {cls.family}@8",
        )
    for item in (match["params"] or "").split(",") if match["params"] else []:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise InvalidArgumentError(
                f"malformed parameter {item!r} in {text!r}", hint="write key=value"
            )
        allowed = sorted(n for n in fields if n != "k")
        if key not in allowed:
            raise InvalidArgumentError(f"metric {cls.family!r} has no parameter {key!r}" + suggest(key, allowed),
                                       hint=f"parameters: {', '.join(allowed) or '(none)'}")
        if key in kwargs:
            raise InvalidArgumentError(f"parameter {key!r} given twice in {text!r}")
        kwargs[key] = _parse_value(cls, key, value, text)
    return cls(**kwargs)


def as_metric(metric: MetricSpec | str) -> MetricSpec:
    """``metric`` as a spec: a spec is returned as it is, a name is parsed (once, at the boundary).

    Library code holds specs; this is where a name from a config file or the command line
    (``TrainOptions.eval_metric``, ``--sort-by``) turns into one.

    Raises:
        UnknownNameError / InvalidArgumentError: as :func:`parse_metric`.

    Example:
        >>> as_metric("NDCG@5") == as_metric(NDCG(k=5)) == NDCG(k=5)  # doctest: +SKIP
        True
    """
    return metric if isinstance(metric, MetricSpec) else parse_metric(metric)


def _parse_k(value: str, text: str) -> int:
    if not value.isdigit():
        raise InvalidArgumentError(
            f"cutoff in {text!r} must be a positive integer, got {value!r}",
            hint="omit @k for the full list",
        )
    return int(value)  # k = 0 is refused by the spec's own validation


def _parse_value(cls: type[MetricSpec], key: str, value: str, text: str) -> Any:
    kind, choices = field_kind(cls, key)
    if kind == "choice":
        return value  # checked against the vocabulary by the spec
    try:
        return int(value) if kind == "int" else float(value)
    except ValueError:
        raise InvalidArgumentError(
            f"parameter {key!r} in {text!r} must be a number, got {value!r}"
        ) from None
