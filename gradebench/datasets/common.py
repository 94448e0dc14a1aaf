"""Helpers several builders share: query-template placeholder checks and rendering, dense ranks of
grades, and the content-digest order of a list's candidates (``shuffle_candidates``)."""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable, Sequence

from gradebench.hashing import key_digest

__all__ = ["check_template", "dense_rank", "percent_format", "shuffled_order", "template_fields"]


def template_fields(text: str) -> set[str]:
    """The placeholder names of a ``str.format`` template (``"{a} {b}"`` -> ``{"a", "b"}``)."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def check_template(text: str, allowed: Iterable[str]) -> str:
    """``text`` if every ``{placeholder}`` in it is one of ``allowed`` (no format spec or conversion).

    For pydantic validators of recipe templates; ``{{`` and ``}}`` are literal braces.

    Raises:
        ValueError: a placeholder that is not allowed (``{label}``, ``{}``, ``{premise!r}``,
            ``{answer:>9}``), naming it and the allowed ones.
    """
    names = frozenset(allowed)
    for _, name, spec, conv in string.Formatter().parse(text):
        if name is None:
            continue
        if name not in names or spec or conv:
            raise ValueError(
                f"placeholder {{{name}}} is not allowed in {text!r}; use only "
                + ", ".join("{" + p + "}" for p in sorted(names))
                + " (write {{ and }} for literal braces)"
            )
    return text


def percent_format(parts: Iterable[tuple[str, str | None]], names: Sequence[str]) -> Callable[..., str]:
    """``render(*values)``, ``values`` those of ``names`` in that order: the literals of ``parts`` with
    each field's value where it stands, as a ``%``-format (about a third of ``str.format``'s time
    with names, per text a build makes).

    ``parts``: ``(literal, field name or None)`` in turn, as :meth:`string.Formatter.parse` gives
    them for a template :func:`check_template` passed (``{{`` already a brace). So
    ``percent_format(parse(t), names)(*values) == t.format(**dict(zip(names, values)))``.
    """
    fmt: list[str] = []
    order: list[int] = []
    for literal, name in parts:
        fmt.append(literal.replace("%", "%%"))
        if name is not None:
            fmt.append("%s")
            order.append(list(names).index(name))
    text, at = "".join(fmt), tuple(order)
    if at == tuple(range(len(names))):  # each value once, in order
        return lambda *values: text % values
    return lambda *values: text % tuple(values[i] for i in at)


def query_renderer(template: str, names: Sequence[str] = ("premise", "hypothesis", "label")) -> Callable[..., str]:
    """:func:`percent_format` of a recipe's ``query_template`` (checked, so no spec or conversion)."""
    return percent_format(((literal, name) for literal, name, _, _ in string.Formatter().parse(template)), names)


def dense_rank(values: Sequence[float]) -> list[int]:
    """Dense rank of each value, 0 for the smallest; equal values share a rank.

    >>> dense_rank([30, 70, 0])
    [1, 2, 0]
    >>> dense_rank([45, 45, 10])
    [1, 1, 0]
    """
    index = {v: i for i, v in enumerate(sorted(set(values)))}
    return [index[v] for v in values]


def shuffled_order(namespace: str, query_id: str, keys: Sequence[str]) -> list[int]:
    """Positions of a list's candidates ordered by a content digest, never by grade (``shuffle_candidates``).

    Candidate ``i`` sorts by ``key_digest(namespace, "candidate", query_id, keys[i])`` (``keys``:
    the candidate ids, or another per-candidate content key); equal digests keep their order.
    """
    digests = [key_digest(namespace, "candidate", query_id, k) for k in keys]
    return sorted(range(len(keys)), key=digests.__getitem__)
