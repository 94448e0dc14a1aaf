"""Result records of the stats functions: frozen dataclasses with a JSON-ready ``to_dict()``.

Fields hold plain Python values (float, int, str, bool, tuples), never NumPy scalars, so
``json.dumps(result.to_dict(), allow_nan=False)`` always works and records compare with ``==``.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ConfidenceInterval:
    """A bootstrap confidence interval over queries.

    Attributes:
        estimate: the statistic on the observed queries.
        low, high: interval bounds (``low <= high``).
        confidence: nominal two-sided coverage, e.g. 0.95.
        method: ``"percentile"`` or ``"bca"``.
        statistic: name of the statistic (``"mean"``, ``"median"``, ``"mean(a - b)"``, or a callable's name).
        n: number of queries used.
        n_omitted: queries dropped for NaN (``nan_policy="omit"``), else 0.
        n_resamples: bootstrap resamples drawn.
        seed: seed of the ``PCG64`` generator that drew them.
    """

    estimate: float
    low: float
    high: float
    confidence: float
    method: str
    statistic: str
    n: int
    n_omitted: int
    n_resamples: int
    seed: int

    @property
    def width(self) -> float:
        return self.high - self.low

    def contains(self, value: float) -> bool:
        """``low <= value <= high``."""
        return self.low <= value <= self.high

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PairedTestResult:
    """Outcome of a paired significance test between systems ``a`` and ``b`` on the same queries.

    Attributes:
        test: ``"paired_bootstrap"`` or ``"paired_randomization"``.
        alternative: ``"two-sided"`` (mean(a) != mean(b)), ``"greater"`` (mean(a) > mean(b))
            or ``"less"`` (mean(a) < mean(b)).
        statistic: observed mean per-query difference, ``mean(a - b)``.
        p_value: in ``(0, 1]``; see the test's docstring for the exact formula.
        mean_a, mean_b: each system's mean over the queries used.
        n: number of queries used.
        n_omitted: queries dropped for NaN (``nan_policy="omit"``), else 0.
        n_resamples: null-distribution draws used (``2**n`` when ``exact``).
        exact: True when the null distribution was enumerated rather than sampled.
        seed: seed of the ``PCG64`` generator (unused when ``exact``).
        ci: bootstrap confidence interval of ``mean(a - b)`` (paired bootstrap only), else None.
    """

    test: str
    alternative: str
    statistic: float
    p_value: float
    mean_a: float
    mean_b: float
    n: int
    n_omitted: int
    n_resamples: int
    exact: bool
    seed: int
    ci: ConfidenceInterval | None = None

    def significant(self, alpha: float = 0.05) -> bool:
        """``p_value <= alpha`` (for several comparisons use :func:`gradebench.stats.holm`)."""
        return self.p_value <= alpha

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class HolmResult:
    """Holm step-down adjustment of several p-values.

    Attributes:
        p_values: raw p-values, in input order.
        adjusted: Holm-adjusted p-values, in input order (monotone in the raw ones, ``<= 1``).
        reject: ``adjusted <= alpha`` per hypothesis.
        alpha: family-wise error rate.
        names: the mapping keys when a mapping was given, else None.
    """

    p_values: tuple[float, ...]
    adjusted: tuple[float, ...]
    reject: tuple[bool, ...]
    alpha: float
    names: tuple[Hashable, ...] | None = None

    def by_name(self) -> dict[Hashable, float]:
        """``{name: adjusted p-value}`` (positions 0, 1, ... when no names were given)."""
        keys = self.names if self.names is not None else tuple(range(len(self.adjusted)))
        return dict(zip(keys, self.adjusted, strict=True))

    def to_dict(self) -> dict[str, Any]:
        keys = self.names if self.names is not None else tuple(range(len(self.adjusted)))
        return {
            "method": "holm",
            "alpha": self.alpha,
            "comparisons": [
                {"name": k, "p_value": p, "adjusted_p_value": adj, "reject": r}
                for k, p, adj, r in zip(keys, self.p_values, self.adjusted, self.reject, strict=True)
            ],
        }
