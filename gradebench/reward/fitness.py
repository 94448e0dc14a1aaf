"""How fit a scorer is as an RL reward: pure NumPy figures over dense ``[n_queries, list_size]`` arrays.

The core paper (seeds/000, App. C.2, Table 24) judges a reward model by how far apart its scores
are: score std, score range, the separation ratio ``sigma(predicted) / sigma(true)`` (Eq. 10)
and a "PPO viable?" verdict (MSE 0.089: no; RankNet 0.341: weak; ApproxNDCG 0.523: moderate;
ListNet 0.847: yes; "high absolute separation (above 0.8)"). The separation ratio compares
the scorer's units with the label units, so it is not scale-free: multiplying a scorer by 10
multiplies it by 10 without changing what a policy can learn from it, once rewards are
standardised (GRPO/RLOO divide each group's advantages by their std; PPO with
``normalize=True`` standardises by the calibration). These functions add the scale-free
figures that decide whether a standardised reward carries signal:

* :func:`advantage_snr`: GRPO's advantage is a completion's reward minus its group's mean, so
  each list's scores are centred on the list mean; the mean gap between the centred means of
  adjacent grades, divided by the pooled within-grade standard deviation of the centred
  scores, is an advantage signal-to-noise ratio (a Cohen's d between neighbouring grades);
* :func:`grade_eta2` (``tier_eta2`` of :mod:`gradebench.metrics.separation`): the share of
  score variance between grades.

Verdicts (both use the same four words, plus ``undefined``):

* :func:`paper_verdict` on the separation ratio, with cut points between the paper's rows:
  ``>= 0.8`` yes (the paper's "above 0.8"), ``>= 0.45`` moderate (ApproxNDCG 0.523),
  ``>= 0.2`` weak (RankNet 0.341), else no (MSE 0.089). This is the criterion for **raw**
  rewards, where the scale matters (PPO without normalisation, KL penalty in fixed units).
* :func:`snr_verdict` on the advantage SNR, with Cohen's conventional effect sizes:
  ``>= 0.8`` yes, ``>= 0.5`` moderate, ``>= 0.2`` weak, else no; capped at ``weak`` when the
  centred means of some pair of adjacent grades are inverted (the reward would push the policy
  from the better grade to the worse one). This is the criterion for **standardised** rewards
  (GRPO, RLOO, PPO with ``normalize=True``) and the report's main verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradebench.errors import InvalidArgumentError

VERDICTS = ("yes", "moderate", "weak", "no", "undefined")
#: separation-ratio cut points placed between the rows of the paper's Table 24
PAPER_THRESHOLDS: tuple[tuple[str, float], ...] = (("yes", 0.8), ("moderate", 0.45), ("weak", 0.2))
#: advantage-SNR cut points (Cohen's d: large 0.8, medium 0.5, small 0.2)
SNR_THRESHOLDS: tuple[tuple[str, float], ...] = (("yes", 0.8), ("moderate", 0.5), ("weak", 0.2))
#: the verdict an advantage SNR cannot exceed while some adjacent grades are inverted
INVERTED_CAP = "weak"
#: the paper's Table 24, for the report and the tests
PAPER_TABLE_24 = {
    "mse": {"score_std": 0.043, "score_range": 0.094, "separation_ratio": 0.089, "ppo_viable": "no"},
    "ranknet": {"score_std": 0.164, "score_range": 0.428, "separation_ratio": 0.341, "ppo_viable": "weak"},
    "approxndcg": {"score_std": 0.251, "score_range": 0.612, "separation_ratio": 0.523, "ppo_viable": "moderate"},
    "listnet": {"score_std": 0.407, "score_range": 0.889, "separation_ratio": 0.847, "ppo_viable": "yes"},
}


def _valid(shape: tuple[int, ...], mask: Any) -> np.ndarray:
    """The boolean mask of valid items: ``mask`` as bool, or all True when it is None."""
    return np.ones(shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)


def _check(scores: Any, labels: Any, mask: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if s.ndim != 2 or s.shape != y.shape:
        raise InvalidArgumentError(f"scores {s.shape} and labels {y.shape} must be the same [n_queries, list_size]")
    m = _valid(s.shape, mask)
    if m.shape != s.shape:
        raise InvalidArgumentError(f"mask {m.shape} must have the shape of scores {s.shape}")
    if not (np.isfinite(s[m]).all() and np.isfinite(y[m]).all()):
        raise InvalidArgumentError("scores and labels must be finite at valid positions")
    return s, y, m


@dataclass(frozen=True)
class Spread:
    """Spread of the pooled valid scores (population std; range = max - min; p05/p95 linear quantiles)."""

    std: float
    range: float
    p05: float
    p95: float

    @property
    def robust_range(self) -> float:
        return self.p95 - self.p05


def score_spread(scores: Any, mask: Any = None) -> Spread:
    """Std, range and 5th/95th percentiles of the valid scores, pooled over queries (Table 24's columns).

    Example:
        >>> score_spread([[0.0, 1.0, 3.0]]).range
        3.0
    """
    s = np.asarray(scores, dtype=np.float64)
    v = s[_valid(s.shape, mask)]
    if v.size == 0:
        raise InvalidArgumentError("no valid scores")
    p05, p95 = np.quantile(v, [0.05, 0.95])
    return Spread(std=float(v.std()), range=float(v.max() - v.min()), p05=float(p05), p95=float(p95))


def list_centered(scores: Any, mask: Any = None) -> np.ndarray:
    """Each list's valid scores minus their mean (a GRPO group's advantage before scaling); 0 at padding.

    Example:
        >>> list_centered([[3.0, 1.0], [5.0, 5.0]]).tolist()
        [[1.0, -1.0], [0.0, 0.0]]
    """
    s = np.asarray(scores, dtype=np.float64)
    m = _valid(s.shape, mask)
    n = np.maximum(m.sum(axis=1), 1)
    mean = np.where(m, s, 0.0).sum(axis=1) / n
    return np.where(m, s - mean[:, None], 0.0)


@dataclass(frozen=True)
class AdvantageSNR:
    """Adjacent-grade gaps of list-centred scores against their within-grade spread.

    Attributes:
        grades: distinct grades, ascending.
        centered_means: mean centred score per grade (same order).
        gaps: ``centered_means[k+1] - centered_means[k]`` for adjacent grades.
        within_std: pooled population std of the centred scores around their grade's mean,
            ``sqrt(sum_g sum_i (c_i - mean_g)^2 / N)``.
        snr: ``mean(gaps) / within_std`` (inf/-inf when ``within_std`` is 0 and the gap is not;
            NaN with fewer than two grades).
        min_snr: ``min(gaps) / within_std``: the weakest adjacent pair.
        n_inverted: adjacent pairs whose gap is negative.
    """

    grades: tuple[float, ...]
    centered_means: tuple[float, ...]
    gaps: tuple[float, ...]
    within_std: float
    snr: float
    min_snr: float
    n_inverted: int


def _ratio(num: float, den: float) -> float:
    if den > 0:
        return num / den
    if num == 0 or math.isnan(num):
        return float("nan")
    return math.copysign(float("inf"), num)


def advantage_snr(scores: Any, labels: Any, mask: Any = None) -> AdvantageSNR:
    """The advantage signal-to-noise ratio of a scorer as a group-normalised reward (see :class:`AdvantageSNR`).

    Example (hand-computed in tests/reward/test_fitness.py): centred scores
    ``[4/3, 1/3, -5/3]`` and ``[2/3, 2/3, -4/3]`` for grades ``[2, 1, 0]`` give grade means
    ``-1.5, 0.5, 1``, gaps ``2.0, 0.5``, within-grade std ``sqrt(1/18)``, SNR ``1.25 * sqrt(18)``.

        >>> round(advantage_snr([[3, 2, 0], [1, 1, -1]], [[2, 1, 0], [2, 1, 0]]).snr, 6)
        5.303301
    """
    s, y, m = _check(scores, labels, mask)
    c = list_centered(s, m)[m]
    g = y[m]
    grades, group = np.unique(g, return_inverse=True)
    count = np.bincount(group, minlength=len(grades))
    means = np.bincount(group, weights=c, minlength=len(grades)) / np.maximum(count, 1)
    dev = c - means[group]
    within = float(math.sqrt(float(np.dot(dev, dev)) / c.size)) if c.size else 0.0
    gaps = np.diff(means)
    if gaps.size == 0:
        return AdvantageSNR(tuple(grades.tolist()), tuple(means.tolist()), (), within, float("nan"),
                            float("nan"), 0)
    return AdvantageSNR(
        grades=tuple(float(x) for x in grades), centered_means=tuple(float(x) for x in means),
        gaps=tuple(float(x) for x in gaps), within_std=within,
        snr=_ratio(float(gaps.mean()), within), min_snr=_ratio(float(gaps.min()), within),
        n_inverted=int((gaps < 0).sum()),
    )


def grade_eta2(scores: Any, labels: Any, mask: Any = None, *, center: str = "none") -> float:
    """Between-grade share of score variance (``tier_eta2`` of :mod:`gradebench.metrics.separation`).

    ``center="query"`` removes each list's mean first (what a group-normalised reward sees).
    NaN when the scores are constant.

        >>> round(grade_eta2([[0.9, 0.7, 0.2, 0.0]], [[1, 1, 0, 0]]), 6)
        0.924528
    """
    from gradebench.metrics.functional import tier_eta2

    s, y, m = _check(scores, labels, mask)
    return float(tier_eta2(s, y, center=center, mask=m))


def separation(scores: Any, labels: Any, mask: Any = None) -> float:
    """``sigma(scores) / sigma(labels)`` pooled over valid items (Eq. 10; ``separation_ratio`` of the records).

        >>> round(separation([[0.52, 0.50, 0.48]], [[1.0, 0.5, 0.0]]), 6)
        0.04
    """
    from gradebench.metrics.functional import separation_ratio

    s, y, m = _check(scores, labels, mask)
    return float(separation_ratio(s, y, mask=m))


def bucket(value: float | None, thresholds: tuple[tuple[str, float], ...]) -> str:
    """The first word whose threshold ``value`` reaches (``thresholds`` descending), else ``"no"``;
    ``"undefined"`` for None/NaN.

        >>> bucket(0.5, SNR_THRESHOLDS), bucket(0.1, SNR_THRESHOLDS), bucket(float("inf"), SNR_THRESHOLDS)
        ('moderate', 'no', 'yes')
    """
    if value is None or math.isnan(value):
        return "undefined"
    for word, cut in thresholds:
        if value >= cut:
            return word
    return "no"


def paper_verdict(separation_ratio: float | None) -> str:
    """Table 24's "PPO viable?" on the separation ratio (cut points: :data:`PAPER_THRESHOLDS`).

        >>> [paper_verdict(r["separation_ratio"]) for r in PAPER_TABLE_24.values()]
        ['no', 'weak', 'moderate', 'yes']
    """
    return bucket(separation_ratio, PAPER_THRESHOLDS)


def snr_verdict(snr: float | None, n_inverted: int = 0) -> str:
    """The standardised-reward verdict on the advantage SNR (:data:`SNR_THRESHOLDS`), capped at
    :data:`INVERTED_CAP` when ``n_inverted`` adjacent grade pairs are inverted.

        >>> snr_verdict(2.0), snr_verdict(2.0, n_inverted=1), snr_verdict(-1.0)
        ('yes', 'weak', 'no')
    """
    word = bucket(snr, SNR_THRESHOLDS)
    if n_inverted > 0 and word in ("yes", "moderate"):
        return INVERTED_CAP
    return word


def thresholds_doc() -> dict[str, Any]:
    """The cut points of both verdicts, as written into every report."""
    return {
        "paper_verdict": {"figure": "separation_ratio", "cuts": dict(PAPER_THRESHOLDS), "else": "no",
                          "source": "seeds/000 Table 24 (MSE 0.089 no, RankNet 0.341 weak, ApproxNDCG 0.523 "
                                    "moderate, ListNet 0.847 yes; 'above 0.8')"},
        "verdict": {"figure": "advantage_snr", "cuts": dict(SNR_THRESHOLDS), "else": "no",
                    "inverted_cap": INVERTED_CAP,
                    "source": "Cohen's d effect sizes (0.2 small, 0.5 medium, 0.8 large) between adjacent grades"},
    }
