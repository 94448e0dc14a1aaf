"""Sorting lists under a tie policy, and the tie-group structure the metrics need.

Three tie policies decide the order of items with equal scores:

* ``"average"``: the expected value of the metric over all orderings of tied items
  (McSherry & Najork, ECIR 2008). Deterministic and invariant to the candidate order.
* ``"stable"``: candidate order: among equal scores the lower item index ranks first.
* ``"trec"``: trec_eval's rule: score descending, then docno descending. With dense
  arrays the docno is the item index, so among equal scores the *higher* index ranks
  first (checked against pytrec_eval: for three tied docs d0, d1, d2 it ranks d2, d1, d0).

In every case masked-out items go after all valid ones, so a list with ``m`` valid items
occupies sorted positions ``0 .. m-1``.

Positions are 0-based here; rank = position + 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np

TiePolicy = Literal["average", "stable", "trec"]
TIE_POLICIES: tuple[str, ...] = ("average", "stable", "trec")


@dataclass(frozen=True)
class Ranking:
    """Items of each list in ranked order, with the tie groups of that order.

    Attributes:
        order: ``[n, L]`` item index at each sorted position (valid items first).
        start: ``[n, L]`` first position of the tie group holding each position, or None
            when every group has size 1 (``start[p] = p``); only ``"average"`` makes groups.
        end: ``[n, L]`` one past the last position of that tie group, or None.
    """

    order: np.ndarray
    start: np.ndarray | None
    end: np.ndarray | None

    @property
    def trivial(self) -> bool:
        """True when no two valid items share a tie group (plain sorted order)."""
        return self.start is None

    @cached_property
    def _flat(self) -> np.ndarray:
        n, size = self.order.shape
        return self.order + (np.arange(n) * size)[:, None]

    def take(self, x: np.ndarray) -> np.ndarray:
        """``x[q, order[q, p]]``: per-item values ``[n, L]`` (C-contiguous) in ranked order."""
        return np.take(x, self._flat)

    def group_size(self) -> np.ndarray:
        """``[n, L]`` size of the tie group of each position (ones when trivial)."""
        if self.start is None:
            return np.ones((1, self.order.shape[1]))
        return (self.end - self.start).astype(np.float64)

    def group_mean_weight(self, w: np.ndarray) -> np.ndarray:
        """Mean of a per-position weight ``w`` (shape ``[L]``) over each position's tie group.

        For a metric ``sum_p x[p] * w[p]`` over ranked items, the expected value over all
        orderings of tied items is ``sum_p x[p] * group_mean_weight(w)[p]``. Returns ``[1, L]``
        (just ``w``) when trivial, else ``[n, L]``.
        """
        if self.start is None:
            return w[None, :]
        cum = np.concatenate(([0.0], np.cumsum(w)))
        size = self.end - self.start
        mean = (cum[self.end] - cum[self.start]) / size
        # singletons get w itself (bit-exact, so a tie-free row equals the "stable" value)
        return np.where(size == 1, w[: size.shape[1]], mean)

    def reach(self, k: int) -> int:
        """Number of leading positions that can hold an item ranked in the top ``k`` of some
        tie ordering: ``k`` when trivial, else the furthest end of the group holding ``k-1``."""
        n_pos = self.order.shape[1]
        if k >= n_pos:
            return n_pos
        if self.start is None:
            return k
        return int(self.end[:, k - 1].max())

    def _at(self, c: np.ndarray, pos: np.ndarray) -> np.ndarray:
        n, width = c.shape
        return np.take(c, pos + (np.arange(n) * width)[:, None])

    def at_start(self, c: np.ndarray) -> np.ndarray:
        """``c[q, start[q, p]]`` for an exclusive cumulative sum ``c`` of shape ``[n, L+1]``:
        the total of the positions before each position's group."""
        if self.start is None:
            return c[:, :-1]
        return self._at(c, self.start)

    def at_end(self, c: np.ndarray) -> np.ndarray:
        """``c[q, end[q, p]]``: the total of the positions up to the end of each group."""
        if self.end is None:
            return c[:, 1:]
        return self._at(c, self.end)


def exclusive_cumsum(x: np.ndarray) -> np.ndarray:
    """``[n, L] -> [n, L+1]`` with ``out[:, p] = sum(x[:, :p])``."""
    out = np.zeros((x.shape[0], x.shape[1] + 1))
    np.cumsum(x, axis=1, out=out[:, 1:])
    return out


def rank(values: np.ndarray, mask: np.ndarray | None, ties: str) -> Ranking:
    """Sort each row of ``values`` descending under tie policy ``ties``.

    Args:
        values: ``[n, L]`` finite float64 at valid positions.
        mask: ``[n, L]`` bool or None (all valid). Masked items go last.
        ties: ``"average"``, ``"stable"`` or ``"trec"``.

    A fast unstable argsort runs first; only if some valid items tie does ``"stable"`` /
    ``"trec"`` sort again with a stable sort, and ``"average"`` compute the tie groups.
    Masked items are never grouped (their order among themselves affects no metric).

    Example:
        >>> r = rank(np.array([[1.0, 3.0, 1.0]]), None, "trec")
        >>> r.order.tolist()
        [[1, 2, 0]]
    """
    key = -values
    if mask is not None:
        key = np.where(mask, key, np.inf)
    n, n_pos = key.shape
    order = np.argsort(key, axis=1)  # fast and unstable: tie order fixed below if needed
    if n_pos < 2:
        return Ranking(order, None, None)
    sorted_key = np.take(key, order + (np.arange(n) * n_pos)[:, None])
    new = np.empty(key.shape, dtype=bool)
    new[:, 0] = True
    np.not_equal(sorted_key[:, 1:], sorted_key[:, :-1], out=new[:, 1:])
    if mask is not None:
        # masked items (key +inf) are inert: never tied with anything, any order among them
        new[:, 1:] |= np.isinf(sorted_key[:, 1:])
    if new.all():  # no ties: the order is the same under every policy
        return Ranking(order, None, None)
    if ties == "trec":
        order = (n_pos - 1) - np.argsort(key[:, ::-1], axis=1, kind="stable")
        return Ranking(order, None, None)
    if ties == "stable":
        return Ranking(np.argsort(key, axis=1, kind="stable"), None, None)
    pos = np.arange(n_pos)
    start = np.maximum.accumulate(np.where(new, pos, 0), axis=1)
    last = np.empty_like(new)
    last[:, -1] = True
    last[:, :-1] = new[:, 1:]
    end = np.minimum.accumulate(np.where(last, pos + 1, n_pos)[:, ::-1], axis=1)[:, ::-1]
    return Ranking(order, start, np.ascontiguousarray(end))
