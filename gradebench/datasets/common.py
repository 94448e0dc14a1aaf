"""Helpers several builders share: query-template placeholder checks, dense ranks of grades, and
the content-digest order of a list's candidates (``shuffle_candidates``)."""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence

from gradebench.hashing import key_digest

__all__ = ["check_template", "dense_rank", "shuffled_order", "template_fields"]


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
