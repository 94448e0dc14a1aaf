"""Vectorized resampling kernels with bounded memory.

Resamples are drawn in chunks of at most :data:`CHUNK_ELEMENTS` array elements, so memory
stays near ``16 * CHUNK_ELEMENTS`` bytes (indices plus gathered values) whatever ``n`` and
``n_resamples`` are, and there is no Python loop per resample. The chunk schedule depends
only on the input shape and ``n_resamples``, so the same seed gives bit-identical draws.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from gradebench.errors import InvalidArgumentError

#: Elements per chunk of resampled values (8 MiB of float64).
CHUNK_ELEMENTS = 1 << 20

#: Null statistics within ``REL_TOL * max|d|`` of the observed one count as ties
#: ("at least as extreme"), so that equal sums computed in a different order still tie.
REL_TOL = 1e-9

_U64_MAX = np.iinfo(np.uint64).max

BatchedStatistic = Callable[[np.ndarray], np.ndarray]


def make_rng(seed: int) -> np.random.Generator:
    """A fresh ``PCG64`` generator: the only source of randomness in :mod:`gradebench.stats`."""
    return np.random.Generator(np.random.PCG64(seed))


def chunks(total: int, elements_per_item: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` ranges covering ``range(total)``, each at most CHUNK_ELEMENTS elements."""
    step = max(1, CHUNK_ELEMENTS // max(1, elements_per_item))
    for start in range(0, total, step):
        yield start, min(total, start + step)


def mean_rows(x: np.ndarray) -> np.ndarray:
    """Mean over axis 1 (queries) of a batch of resamples."""
    return x.mean(axis=1)


def apply_statistic(fn: BatchedStatistic, x: np.ndarray, *, name: str) -> np.ndarray:
    """``fn(x)`` checked to be ``batch`` finite floats."""
    out = np.asarray(fn(x), dtype=np.float64)
    if out.shape != (x.shape[0],):
        raise InvalidArgumentError(
            f"statistic {name!r} returned shape {out.shape} for a batch of shape {x.shape}, expected ({x.shape[0]},)",
            hint="the statistic gets resamples stacked on axis 0 with queries on axis 1, and must reduce "
            "axis 1, e.g. lambda x: x.mean(axis=1)",
        )
    if not np.isfinite(out).all():
        raise InvalidArgumentError(
            f"statistic {name!r} returned a non-finite value on a resample",
            hint="make the statistic finite on every resample (e.g. guard a zero denominator)",
        )
    return out


def bootstrap_distribution(
    data: np.ndarray, fn: BatchedStatistic, n_resamples: int, rng: np.random.Generator, *, name: str
) -> np.ndarray:
    """The statistic on ``n_resamples`` resamples of the rows (queries) of ``data``, with replacement.

    Each resample draws ``n`` row indices uniformly from ``range(n)`` (``rng.integers``, int64).
    """
    n = data.shape[0]
    per_resample = data.size
    out = np.empty(n_resamples, dtype=np.float64)
    for start, stop in chunks(n_resamples, per_resample):
        idx = rng.integers(0, n, size=(stop - start, n), dtype=np.int64)
        out[start:stop] = apply_statistic(fn, data[idx], name=name)
    return out


class BootstrapDraws:
    """Bootstrap row indices kept for reuse: calls with the same seed, ``n``, ``n_resamples`` and
    row size draw the same indices (a fresh generator per call), so a caller bootstrapping many
    metrics over the same queries (a leaderboard) can draw them once. Holds at most ``max_bytes``
    of indices; beyond that it draws afresh (same values, no reuse)."""

    def __init__(self, max_bytes: int = 256 << 20) -> None:
        self.max_bytes = max_bytes
        self._kept: dict[tuple[int, int, int, int], list[np.ndarray]] = {}
        self._bytes = 0

    def indices(self, seed: int, n: int, n_resamples: int, per_resample: int) -> Iterator[tuple[int, int, np.ndarray]]:
        """``(start, stop, indices)`` per chunk, exactly as :func:`bootstrap_distribution` draws them."""
        key = (seed, n, n_resamples, per_resample)
        kept = self._kept.get(key)
        if kept is not None:
            yield from kept
            return
        rng, drawn = make_rng(seed), []
        size = n_resamples * n * 8
        for start, stop in chunks(n_resamples, per_resample):
            item = (start, stop, rng.integers(0, n, size=(stop - start, n), dtype=np.int64))
            if self._bytes + size <= self.max_bytes:
                drawn.append(item)
            yield item
        if self._bytes + size <= self.max_bytes:
            self._kept[key] = drawn
            self._bytes += size


def bootstrap_distribution_reusing(
    data: np.ndarray, fn: BatchedStatistic, n_resamples: int, seed: int, draws: BootstrapDraws, *, name: str
) -> np.ndarray:
    """``bootstrap_distribution(data, fn, n_resamples, make_rng(seed))`` with the indices from ``draws``."""
    out = np.empty(n_resamples, dtype=np.float64)
    for start, stop, idx in draws.indices(seed, data.shape[0], n_resamples, data.size):
        out[start:stop] = apply_statistic(fn, data[idx], name=name)
    return out


def jackknife_generic(data: np.ndarray, fn: BatchedStatistic, *, name: str) -> np.ndarray:
    """Leave-one-out values ``theta_(i)``, ``i = 0..n-1``, for any batched statistic (O(n^2) work)."""
    n = data.shape[0]
    keep = np.arange(n - 1)
    out = np.empty(n, dtype=np.float64)
    row = data.size // n
    for start, stop in chunks(n, (n - 1) * row):
        left_out = np.arange(start, stop)[:, None]
        idx = keep[None, :] + (keep[None, :] >= left_out)
        out[start:stop] = apply_statistic(fn, data[idx], name=name)
    return out


def jackknife_mean(data: np.ndarray) -> np.ndarray:
    """Leave-one-out means in closed form: ``theta_(i) = (sum(x) - x_i) / (n - 1)``."""
    n = data.shape[0]
    return (data.sum() - data) / (n - 1)


def random_signs(rng: np.random.Generator, size: int, n: int) -> np.ndarray:
    """``[size, n]`` fair coin flips (True = flip), from bits of full-range uint64 draws.

    Each uint64 consumes exactly one generator output, so the stream (and the result) does
    not depend on how the draws are split into chunks; bits are read little-endian on every platform.
    """
    words = rng.integers(0, _U64_MAX, size=(size, (n + 63) // 64), dtype=np.uint64, endpoint=True)
    octets = words.astype("<u8", copy=False).view(np.uint8)
    return np.unpackbits(octets, axis=1, count=n, bitorder="little").astype(bool)


def sign_flip_means(
    d: np.ndarray, n_draws: int, rng: np.random.Generator | None
) -> np.ndarray:
    """Means of ``s * d`` over sign vectors ``s`` in ``{-1, +1}^n``.

    With ``rng``: ``n_draws`` vectors, each sign an independent fair coin (:func:`random_signs`).
    Without: all ``2^n`` vectors (``n_draws`` must be ``2^n``), vector ``k`` flipping the
    signs at the set bits of ``k``; ``k = 0`` is the observed assignment.
    """
    n = d.shape[0]
    out = np.empty(n_draws, dtype=np.float64)
    bits = np.arange(n, dtype=np.int64)
    for start, stop in chunks(n_draws, n):
        if rng is None:
            codes = np.arange(start, stop, dtype=np.int64)
            flip = ((codes[:, None] >> bits[None, :]) & 1).astype(bool)
        else:
            flip = random_signs(rng, stop - start, n)
        out[start:stop] = mean_rows(np.where(flip, -d, d))
    return out


def sign_flip_count(
    d: np.ndarray, n_draws: int, rng: np.random.Generator, observed: float, alternative: str, tol: float
) -> int:
    """``count_extreme(sign_flip_means(d, n_draws, rng), observed, alternative, tol)``, computed fast.

    The same draws (the same chunks of :func:`random_signs`) give the same count. Each null mean
    is first approximated from per-byte partial sums: the flips come as bytes, and a table holds,
    for every byte position ``b`` and value ``v``, the sum of ``d[8b + k]`` over the set bits
    ``k`` of ``v``, so a draw costs ``n / 8`` look-ups instead of ``n`` products. The
    approximation differs from the exact mean only by rounding (at most ``n * eps * max|d|``,
    the margin below is 64 times that); a draw whose approximation lies within the margin of the
    threshold is recomputed exactly as :func:`sign_flip_means` computes it (the mean of each
    row is the same whatever other rows share its batch), so the count is exactly the one the
    slow path gives.
    """
    n = d.shape[0]
    n_bytes = (n + 7) // 8
    padded = np.zeros(n_bytes * 8, dtype=np.float64)
    padded[:n] = d
    bit_table = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.float64)  # [256, 8]
    lut = (padded.reshape(n_bytes, 8) @ bit_table.T).ravel()  # [n_bytes * 256]
    offsets = (np.arange(n_bytes, dtype=np.intp) * 256)[None, :]
    total = float(d.sum())
    scale = float(np.max(np.abs(d))) if n else 0.0
    margin = 64.0 * (n + 8) * np.finfo(np.float64).eps * scale
    if alternative == "greater":
        sign, threshold = 1.0, observed - tol
    elif alternative == "less":
        sign, threshold = -1.0, -(observed + tol)
    else:
        sign, threshold = 0.0, abs(observed) - tol
    count = 0
    for start, stop in chunks(n_draws, n):
        words = rng.integers(0, _U64_MAX, size=(stop - start, (n + 63) // 64), dtype=np.uint64, endpoint=True)
        octets = words.astype("<u8", copy=False).view(np.uint8)
        flipped = lut[octets[:, :n_bytes].astype(np.intp) + offsets].sum(axis=1)
        approx = (total - 2.0 * flipped) / n
        stat = np.abs(approx) if sign == 0.0 else sign * approx
        count += int(np.count_nonzero(stat > threshold + margin))
        near = np.abs(stat - threshold) <= margin
        if near.any():
            flip = np.unpackbits(octets[near], axis=1, count=n, bitorder="little").astype(bool)
            count += count_extreme(mean_rows(np.where(flip, -d, d)), observed, alternative, tol)
    return count


def count_extreme(null: np.ndarray, observed: float, alternative: str, tol: float) -> int:
    """How many null statistics are at least as extreme as ``observed`` (ties within ``tol`` count).

    ``"greater"``: ``t >= observed``; ``"less"``: ``t <= observed``; ``"two-sided"``: ``|t| >= |observed|``.
    """
    if alternative == "greater":
        hits = null >= observed - tol
    elif alternative == "less":
        hits = null <= observed + tol
    else:
        hits = np.abs(null) >= abs(observed) - tol
    return int(np.count_nonzero(hits))


def tie_tolerance(d: np.ndarray) -> float:
    return REL_TOL * float(np.max(np.abs(d)))
