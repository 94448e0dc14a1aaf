"""Pair counts shared by Kendall's tau-b and pairwise agreement.

For every unordered pair of valid items ``i < j`` of a list (no Python loop over queries;
one vectorized step per index offset ``d = j - i``)::

    sx = sign(s_j - s_i),  sy = sign(y_j - y_i)
    S  = sum sx * sy                      (concordant minus discordant pairs)
    Z  = sum [sx == 0] * sy               (score-tied pairs, signed by the label order)
    n0 = number of pairs,  tx = pairs tied in score,  ty = pairs tied in label

Breaking score ties by candidate order (``"stable"``: the lower index ranks higher, i.e.
``sx = -1``) gives ``S - Z``; trec_eval's order (higher index first, ``sx = +1``) gives
``S + Z``; counting a tied pair as half right (``"average"``) keeps ``S``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradebench.metrics._batch import Batch


@dataclass(frozen=True)
class PairCounts:
    """Per-query ``[n]`` float64 pair counts (see module docstring)."""

    s: np.ndarray
    z: np.ndarray
    n0: np.ndarray
    tx: np.ndarray
    ty: np.ndarray

    def signed_sum(self, ties: str) -> np.ndarray:
        """Concordant minus discordant pairs with score ties resolved by ``ties``."""
        if ties == "stable":
            return self.s - self.z
        if ties == "trec":
            return self.s + self.z
        return self.s


def _count(batch: Batch) -> PairCounts:
    x, y, m = batch.scores, batch.labels, batch.mask
    n, size = x.shape
    s = np.zeros(n)
    z = np.zeros(n)
    tx = np.zeros(n)
    ty = np.zeros(n)
    for d in range(1, size):
        sx = np.sign(x[:, d:] - x[:, :-d])
        sy = np.sign(y[:, d:] - y[:, :-d])
        if m is not None:
            both = m[:, d:] & m[:, :-d]
            sy *= both  # pairs with a masked item count nowhere (sy = 0 and not tied)
            tie_x = (sx == 0) & both
            tie_y = (sy == 0) & both
        else:
            tie_x = sx == 0
            tie_y = sy == 0
        s += np.einsum("ij,ij->i", sx, sy)
        z += np.einsum("ij,ij->i", tie_x.astype(np.float64), sy)
        tx += tie_x.sum(axis=1)
        ty += tie_y.sum(axis=1)
    nv = batch.n_valid.astype(np.float64)
    return PairCounts(s=s, z=z, n0=nv * (nv - 1.0) / 2.0, tx=tx, ty=ty)


def pair_counts(batch: Batch) -> PairCounts:
    """The :class:`PairCounts` of a batch (computed once, shared between metrics)."""
    return batch.cached("pair_counts", lambda: _count(batch))
