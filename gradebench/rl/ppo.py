"""PPO: ``trl.experimental.ppo.PPOTrainer`` (TRL 1.12) on a benchmark's queries, rewarded by a gradebench reward.

* policy: the causal LM; reference: a second, frozen load of it; value model:
  ``AutoModelForSequenceClassification.from_pretrained(policy, num_labels=1)`` (the policy's
  backbone with a new scalar head, TRL's recipe);
* reward model: :func:`~gradebench.rl.rewards.token_reward_model`, a
  :class:`~gradebench.reward.ppo.PolicyTokenReward` that decodes the policy's tokens and scores
  ``(query, response)`` with any gradebench reward (see that module for the interface TRL's
  ``get_reward`` expects);
* prompts: one per query of ``split``, tokenized and left-padded; responses stop at EOS
  (``stop_token="eos"``) or after ``max_completion_length`` tokens (options:
  :class:`~gradebench.rl.options.PpoOptions`); a policy that pads with
  EOS (GPT-2) gets a separate pad token for training (:func:`ppo_tokenizer`);
* precision: TRL's config defaults to bf16, which CPUs refuse: bf16 only on a CUDA GPU with bf16.

Per step the run logs TRL's KL (``objective/kl``, summed over response tokens), policy and
value losses, the reward's mean and std over the step's responses and ``above_reference``.
The core paper's setting (seeds/000): GPT-2 medium, ``lr 1.4e-5``, KL coefficient 0.1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gradebench.errors import InvalidArgumentError
from gradebench.experiments.store import DEFAULT_RESULTS_DIR
from gradebench.rl.options import PpoOptions, keyword_options
from gradebench.rl.policy import check_policy, load_policy, train_quietly, use_bf16
from gradebench.rl.prompts import prompt_items, reference_kind, tokenized_prompts, training_lists
from gradebench.rl.rewards import resolve_reward, token_reward_model
from gradebench.rl.runs import PolicyJob, PolicyRunResult, run_job
from gradebench.rl.steplog import StepLog


@keyword_options(PpoOptions)
def ppo(
    policy: str | Path,
    reward: Any,
    benchmark: Any,
    *,
    out: str | Path,
    results_dir: str | Path = DEFAULT_RESULTS_DIR,
    progress: Any = None,
    options: PpoOptions | dict[str, Any] | None = None,
    **kwargs: Any,
) -> PolicyRunResult:
    """Optimise ``policy`` with PPO against ``reward`` on ``benchmark``'s queries.

    Args:
        policy, reward, benchmark, out, results_dir, progress: as in :func:`~gradebench.rl.grpo.grpo`.
        options: a :class:`~gradebench.rl.options.PpoOptions` (or a dict of its fields).
        **kwargs: :class:`~gradebench.rl.options.PpoOptions` fields, over ``options``: ``steps``
            (PPO updates: one rollout of ``batch_size`` prompts each, ``ppo_epochs`` epochs on it),
            ``batch_size``, ``lr`` (policy and value head), ``kl_coef`` (the per-token KL penalty in
            the reward), ``ppo_epochs``, ``max_completion_length`` (TRL's ``response_length``),
            ``temperature``, ``normalize_reward`` (standardise an exported reward with its stored
            calibration; not for a callable), ``split``, ``max_queries``, ``prompt_template``, ``seed``.
    """
    opts = PpoOptions.build(options, **kwargs)
    info = check_policy(policy)
    _check_value_head(info)
    bench, lists = training_lists(benchmark, opts)
    if lists.n_queries < opts.batch_size:
        raise InvalidArgumentError(f"--batch-size {opts.batch_size} is more than the {lists.n_queries} queries of "
                                   f"split {opts.split}", hint=f"use --batch-size {lists.n_queries} or fewer")
    items = prompt_items(lists, opts.prompt_template)
    tokenizer = ppo_tokenizer(info.path)
    prompt_ids = tokenized_prompts(items, tokenizer, context=info.context, reserve=opts.max_completion_length)
    source = resolve_reward(reward, normalize=opts.normalize_reward)

    def train(trainer_dir: Path, steplog: StepLog) -> Any:
        from datasets import Dataset
        from trl.experimental.ppo import PPOConfig, PPOTrainer

        args = PPOConfig(
            output_dir=str(trainer_dir), total_episodes=opts.steps * opts.batch_size,
            per_device_train_batch_size=opts.batch_size, num_mini_batches=1,
            local_rollout_forward_batch_size=opts.batch_size, response_length=opts.max_completion_length,
            temperature=opts.temperature, learning_rate=opts.lr, kl_coef=opts.kl_coef,
            num_ppo_epochs=opts.ppo_epochs, stop_token="eos", num_sample_generations=0, logging_steps=1,
            save_strategy="no", report_to="none", seed=opts.seed, data_seed=opts.seed, bf16=use_bf16(),
            disable_tqdm=True,
        )
        model = load_policy(info.path)
        trainer = PPOTrainer(
            args=args, processing_class=tokenizer, model=model, ref_model=load_policy(info.path),
            reward_model=token_reward_model(source, tokenizer, items, prompt_ids, steplog),
            train_dataset=Dataset.from_dict({"input_ids": prompt_ids}), value_model=_value_model(info.path),
            callbacks=[steplog.callback()],
        )
        train_quietly(trainer)
        return trainer.accelerator.unwrap_model(trainer.model).policy

    job = PolicyJob(
        bench=bench, n_queries=lists.n_queries, reference=reference_kind(lists), policy=info, reward=source.ref,
        loss=None, options=opts, train=train,
        key_map={"loss": "loss/policy_avg", "value_loss": "loss/value_avg", "kl": "objective/kl",
                 "entropy": "objective/entropy", "rlhf_reward": "objective/rlhf_reward", "learning_rate": "lr"},
    )
    return run_job(job, out=out, results_dir=results_dir, progress=progress)


#: PPO's padding token when the policy has none of its own (or pads with EOS); never embedded, never saved
PPO_PAD = "<|gradebench-ppo-pad|>"


def ppo_tokenizer(path: str) -> Any:
    """The policy's tokenizer for PPO: left padding, and a pad token distinct from EOS.

    TRL's PPO treats every pad id as padding (masked, and replaced by 0 before any model
    call), so with ``pad == eos`` a generated EOS would be masked out of the policy loss and
    the policy could never learn to stop. When the policy pads with EOS or has no pad token, a
    dedicated pad token is added; its id (past the vocabulary) never reaches an embedding, and
    the run saves the policy's original tokenizer, not this one.
    """
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None or tokenizer.pad_token_id == tokenizer.eos_token_id:
        tokenizer.add_special_tokens({"pad_token": PPO_PAD})
    return tokenizer


def _check_value_head(info: Any) -> None:
    """Refuse, before anything is written, a policy whose architecture has no sequence-classification head."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES

    if info.model_type not in MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES:
        raise InvalidArgumentError(
            f"PPO's value model cannot be built from a {info.model_type} policy (no sequence-classification head)",
            path=info.path, hint="use `gradebench grpo`, which needs no value model")


def _value_model(path: str) -> Any:
    """The value model: the policy's backbone with a new scalar head (``num_labels=1``)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    try:
        return AutoModelForSequenceClassification.from_pretrained(path, num_labels=1, dtype=torch.float32)
    except (ValueError, KeyError) as e:
        raise InvalidArgumentError(f"cannot build PPO's value model from the policy ({e})", path=path,
                                   hint="PPO needs a policy architecture with a sequence-classification head; "
                                        "use `gradebench grpo` instead") from None
