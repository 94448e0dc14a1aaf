"""GRPO: TRL's ``GRPOTrainer`` on a benchmark's queries, rewarded by a gradebench reward.

The prompt dataset is a ``datasets.Dataset`` with one row per query of ``split``: ``prompt``
(the query through :data:`~gradebench.rl.prompts.PROMPT_TEMPLATE`), ``query`` and ``query_id``
(TRL hands the extra columns to the reward function). The reward is a plain function
(:func:`~gradebench.rl.rewards.grpo_reward_function`), so TRL never treats a scorer as a model.
Per step the run logs TRL's loss and KL (``beta > 0``) with the reward's mean and std over the
step's generations and ``above_reference``: the share of generations the reward ranks above
their query's reference candidate (``fair`` tier, else the median grade).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

from gradebench.rl.options import check_common, check_generation, positive_int
from gradebench.rl.policy import check_policy, check_prompt_lengths, load_policy, load_tokenizer, use_bf16
from gradebench.rl.prompts import PROMPT_TEMPLATE, check_template, prompt_items, reference_kind
from gradebench.rl.rewards import grpo_reward_function, resolve_reward
from gradebench.rl.runs import PolicyJob, PolicyRunResult, run_job
from gradebench.rl.steplog import StepLog


def grpo(
    policy: str | Path,
    reward: Any,
    benchmark: Any,
    *,
    out: str | Path,
    steps: int = 100,
    num_generations: int = 4,
    batch_prompts: int = 2,
    lr: float = 1e-6,
    kl_coef: float = 0.04,
    max_completion_length: int = 64,
    temperature: float = 1.0,
    split: str = "train",
    max_queries: int | None = None,
    prompt_template: str = PROMPT_TEMPLATE,
    normalize_reward: bool = True,
    seed: int = 42,
    results_dir: str | Path = "leaderboard/results",
    progress: Any = None,
) -> PolicyRunResult:
    """Optimise ``policy`` with GRPO against ``reward`` on ``benchmark``'s queries.

    Args:
        policy: a local causal-LM folder.
        reward: an exported reward folder or training run (``gradebench.reward.load``), or a
            callable ``reward(prompts, completions) -> list[float]``.
        benchmark: a benchmark folder or an opened benchmark.
        out: the run folder.
        steps: optimiser steps (one generation round each).
        num_generations: completions per prompt (the group GRPO normalises over).
        batch_prompts: prompts per step (``batch_prompts * num_generations`` completions).
        lr: learning rate.
        kl_coef: GRPO's ``beta`` (KL to the reference policy); 0 drops the reference and the KL log.
        max_completion_length: most new tokens per completion.
        temperature: sampling temperature.
        normalize_reward: standardise an exported reward with its stored calibration
            (``(raw - mean) / std``); does not apply to a callable.
        split, max_queries, prompt_template, seed, results_dir, progress: as in :func:`~gradebench.rl.lipo.lipo`.
    """
    from gradebench.benchmark.lists import open_benchmark

    check_common(steps=steps, lr=lr, batch=batch_prompts, batch_flag="--batch-prompts", max_queries=max_queries)
    check_generation(max_completion_length=max_completion_length, temperature=temperature, kl_coef=kl_coef)
    positive_int("--num-generations", num_generations, minimum=2,
                 hint="GRPO normalises rewards within each prompt's group of generations")
    check_template(prompt_template)
    info = check_policy(policy)
    bench = open_benchmark(benchmark)
    lists = bench.lists(split)
    if max_queries is not None:
        lists = lists.head(max_queries)
    items = prompt_items(lists, prompt_template)
    tokenizer = load_tokenizer(info.path, padding_side="left")
    check_prompt_lengths([len(tokenizer(it.prompt)["input_ids"]) for it in items], [it.query_id for it in items],
                         context=info.context, reserve=max_completion_length)
    source = resolve_reward(reward, normalize=normalize_reward)
    options = {"steps": int(steps), "num_generations": int(num_generations), "batch_prompts": int(batch_prompts),
               "lr": float(lr), "kl_coef": float(kl_coef), "max_completion_length": int(max_completion_length),
               "temperature": float(temperature), "max_queries": max_queries, "prompt_template": prompt_template,
               "precision": "bf16" if use_bf16() else "fp32"}

    def train(trainer_dir: Path, steplog: StepLog) -> Any:
        from datasets import Dataset
        from transformers.trainer_callback import PrinterCallback, ProgressCallback
        from trl import GRPOConfig, GRPOTrainer

        dataset = Dataset.from_dict({k: [it.as_row()[k] for it in items] for k in ("prompt", "query", "query_id")})
        args = GRPOConfig(
            output_dir=str(trainer_dir), max_steps=int(steps), per_device_train_batch_size=int(batch_prompts *
                                                                                              num_generations),
            num_generations=int(num_generations), max_completion_length=int(max_completion_length),
            temperature=float(temperature), learning_rate=float(lr), beta=float(kl_coef), logging_steps=1,
            save_strategy="no", report_to="none", seed=int(seed), data_seed=int(seed), bf16=use_bf16(),
            disable_tqdm=True, gradient_checkpointing=False, dataloader_num_workers=0, disable_dropout=True,
            dataloader_pin_memory=use_bf16(),
        )
        model = load_policy(info.path)
        trainer = GRPOTrainer(model=model, reward_funcs=[grpo_reward_function(source, items, steplog)], args=args,
                              train_dataset=dataset, processing_class=tokenizer, callbacks=[steplog.callback()])
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
        with contextlib.redirect_stdout(sys.stderr):
            trainer.train()
        return trainer.accelerator.unwrap_model(trainer.model)

    job = PolicyJob(
        method="grpo", bench=bench, split=split, n_queries=lists.n_queries, reference=reference_kind(lists),
        policy=info, reward=source.ref, loss=None, options=options, seed=int(seed), steps=int(steps),
        key_map={"loss": "loss", "kl": "kl", "entropy": "entropy", "grad_norm": "grad_norm",
                 "completion_length": "completions/mean_length", "learning_rate": "learning_rate"},
        train=train,
    )
    return run_job(job, out=out, results_dir=results_dir, progress=progress)
