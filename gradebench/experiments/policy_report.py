"""Policy runs side by side: one row per judged run, and paired comparisons of two rewards across seeds.

Reads policy records (:mod:`gradebench.experiments.policy_record`, v2: with ``judge``,
``signal`` and ``trajectory``) and renders what the README's policy experiment shows:

* :func:`policy_rows` -- one flat row per run (reward ``scorer + loss``, seed, the reward's
  start and end, its convergence step, whether it levelled off (:func:`late_rate`,
  :func:`converged`), KL, the advantage signal, and the held-out judge's figures before and
  after);
* :func:`paired` -- for one figure, the per-seed differences between two rewards' runs of the
  same seed (same data order, same held-out sampling seed), their mean, a paired t interval
  and how many seeds favour the first reward. With three seeds the t interval has 2 degrees
  of freedom (``t = 4.30``) and a sign count can at best reach a two-sided p of 0.25: it shows
  direction and size, not significance;
* :func:`runs_table`, :func:`paired_table`, :func:`curves_table` (the mean curve per reward,
  by decile of the steps) -- as Markdown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: the figures :func:`paired` compares by default: README name, and which way is better (+1 higher,
#: -1 lower, 0 neither: the reward gain is in each reward's own units, KL is a cost and a budget)
PAIRED_FIGURES: dict[str, tuple[str, int]] = {
    "judge_gain": ("judge mean, after - before", 1),
    "judge_above_reference_after": ("judge: share above the reference candidate, after", 1),
    "best_f1_after": ("word F1 with the human explanation, after", 1),
    "distinct_2_after": ("distinct bigrams, after", 1),
    "reward_gain": ("reward gain (own calibrated units)", 0),
    "steps_to_reach": ("steps to 90% of the reward gain", -1),
    "advantage_snr": ("advantage SNR (judge-signed)", 1),
    "judge_agreement": ("judge agreement of the reward's order", 1),
    "group_reward_std": ("within-group reward std", 1),
    "kl_end": ("KL, last decile", 0),
}


def reward_label(record: Any) -> str:
    """``"scorer + loss"`` of a record's reward (its source's folder name when it does not say)."""
    reward = record.reward
    if reward is None:
        return "none"
    if reward.scorer:
        return f"{reward.scorer} + {reward.loss}" if reward.loss else reward.scorer
    return Path(reward.source).name


#: a run "converged" when its reward rose and, over the last half of its steps, climbed at most this share
#: of its average rate (:func:`converged`)
CONVERGED_MAX_LATE_RATE = 0.5


def late_rate(trajectory: dict[str, Any] | None) -> float | None:
    """How fast the reward still climbs at the end of the run, as a share of its average climb.

    With ``m_1..m_n`` the reward's mean per slice of the steps (``trajectory["bins"]["reward_mean"]``,
    deciles by default) and ``gain = m_n - m_1``: the least-squares slope of ``m`` over the last
    ``ceil(n / 2)`` slices, divided by the average rise per slice ``gain / (n - 1)``. 1: the reward
    rises as fast at the end as on average (a straight climb); 0: flat; negative: falling. None
    when the gain is not positive or fewer than 2 late slices are defined.

        >>> late_rate({"bins": {"reward_mean": [0, 1, 2, 3]}})      # a straight climb
        1.0
        >>> late_rate({"bins": {"reward_mean": [0, 2, 2, 2]}})      # up in the first slice, then flat
        0.0
    """
    rewards = _get(trajectory, "bins", "reward_mean")
    if not rewards or len(rewards) < 3 or rewards[0] is None or rewards[-1] is None:
        return None
    n = len(rewards)
    gain = float(rewards[-1]) - float(rewards[0])
    if not gain > 0:
        return None
    late = [(i, float(v)) for i, v in enumerate(rewards) if i >= n // 2 and v is not None]
    if len(late) < 2:
        return None
    x = np.array([i for i, _ in late], dtype=np.float64)
    y = np.array([v for _, v in late], dtype=np.float64)
    slope = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    return slope / (gain / (n - 1))


def converged(trajectory: dict[str, Any] | None, *, max_late_rate: float = CONVERGED_MAX_LATE_RATE) -> bool | None:
    """Whether the run's reward converged within its steps: it rose (the last slice above the first)
    and levelled off (``|late_rate| <= max_late_rate``: over the last half of the steps it climbed,
    or fell, at most half as fast as on average). None when the record has no reward trajectory.

    The slices' means are noisy (on the committed GRPO runs a decile's mean has a standard error of
    about a tenth of the gain), so a rate near the cut is a coin toss: read ``late_rate`` beside it.

        >>> converged({"bins": {"reward_mean": [0, 2, 2, 2]}}), converged({"bins": {"reward_mean": [0, 1, 2, 3]}})
        (True, False)
        >>> converged({"bins": {"reward_mean": [2, 1, 1, 1]}})      # the reward fell: never converged
        False
    """
    rewards = _get(trajectory, "bins", "reward_mean")
    if not rewards or rewards[0] is None or rewards[-1] is None:
        return None
    rate = late_rate(trajectory)
    return rate is not None and abs(rate) <= max_late_rate


def _get(d: dict[str, Any] | None, *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def run_row(record: Any) -> dict[str, Any]:
    """One judged policy record as a flat row (None where the record lacks a figure)."""
    t = record.trajectory or {}
    j = record.judge
    before, after = (j.before, j.after) if j is not None else ({}, {})
    signal = record.signal
    kl = _get(t, "bins", "kl")
    row = {
        "reward": reward_label(record), "seed": record.seed, "steps": record.n_steps, "id": record.id,
        "reward_start": t.get("reward_start"), "reward_end": t.get("reward_end"), "reward_gain": t.get("reward_gain"),
        "steps_to_reach": t.get("steps_to_reach"), "end_change": t.get("end_change"),
        "late_rate": late_rate(record.trajectory), "converged": converged(record.trajectory),
        "kl_end": kl[-1] if kl else None,
        "group_reward_std": getattr(signal, "group_reward_std", None),
        "advantage_snr": getattr(signal, "advantage_snr", None),
        "judge_agreement": getattr(signal, "judge_agreement", None),
        "judge": j.scorer if j is not None else None,
        "fit_s": record.timings.get("fit_s"),
        "bins": t.get("bins") or {},
    }
    for key in ("judge_mean", "judge_above_reference", "judge_above_best", "reward_mean", "best_f1", "distinct_2",
                "mean_words"):
        row[f"{key}_before"], row[f"{key}_after"] = before.get(key), after.get(key)
    b, a = row["judge_mean_before"], row["judge_mean_after"]
    row["judge_gain"] = None if a is None or b is None else a - b
    return row


def policy_rows(results_dir: str | Path, *, benchmark: str, method: str = "grpo") -> list[dict[str, Any]]:
    """The rows of the judged ``method`` records of ``benchmark`` under ``results_dir``, by reward then seed."""
    from gradebench.experiments.store import list_policy_records

    records = [r for r in list_policy_records(results_dir, benchmark=benchmark)
               if r.method == method and r.judge is not None]
    return sorted((run_row(r) for r in records), key=lambda row: (row["reward"], row["seed"]))


@dataclass(frozen=True)
class PairedSeeds:
    """Per-seed differences ``a - b`` of one figure between two rewards' runs of the same seeds."""

    figure: str
    a: str
    b: str
    seeds: tuple[int, ...]
    a_values: tuple[float, ...]
    b_values: tuple[float, ...]
    diffs: tuple[float, ...]
    mean_diff: float
    ci: tuple[float, float] | None
    a_better: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"figure": self.figure, "a": self.a, "b": self.b, "seeds": list(self.seeds),
                "a_values": list(self.a_values), "b_values": list(self.b_values), "diffs": list(self.diffs),
                "mean_diff": self.mean_diff, "ci": None if self.ci is None else list(self.ci),
                "a_better": self.a_better}


def t_interval(diffs: Sequence[float], level: float = 0.95) -> tuple[float, float] | None:
    """The paired t interval ``mean +- t(level, n-1) * sd / sqrt(n)`` (None for fewer than 2 values).

        >>> [round(x, 3) for x in t_interval([1.0, 2.0, 3.0])]
        [-0.484, 4.484]
    """
    from scipy import stats

    d = np.asarray(diffs, dtype=np.float64)
    if d.size < 2:
        return None
    half = float(stats.t.ppf(0.5 + level / 2, d.size - 1)) * float(d.std(ddof=1)) / math.sqrt(d.size)
    return float(d.mean() - half), float(d.mean() + half)


def paired(rows: Sequence[dict[str, Any]], figure: str, a: str, b: str, *, better: int = 1) -> PairedSeeds | None:
    """``figure`` of reward ``a``'s runs minus reward ``b``'s, seed by seed (seeds both have a value for).

    ``a_better`` counts the seeds where ``a`` is higher (``better=1``) or lower (``-1``: e.g. fewer
    steps); None for ``better=0``. None when no seed has both.
    """
    by = {(r["reward"], r["seed"]): r.get(figure) for r in rows}
    seeds = sorted({s for (name, s) in by if name == a} & {s for (name, s) in by if name == b})
    seeds = [s for s in seeds if by[(a, s)] is not None and by[(b, s)] is not None]
    if not seeds:
        return None
    av = [float(by[(a, s)]) for s in seeds]
    bv = [float(by[(b, s)]) for s in seeds]
    diffs = [x - y for x, y in zip(av, bv)]
    count = None if better == 0 else sum(d * better > 0 for d in diffs)
    return PairedSeeds(figure=figure, a=a, b=b, seeds=tuple(seeds), a_values=tuple(av), b_values=tuple(bv),
                       diffs=tuple(diffs), mean_diff=float(np.mean(diffs)), ci=t_interval(diffs), a_better=count)


def _f(x: Any, digits: int = 3) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{digits}f}"


def _arrow(before: Any, after: Any, digits: int = 3) -> str:
    return f"{_f(before, digits)} → {_f(after, digits)}"


def runs_table(rows: Sequence[dict[str, Any]]) -> str:
    """One Markdown row per run."""
    lines = [
        "| reward | seed | reward start → end | steps to 90% | KL, last decile | within-group reward std "
        "| advantage SNR | judge agreement | judge mean before → after | judge above reference | F1 with human "
        "| distinct bigrams | words |",
        "|---|---:|---|---:|---:|---:|---:|---:|---|---|---|---|---|",
    ]
    for r in rows:
        steps = "–" if r["steps_to_reach"] is None else str(r["steps_to_reach"])
        lines.append(
            f"| {r['reward']} | {r['seed']} | {_arrow(r['reward_start'], r['reward_end'], 2)} | {steps} "
            f"| {_f(r['kl_end'], 2)} | {_f(r['group_reward_std'])} | {_f(r['advantage_snr'])} "
            f"| {_f(r['judge_agreement'])} | {_arrow(r['judge_mean_before'], r['judge_mean_after'])} "
            f"| {_arrow(r['judge_above_reference_before'], r['judge_above_reference_after'])} "
            f"| {_arrow(r['best_f1_before'], r['best_f1_after'])} "
            f"| {_arrow(r['distinct_2_before'], r['distinct_2_after'], 2)} "
            f"| {_arrow(r['mean_words_before'], r['mean_words_after'], 1)} |")
    return "\n".join(lines)


def paired_table(rows: Sequence[dict[str, Any]], a: str, b: str,
                 figures: dict[str, tuple[str, int]] | None = None) -> str:
    """One Markdown row per figure: both rewards' means, the per-seed differences, their mean and t interval
    (``figures``: name -> (shown name, which way is better), default :data:`PAIRED_FIGURES`)."""
    lines = [f"| figure | {a} | {b} | difference per seed | mean difference [95% t interval] | seeds where {a} is "
             "better |", "|---|---:|---:|---|---|---:|"]
    for figure, (name, better) in (figures or PAIRED_FIGURES).items():
        p = paired(rows, figure, a, b, better=better)
        if p is None:
            continue
        digits = 0 if figure == "steps_to_reach" else 3
        seeds = ", ".join(f"{_f(d, digits)} ({s})" for s, d in zip(p.seeds, p.diffs))
        ci = "–" if p.ci is None else f"[{_f(p.ci[0], digits)}, {_f(p.ci[1], digits)}]"
        lines.append(f"| {name} | {_f(float(np.mean(p.a_values)), digits)} | {_f(float(np.mean(p.b_values)), digits)} "
                     f"| {seeds} | {_f(p.mean_diff, digits)} {ci} "
                     f"| {'–' if p.a_better is None else f'{p.a_better} of {len(p.seeds)}'} |")
    return "\n".join(lines)


def curves_table(rows: Sequence[dict[str, Any]], keys: Sequence[str] = ("reward_mean", "judge_mean", "kl")) -> str:
    """Per reward and curve, the mean over its runs (seeds) of each decile of the steps, as Markdown."""
    rewards = sorted({r["reward"] for r in rows})
    n = max((len(v) for r in rows for v in r["bins"].values()), default=0)
    if n == 0:
        return ""
    lines = ["| reward | curve | " + " | ".join(f"{i + 1}" for i in range(n)) + " |",
             "|---|---|" + "---:|" * n]
    for reward in rewards:
        runs = [r for r in rows if r["reward"] == reward]
        for key in keys:
            series = [r["bins"].get(key) for r in runs if r["bins"].get(key)]
            if not series:
                continue
            cells = []
            for i in range(n):
                vals = [s[i] for s in series if i < len(s) and s[i] is not None]
                cells.append(_f(float(np.mean(vals)) if vals else None, 2))
            lines.append(f"| {reward} | {key} ({len(series)} seeds) | " + " | ".join(cells) + " |")
    return "\n".join(lines)
