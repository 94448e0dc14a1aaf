"""Rewards for GRPO and PPO: any ``reward(prompts, completions) -> list[float]`` in the two shapes TRL takes.

* :func:`resolve_reward` turns ``--reward`` into a callable: a path goes through
  ``gradebench.reward.load`` (an exported scorer folder or a training run), a callable is used
  as is. The reward is always called with the **raw query** as the prompt (what the scorer was
  trained on), never the policy's templated prompt.
* :func:`grpo_reward_function` wraps it as a plain function for ``GRPOTrainer(reward_funcs=...)``
  -- never as a model object, so TRL does not feed a BERT-style scorer the policy's tokens.
* :func:`token_reward_model` is the reward model ``trl.experimental.ppo.PPOTrainer`` needs: the
  one PPO reward adaptor, :class:`gradebench.reward.ppo.PolicyTokenReward` (also named
  ``TokenRewardModel`` here), which serves TRL's ``get_reward`` by decoding each row (the prompt
  is found by its token ids, the rest is the response) and scoring ``(query, response)``. So any
  exported scorer, whatever its tokenizer, can serve as PPO's reward model.

Both shapes also score each query's reference candidate once (cached) and report to the
:class:`~gradebench.rl.steplog.StepLog` which generations the reward ranks above it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gradebench.errors import GradebenchError, InvalidArgumentError, RunError
from gradebench.hashing import sha256_json
from gradebench.rl.prompts import PromptItem
from gradebench.rl.signal import SignalLog
from gradebench.rl.steplog import StepLog

RewardFn = Callable[..., Sequence[float]]


@dataclass(frozen=True)
class RewardSource:
    """A reward callable and its identity (``{"source", "fingerprint"}``, part of the run fingerprint)."""

    fn: RewardFn
    ref: dict[str, Any]


def resolve_reward(reward: str | Path | RewardFn, *, normalize: bool = True) -> RewardSource:
    """``--reward`` as a :class:`RewardSource`.

    A path is loaded with ``gradebench.reward.load(path, normalize=normalize)`` (an exported
    reward folder or a finished training run; folders of other gradebench versions are refused
    there). Its fingerprint covers the exported run's fingerprint, the calibration and
    ``normalize``. A callable is used as is (``normalize`` does not apply); give it a
    ``fingerprint`` attribute to tell reward versions apart in run fingerprints (else its
    qualified name stands for it).

    Raises:
        InvalidArgumentError: neither a path nor a callable, or this gradebench lacks ``gradebench.reward``.
        GradebenchError: whatever ``gradebench.reward.load`` raises for a bad folder.
    """
    if isinstance(reward, (str, Path)):
        try:
            import gradebench.reward as reward_module
        except ModuleNotFoundError as e:
            if e.name != "gradebench.reward":
                raise
            raise InvalidArgumentError(
                "this gradebench has no reward export (gradebench.reward is missing)",
                hint="update gradebench, or call the Python API with a reward callable") from None
        p = Path(reward)
        fn = reward_module.load(p, normalize=bool(normalize))
        meta = getattr(fn, "metadata", None)
        meta = meta if isinstance(meta, dict) else {}
        return RewardSource(fn=fn, ref={"source": str(p.resolve()), "fingerprint": _reward_fingerprint(fn, p),
                                        "normalize": bool(normalize), "scorer": (meta.get("scorer") or {}).get("name"),
                                        "loss": (meta.get("loss") or {}).get("name")})
    if callable(reward):
        name = getattr(reward, "__qualname__", None) or type(reward).__qualname__
        fp = getattr(reward, "fingerprint", None)
        return RewardSource(fn=reward, ref={"source": f"callable:{name}", "fingerprint": fp if isinstance(fp, str)
                                            else None, "normalize": None, "scorer": None, "loss": None})
    raise InvalidArgumentError(f"reward must be a folder or a callable, got {type(reward).__name__}",
                               hint="--reward DIR: a folder written by `gradebench export-reward` or a training run")


def _reward_fingerprint(fn: Any, path: Path) -> str | None:
    """The loaded reward's identity: its run fingerprint, calibration and normalisation, else the folder's files."""
    fp = getattr(fn, "fingerprint", None)
    if isinstance(fp, str):
        return fp
    meta = getattr(fn, "metadata", None)
    run = meta.get("run") if isinstance(meta, dict) else None
    if isinstance(run, dict) and isinstance(run.get("run_fingerprint"), str):
        return sha256_json({"run_fingerprint": run["run_fingerprint"], "scorer": meta.get("scorer"),
                            "calibration": meta.get("calibration"), "normalize": getattr(fn, "normalize", None)})
    from gradebench.rl.policy import folder_fingerprint

    return folder_fingerprint(path) if path.is_dir() else None


def call_reward(fn: RewardFn, queries: Sequence[str], completions: Sequence[str]) -> list[float]:
    """``fn(prompts=queries, completions=completions)`` checked: one finite float per completion."""
    try:
        out = fn(prompts=list(queries), completions=list(completions))
    except GradebenchError:
        raise
    except Exception as e:  # noqa: BLE001 - a user reward can raise anything
        raise RunError(f"the reward failed on {len(completions)} completions ({type(e).__name__}: {e})",
                       hint="check the reward with a few (query, text) pairs") from e
    try:
        values = np.asarray([float("nan") if v is None else float(v) for v in out], dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise RunError(f"the reward did not return numbers ({type(e).__name__}: {e})",
                       hint="a reward returns one float per (prompt, completion)") from None
    if values.shape != (len(completions),):
        raise RunError(f"the reward returned {values.size} values for {len(completions)} completions",
                       hint="a reward returns one float per (prompt, completion)")
    if not np.isfinite(values).all():
        raise RunError("the reward returned a NaN or infinite value", hint="check the reward's scorer")
    return values.tolist()


class ReferenceRewards:
    """The reward of each query's reference candidate, computed once per query."""

    def __init__(self, fn: RewardFn, items: Sequence[PromptItem]) -> None:
        self.fn = fn
        self.items = {item.query_id: item for item in items}
        self._cache: dict[str, float] = {}

    def get(self, query_ids: Sequence[str]) -> list[float]:
        missing = sorted({q for q in query_ids if q not in self._cache})
        if missing:
            values = call_reward(self.fn, [self.items[q].query for q in missing],
                                 [self.items[q].reference for q in missing])
            self._cache.update(zip(missing, values))
        return [self._cache[q] for q in query_ids]


def grpo_reward_function(source: RewardSource, items: Sequence[PromptItem], steplog: StepLog, *,
                         signal: SignalLog | None = None, group_size: int | None = None,
                         judge: RewardFn | None = None) -> Callable[..., list[float]]:
    """A plain function for ``GRPOTrainer(reward_funcs=[...])``; TRL passes the dataset's
    ``query`` and ``query_id`` columns as keyword arguments.

    With ``signal`` (and ``group_size``, GRPO's ``num_generations``: a call's completions come in
    consecutive groups of that size) each call also logs :meth:`SignalLog.step`'s figures
    (``group_reward_std``; with a ``judge``, which scores the same completions, ``advantage_snr``,
    ``judge_agreement`` and ``judge_mean``: :mod:`gradebench.rl.signal`)."""
    references = ReferenceRewards(source.fn, items)
    if signal is not None and (group_size is None or group_size < 1):
        raise InvalidArgumentError("a signal log needs the group size (num_generations)")

    def gradebench_reward(prompts: list[Any], completions: list[Any], *, query: list[str], query_id: list[str],
                          **_: Any) -> list[float]:
        texts = [_text(c) for c in completions]
        rewards = call_reward(source.fn, query, texts)
        steplog.add_rewards(rewards, references.get([str(q) for q in query_id]))
        if signal is not None and group_size is not None:
            from gradebench.rl.signal import groups

            judged = None if judge is None else groups(call_reward(judge, query, texts), group_size)
            steplog.add(**signal.step(groups(rewards, group_size), judged))
        return rewards

    return gradebench_reward


def _text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion.strip()
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):  # conversational
        return str(completion[-1].get("content", "")).strip()
    return str(completion).strip()


def token_reward_model(source: RewardSource, tokenizer: Any, items: Sequence[PromptItem],
                       prompt_ids: Sequence[Sequence[int]], steplog: StepLog) -> Any:
    """PPO's reward model for ``source``: a :class:`~gradebench.reward.ppo.PolicyTokenReward` that
    finds each row's prompt by its token ids, scores ``(raw query, decoded response)`` with
    :func:`call_reward` and reports the rewards and their queries' reference rewards to ``steplog``.

    Args:
        tokenizer: the policy's tokenizer (decodes the responses).
        items: the prompts, in the order of ``prompt_ids``.
        prompt_ids: each prompt's token ids exactly as the PPO dataset holds them.
    """
    from gradebench.reward.ppo import PolicyTokenReward

    references = ReferenceRewards(source.fn, items)

    def checked(prompts: list[str], completions: list[str]) -> list[float]:
        return call_reward(source.fn, prompts, completions)

    def observe(indices: list[int], rewards: list[float]) -> None:
        steplog.add_rewards(rewards, references.get([items[i].query_id for i in indices]))

    return PolicyTokenReward(checked, tokenizer, prompt_ids=prompt_ids, queries=[it.query for it in items],
                             observe=observe)


def __getattr__(name: str) -> Any:
    """``TokenRewardModel``: the PPO reward adaptor, :class:`gradebench.reward.ppo.PolicyTokenReward`
    (looked up on use: it imports torch)."""
    if name == "TokenRewardModel":
        from gradebench.reward.ppo import PolicyTokenReward

        return PolicyTokenReward
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
