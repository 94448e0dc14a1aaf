"""Per-step logs of a policy run: what the reward and the loss saw, merged into the trainer's log.

Each method feeds a :class:`StepLog` while it trains -- GRPO's reward function and PPO's
reward model call :meth:`StepLog.add_rewards` with the rewards of the generations and of their
queries' reference candidates, LiPO's ``compute_loss`` calls :meth:`StepLog.add` -- and the
trainer's ``on_log`` event (every step: ``logging_steps=1``) turns what is pending into one
history line: ``step``, ``loss``, ``reward_mean``, ``reward_std``, ``kl``, ``above_reference``
plus the method's extras, appended to ``history.jsonl`` as it happens.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: the columns every method logs (null where a method has no value)
CORE_KEYS = ("loss", "reward_mean", "reward_std", "kl", "above_reference")
#: history columns that a mean over the last steps does not describe
NOT_SUMMARIZED = ("step", "learning_rate")


def finite(x: Any) -> float | None:
    """A finite float, or None (JSON has no NaN)."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def above_fraction(rewards: Sequence[float], reference_rewards: Sequence[float]) -> float:
    """Share of generations whose reward is strictly above their query's reference candidate's."""
    r = np.asarray(rewards, dtype=np.float64)
    ref = np.asarray(reference_rewards, dtype=np.float64)
    if r.shape != ref.shape:
        raise ValueError(f"rewards {r.shape} and reference rewards {ref.shape} differ in shape")
    return float(np.mean(r > ref)) if r.size else float("nan")


class StepLog:
    """Collects per-step values and writes one history line per trainer log.

    Args:
        path: ``history.jsonl`` to append to (None: keep lines in memory only).
        key_map: history key -> trainer log key (e.g. ``{"kl": "objective/kl"}``).
        total_steps: for the progress callback.
        progress: ``progress(done, total, message)`` or None.
    """

    def __init__(self, path: Path | None, *, key_map: dict[str, str], total_steps: int,
                 progress: Callable[[int, int, str], None] | None = None) -> None:
        self.path = path
        self.key_map = dict(key_map)
        self.total_steps = int(total_steps)
        self.progress = progress
        self.lines: list[dict[str, Any]] = []
        self._values: dict[str, list[float]] = defaultdict(list)
        self._rewards: list[float] = []
        self._above: list[float] = []

    def add(self, **values: float | None) -> None:
        """Pending values (averaged over the calls since the last log; None/NaN skipped)."""
        for key, value in values.items():
            f = finite(value)
            if f is not None:
                self._values[key].append(f)

    def add_rewards(self, rewards: Sequence[float], reference_rewards: Sequence[float]) -> None:
        """Rewards of some generations and of their queries' reference candidates (same order)."""
        r = [float(x) for x in rewards]
        ref = [float(x) for x in reference_rewards]
        above_fraction(r, ref)  # shape check
        self._rewards.extend(r)
        self._above.extend(float(a > b) for a, b in zip(r, ref))

    def flush(self, step: int, logs: dict[str, Any]) -> dict[str, Any]:
        """The history line of ``step`` from the pending values and the trainer's ``logs``."""
        line: dict[str, Any] = {"step": int(step)}
        for key, src in self.key_map.items():
            line[key] = finite(logs.get(src))
        if self._rewards:
            r = np.asarray(self._rewards, dtype=np.float64)
            line["reward_mean"] = finite(r.mean())
            line["reward_std"] = finite(r.std())
            line["above_reference"] = finite(np.mean(self._above))
            line["n_generations"] = int(r.size)
        for key, values in self._values.items():
            line[key] = finite(np.mean(values))
        for key in CORE_KEYS:
            line.setdefault(key, None)
        self._values.clear()
        self._rewards.clear()
        self._above.clear()
        return line

    def on_trainer_log(self, step: int, logs: dict[str, Any]) -> None:
        if any(k.startswith("train_") for k in logs):  # the final summary, not a step
            return
        line = self.flush(step, logs)
        self.lines.append(line)
        if self.path is not None:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(line, sort_keys=True, allow_nan=False) + "\n")
        if self.progress is not None:
            shown = ", ".join(f"{k} {line[k]:.3g}" for k in ("loss", "reward_mean", "kl")
                              if isinstance(line.get(k), float))
            self.progress(min(int(step), self.total_steps), self.total_steps, f"step {step}: {shown}")

    def callback(self) -> Any:
        """A ``transformers.TrainerCallback`` that forwards the trainer's logs here."""
        from transformers import TrainerCallback

        log = self

        class _StepLogCallback(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001, ANN201
                log.on_trainer_log(state.global_step, dict(logs or {}))

        return _StepLogCallback()


def summarize(lines: list[dict[str, Any]], *, window: int = 10) -> dict[str, float | None]:
    """Mean of each numeric history column (but the step and learning rate) over the last ``window``
    steps; None where never logged."""
    tail = lines[-window:] if window > 0 else lines
    keys = sorted({k for line in tail for k in line if k not in NOT_SUMMARIZED})
    out: dict[str, float | None] = {}
    for key in keys:
        values = [line[key] for line in tail if isinstance(line.get(key), (int, float)) and not isinstance(
            line.get(key), bool)]
        out[key] = finite(np.mean(values)) if values else None
    for key in CORE_KEYS:
        out.setdefault(key, None)
    return out


#: the history columns a run's trajectory follows, when logged
TRAJECTORY_KEYS = ("reward_mean", "kl", "judge_mean", "advantage_snr", "completion_length")


def _bin_means(values: list[float | None], n_bins: int) -> list[float | None]:
    """Means of ``n_bins`` consecutive, near-equal slices of ``values`` (None values skipped)."""
    edges = np.linspace(0, len(values), n_bins + 1).round().astype(int)
    out: list[float | None] = []
    for a, b in zip(edges[:-1], edges[1:]):
        chunk = [v for v in values[a:b] if v is not None]
        out.append(finite(np.mean(chunk)) if chunk else None)
    return out


def trajectory(lines: list[dict[str, Any]], *, n_bins: int = 10, reach: float = 0.9) -> dict[str, Any] | None:
    """A run's curves in ``n_bins`` consecutive slices of its steps, and when its reward got there.

    * ``bins``: per key of :data:`TRAJECTORY_KEYS` that was logged, the mean of each slice
      (deciles of the run by default);
    * ``reward_start`` / ``reward_end``: the first and last slice of ``reward_mean``;
      ``reward_gain``: their difference;
    * ``steps_to_reach``: the first step at which the trailing mean of ``reward_mean`` over one
      slice's worth of steps reaches ``reward_start + reach * reward_gain`` (null when the gain
      is not positive) -- the run's convergence step at ``reach`` (0.9) of its gain;
    * ``end_change``: the last slice minus the one before, over ``reward_gain`` -- near 0 when
      the reward has levelled off by the end, near ``1 / n_bins`` or more while it still climbs.

    None for fewer than ``n_bins`` steps.

        >>> t = trajectory([{"step": i + 1, "reward_mean": min(i, 10) / 10} for i in range(20)], n_bins=4)
        >>> t["reward_start"], t["reward_end"], t["steps_to_reach"], t["end_change"]
        (0.2, 1.0, 13, 0.0)
    """
    if len(lines) < n_bins:
        return None
    steps = [int(line["step"]) for line in lines]
    bins = {key: _bin_means([finite(line.get(key)) for line in lines], n_bins) for key in TRAJECTORY_KEYS
            if any(finite(line.get(key)) is not None for line in lines)}
    rewards = bins.get("reward_mean")
    out: dict[str, Any] = {"n_bins": n_bins, "steps": steps[-1], "bins": bins, "reach": reach, "reward_start": None,
                           "reward_end": None, "reward_gain": None, "steps_to_reach": None, "end_change": None}
    if not rewards or rewards[0] is None or rewards[-1] is None:
        return out
    start, end = rewards[0], rewards[-1]
    gain = end - start
    out.update(reward_start=start, reward_end=end, reward_gain=finite(gain))
    if gain > 0:
        width = max(1, len(lines) // n_bins)
        values = [finite(line.get("reward_mean")) for line in lines]
        target = start + reach * gain
        for i in range(width - 1, len(values)):
            window = [v for v in values[i - width + 1:i + 1] if v is not None]
            if window and np.mean(window) >= target:
                out["steps_to_reach"] = steps[i]
                break
        if rewards[-2] is not None:
            out["end_change"] = finite((rewards[-1] - rewards[-2]) / gain)
    return out
