"""Argument checks shared by the stats functions.

Every bad value raises :class:`~gradebench.errors.InvalidArgumentError` with a one-line
message naming the argument and a fix hint; nothing is silently coerced or dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np

from gradebench.errors import InvalidArgumentError

Alternative = Literal["two-sided", "greater", "less"]
NanPolicy = Literal["raise", "omit"]

ALTERNATIVES: tuple[str, ...] = ("two-sided", "greater", "less")
NAN_POLICIES: tuple[str, ...] = ("raise", "omit")

#: Smallest number of queries any resampling method accepts.
MIN_QUERIES = 2


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``, else a typed error listing them."""
    if not isinstance(value, str) or value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise InvalidArgumentError(f"{name} must be one of {listed}, got {value!r}", hint=f"pass {name}={choices[0]!r}")
    return value


def check_open_unit(name: str, value: object, *, example: float) -> float:
    """A real number strictly between 0 and 1 (``confidence``, ``alpha``)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 < float(value) < 1.0:
        raise InvalidArgumentError(
            f"{name} must be a number strictly between 0 and 1, got {value!r}", hint=f"e.g. {name}={example}"
        )
    return float(value)


def check_n_resamples(value: object) -> int:
    """A positive integer number of resamples."""
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < 1:
        raise InvalidArgumentError(
            f"n_resamples must be a positive integer, got {value!r}", hint="e.g. n_resamples=10_000"
        )
    return int(value)


def check_seed(value: object) -> int:
    """A non-negative integer seed (``None`` is refused: results must be reproducible)."""
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < 0:
        raise InvalidArgumentError(
            f"seed must be a non-negative integer, got {value!r}",
            hint="pass an explicit seed such as seed=0; the global RNG is never used",
        )
    return int(value)


def as_per_query(values: Any, *, name: str, one_d: bool) -> np.ndarray:
    """``values`` as a float64 array whose axis 0 indexes queries.

    Accepts bool, integer and float input. Refuses strings/objects/complex, 0-d input,
    an empty axis 0, more than one axis when ``one_d``, and ``±inf`` anywhere.
    NaN is kept here; :func:`drop_nan_rows` applies the NaN policy.
    """
    raw = np.asarray(values)
    if raw.dtype.kind not in "biuf":
        raise InvalidArgumentError(
            f"{name} must hold real numbers, got dtype {raw.dtype}",
            hint=f"pass {name} as a float array of per-query metric values",
        )
    arr = raw.astype(np.float64, copy=False)
    if arr.ndim == 0:
        raise InvalidArgumentError(
            f"{name} must be an array of per-query values, got a scalar", hint=f"wrap it: {name}=[value, ...]"
        )
    if one_d and arr.ndim != 1:
        raise InvalidArgumentError(
            f"{name} must be 1-D (one value per query), got shape {arr.shape}",
            hint="flatten it, or pass a callable statistic to bootstrap_ci for row-wise data",
        )
    if arr.shape[0] == 0:
        raise InvalidArgumentError(f"{name} is empty", hint="pass the metric value of at least 2 queries")
    if np.isinf(arr).any():
        first = int(np.argwhere(np.isinf(arr))[0][0])
        raise InvalidArgumentError(
            f"{name} holds an infinite value (first at query index {first})",
            hint="check the metric for a division by zero; infinities cannot be resampled",
        )
    return arr


def drop_nan_rows(
    arrays: Sequence[np.ndarray], *, names: Sequence[str], nan_policy: str
) -> tuple[list[np.ndarray], int]:
    """Apply the NaN policy to arrays that share axis 0 (queries).

    ``"raise"``: any NaN is an error naming its first query index.
    ``"omit"``: drop every query with a NaN in any array; return how many were dropped.
    Afterwards at least :data:`MIN_QUERIES` queries must remain.
    """
    check_choice("nan_policy", nan_policy, NAN_POLICIES)
    bad = np.zeros(arrays[0].shape[0], dtype=bool)
    for arr in arrays:
        bad |= np.isnan(arr.reshape(arr.shape[0], -1)).any(axis=1)
    n_omitted = int(bad.sum())
    if n_omitted and nan_policy == "raise":
        first = int(np.flatnonzero(bad)[0])
        which = " or ".join(names)
        raise InvalidArgumentError(
            f"{which} holds NaN for {n_omitted} queries (first at query index {first})",
            hint="fix the metric, or pass nan_policy='omit' to drop those queries (the count is reported)",
        )
    kept = [arr[~bad] for arr in arrays] if n_omitted else list(arrays)
    n = kept[0].shape[0]
    if n < MIN_QUERIES:
        extra = f" after omitting {n_omitted} with NaN" if n_omitted else ""
        raise InvalidArgumentError(
            f"need at least {MIN_QUERIES} queries, got {n}{extra}",
            hint="resampling over queries needs several queries; evaluate on more queries",
        )
    return kept, n_omitted


def check_same_queries(a: np.ndarray, b: np.ndarray) -> None:
    """Paired inputs must have one value per query each, for the same number of queries."""
    if a.shape != b.shape:
        raise InvalidArgumentError(
            f"a and b must have the same shape (one value per query, same queries), got {a.shape} and {b.shape}",
            hint="align both systems' per-query values on the same query ids before testing",
        )


def paired_values(a: Any, b: Any, *, nan_policy: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Validated 1-D per-query values of two systems, NaN policy applied to both together."""
    arr_a = as_per_query(a, name="a", one_d=True)
    arr_b = as_per_query(b, name="b", one_d=True)
    check_same_queries(arr_a, arr_b)
    (arr_a, arr_b), n_omitted = drop_nan_rows([arr_a, arr_b], names=["a", "b"], nan_policy=nan_policy)
    return arr_a, arr_b, n_omitted
