"""GRPO: TRL's ``GRPOTrainer`` on a benchmark's queries, rewarded by a gradebench reward.

The prompt dataset is a ``datasets.Dataset`` with one row per query of ``split``: ``prompt``
(the query through :data:`~gradebench.rl.prompts.PROMPT_TEMPLATE`), ``query`` and ``query_id``
(TRL hands the extra columns to the reward function). The reward is a plain function
(:func:`~gradebench.rl.rewards.grpo_reward_function`), so TRL never treats a scorer as a model.
Per step the run logs TRL's loss and KL (``beta > 0``) with the reward's mean and std over the
step's generations and ``above_reference``: the share of generations the reward ranks above
their query's reference candidate (``fair`` tier, else the median grade), and
``group_reward_std``, the mean within-group spread of the rewards (:mod:`gradebench.rl.signal`).

With a **judge** (``judge=``: an exported scorer that is not the reward) the run also logs per
step the judge's mean score of the generations, the advantage signal-to-noise ratio and the
judge agreement (:mod:`gradebench.rl.signal`), and scores completions of held-out prompts
before and after training (:mod:`gradebench.rl.judging`); the record's ``judge`` and
``signal`` sections hold both.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from gradebench.experiments.store import DEFAULT_RESULTS_DIR
from gradebench.rl.judging import judge_identity
from gradebench.rl.options import GrpoOptions, keyword_options
from gradebench.rl.policy import check_policy, load_policy, load_tokenizer, train_quietly, use_bf16
from gradebench.rl.prompts import prompt_items, reference_kind, tokenized_prompts, training_lists
from gradebench.rl.rewards import grpo_reward_function, resolve_reward
from gradebench.rl.runs import PolicyJob, PolicyRunResult, run_job
from gradebench.rl.signal import SignalLog
from gradebench.rl.steplog import StepLog


@keyword_options(GrpoOptions)
def grpo(
    policy: str | Path,
    reward: Any,
    benchmark: Any,
    *,
    out: str | Path,
    results_dir: str | Path = DEFAULT_RESULTS_DIR,
    progress: Any = None,
    options: GrpoOptions | dict[str, Any] | None = None,
    judge: str | Path | None = None,
    judge_split: str = "validation",
    judge_queries: int = 200,
    judge_samples: int = 2,
    **kwargs: Any,
) -> PolicyRunResult:
    """Optimise ``policy`` with GRPO against ``reward`` on ``benchmark``'s queries.

    Args:
        policy: a local causal-LM folder.
        reward: an exported reward folder or training run (``gradebench.reward.load``), or a
            callable ``reward(prompts, completions) -> list[float]``.
        benchmark: a benchmark folder or an opened benchmark.
        out: the run folder.
        results_dir, progress: as in :func:`~gradebench.rl.lipo.lipo`.
        options: a :class:`~gradebench.rl.options.GrpoOptions` (or a dict of its fields).
        judge: an exported reward folder that scores, but never trains: per-step signal figures and
            a held-out evaluation before and after training (None: neither). It must not be the
            reward itself.
        judge_split, judge_queries, judge_samples: the held-out prompts (the first
            ``judge_queries`` of ``judge_split``) and the completions sampled per prompt.
        **kwargs: :class:`~gradebench.rl.options.GrpoOptions` fields, over ``options``: ``steps``
            (one generation round each), ``num_generations`` (the group GRPO normalises over),
            ``batch_prompts`` (``batch_prompts * num_generations`` completions per step), ``lr``,
            ``kl_coef`` (GRPO's ``beta``; 0 drops the reference and the KL log),
            ``max_completion_length``, ``temperature``, ``normalize_reward`` (standardise an exported
            reward with its stored calibration; not for a callable), ``split``, ``max_queries``,
            ``prompt_template``, ``seed``.
    """
    opts = GrpoOptions.build(options, **kwargs)
    info = check_policy(policy)
    bench, lists = training_lists(benchmark, opts)
    items = prompt_items(lists, opts.prompt_template)
    tokenizer = load_tokenizer(info.path, padding_side="left")
    tokenized_prompts(items, tokenizer, context=info.context, reserve=opts.max_completion_length)
    source = resolve_reward(reward, normalize=opts.normalize_reward)
    judging = _judging(judge, source, bench, opts, split=judge_split, queries=judge_queries, samples=judge_samples)
    signal = SignalLog(scale="group")
    extras: dict[str, Any] = {}

    def train(trainer_dir: Path, steplog: StepLog) -> Any:
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer

        dataset = Dataset.from_dict({k: [it.as_row()[k] for it in items] for k in ("prompt", "query", "query_id")})
        args = GRPOConfig(
            output_dir=str(trainer_dir), max_steps=opts.steps,
            per_device_train_batch_size=opts.batch_prompts * opts.num_generations,
            num_generations=opts.num_generations, max_completion_length=opts.max_completion_length,
            temperature=opts.temperature, learning_rate=opts.lr, beta=opts.kl_coef, logging_steps=1,
            save_strategy="no", report_to="none", seed=opts.seed, data_seed=opts.seed, bf16=use_bf16(),
            disable_tqdm=True, gradient_checkpointing=False, dataloader_num_workers=0, disable_dropout=True,
            dataloader_pin_memory=use_bf16(),
        )
        model = load_policy(info.path)
        sampling = {"max_new_tokens": opts.max_completion_length, "temperature": opts.temperature, "seed": opts.seed}
        t = time.perf_counter()
        before = judging.evaluate(model, tokenizer, **sampling) if judging is not None else None
        judge_s = time.perf_counter() - t
        reward_fn = grpo_reward_function(source, items, steplog, signal=signal, group_size=opts.num_generations,
                                         judge=None if judging is None else judging.source.fn)
        trainer = GRPOTrainer(model=model, reward_funcs=[reward_fn], args=args,
                              train_dataset=dataset, processing_class=tokenizer, callbacks=[steplog.callback()])
        train_quietly(trainer)
        trained = trainer.accelerator.unwrap_model(trainer.model)
        extras["signal"] = signal.summary()
        if judging is not None:
            t = time.perf_counter()
            after = judging.evaluate(trained, tokenizer, **sampling)
            extras["timings"] = {"judge_s": round(judge_s + time.perf_counter() - t, 3)}
            extras["judge"] = {**judge_ref, "anchors": judging.anchors(), "before": before, "after": after}
        return trained

    judge_ref = None if judging is None else judge_identity(judging)
    job = PolicyJob(
        bench=bench, n_queries=lists.n_queries, reference=reference_kind(lists), policy=info, reward=source.ref,
        loss=None, options=opts, train=train, extras=lambda: dict(extras),
        judge=None if judge_ref is None else {**judge_ref, "options": {
            "split": judge_split, "queries": judge_queries, "samples": judge_samples}},
        key_map={"loss": "loss", "kl": "kl", "entropy": "entropy", "grad_norm": "grad_norm",
                 "completion_length": "completions/mean_length", "learning_rate": "learning_rate"},
    )
    return run_job(job, out=out, results_dir=results_dir, progress=progress)


def _judging(judge: str | Path | None, source: Any, bench: Any, opts: GrpoOptions, *, split: str, queries: int,
             samples: int) -> Any:
    """The held-out :class:`~gradebench.rl.judging.Judging` of ``judge`` (None without one), checked
    before anything is written (:func:`~gradebench.rl.judging.build_judging`)."""
    if judge is None:
        return None
    from gradebench.rl.judging import build_judging

    return build_judging(judge, bench, template=opts.prompt_template, split=split, queries=queries,
                         samples=samples, reward=source)
