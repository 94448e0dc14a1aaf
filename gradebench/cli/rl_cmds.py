"""``gradebench lipo | grpo | ppo | pretrain-policy``: thin commands over :mod:`gradebench.rl` (extra ``rl``).

Each command's method options are the fields of its options model
(:mod:`gradebench.rl.options`): the flags, their defaults and their help come from there, and
the values go to the Python function, which validates them (one line naming the flag).
"""

from __future__ import annotations

import contextlib
import inspect
import typing
import warnings
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import typer

from gradebench.cli.app import _state, app, emit
from gradebench.cli.harness_cmds import parse_settings, with_progress
from gradebench.errors import InvalidArgumentError
from gradebench.experiments.store import DEFAULT_RESULTS_DIR
from gradebench.rl.options import GrpoOptions, LipoOptions, PolicyOptions, PpoOptions, PretrainOptions, cli_flag

#: the old name of the default results folder
RESULTS_DIR = DEFAULT_RESULTS_DIR
#: the metrics the human summary shows, when logged
SHOWN = ("loss", "reward_mean", "reward_std", "kl", "above_reference", "margin", "pair_accuracy", "value_loss")
_policy = typer.Option(help="a local causal-LM folder (weights + tokenizer), e.g. models/gpt2-medium")
_benchmark = typer.Option(help="a benchmark folder written by `gradebench build`")
_out = typer.Option(help="run folder to write (the trained policy goes to OUT/policy)")
_reward = typer.Option(help="an exported reward folder (`gradebench export-reward`) or a training run folder")
_results_dir = typer.Option("--results-dir", help="root of the result records (the policy record goes there)")
_judge_split = typer.Option(help="split of the judge's held-out prompts")
_judge_queries = typer.Option(help="held-out prompts (the split's first N)")
_judge_samples = typer.Option(help="completions sampled per held-out prompt")
_json = typer.Option("--json", help="print the result as JSON")


@contextlib.contextmanager
def _quiet_libraries():
    """Hide transformers/TRL progress bars, info logs and warnings (shown with --debug)."""
    if _state.get("debug"):
        yield
        return
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(level)
        hf_logging.enable_progress_bar()


def _require_trl() -> None:
    import importlib.util

    if importlib.util.find_spec("trl") is None:
        raise InvalidArgumentError("policy optimisation needs TRL, which is not installed",
                                   hint="pip install 'gradebench[rl]'")


def _run(as_json: bool, fn: Any) -> None:
    _require_trl()
    with _quiet_libraries():
        result = with_progress(not as_json, fn)
    if as_json:
        emit(result.to_dict())
        return
    from rich.console import Console

    console = Console()
    verb = "found (already trained)" if result.cached else "trained"
    console.print(f"[bold]{result.method}[/bold] policy {verb} on {result.benchmark} ({result.split}, "
                  f"{result.n_steps} steps) -> [cyan]{result.policy_out}[/cyan]")
    shown = [(k, result.metrics.get(k)) for k in SHOWN if isinstance(result.metrics.get(k), float)]
    if shown:
        console.print(f"mean of the last {min(result.n_steps, 10)} steps: "
                      + ", ".join(f"{k} {v:.4g}" for k, v in shown))
    if result.judge:
        j, b, a = result.judge, result.judge["before"], result.judge["after"]
        console.print(f"judge {j['scorer']} on {j['n_queries']} {j['split']} prompts x {j['samples']}: mean "
                      f"{b['judge_mean']:.3f} -> {a['judge_mean']:.3f}, above reference "
                      f"{b['judge_above_reference']:.3f} -> {a['judge_above_reference']:.3f}, F1 with the best "
                      f"candidate {b['best_f1']:.3f} -> {a['best_f1']:.3f}")
        if a.get("pair_accuracy") is not None:
            console.print(f"held-out pair accuracy {b['pair_accuracy']:.3f} -> {a['pair_accuracy']:.3f}")
    signal = result.signal or {}
    if signal.get("advantage_snr") is not None:
        console.print(f"advantage SNR {signal['advantage_snr']:.3f}, judge agreement {signal['judge_agreement']:.3f} "
                      f"over {signal['n_pairs']} judged pairs")
    console.print(f"record: [cyan]{result.record}[/cyan]")


def _with_options(model: type[PolicyOptions], *, skip: tuple[str, ...] = ()) -> Any:
    """Give a command one flag per field of ``model`` (name, default and help from the field), between
    its required options and its others; the command receives them as ``**options``."""

    def wrap(fn: Any) -> Any:
        sig = inspect.signature(fn, eval_str=True)
        fixed = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        flags = []
        for name, info in model.model_fields.items():
            if name in skip:
                continue
            annotation = str if typing.get_origin(info.annotation) is Literal else info.annotation
            default = info.get_default(call_default_factory=True)
            # a None default says what it means (``--max-queries`` shows "all queries")
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            shown = extra.get("none_means", True) if default is None else True
            flags.append(inspect.Parameter(
                name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                annotation=Annotated[annotation, typer.Option(cli_flag(name, info), help=info.description,
                                                              show_default=shown)]))
        required = [p for p in fixed if p.default is inspect.Parameter.empty]
        others = [p for p in fixed if p.default is not inspect.Parameter.empty]
        fn.__signature__ = sig.replace(parameters=required + flags + others)
        return fn

    return wrap


@app.command()
@_with_options(LipoOptions, skip=("loss_params",))
def lipo(
    policy: Annotated[Path, _policy],
    benchmark: Annotated[Path, _benchmark],
    out: Annotated[Path, _out],
    loss_param: Annotated[Optional[list[str]], typer.Option("--loss-param", help="loss parameter key=value", show_default="the loss's")] = None,
    judge: Annotated[Optional[Path], typer.Option(
        help="a held-out judge: an exported reward folder; scores the policy's completions of held-out prompts "
             "before and after training, with the held-out pair accuracy", show_default="none")] = None,
    judge_split: Annotated[str, _judge_split] = "validation",
    judge_queries: Annotated[int, _judge_queries] = 200,
    judge_samples: Annotated[int, _judge_samples] = 2,
    results_dir: Annotated[Path, _results_dir] = DEFAULT_RESULTS_DIR,
    as_json: Annotated[bool, _json] = False,
    **options: Any,
) -> None:
    """LiPO: optimise a policy on a benchmark's graded lists with a ranking loss (no reward model)."""
    from gradebench.rl.lipo import lipo as lipo_api

    params = parse_settings(loss_param, flag="--loss-param")
    _run(as_json, lambda progress: lipo_api(policy, benchmark, out=out, loss_params=params, results_dir=results_dir,
                                            progress=progress, judge=judge, judge_split=judge_split,
                                            judge_queries=judge_queries, judge_samples=judge_samples, **options))


def _rewarded_command(method: str, model: type[PolicyOptions], doc: str) -> None:
    """Register ``gradebench METHOD`` for a method that samples and is rewarded (PPO)."""

    def command(
        policy: Annotated[Path, _policy],
        reward: Annotated[Path, _reward],
        benchmark: Annotated[Path, _benchmark],
        out: Annotated[Path, _out],
        results_dir: Annotated[Path, _results_dir] = DEFAULT_RESULTS_DIR,
        as_json: Annotated[bool, _json] = False,
        **options: Any,
    ) -> None:
        import importlib

        api = getattr(importlib.import_module(f"gradebench.rl.{method}"), method)
        _run(as_json, lambda progress: api(policy, reward, benchmark, out=out, results_dir=results_dir,
                                           progress=progress, **options))

    command.__doc__ = doc
    app.command(method)(_with_options(model)(command))


@app.command()
@_with_options(GrpoOptions)
def grpo(
    policy: Annotated[Path, _policy],
    reward: Annotated[Path, _reward],
    benchmark: Annotated[Path, _benchmark],
    out: Annotated[Path, _out],
    judge: Annotated[Optional[Path], typer.Option(
        help="a held-out judge: an exported reward folder that is not --reward; logs the advantage "
             "signal per step and scores held-out completions before and after", show_default="none")] = None,
    judge_split: Annotated[str, _judge_split] = "validation",
    judge_queries: Annotated[int, _judge_queries] = 200,
    judge_samples: Annotated[int, _judge_samples] = 2,
    results_dir: Annotated[Path, _results_dir] = DEFAULT_RESULTS_DIR,
    as_json: Annotated[bool, _json] = False,
    **options: Any,
) -> None:
    """GRPO (TRL) on a benchmark's queries, rewarded by an exported gradebench scorer."""
    from gradebench.rl.grpo import grpo as grpo_api

    _run(as_json, lambda progress: grpo_api(policy, reward, benchmark, out=out, results_dir=results_dir,
                                            progress=progress, judge=judge, judge_split=judge_split,
                                            judge_queries=judge_queries, judge_samples=judge_samples, **options))


_rewarded_command("ppo", PpoOptions,
                  "PPO (TRL experimental) on a benchmark's queries, rewarded by an exported gradebench scorer.")


@app.command("pretrain-policy")
@_with_options(PretrainOptions)
def pretrain_policy(
    benchmark: Annotated[Path, _benchmark],
    out: Annotated[Path, typer.Option(help="run folder to write (the policy goes to OUT/policy; an interrupted "
                                           "run there is continued)")],
    as_json: Annotated[bool, _json] = False,
    **options: Any,
) -> None:
    """Train a small GPT-2 policy from scratch on a benchmark's queries and best candidates (CPU minutes)."""
    from gradebench.rl.pretrain import pretrain_policy as pretrain_api

    _require_trl()
    with _quiet_libraries():
        result = with_progress(not as_json, lambda progress: pretrain_api(benchmark, out=out, progress=progress,
                                                                          **options))
    if as_json:
        emit(result.to_dict())
        return
    from rich.console import Console

    console = Console()
    verb = "found (already trained)" if result.cached else "trained"
    m, c = result.model, result.corpus
    console.print(f"[bold]gpt2[/bold] policy ({m['parameters']:,} parameters, {m['layers']} layers x {m['dim']}, "
                  f"vocabulary {m['vocab_size']}) {verb} on {result.benchmark} ({result.split}, {c['examples']} "
                  f"examples, {result.n_steps} steps, {c['epochs']} epochs) -> [cyan]{result.policy_out}[/cyan]")
    if result.train_loss is not None:
        line = f"train loss {result.train_loss:.3f}"
        if result.validation:
            v = result.validation
            line += f"; validation response loss {v['response_loss']:.3f} (perplexity {v['perplexity']:.1f})"
        console.print(line)
    for sample in result.samples[:1]:
        console.print(f"greedy sample: {sample['greedy']!r} (human: {sample['reference']!r})")
    console.print(f"next: gradebench grpo --policy {result.run_dir} --reward ... --benchmark {result.benchmark_path}")
