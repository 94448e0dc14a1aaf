"""Pair counts shared by Kendall's tau-b and pairwise agreement.

For every unordered pair of valid items ``i < j`` of a list (no Python loop over queries;
one vectorized step per index offset ``d = j - i``)::

    sx = sign(s_j - s_i),  sy = sign(y_j - y_i)
    S  = sum sx * sy                      (concordant minus discordant pairs)
    Z  = sum [sx == 0] * sy               (score-tied pairs, signed by the label order)
    n0 = number of pairs,  tx = pairs tied in score,  ty = pairs tied in label

``tx`` and ``ty`` come from the tie groups of the score and label rankings (a group of
``g`` equal values holds ``g (g-1) / 2`` tied pairs), so only ``S`` (and ``Z``, computed
only when asked) need the O(L^2) pass.

Breaking score ties by candidate order (``"stable"``: the lower index ranks higher, i.e.
``sx = -1``) gives ``S - Z``; trec_eval's order (higher index first, ``sx = +1``) gives
``S + Z``; counting a tied pair as half right (``"average"``) keeps ``S``.
"""

from __future__ import annotations

import numpy as np

from gradebench.metrics._batch import Batch
from gradebench.metrics._ranking import Ranking
from gradebench.metrics._rows import row_sum


def _sign_sums(batch: Batch, with_ties: bool) -> tuple[np.ndarray, np.ndarray | None]:
    x, y, m = batch.scores, batch.labels, batch.mask
    n, size = x.shape
    s = np.zeros(n)
    z = np.zeros(n) if with_ties else None
    for d in range(1, size):
        sx = np.sign(x[:, d:] - x[:, :-d])
        sy = np.sign(y[:, d:] - y[:, :-d])
        if m is not None:
            sy *= m[:, d:] & m[:, :-d]  # a pair with a masked item counts nowhere
        s += np.einsum("ij,ij->i", sx, sy)
        if z is not None:
            z += np.einsum("ij,ij->i", (sx == 0).astype(np.float64), sy)
    return s, z


def concordance(batch: Batch) -> np.ndarray:
    """``[n]`` S: concordant minus discordant pairs (score ties count 0)."""
    return batch.cached("pairs_s", lambda: _sign_sums(batch, False)[0])


def signed_sum(batch: Batch, ties: str) -> np.ndarray:
    """``[n]`` concordant minus discordant pairs with score ties resolved by ``ties``."""
    if ties == "average":
        return concordance(batch)

    def make() -> tuple[np.ndarray, np.ndarray]:
        s, z = _sign_sums(batch, True)
        batch.cached("pairs_s", lambda: s)
        return s, z

    s, z = batch.cached("pairs_sz", make)
    return s - z if ties == "stable" else s + z


def tied_pairs(rk: Ranking) -> np.ndarray:
    """``[n]`` number of pairs of valid items in the same tie group of ``rk``."""
    if rk.trivial:
        return np.zeros(rk.order.shape[0])
    return row_sum(rk.end - rk.start - 1) / 2.0


def n_pairs(batch: Batch) -> np.ndarray:
    """``[n]`` number of pairs of valid items ``m (m-1) / 2``."""
    m = np.asarray(batch.n_valid, dtype=np.float64)
    return m * (m - 1.0) / 2.0


def score_ties(batch: Batch) -> np.ndarray:
    """``[n]`` pairs of valid items with equal scores."""
    return tied_pairs(batch.ranking("average"))


def label_ties(batch: Batch) -> np.ndarray:
    """``[n]`` pairs of valid items with equal labels."""
    return tied_pairs(batch.label_ranking())
