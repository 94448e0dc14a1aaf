"""Per-query values of several records (seeds, systems) put side by side.

The leaderboard and the reproduction report both average a system's seeds per query and compare
systems query by query; both need each record's values on the queries all of them scored, and
the mean of the values that are defined.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def align(frames: Sequence[tuple[Sequence[str], np.ndarray]]) -> tuple[list[str], list[np.ndarray]]:
    """Each frame's values (first axis: its queries) on the queries every frame has, in the first
    frame's order: ``(query ids, [values per frame])``. Frames with the same ids come back as they are."""
    ids = list(frames[0][0])
    if all(list(f[0]) == ids for f in frames[1:]):  # the usual case: every seed scored the same queries
        return ids, [f[1] for f in frames]
    shared = set(ids)
    for f_ids, _ in frames[1:]:
        shared &= set(f_ids)
    ids = [q for q in dict.fromkeys(ids) if q in shared]
    out = []
    for f_ids, values in frames:
        where = {q: i for i, q in enumerate(f_ids)}
        out.append(values[[where[q] for q in ids]] if ids else values[:0])
    return ids, out


def mean_of_defined(values: np.ndarray, axis: int) -> np.ndarray:
    """The mean along ``axis`` of the values that are not NaN (NaN where none is)."""
    ok = ~np.isnan(values)
    counts = ok.sum(axis=axis)
    sums = np.where(ok, values, 0.0).sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
