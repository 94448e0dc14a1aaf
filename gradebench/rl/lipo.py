"""LiPO: listwise preference optimisation of a causal-LM policy from a benchmark's graded lists.

Liu et al. 2024 (seeds/004): a prompt ``x`` (the query) with ``K`` responses ``y_1..y_K`` (its
candidates) and labels ``psi`` (their grades). Each response gets the score (Eq. 2)

.. math:: s_i = \\beta \\log \\frac{\\pi_\\theta(y_i \\mid x)}{\\pi_{ref}(y_i \\mid x)}

(log-probabilities summed over the response tokens, ``pi_ref`` a frozen copy of the initial
policy) and any registered gradebench ranking loss ``l(psi, s)`` is the objective (Eq. 3):
``lambdaloss`` is LiPO-lambda (the default), ``ranknet`` at ``K = 2`` is DPO (LiPO Eq. 5;
``tests/rl`` checks it against TRL's DPO sigmoid loss), ``listmle`` is DPO-PL, ``hinge`` is
SLiC-norm. No reward model is involved.

Per step the run logs the loss, the log-ratio ``margin`` (mean of ``s_i - s_j`` over pairs
with ``psi_i > psi_j``, TRL's ``rewards/margins``), ``pair_accuracy``, the implicit reward's
mean and std over the candidates, ``kl`` (the exact next-token KL of policy to reference
summed over each candidate's response tokens, mean over candidates) and ``above_reference``:
of the candidates graded above their list's reference candidate (``fair`` tier, else the
median grade), the share whose implicit reward is above the reference's.

With a **judge** (``judge=``: an exported scorer, ``gradebench lipo --judge DIR``) the run
evaluates the policy before and after training on held-out prompts as GRPO does
(:mod:`gradebench.rl.judging`: the first ``judge_queries`` queries of ``judge_split``,
``judge_samples`` completions each, sampled under the run's seed at :data:`JUDGE_SAMPLING`;
``reward_mean`` is null, LiPO has no reward), and adds LiPO's own held-out figure to both:
``pair_accuracy``, the share of the held-out lists' candidate pairs with different grades whose
implicit rewards ``beta * log-ratio`` (against the initial policy) order them as the grades do,
a tie counting 1/2, over every candidate of each list (so runs of any ``list_size`` are judged on
the same pairs), with ``pair_accuracy_by_query``. Before training the log-ratio is 0, so the
``before`` value is 0.5 by construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from gradebench.errors import InvalidArgumentError
from gradebench.experiments.store import DEFAULT_RESULTS_DIR
from gradebench.rl.judging import build_judging, judge_identity
from gradebench.rl.options import LipoOptions, keyword_options
from gradebench.rl.policy import (
    check_policy,
    disable_dropout,
    load_policy,
    load_tokenizer,
    sequence_kl,
    sequence_logps,
    train_quietly,
    use_bf16,
)
from gradebench.rl.prompts import format_prompt, format_response, reference_index, reference_kind, training_lists
from gradebench.rl.runs import PolicyJob, PolicyRunResult, run_job
from gradebench.rl.steplog import StepLog

#: how a judged LiPO run samples its held-out completions (LiPO itself never samples); the values of
#: the GRPO experiment in the README
JUDGE_SAMPLING = {"max_new_tokens": 32, "temperature": 0.7}
#: held-out candidate sequences per forward pass (pair accuracy)
SCORE_BATCH = 64

#: LiPO-lambda, the default loss (:class:`~gradebench.rl.options.LipoOptions`)
DEFAULT_LOSS = LipoOptions.model_fields["loss"].default
LabelColumn = Literal["relevance", "score"]


@keyword_options(LipoOptions)
def lipo(
    policy: str | Path,
    benchmark: Any,
    *,
    out: str | Path,
    results_dir: str | Path = DEFAULT_RESULTS_DIR,
    progress: Any = None,
    options: LipoOptions | dict[str, Any] | None = None,
    judge: str | Path | None = None,
    judge_split: str = "validation",
    judge_queries: int = 200,
    judge_samples: int = 2,
    **kwargs: Any,
) -> PolicyRunResult:
    """Optimise ``policy`` on ``benchmark``'s graded lists with a ranking loss (see the module docstring).

    Args:
        policy: a local causal-LM folder (weights + tokenizer).
        benchmark: a benchmark folder (or an opened :class:`~gradebench.benchmark.lists.Benchmark`).
        out: the run folder (see :mod:`gradebench.rl.runs`).
        results_dir: where the policy record goes.
        progress: ``progress(done, total, message)`` or None.
        options: a :class:`~gradebench.rl.options.LipoOptions` (or a dict of its fields).
        judge: an exported reward folder that scores, but never trains: a held-out evaluation before
            and after training, with the held-out pair accuracy (None: neither).
        judge_split, judge_queries, judge_samples: the held-out prompts (the first
            ``judge_queries`` of ``judge_split``) and the completions sampled per prompt.
        **kwargs: :class:`~gradebench.rl.options.LipoOptions` fields, over ``options``: ``loss`` (a
            registered gradebench loss, ``gradebench losses``), ``loss_params``, ``list_size`` (``K``
            candidates per list, content-drawn, keeping the best and the worst; None keeps every
            candidate), ``beta`` (the scale of the log-ratio scores), ``steps``, ``lr`` (AdamW),
            ``batch_size`` (lists per step), ``split`` (whose lists train), ``labels`` (``relevance``:
            integer grades, or ``score``: graded quality in [0, 1], LiPO's psi), ``max_queries``,
            ``prompt_template``, ``seed`` (the trainer's: the order of the lists).

    Raises:
        InvalidArgumentError: a policy that is no causal LM, a bad option, a loss that refuses
            the labels, or a prompt + candidate longer than the policy's context.
        UnknownNameError: unknown loss or split.
        BenchmarkError: a missing or malformed benchmark.
    """
    from gradebench.losses import get_loss

    opts = LipoOptions.build(options, **kwargs)
    info = check_policy(policy)
    bench, lists = training_lists(benchmark, opts)
    if opts.list_size is not None:
        lists = lists.subsample(opts.list_size, seed=opts.seed)
    spec = get_loss(opts.loss)
    unknown = sorted(set(opts.loss_params) - set(spec.params))
    if unknown:
        raise InvalidArgumentError(f"loss {opts.loss!r} has no parameter(s) {', '.join(unknown)}",
                                   hint=f"its parameters: {', '.join(spec.params) or '(none)'}")
    grades = np.asarray(lists.relevance if opts.labels == "relevance" else lists.score, dtype=np.float64)
    _dry_run_loss(spec, grades, lists.mask, opts.loss_params)
    tokenizer = load_tokenizer(info.path)
    examples = build_examples(lists, grades, tokenizer, template=opts.prompt_template, context=info.context)
    judging = None
    if judge is not None:
        judging = build_judging(judge, bench, template=opts.prompt_template, split=judge_split,
                                queries=judge_queries, samples=judge_samples)
    extras: dict[str, Any] = {}

    def train(trainer_dir: Path, steplog: StepLog) -> Any:
        import time

        model = disable_dropout(load_policy(info.path))
        if judging is not None:
            t = time.perf_counter()
            gen_tokenizer = load_tokenizer(info.path, padding_side="left")
            sampling = {**JUDGE_SAMPLING, "seed": opts.seed}
            before = {**judging.evaluate(model, gen_tokenizer, **sampling),
                      **heldout_pair_accuracy(model, model, tokenizer, judging.held, beta=opts.beta)}
            judge_s = time.perf_counter() - t
        trainer = make_trainer(model, tokenizer, examples, spec=spec, loss_params=opts.loss_params, beta=opts.beta,
                               steps=opts.steps, lr=opts.lr, batch_size=opts.batch_size, seed=opts.seed,
                               output_dir=trainer_dir, steplog=steplog)
        train_quietly(trainer)
        trained = trainer.model
        if judging is not None:
            t = time.perf_counter()
            after = {**judging.evaluate(trained, gen_tokenizer, **sampling),
                     **heldout_pair_accuracy(trained, trainer.ref_model, tokenizer, judging.held, beta=opts.beta)}
            extras["timings"] = {"judge_s": round(judge_s + time.perf_counter() - t, 3)}
            extras["judge"] = {**judge_identity(judging), "anchors": judging.anchors(), "before": before,
                               "after": after}
        return trained

    job = PolicyJob(
        bench=bench, n_queries=lists.n_queries, reference=reference_kind(lists), policy=info, reward=None,
        loss={"name": opts.loss, "params": opts.loss_params}, options=opts, train=train,
        extras=lambda: dict(extras),
        judge=None if judging is None else {**judge_identity(judging), "options": {
            "split": judge_split, "queries": judge_queries, "samples": judge_samples, **JUDGE_SAMPLING}},
        key_map={"loss": "loss", "grad_norm": "grad_norm", "learning_rate": "learning_rate"},
    )
    return run_job(job, out=out, results_dir=results_dir, progress=progress)


def heldout_pair_accuracy(model: Any, ref_model: Any, tokenizer: Any, held: Any, *,
                          beta: float) -> dict[str, Any]:
    """LiPO's implicit rewards ``beta * (log pi - log pi_ref)`` of every candidate of the held-out lists
    (:class:`~gradebench.rl.judging.HeldOut`), and how they order the candidates:
    ``pair_accuracy`` over every pair with different grades (a tie 1/2), pooled over the lists, and
    ``pair_accuracy_by_query`` (null for a list without such a pair). A candidate whose prompt +
    response is longer than the policy's context is left out.
    """
    import torch

    eos = int(tokenizer.eos_token_id)
    context = int(getattr(model.config, "n_positions", 0) or getattr(model.config, "max_position_embeddings", 0)
                  or 10**9)
    seqs, owner = [], []
    for q, (prompt, cands) in enumerate(zip(held.prompts, held.candidates)):
        prompt_ids = list(tokenizer(prompt)["input_ids"])
        for j, c in enumerate(cands):
            seq = prompt_ids + list(tokenizer(format_response(c), add_special_tokens=False)["input_ids"]) + [eos]
            if len(seq) <= context:
                seqs.append((seq, len(prompt_ids)))
                owner.append((q, j))
    scores = np.full(len(seqs), np.nan)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for i in range(0, len(seqs), SCORE_BATCH):
                chunk = seqs[i:i + SCORE_BATCH]
                batch = collate([{"sequences": [s for s, _ in chunk], "starts": [st for _, st in chunk],
                                  "grades": [0.0], "mask": [True], "reference": 0}], pad_id=eos)
                flat, _ = candidate_scores(model, ref_model, batch["input_ids"], batch["attention_mask"],
                                           batch["completion_mask"], beta)
                scores[i:i + len(chunk)] = flat.float().cpu().numpy()
    finally:
        model.train(was_training)
    per_list: list[list[float]] = [[float("nan")] * len(c) for c in held.candidates]
    for (q, j), v in zip(owner, scores):
        per_list[q][j] = float(v)
    correct, total, by_query = 0.0, 0, []
    for s, y in zip(per_list, held.grades):
        s_, y_ = np.asarray(s), np.asarray(y, dtype=np.float64)
        keep = np.isfinite(s_)
        s_, y_ = s_[keep], y_[keep]
        pairs = y_[:, None] > y_[None, :]
        d = (s_[:, None] - s_[None, :])[pairs]
        hits = float((d > 0).sum() + 0.5 * (d == 0).sum())
        correct, total = correct + hits, total + int(d.size)
        by_query.append(round(hits / d.size, 6) if d.size else None)
    return {"pair_accuracy": round(correct / total, 6) if total else None, "pair_accuracy_by_query": by_query}


def _dry_run_loss(spec: Any, grades: np.ndarray, mask: np.ndarray, params: dict[str, Any]) -> None:
    """Call the loss once on zero scores, so labels it refuses fail before anything is written."""
    import torch

    spec(torch.zeros(grades.shape, dtype=torch.float64), torch.as_tensor(grades),
         mask=torch.as_tensor(mask), **params)


def build_examples(lists: Any, grades: np.ndarray, tokenizer: Any, *, template: str,
                   context: int) -> list[dict[str, Any]]:
    """One training example per list: every real candidate as prompt + response + EOS token ids.

    Each example holds ``sequences`` (token ids), ``starts`` (index of each sequence's first
    response token), ``grades``, ``mask`` (``[list_size]``, real candidates) and ``reference``
    (the list's reference candidate, :func:`~gradebench.rl.prompts.reference_index`).

    Raises:
        InvalidArgumentError: a prompt + candidate longer than ``context``.
    """
    tiers = lists.extra.get("tier")
    eos = int(tokenizer.eos_token_id)
    examples = []
    for q in range(lists.n_queries):
        prompt_ids = tokenizer(format_prompt(lists.queries[q], template))["input_ids"]
        if len(prompt_ids) >= context:
            raise InvalidArgumentError(
                f"the prompt of query {lists.query_ids[q]} is {len(prompt_ids)} tokens, longer than the policy's "
                f"context of {context}", hint="use a policy with a longer context, or a benchmark with shorter queries")
        sequences, starts = [], []
        for j in np.flatnonzero(lists.mask[q]):
            response = tokenizer(format_response(lists.candidates[q, j]), add_special_tokens=False)["input_ids"]
            seq = list(prompt_ids) + list(response) + [eos]
            if len(seq) > context:
                raise InvalidArgumentError(
                    f"query {lists.query_ids[q]} with candidate {lists.candidate_ids[q, j]} is {len(seq)} tokens, "
                    f"more than the policy's context of {context}",
                    hint="use a policy with a longer context, or a benchmark with shorter texts")
            sequences.append(seq)
            starts.append(len(prompt_ids))
        examples.append({
            "sequences": sequences, "starts": starts, "grades": grades[q].tolist(), "mask": lists.mask[q].tolist(),
            "reference": reference_index(grades[q], lists.mask[q], None if tiers is None else tiers[q]),
        })
    return examples


def collate(examples: Sequence[dict[str, Any]], *, pad_id: int) -> dict[str, Any]:
    """Lists -> tensors: the real candidates' sequences flattened row-major, right-padded.

    Returns ``input_ids``/``attention_mask``/``completion_mask`` ``[n_candidates, T]`` and
    ``grades``/``list_mask`` ``[batch, list_size]``, ``reference`` ``[batch]``.
    """
    import torch

    width = max(len(e["mask"]) for e in examples)
    seqs = [(s, start) for e in examples for s, start in zip(e["sequences"], e["starts"])]
    length = max(len(s) for s, _ in seqs)
    ids = torch.full((len(seqs), length), pad_id, dtype=torch.long)
    attention = torch.zeros((len(seqs), length), dtype=torch.long)
    completion = torch.zeros((len(seqs), length), dtype=torch.long)
    for i, (s, start) in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
        attention[i, : len(s)] = 1
        completion[i, start : len(s)] = 1
    grades = torch.zeros((len(examples), width), dtype=torch.float32)
    mask = torch.zeros((len(examples), width), dtype=torch.bool)
    for b, e in enumerate(examples):
        grades[b, : len(e["grades"])] = torch.tensor(e["grades"], dtype=torch.float32)
        mask[b, : len(e["mask"])] = torch.tensor(e["mask"], dtype=torch.bool)
    # the sequences are the real candidates in row-major order, so they fill ``mask``'s True cells in order;
    # a list's candidates are stored left-aligned (Lists pads on the right), which keeps both orders equal
    reference = torch.tensor([e["reference"] for e in examples], dtype=torch.long)
    return {"input_ids": ids, "attention_mask": attention, "completion_mask": completion, "grades": grades,
            "list_mask": mask, "reference": reference}


def candidate_scores(model: Any, ref_model: Any, input_ids: Any, attention_mask: Any, completion_mask: Any,
                     beta: float) -> tuple[Any, Any]:
    """``(beta * (log pi - log pi_ref), kl)`` per sequence: ``[N]`` scores with gradient, ``[N]`` KL without."""
    import torch

    logits = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
    with torch.no_grad():
        ref_logits = ref_model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
        ref_logps = sequence_logps(ref_logits, input_ids, completion_mask)
        kl = sequence_kl(logits.detach(), ref_logits, completion_mask)
    return beta * (sequence_logps(logits, input_ids, completion_mask) - ref_logps), kl


def lipo_stats(scores: np.ndarray, grades: np.ndarray, mask: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """Batch statistics of LiPO's scores (see the module docstring); NaN where undefined.

    Args:
        scores: ``[batch, list_size]`` implicit rewards ``beta * log-ratio``.
        grades: ``[batch, list_size]`` labels.
        mask: ``[batch, list_size]`` real candidates.
        reference: ``[batch]`` index of each list's reference candidate.
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(grades, dtype=np.float64)
    m = np.asarray(mask, dtype=bool)
    pairs = (y[:, :, None] > y[:, None, :]) & m[:, :, None] & m[:, None, :]
    diffs = (s[:, :, None] - s[:, None, :])[pairs]
    rows = np.arange(len(s))
    ref = np.asarray(reference, dtype=np.int64)
    better = (y > y[rows, ref][:, None]) & m
    above = (s > s[rows, ref][:, None])[better]
    valid = s[m]
    nan = float("nan")
    return {
        "margin": float(diffs.mean()) if diffs.size else nan,
        "pair_accuracy": float((diffs > 0).mean()) if diffs.size else nan,
        "reward_mean": float(valid.mean()) if valid.size else nan,
        "reward_std": float(valid.std()) if valid.size else nan,
        "above_reference": float(above.mean()) if above.size else nan,
    }


def make_trainer(model: Any, tokenizer: Any, examples: list[dict[str, Any]], *, spec: Any, loss_params: dict[str, Any],
                 beta: float, steps: int, lr: float, batch_size: int, seed: int, output_dir: Path,
                 steplog: StepLog) -> Any:
    """A ``transformers.Trainer`` subclass whose ``compute_loss`` is LiPO's (reference = frozen copy of ``model``)."""
    import copy

    import torch
    from transformers import Trainer, TrainingArguments

    class LiPOTrainer(Trainer):
        """``compute_loss``: scores = beta * log-ratio of each candidate, loss = the ranking loss of the lists."""

        def __init__(self, *args: Any, ref_model: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.ref_model = ref_model.to(self.args.device)
            self.model_accepts_loss_kwargs = False  # the loss is a mean over lists, not over tokens

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):  # noqa: ANN001, ANN201
            flat, kl = candidate_scores(model, self.ref_model, inputs["input_ids"], inputs["attention_mask"],
                                        inputs["completion_mask"], beta)
            mask = inputs["list_mask"]
            scores = torch.zeros(mask.shape, dtype=flat.dtype, device=flat.device).masked_scatter(mask, flat)
            grades = inputs["grades"].to(flat.dtype)
            loss = spec(scores, grades, mask=mask, **loss_params)
            stats = lipo_stats(scores.detach().float().cpu().numpy(), grades.cpu().numpy(), mask.cpu().numpy(),
                               inputs["reference"].cpu().numpy())
            steplog.add(kl=float(kl.float().mean()), **stats)
            return (loss, {"scores": scores}) if return_outputs else loss

    ref_model = copy.deepcopy(model).eval()
    for p in ref_model.parameters():
        p.requires_grad_(False)
    args = TrainingArguments(
        output_dir=str(output_dir), max_steps=int(steps), per_device_train_batch_size=int(batch_size),
        learning_rate=float(lr), logging_steps=1, save_strategy="no", report_to="none", seed=int(seed),
        data_seed=int(seed), bf16=use_bf16(), remove_unused_columns=False, disable_tqdm=True,
        dataloader_num_workers=0, dataloader_pin_memory=use_bf16(),
    )
    pad_id = int(tokenizer.eos_token_id)
    trainer = LiPOTrainer(model=model, args=args, train_dataset=_ListDataset(examples),
                          data_collator=lambda batch: collate(batch, pad_id=pad_id), ref_model=ref_model,
                          callbacks=[steplog.callback()])
    return trainer


class _ListDataset:
    """A map-style dataset over precomputed examples (what ``Trainer`` iterates)."""

    def __init__(self, examples: list[dict[str, Any]]) -> None:
        self.examples = examples

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.examples[i]
