"""How much usable signal a reward gives GRPO: pure NumPy figures over the groups of one step.

GRPO samples ``G`` completions per prompt (a *group*) and pushes each by its **advantage**, the
reward minus its group's mean, divided by the group's standard deviation (TRL's
``scale_rewards="group"``: ``A_i = (r_i - mean_g) / (std_g + 1e-4)``, ``std_g`` the sample std
with Bessel's correction). Whether that push is signal or noise can only be told against some
notion of quality that is not the reward itself; here it is a **held-out judge**: a scorer that
was not the reward, scoring the same completions.

For each group and each pair ``i < j`` of its completions whose judge scores differ, let
``x_ij = (A_i - A_j) * sign(J_i - J_j)``: the advantage difference the reward puts between the
two, counted positive when it points the way the judge does. Over every such pair of a step
(or a run):

* :func:`advantage_snr`: ``mean(x) / std(x)`` (population std) -- the **advantage
  signal-to-noise ratio**. The signal is the mean push towards the judge-better completion,
  the noise the spread of that push; 0 for a reward whose advantages are unrelated to the
  judge's order, negative for one that pushes the other way. It is scale-free (the
  advantages already are) and is an effect size (Cohen's d of the paired differences): the
  conventional 0.2 / 0.5 / 0.8 read as small / medium / large.
* :func:`judge_agreement`: the share of those pairs that the reward orders as the judge does
  (a reward tie counts 1/2): 0.5 is chance.
* :func:`group_spread`: the mean within-group population std of the rewards, in the reward's
  units. With a reward standardised by its calibration (``normalize_reward``) the unit is the
  reward's std over the validation candidates, so this is the share of the reward's scale
  that separates a group's completions: what the core paper calls score compression, seen on
  the policy's own generations.

The judge is a proxy: a reward that agrees with it has learned what the judge has, which may
share its blind spots (both lexical scorers, say). ``advantage_snr`` says whether the
reward's advantages carry a consistent direction at all, and which; see the README's policy
experiment for the judge used there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradebench.errors import InvalidArgumentError

#: TRL's epsilon in ``(r - mean) / (std + eps)``
STD_EPS = 1e-4


def groups(values: Any, group_size: int) -> np.ndarray:
    """``values`` (consecutive groups of ``group_size``, as GRPO orders a batch) as ``[n_groups, group_size]``.

    Raises:
        InvalidArgumentError: the length is not a multiple of ``group_size`` (or ``group_size < 1``).
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if group_size < 1 or v.size % group_size:
        raise InvalidArgumentError(f"{v.size} values do not form groups of {group_size}")
    return v.reshape(-1, group_size)


def grpo_advantages(rewards: Any, *, scale: str = "group") -> np.ndarray:
    """GRPO's advantages of ``[n_groups, G]`` rewards (TRL 1.12): centred per group, divided by the
    group's sample std + :data:`STD_EPS` (``scale="group"``) or not (``"none"``).

        >>> grpo_advantages([[1.0, 3.0]]).round(4).tolist()
        [[-0.7071, 0.7071]]
    """
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 2:
        raise InvalidArgumentError(f"rewards must be [n_groups, group_size], got shape {r.shape}")
    centred = r - r.mean(axis=1, keepdims=True)
    if scale == "none":
        return centred
    if scale != "group":
        raise InvalidArgumentError(f"scale must be 'group' or 'none', got {scale!r}")
    std = r.std(axis=1, ddof=1, keepdims=True) if r.shape[1] > 1 else np.zeros((r.shape[0], 1))
    return centred / (std + STD_EPS)


def judged_pairs(values: Any, judge: Any) -> tuple[np.ndarray, np.ndarray]:
    """Over each group's pairs ``i < j`` with ``J_i != J_j``: ``(x, agree)``, where
    ``x = (v_i - v_j) * sign(J_i - J_j)`` and ``agree`` is 1, 0.5 or 0 as ``v`` orders the pair
    like the judge, ties it, or not. ``values`` and ``judge`` are ``[n_groups, G]``.

        >>> x, agree = judged_pairs([[0.0, 1.0, 2.0]], [[0.0, 5.0, 5.0]])
        >>> x.tolist(), agree.tolist()
        ([1.0, 2.0], [1.0, 1.0])
    """
    v = np.asarray(values, dtype=np.float64)
    j = np.asarray(judge, dtype=np.float64)
    if v.shape != j.shape or v.ndim != 2:
        raise InvalidArgumentError(f"values {v.shape} and judge {j.shape} must be the same [n_groups, group_size]")
    a, b = np.triu_indices(v.shape[1], k=1)
    direction = np.sign(j[:, a] - j[:, b])
    diff = v[:, a] - v[:, b]
    keep = direction != 0
    x = (diff * direction)[keep]
    agree = np.where(x > 0, 1.0, np.where(x == 0, 0.5, 0.0))
    return x, agree


def advantage_snr(x: Any) -> float:
    """``mean(x) / std(x)`` (population std) of judged advantage differences; NaN with fewer than two
    values or no spread.

        >>> advantage_snr([1.0, 3.0])
        2.0
    """
    v = np.asarray(x, dtype=np.float64)
    if v.size < 2:
        return float("nan")
    sd = float(v.std())
    return float(v.mean()) / sd if sd > 0 else float("nan")


def judge_agreement(agree: Any) -> float:
    """Mean of per-pair agreements (NaN for none)."""
    a = np.asarray(agree, dtype=np.float64)
    return float(a.mean()) if a.size else float("nan")


def group_spread(rewards: Any) -> float:
    """Mean within-group population std of ``[n_groups, G]`` rewards.

        >>> group_spread([[0.0, 2.0], [1.0, 1.0]])
        0.5
    """
    r = np.asarray(rewards, dtype=np.float64)
    return float(r.std(axis=1).mean()) if r.size else float("nan")


def _json(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


@dataclass
class SignalLog:
    """The pairs and spreads of every step of a run, for the run-level figures (:meth:`summary`).

    Attributes:
        scale: how the trainer scales advantages (``"group"``, TRL's default, or ``"none"``).
    """

    scale: str = "group"
    x: list[float] = field(default_factory=list)
    agree: list[float] = field(default_factory=list)
    spreads: list[float] = field(default_factory=list)

    def step(self, rewards: np.ndarray, judge: np.ndarray | None) -> dict[str, float | None]:
        """Add one step's ``[n_groups, G]`` rewards (and judge scores); returns its figures:
        ``group_reward_std``, and with a judge ``advantage_snr``, ``judge_agreement``, ``judge_mean``."""
        spread = group_spread(rewards)
        self.spreads.append(spread)
        out: dict[str, float | None] = {"group_reward_std": _json(spread)}
        if judge is not None:
            x, agree = judged_pairs(grpo_advantages(rewards, scale=self.scale), judge)
            self.x.extend(x.tolist())
            self.agree.extend(agree.tolist())
            out.update(advantage_snr=_json(advantage_snr(x)), judge_agreement=_json(judge_agreement(agree)),
                       judge_mean=_json(float(np.mean(judge))))
        return out

    def summary(self) -> dict[str, Any]:
        """The run's figures pooled over every step: ``advantage_snr`` and ``judge_agreement`` over all
        judged pairs (null without a judge), ``group_reward_std`` (mean over steps), ``n_pairs``."""
        x = np.asarray(self.x, dtype=np.float64)
        return {
            "definition": "x = (A_i - A_j) * sign(J_i - J_j) over pairs of a group's completions whose judge scores "
                          "differ (A: GRPO's advantages, J: the judge); advantage_snr = mean(x) / std(x), "
                          "judge_agreement = share of pairs the reward orders as the judge (ties 1/2); "
                          "group_reward_std = mean within-group std of the rewards",
            "advantage_scale": self.scale,
            "advantage_snr": _json(advantage_snr(x)) if x.size else None,
            "judge_agreement": _json(judge_agreement(self.agree)) if self.agree else None,
            "n_pairs": int(x.size),
            "group_reward_std": _json(float(np.mean(self.spreads))) if self.spreads else None,
        }
