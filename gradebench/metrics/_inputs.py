"""Input checking for the metrics: shapes, dtypes, NaN/inf, masks and extra boolean arrays.

Every metric takes dense ``[n_queries, list_size]`` arrays plus an optional boolean ``mask``
(True = valid item). Values at masked-out positions are ignored (they may be NaN padding);
a NaN or infinite value at a valid position is an :class:`InvalidArgumentError`, never a
silent NaN in the output.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gradebench.errors import InvalidArgumentError


def as_matrix(x: object, what: str) -> np.ndarray:
    """``x`` as a float64 ``[n_queries, list_size]`` array (no copy if it already is one)."""
    arr = np.asarray(x)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise InvalidArgumentError(
            f"{what} must be a numeric array, got dtype {arr.dtype}",
            hint=f"pass {what} as a float or integer numpy array",
        )
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise InvalidArgumentError(f"{what} must be real, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise InvalidArgumentError(
            f"{what} must have shape [n_queries, list_size], got {arr.ndim}-d shape {arr.shape}",
            hint="wrap a single list as x[None, :]" if arr.ndim == 1 else None,
        )
    if arr.shape[0] == 0:
        raise InvalidArgumentError(f"{what} has no queries (shape {arr.shape})")
    return np.ascontiguousarray(arr, dtype=np.float64)


def as_mask(x: object, shape: tuple[int, ...], what: str) -> np.ndarray | None:
    """A boolean array of ``shape`` (or None). Integer 0/1 arrays are refused on purpose."""
    if x is None:
        return None
    arr = np.asarray(x)
    if arr.dtype != bool:
        raise InvalidArgumentError(
            f"{what} must be a boolean array (True = valid), got dtype {arr.dtype}",
            hint=f"pass {what}.astype(bool) if it holds 0/1 values",
        )
    if arr.shape != shape:
        raise InvalidArgumentError(
            f"{what} has shape {arr.shape} but scores have shape {shape}",
            hint=f"{what} must have the same [n_queries, list_size] shape as scores",
        )
    return np.ascontiguousarray(arr)


def _refuse_first_valid(
    bad: np.ndarray, mask: np.ndarray | None, values: np.ndarray, problem: Callable[[int], str], hint: str
) -> None:
    """Raise if ``bad`` flags a valid entry: ``problem(count)``, then the first one (row order) and its value."""
    if mask is not None:
        bad &= mask
    if bad.any():
        q, i = np.argwhere(bad)[0]
        raise InvalidArgumentError(
            f"{problem(int(bad.sum()))}, first at query {q}, item {i} ({values[q, i]})", hint=hint
        )


def check_finite(x: np.ndarray, mask: np.ndarray | None, what: str) -> None:
    """Raise if a valid entry of ``x`` is NaN or +-inf, naming the first one."""
    _refuse_first_valid(
        ~np.isfinite(x), mask, x, lambda count: f"{what} has {count} NaN/inf value(s) at valid positions",
        hint="drop or mask those items (mask=False) or fix the scorer",
    )


def check_inputs(
    scores: object, labels: object, mask: object = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Validated ``(scores, labels, mask)``: float64 matrices of one shape and a bool mask."""
    s = as_matrix(scores, "scores")
    y = as_matrix(labels, "labels")
    if s.shape != y.shape:
        raise InvalidArgumentError(
            f"scores have shape {s.shape} but labels have shape {y.shape}",
            hint="scores and labels must both be [n_queries, list_size]",
        )
    m = as_mask(mask, s.shape, "mask")
    check_finite(s, m, "scores")
    check_finite(y, m, "labels")
    return s, y, m


def check_nonnegative(labels: np.ndarray, mask: np.ndarray | None, metric: str) -> None:
    """Raise if a valid label is negative (gains ``y`` and ``2^y - 1`` need ``y >= 0``)."""
    _refuse_first_valid(
        labels < 0, mask, labels,
        lambda count: f"{metric} needs non-negative grades, but labels has {count} negative value(s)",
        hint="shift or clip the grades to >= 0, or mask those items",
    )
