"""``gradebench train | scorers | losses``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from gradebench.cli.app import THREADS_OPTION, app, emit, table
from gradebench.errors import InvalidArgumentError
from gradebench.paths import OUT_DIR, RUNS_NAME


def parse_settings(items: list[str] | None, *, flag: str = "--set") -> dict[str, Any]:
    """``["hidden=64", "head=paper"]`` -> ``{"hidden": 64, "head": "paper"}`` (values parsed as YAML scalars)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(f"{flag} {item!r} is not key=value", hint=f"e.g. {flag} hidden=64")
        try:
            parsed = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError:
            parsed = value
        if key.strip() in out:
            raise InvalidArgumentError(f"{flag} {key.strip()!r} given twice", hint="give each key once")
        out[key.strip()] = parsed
    return out


def rich_progress(enabled: bool):
    """A ``progress(done, total, message)`` callback drawing a rich bar on a TTY, or None."""
    import sys

    if not enabled or not sys.stderr.isatty():
        return None, None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   transient=True)
    task = bar.add_task("training", total=None)

    def update(done: int, total: int, message: str) -> None:
        bar.update(task, completed=done, total=total, description=message)

    return bar, update


def with_progress(enabled: bool, fn):
    """Call ``fn(progress)`` with a rich bar on a TTY when ``enabled`` (``progress`` None otherwise)."""
    bar, progress = rich_progress(enabled)
    if bar is not None:
        bar.start()
    try:
        return fn(progress)
    finally:
        if bar is not None:
            bar.stop()


def train_default(name: str) -> Any:
    """The default of a :class:`~gradebench.training.options.TrainOptions` field (its one home), for --help."""
    from gradebench.training.options import TrainOptions

    return TrainOptions.model_fields[name].default


@app.command()
def train(
    benchmark: Annotated[Path, typer.Option(help="a benchmark folder written by `gradebench build`")],
    scorer: Annotated[str, typer.Option(help="scorer name (see `gradebench scorers`)")],
    out: Annotated[Path, typer.Option(help="run folder to write (an interrupted run there is continued)")],
    loss: Annotated[Optional[str], typer.Option(help="registered loss (see `gradebench losses`)",
                                                show_default="the scorer's default loss")] = None,
    seed: Annotated[int, typer.Option(help="seed of the run (42, 123, 7 are the paper's)")] = train_default("seed"),
    epochs: Annotated[int, typer.Option(help="maximum epochs")] = train_default("epochs"),
    lr: Annotated[Optional[float], typer.Option(help="learning rate", show_default="the scorer's")] = None,
    batch_queries: Annotated[int, typer.Option(help="lists per batch")] = train_default("batch_queries"),
    patience: Annotated[int, typer.Option(help="early-stopping patience in epochs")] = train_default("patience"),
    list_size: Annotated[Optional[int], typer.Option(help="subsample K candidates per training list",
                                                     show_default="whole lists")] = None,
    max_train_queries: Annotated[Optional[int], typer.Option(help="train on the first N queries only",
                                                             show_default="all")] = None,
    max_validation_queries: Annotated[Optional[int], typer.Option(
        help="early-stop on the first N validation queries only", show_default="all")] = None,
    set_: Annotated[Optional[list[str]], typer.Option(
        "--set", metavar="K=V", help="scorer config key=value (repeatable)",
        show_default="the scorer's config")] = None,
    loss_param: Annotated[Optional[list[str]], typer.Option(
        "--loss-param", metavar="K=V", help="loss parameter key=value (repeatable)",
        show_default="the loss's defaults")] = None,
    resume: Annotated[bool, typer.Option(
        help="insist on continuing an interrupted run in --out (the same command continues one without it "
             "too)")] = False,
    threads: Annotated[Optional[int], THREADS_OPTION] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Train a scorer on a benchmark's train split (early-stopped on validation) into --out.

    An interrupted run (Ctrl-C, kill) is continued by running the same command again."""
    from gradebench.experiments.train import train as train_api
    from gradebench.threads import limit_torch_threads

    options: dict[str, Any] = {"seed": seed, "epochs": epochs, "batch_queries": batch_queries, "patience": patience,
                               "loss_params": parse_settings(loss_param, flag="--loss-param")}
    for key, value in (("lr", lr), ("list_size", list_size), ("max_train_queries", max_train_queries),
                       ("max_validation_queries", max_validation_queries)):
        if value is not None:
            options[key] = value
    config = parse_settings(set_)
    with limit_torch_threads(threads):
        result = with_progress(not as_json, lambda progress: train_api(
            benchmark, scorer, loss=loss, config=config, options=options, out=out, resume=resume,
            progress=progress))
    if as_json:
        emit(result.to_dict())
        return
    from rich.console import Console

    console = Console()
    verb = "found (already trained)" if result.cached else "trained"
    if result.resumed_from is not None:
        verb = f"trained (continued the interrupted run from its {result.resumed_from})"
    console.print(f"[bold]{result.scorer}[/bold]{'' if result.loss is None else ' + ' + result.loss} {verb} "
                  f"on {result.benchmark} -> [cyan]{result.run_dir}[/cyan]")
    if result.best_metrics:
        shown = {k: v for k, v in result.best_metrics.items() if isinstance(v, float)}
        console.print(f"best epoch {result.best_epoch}: " + ", ".join(f"{k} {v:.4f}" for k, v in shown.items()))


@app.command()
def scorers(as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False) -> None:
    """List the registered scorers."""
    from gradebench.scorers import scorer_table

    rows = scorer_table()
    if as_json:
        emit(rows)
        return
    from rich.console import Console

    t = table("scorer", "kind", "trains", "default\nloss", "summary")
    for r in rows:
        t.add_row(r["name"], r["kind"], "yes" if r["trainable"] else "no", r["default_loss"] or "", r["summary"])
    Console().print(t)


@app.command()
def losses(as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False) -> None:
    """List the registered ranking losses."""
    from gradebench.losses import LOSSES

    rows = [spec.as_dict() for _, spec in LOSSES.items()]
    if as_json:
        emit(rows)
        return
    from rich.console import Console

    t = table("loss", "kind", "summary")
    for r in rows:
        t.add_row(r["name"], r["kind"], r["summary"])
    Console().print(t)


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="output root (benchmark, runs, results, plots)")] = OUT_DIR,
    epochs: Annotated[int, typer.Option(help="maximum epochs of each trained scorer")] = 30,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """The main job end to end on the embedded demo data: build, train, evaluate, leaderboard, plots."""
    from gradebench.experiments.demo import run_demo
    from gradebench.paths import check_writable_dir

    check_writable_dir(out, what="--out")
    result = with_progress(not as_json, lambda progress: run_demo(out, epochs=epochs, progress=progress))
    if as_json:
        emit(result.to_dict())
        return
    from rich.console import Console

    from gradebench.experiments.leaderboard import leaderboard as leaderboard_api
    from gradebench.experiments.render import text

    console = Console()
    console.print(f"[bold]demo[/bold] benchmark at [cyan]{result.benchmark}[/cyan]")
    board = leaderboard_api(result.results_dir, benchmark="demo", split="test", sort_by="ndcg@5")
    console.print(text(board, width=console.width), end="", markup=False, highlight=False)
    console.print(f"runs in [cyan]{Path(result.results_dir).parent / RUNS_NAME}[/cyan]; "
                  f"records in [cyan]{result.results_dir}[/cyan] (query them: gradebench query \"SELECT * FROM results\" "
                  f"--results-dir {result.results_dir})")
    for p in result.plots:
        console.print(f"plot: [cyan]{p}[/cyan]")
