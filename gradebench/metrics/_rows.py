"""Fast per-row reductions of ``[n, L]`` arrays with short rows.

NumPy reduces along a short last axis slowly (``x.max(axis=1)`` on ``[32768, 5]`` takes
~1.4 ms, a loop over the 5 columns ~0.1 ms; ``x.sum(axis=1)`` ~0.46 ms, ``x @ ones``
~0.06 ms). These helpers pick the fast form; results equal the NumPy reductions (sums up
to floating-point summation order).
"""

from __future__ import annotations

import numpy as np

_COLUMN_LOOP_MAX = 16


def row_sum(x: np.ndarray) -> np.ndarray:
    """``[n]`` sum of each row (float64; bool input counts True values)."""
    if x.shape[1] == 0:
        return np.zeros(x.shape[0])
    if x.dtype != np.float64:
        x = x.astype(np.float64)
    return x @ np.ones(x.shape[1])


def _column_reduce(x: np.ndarray, op: np.ufunc) -> np.ndarray:
    out = x[:, 0].copy()
    for j in range(1, x.shape[1]):
        op(out, x[:, j], out=out)
    return out


def row_max(x: np.ndarray) -> np.ndarray:
    """``[n]`` maximum of each row (rows must be non-empty)."""
    return _column_reduce(x, np.maximum) if x.shape[1] <= _COLUMN_LOOP_MAX else x.max(axis=1)


def row_min(x: np.ndarray) -> np.ndarray:
    """``[n]`` minimum of each row (rows must be non-empty)."""
    return _column_reduce(x, np.minimum) if x.shape[1] <= _COLUMN_LOOP_MAX else x.min(axis=1)
