"""Trained scorers as RL rewards: export a run, load it as a callable, and judge its fitness.

* :func:`export_reward` (``gradebench export-reward``): a run (or the best run of a benchmark
  by a leaderboard metric) as a self-contained folder with ``gradebench-reward.json``;
* :func:`load`: a reward or run folder as ``reward(prompts, completions, **columns) ->
  list[float]``, usable directly in TRL's ``GRPOTrainer``/``RLOOTrainer`` ``reward_funcs``;
  :class:`PolicyTokenReward` wraps it as a ``torch.nn.Module`` over policy token ids (PPO: the
  reward model of ``gradebench ppo`` too);
* :func:`reward_report` (``gradebench reward-report``): Table 24 of the core paper (score
  spread, separation ratio, "PPO viable?") plus scale-free figures (grade eta^2, advantage
  SNR, NDCG@5) and a verdict.

Example::

    from gradebench import reward
    reward.export_reward("runs/ce-listnet", out="rewards/ce-listnet")
    fn = reward.load("rewards/ce-listnet", normalize=True)
    fn(prompts=["premise: ... hypothesis: ... label: entailment"], completions=["because ..."])
    reward.reward_report("rewards/ce-listnet", benchmark="gradebench-out/esnli-human/3b08965c0209").verdict

Submodules import torch/transformers only where needed (:class:`PolicyTokenReward` imports torch).
"""

from __future__ import annotations

from gradebench._lazy import by_module, lazy_attributes

_LAZY = by_module({
    "gradebench.reward.export": ("export_reward", "select_best_run", "ExportResult"),
    "gradebench.reward.loading": ("load", "RewardFn"),
    "gradebench.reward.ppo": ("PolicyTokenReward",),
    "gradebench.reward.report": ("reward_report", "RewardReport"),
    "gradebench.reward.meta": ("RewardError", "REWARD_FILE", "REWARD_SCHEMA_VERSION"),
})

__all__ = list(_LAZY)


__getattr__ = lazy_attributes(__name__, _LAZY, globals())
