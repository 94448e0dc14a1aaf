"""``pretrain_policy``: a small GPT-2 policy trained from scratch on a benchmark's best explanations.

A policy for GRPO/PPO needs to write something close to an explanation before a reward can
steer it; this trains one in a few CPU minutes, with nothing from the Hub:

1. **corpus** -- one example per query of ``split`` (default ``train``): the query through the
   prompt template GRPO and PPO use (:data:`~gradebench.rl.prompts.PROMPT_TEMPLATE`), then
   the list's **best candidate** (highest grade; ties: the first in stored order) as the
   response ``" " + candidate``, then EOS. On a human-written benchmark such as ``esnli-human``
   that candidate is the pair's own human explanation.
2. **tokenizer** -- a byte-level BPE (``tokenizers``) trained on the corpus's prompts and
   responses, ``vocab_size`` tokens with ``<|endoftext|>`` (BOS, EOS, UNK) and ``<pad>``.
   Prompt and response are tokenized separately and concatenated, as the policy meets them
   in generation (a prompt, then new tokens).
3. **model** -- ``GPT2LMHeadModel`` (``layers``, ``dim``, ``heads``, ``context`` positions,
   ``dropout``) initialised under ``seed``, trained with ``transformers.Trainer`` for ``steps``
   steps of ``batch_size`` examples: AdamW, linear warmup then decay, gradient clipping 1.0,
   data order from ``seed``. The loss covers the response and EOS (``loss_on="response"``) or
   every token (``"all"``). Examples longer than ``context`` are skipped (counted).
4. **evaluation** -- the mean response-token loss (nats) and perplexity on the first
   :data:`EVAL_QUERIES` queries of the validation split (when the benchmark has one), and
   greedy samples for its first :data:`N_SAMPLES` prompts.

Run folder (:data:`PRETRAIN_RUN`, the protocol of :mod:`gradebench.experiments.runs`)::

    pretrain-config.json  written first: benchmark, split, options, run fingerprint
    tokenizer/            the trained tokenizer (published at the start; a resumed run reuses it)
    checkpoints/          the Trainer's checkpoint-<step>/ every ``save_steps`` steps
    policy/               the trained model + tokenizer (save_pretrained), published atomically
    pretrain-run.json     written last: the :class:`PretrainResult`; the run is complete iff it exists

``OUT/policy`` is a plain Hugging Face causal-LM folder, and ``gradebench grpo|ppo|lipo
--policy OUT`` accept ``OUT`` itself (:func:`gradebench.rl.policy.check_policy` looks into
``policy/``). A killed run is continued by the same command from its last complete
checkpoint; the same options on the same machine give the same weights, byte for byte.

The run fingerprint is sha256 over the benchmark fingerprint, the split, every option, the
seed and the gradebench version.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gradebench._version import __version__
from gradebench.errors import InvalidArgumentError
from gradebench.experiments.runs import RunClaim, RunLayout, claim, from_final, read_final
from gradebench.hashing import sha256_json
from gradebench.rl.options import PretrainOptions, keyword_options
from gradebench.rl.policy import RUN_POLICY_DIR
from gradebench.rl.prompts import best_index, format_prompt, format_response

RUN_CONFIG = "pretrain-config.json"
RUN_JSON = "pretrain-run.json"
POLICY_DIR = RUN_POLICY_DIR
TOKENIZER_DIR = "tokenizer"
CHECKPOINT_DIR = "checkpoints"
RUN_SCHEMA_VERSION = 1
#: the tokenizer's special tokens: BOS = EOS = UNK, and a pad token of its own
EOS, PAD = "<|endoftext|>", "<pad>"
#: validation queries whose response loss the result reports
EVAL_QUERIES = 500
#: greedy samples in the result (the first validation prompts), of at most this many new tokens
N_SAMPLES = 3
SAMPLE_TOKENS = 48
#: a log line every this many steps at most (see :func:`log_every`)
LOG_EVERY = 10
#: ``gradebench pretrain-policy``: resumable from the Trainer's checkpoints
PRETRAIN_RUN = RunLayout(what="policy pretraining run", command="gradebench pretrain-policy",
                         redo="run `gradebench pretrain-policy` again", config=RUN_CONFIG, final=RUN_JSON,
                         schema_version=RUN_SCHEMA_VERSION, resumable=True, outputs=(POLICY_DIR, TOKENIZER_DIR),
                         scratch=(CHECKPOINT_DIR,), checkpoints=CHECKPOINT_DIR)


@dataclass
class PretrainResult:
    """What :func:`pretrain_policy` returns, ``--json`` prints and ``pretrain-run.json`` holds."""

    run_dir: str
    run_fingerprint: str
    policy_out: str
    policy_fingerprint: str
    benchmark: str
    benchmark_fingerprint: str
    benchmark_path: str
    split: str
    options: dict[str, Any]
    seed: int
    corpus: dict[str, Any]
    model: dict[str, Any]
    n_steps: int
    train_loss: float | None
    validation: dict[str, Any] | None
    samples: list[dict[str, str]]
    history: list[dict[str, Any]]
    timings: dict[str, float] = field(default_factory=dict)
    cached: bool = False
    resumed_from: int | None = None
    gradebench_version: str = __version__
    schema_version: int = RUN_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- corpus and tokenizer -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Example:
    """One training text: a query's prompt and its best candidate as the response."""

    query_id: str
    prompt: str
    response: str


def corpus_examples(lists: Any, template: str) -> list[Example]:
    """One :class:`Example` per query of ``lists``, in list order."""
    out = []
    for q in range(lists.n_queries):
        j = best_index(lists.relevance[q], lists.mask[q])
        out.append(Example(query_id=str(lists.query_ids[q]), prompt=format_prompt(lists.queries[q], template),
                           response=format_response(lists.candidates[q, j])))
    return out


def train_tokenizer(texts: list[str], *, vocab_size: int, context: int) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on ``texts`` (deterministic: the
    trainer breaks count ties by the pair itself, so the same texts give the same merges)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=[EOS, PAD],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOS, eos_token=EOS, unk_token=EOS,
                                   pad_token=PAD, model_max_length=context)


def encode(examples: list[Example], tokenizer: Any, *, context: int, loss_on: str) -> tuple[list[dict[str, Any]], int]:
    """Token ids and labels of each example (prompt, response, EOS), and how many exceed ``context``.

    ``labels`` are the ids with -100 on the prompt when ``loss_on == "response"``.
    """
    prompts = tokenizer([e.prompt for e in examples], add_special_tokens=False)["input_ids"]
    responses = tokenizer([e.response for e in examples], add_special_tokens=False)["input_ids"]
    rows, skipped = [], 0
    for p, r in zip(prompts, responses):
        ids = list(p) + list(r) + [tokenizer.eos_token_id]
        if len(ids) > context:
            skipped += 1
            continue
        labels = ids if loss_on == "all" else [-100] * len(p) + ids[len(p):]
        rows.append({"input_ids": ids, "labels": list(labels)})
    return rows, skipped


class PadCollator:
    """Right-pads a batch of encoded rows: ``input_ids`` (pad id), ``attention_mask``, ``labels`` (-100)."""

    def __init__(self, pad_id: int) -> None:
        self.pad_id = int(pad_id)

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        width = max(len(r["input_ids"]) for r in rows)
        ids = [r["input_ids"] + [self.pad_id] * (width - len(r["input_ids"])) for r in rows]
        mask = [[1] * len(r["input_ids"]) + [0] * (width - len(r["input_ids"])) for r in rows]
        labels = [r["labels"] + [-100] * (width - len(r["labels"])) for r in rows]
        return {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask), "labels": torch.tensor(labels)}


# -- the run -------------------------------------------------------------------------------------------
@keyword_options(PretrainOptions)
def pretrain_policy(
    benchmark: Any,
    *,
    out: str | Path,
    progress: Any = None,
    options: PretrainOptions | dict[str, Any] | None = None,
    **kwargs: Any,
) -> PretrainResult:
    """Train a small GPT-2 policy from scratch on ``benchmark``'s queries and best candidates.

    Args:
        benchmark: a benchmark folder or an opened benchmark.
        out: the run folder (see the module docstring); the policy goes to ``OUT/policy``.
        progress: ``progress(done_steps, total_steps, message)`` or None.
        options: a :class:`~gradebench.rl.options.PretrainOptions` (or a dict of its fields).
        **kwargs: its fields, over ``options``: ``steps``, ``lr``, ``batch_size``, ``layers``, ``dim``,
            ``heads``, ``vocab_size``, ``context``, ``dropout``, ``warmup_steps``, ``weight_decay``,
            ``loss_on``, ``save_steps``, ``split``, ``max_queries``, ``prompt_template``, ``seed``.

    Returns:
        The :class:`PretrainResult` (``cached=True`` when ``out`` holds this run finished).

    Raises:
        InvalidArgumentError: a bad option (naming its flag), an empty split.
        BenchmarkError / UnknownNameError: not a benchmark folder, no such split.
        RunError / RunInUse: ``out`` holds something else, or another process works on it.
    """
    from gradebench.rl.prompts import training_lists

    t0 = time.perf_counter()
    opts = PretrainOptions.build(options, **kwargs)
    bench, lists = training_lists(benchmark, opts)
    if lists.n_queries == 0:
        raise InvalidArgumentError(f"split {opts.split!r} of {bench.name} has no queries", path=bench.path,
                                   hint="pretrain on another --split")
    examples = corpus_examples(lists, opts.prompt_template)
    recorded = opts.recorded()
    fingerprint = sha256_json({"kind": "pretrain-policy", "benchmark_fingerprint": bench.fingerprint,
                               "split": opts.split, "options": recorded, "seed": opts.seed,
                               "gradebench_version": __version__})
    run = claim(out, fingerprint, PRETRAIN_RUN)
    with run:
        if run.done:
            result = from_final(PretrainResult, run.finished or {}, run.run_dir, PRETRAIN_RUN)
            result.cached = True
            return result
        return _run(run, bench, examples, opts, progress, t0)


def read_pretrain_run(run_dir: str | Path) -> PretrainResult:
    """The :class:`PretrainResult` of a finished pretraining run folder."""
    return from_final(PretrainResult, read_final(run_dir, PRETRAIN_RUN), run_dir, PRETRAIN_RUN)


def _run(run: RunClaim, bench: Any, examples: list[Example], opts: PretrainOptions, progress: Any,
         t0: float) -> PretrainResult:
    from gradebench.rl.policy import folder_fingerprint

    run.begin({"benchmark": bench.name, "benchmark_fingerprint": bench.fingerprint, "benchmark_path": str(bench.path),
               "split": opts.split, "options": opts.recorded(), "seed": opts.seed, "gradebench_version": __version__})
    timings: dict[str, float] = {}
    t = time.perf_counter()
    tokenizer = _tokenizer(run, examples, opts)
    rows, skipped = encode(examples, tokenizer, context=opts.context, loss_on=opts.loss_on)
    if not rows:
        raise InvalidArgumentError(f"every example is longer than --context {opts.context} tokens",
                                   hint="raise --context")
    timings["tokenizer_s"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    model, history, resumed = _train(run, rows, tokenizer, opts, progress)
    timings["fit_s"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    validation, samples = _evaluate(model, tokenizer, bench, opts)
    timings["eval_s"] = round(time.perf_counter() - t, 3)
    policy = run.publish(POLICY_DIR, lambda tmp: _save(model, tokenizer, tmp))
    timings["total_s"] = round(time.perf_counter() - t0, 3)
    losses = [line["loss"] for line in history if isinstance(line.get("loss"), float)]
    n_tokens = sum(len(r["input_ids"]) for r in rows)
    result = PretrainResult(
        run_dir=str(run.run_dir), run_fingerprint=run.fingerprint, policy_out=str(policy),
        policy_fingerprint=folder_fingerprint(policy), benchmark=bench.name, benchmark_fingerprint=bench.fingerprint,
        benchmark_path=str(bench.path), split=opts.split, options=opts.recorded(), seed=opts.seed,
        corpus={"examples": len(rows), "skipped_too_long": skipped, "tokens": n_tokens,
                "mean_tokens": round(n_tokens / len(rows), 3),
                "epochs": round(opts.steps * opts.batch_size / len(rows), 3)},
        model={"type": "gpt2", "parameters": int(sum(p.numel() for p in model.parameters())),
               "vocab_size": len(tokenizer), "layers": opts.layers, "dim": opts.dim, "heads": opts.heads,
               "context": opts.context},
        n_steps=int(history[-1]["step"]) if history else 0, train_loss=losses[-1] if losses else None,
        validation=validation, samples=samples, history=history, timings=timings, resumed_from=resumed,
    )
    run.finish(result.to_dict())
    return result


def _tokenizer(run: RunClaim, examples: list[Example], opts: PretrainOptions) -> Any:
    """The run's tokenizer: the one an interrupted attempt published, else trained and published now."""
    from transformers import AutoTokenizer

    folder = run.run_dir / TOKENIZER_DIR
    if run.main and not (folder / "tokenizer.json").is_file():
        texts = [e.prompt for e in examples] + [e.response for e in examples]
        tokenizer = train_tokenizer(texts, vocab_size=opts.vocab_size, context=opts.context)
        run.publish(TOKENIZER_DIR, tokenizer.save_pretrained)
    return AutoTokenizer.from_pretrained(folder)


def new_model(tokenizer: Any, opts: PretrainOptions) -> Any:
    """A ``GPT2LMHeadModel`` of ``opts``' size, initialised under ``opts.seed`` (global RNG untouched)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=len(tokenizer), n_positions=opts.context, n_embd=opts.dim, n_layer=opts.layers,
                        n_head=opts.heads, resid_pdrop=opts.dropout, embd_pdrop=opts.dropout,
                        attn_pdrop=opts.dropout, bos_token_id=tokenizer.bos_token_id,
                        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(opts.seed)
        return GPT2LMHeadModel(config)


def _train(run: RunClaim, rows: list[dict[str, Any]], tokenizer: Any, opts: PretrainOptions,
           progress: Any) -> tuple[Any, list[dict[str, Any]], int | None]:
    import transformers
    from transformers import PrinterCallback

    from gradebench.training import checkpoints as ckpts
    from gradebench.training.engine import isolated_rng
    from gradebench.training.listeval import StopPointCallback, accelerator_available, checkpoint_trainer_class

    start = run.checkpoint
    if start is not None:
        ckpts.verify(start, run.run_dir)  # its pickles load as plain data, or a one-line RunError
    resumed = None if start is None else ckpts.state_step(start)  # read now: the checkpoint is rotated out later
    kwargs: dict[str, Any] = dict(
        output_dir=str(run.run_dir / CHECKPOINT_DIR), max_steps=opts.steps, per_device_train_batch_size=opts.batch_size,
        learning_rate=opts.lr, weight_decay=opts.weight_decay, lr_scheduler_type="linear",
        warmup_steps=min(opts.warmup_steps, opts.steps), max_grad_norm=1.0, logging_strategy="steps",
        logging_steps=log_every(opts), save_strategy="steps", save_steps=opts.save_steps,
        save_total_limit=1, seed=opts.seed, data_seed=opts.seed, report_to=[], disable_tqdm=True,
        use_cpu=not accelerator_available(), bf16=False, fp16=False, remove_unused_columns=False,
        dataloader_num_workers=0,
    )
    # a checkpoint of the last step (killed while publishing): restore it, train no further
    kwargs.update(ckpts.resume_overrides(start))
    args = transformers.TrainingArguments(**kwargs)
    callbacks: list[Any] = [StopPointCallback()]
    if progress is not None:
        callbacks.append(_ProgressCallback(progress, opts.steps))
    with isolated_rng():
        model = new_model(tokenizer, opts)
        trainer = checkpoint_trainer_class()(model=model, args=args, train_dataset=rows,
                                             data_collator=PadCollator(tokenizer.pad_token_id), callbacks=callbacks)
        trainer.remove_callback(PrinterCallback)
        trainer.train(resume_from_checkpoint=None if start is None else str(start))
    history = [_log_line(e) for e in trainer.state.log_history if "loss" in e]
    model = trainer.model.to("cpu").eval()
    return model, history, resumed


def log_every(opts: PretrainOptions) -> int:
    """Steps between log lines: at most :data:`LOG_EVERY` and a divisor of ``save_steps``, so a
    checkpoint falls on a log line and a resumed run logs the losses an uninterrupted one does."""
    return math.gcd(min(LOG_EVERY, opts.steps), opts.save_steps)


def _log_line(entry: dict[str, Any]) -> dict[str, Any]:
    from gradebench.rl.steplog import finite

    return {"step": int(entry["step"]), "loss": finite(entry.get("loss")),
            "learning_rate": finite(entry.get("learning_rate")), "grad_norm": finite(entry.get("grad_norm"))}


class _ProgressCallback:
    """Reports ``progress(step, steps, "step N: loss X")`` after each logged step (a TrainerCallback)."""

    def __new__(cls, progress: Any, steps: int) -> Any:
        from transformers import TrainerCallback

        class _Callback(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kw):  # noqa: ANN001, ANN201 - Trainer API
                loss = (logs or {}).get("loss")
                shown = f": loss {loss:.3f}" if isinstance(loss, float) else ""
                progress(min(int(state.global_step), steps), steps, f"step {state.global_step}{shown}")

        return _Callback()


def _evaluate(model: Any, tokenizer: Any, bench: Any, opts: PretrainOptions) -> tuple[dict[str, Any] | None,
                                                                                       list[dict[str, str]]]:
    """Validation response loss and perplexity, and greedy samples (None and [] without a validation split)."""
    import torch

    if "validation" not in bench.splits or opts.split == "validation":
        return None, []
    lists = bench.lists("validation").head(EVAL_QUERIES)
    examples = corpus_examples(lists, opts.prompt_template)
    rows, skipped = encode(examples, tokenizer, context=opts.context, loss_on="response")
    collate = PadCollator(tokenizer.pad_token_id)
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(rows), 64):
            batch = collate(rows[i:i + 64])
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
            labels = batch["labels"][:, 1:]
            nll = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                                    labels.reshape(-1), ignore_index=-100, reduction="sum")
            total += float(nll)
            count += int((labels != -100).sum())
    loss = total / count if count else float("nan")
    validation = {"split": "validation", "queries": len(rows), "skipped_too_long": skipped,
                  "response_tokens": count, "response_loss": round(loss, 6),
                  "perplexity": round(math.exp(loss), 4) if math.isfinite(loss) else None}
    samples = []
    for e in examples[:N_SAMPLES]:
        ids = tokenizer(e.prompt, return_tensors="pt", add_special_tokens=False)
        room = min(SAMPLE_TOKENS, opts.context - ids["input_ids"].shape[1])
        if room < 1:
            continue
        with torch.no_grad():
            gen = model.generate(**ids, max_new_tokens=room, do_sample=False, pad_token_id=tokenizer.pad_token_id,
                                 eos_token_id=tokenizer.eos_token_id)
        text = tokenizer.decode(gen[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
        samples.append({"query_id": e.query_id, "prompt": e.prompt, "reference": e.response.strip(),
                        "greedy": text.strip()})
    return validation, samples


def _save(model: Any, tokenizer: Any, folder: Path) -> None:
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
