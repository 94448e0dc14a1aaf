"""``gradebench eval | human | leaderboard | query | plot | sweep``: thin commands over gradebench.experiments."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from gradebench.cli.app import THREADS_OPTION, app, emit, table
from gradebench.errors import InvalidArgumentError
from gradebench.paths import COMMITTED_RESULTS_DIR, RESULTS_DIR, RUNS_DIR

LEADERBOARD_FORMATS = ("text", "md", "html", "json")
#: ``gradebench sweep``'s exit status when a cell was left to another process holding its run folder
SWEEP_IN_USE_EXIT = 3
_results_dir = typer.Option("--results-dir", help="root of the result records (the project's committed ones: "
                            f"{COMMITTED_RESULTS_DIR}); leaderboard and query also read a folder of "
                            "publish-results or its Hub id (ORG/NAME) from the local cache")


def _resolve(results_dir: Path) -> Path:
    """``--results-dir``: a folder, or a Hub dataset of results (``ORG/NAME``) from the local cache."""
    from gradebench.experiments.results_hub import resolve_results_dir

    return resolve_results_dir(results_dir)


def _tty() -> bool:
    return sys.stdout.isatty()


def _with_progress(enabled: bool, fn):
    from gradebench.cli.harness_cmds import with_progress

    return with_progress(enabled, fn)


@app.command("eval")
def eval_cmd(
    benchmark: Annotated[Optional[Path], typer.Option(
        help="a benchmark folder written by `gradebench build`", show_default="with --run: the run's")] = None,
    scorer: Annotated[Optional[str], typer.Option(help="scorer name, evaluated untrained",
                                                  show_default="none: give --scorer or --run")] = None,
    run: Annotated[Optional[Path], typer.Option("--run", help="a finished run folder of `gradebench train`",
                                                show_default="none: give --scorer or --run")] = None,
    model: Annotated[Optional[str], typer.Option(
        "--model", help="any model: a local folder or a Hugging Face Hub id (offline: from the local cache)",
        show_default="none: give --scorer, --run or --model")] = None,
    adapter: Annotated[str, typer.Option(
        help="with --model: auto | cross-encoder | sequence-classifier | chat-reward | bi-encoder | llm-judge")] = "auto",
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="scorer (or --model adapter) config key=value",
                                                      show_default="the scorer's config")] = None,
    split: Annotated[str, typer.Option(help="split to score")] = "test",
    seed: Annotated[int, typer.Option(help="bootstrap seed (and the scorer's seed with --scorer)")] = 0,
    resamples: Annotated[int, typer.Option(help="bootstrap resamples per confidence interval")] = 1000,
    results_dir: Annotated[Path, _results_dir] = RESULTS_DIR,
    zero_shot: Annotated[bool, typer.Option("--zero-shot", help="allow a run trained on another benchmark")] = False,
    check_invariance: Annotated[bool, typer.Option(
        "--check-invariance", help="re-score a sample at batch size 1 and record the largest difference "
        "(exit 1 when it exceeds the tolerance)")] = False,
    trust_remote_code: Annotated[bool, typer.Option(
        "--trust-remote-code", help="with --model: allow code inside the model folder to run")] = False,
    threads: Annotated[Optional[int], THREADS_OPTION] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the record as JSON")] = False,
) -> None:
    """Score a split with a scorer, a trained run or any model (--model), and write a result record."""
    from gradebench.threads import limit_torch_threads

    with limit_torch_threads(threads):
        _eval(benchmark, scorer, run, model, adapter, set_, split=split, seed=seed, resamples=resamples,
              results_dir=results_dir, zero_shot=zero_shot, check_invariance=check_invariance,
              trust_remote_code=trust_remote_code, as_json=as_json)


def _eval(benchmark: Path | None, scorer: str | None, run: Path | None, model: str | None, adapter: str,
          set_: list[str] | None, *, split: str, seed: int, resamples: int, results_dir: Path, zero_shot: bool,
          check_invariance: bool, trust_remote_code: bool, as_json: bool) -> None:
    """``eval`` once its threads are set: check the flags, score, write and print the record."""
    from gradebench.experiments.evaluate import evaluate_scorer

    given = [f for f, v in (("--scorer", scorer), ("--run", run), ("--model", model)) if v is not None]
    if len(given) > 1:
        raise InvalidArgumentError(f"{' and '.join(given)} conflict: give one",
                                   hint="--scorer NAME evaluates an untrained scorer, --run DIR a trained one, "
                                        "--model PATH_OR_HUB_ID any model")
    if not given:
        raise InvalidArgumentError("give --scorer NAME or --run RUN_DIR (or --model PATH_OR_HUB_ID)",
                                   hint="e.g. gradebench eval --benchmark DIR --scorer bm25")
    if model is None and (adapter != "auto" or trust_remote_code):
        flag = "--trust-remote-code" if trust_remote_code else "--adapter"
        raise InvalidArgumentError(f"{flag} applies to --model", hint=f"drop {flag}, or give --model PATH_OR_HUB_ID")
    if model is not None:
        _eval_model(model, adapter, set_, benchmark=benchmark, split=split, seed=seed, resamples=resamples,
                    results_dir=results_dir, check_invariance=check_invariance, trust_remote_code=trust_remote_code,
                    as_json=as_json)
        return
    if run is not None and set_:
        raise InvalidArgumentError("--set and --run conflict: a run's config is fixed by its training",
                                   hint="drop --set, or evaluate --scorer NAME --set key=value")
    if run is not None and check_invariance:
        raise InvalidArgumentError("--check-invariance applies to --model (and hf-* scorers), not to --run",
                                   hint="drop --check-invariance")
    if run is None and benchmark is None:
        raise InvalidArgumentError("--scorer needs --benchmark DIR", hint="give the folder `gradebench build` printed")
    if run is not None:
        from gradebench.experiments.runs import load_run

        instance, info = load_run(run)
        benchmark = benchmark if benchmark is not None else Path(info.benchmark_path)
    else:
        from gradebench.cli.harness_cmds import parse_settings
        from gradebench.scorers import make_scorer

        instance, info = make_scorer(scorer, parse_settings(set_), seed=seed), None
    record = _with_progress(not as_json, lambda progress: evaluate_scorer(
        benchmark, instance, split=split, seed=seed, n_resamples=resamples, run=info, results_dir=results_dir,
        zero_shot=zero_shot, progress=progress, check_invariance=check_invariance))
    _report(record, as_json)


@app.command()
def human(
    benchmark: Annotated[Path, typer.Argument(help="a benchmark folder whose grades are annotator votes "
                                                   "(chaosnli-snli, chaosnli-mnli, winowhy builds)")],
    split: Annotated[str, typer.Option(help="split to score")] = "test",
    seed: Annotated[int, typer.Option(help="bootstrap seed")] = 0,
    resamples: Annotated[int, typer.Option(help="bootstrap resamples per confidence interval")] = 1000,
    results_dir: Annotated[Path, _results_dir] = RESULTS_DIR,
    as_json: Annotated[bool, typer.Option("--json", help="print the record as JSON")] = False,
) -> None:
    """The human ceiling: split-half agreement of the annotators, as a `human` record."""
    from gradebench.experiments.human import evaluate_human

    record = evaluate_human(benchmark, split=split, seed=seed, n_resamples=resamples, results_dir=results_dir)
    if as_json:
        emit(record.to_dict())
        return
    _print_record(record)
    from rich.console import Console

    h, console = record.human, Console()
    if h.jsd is not None:
        console.print(f"JSD between the halves' label distributions {h.jsd.value:.4f} "
                      f"[{h.jsd.ci_low:.4f}, {h.jsd.ci_high:.4f}]", highlight=False, markup=False)
    console.print(f"measures: {h.measures}", highlight=False, markup=False)


def _eval_model(model: str, adapter: str, settings: list[str] | None, *, benchmark: Path | None, split: str, seed: int,
                resamples: int, results_dir: Path, check_invariance: bool, trust_remote_code: bool,
                as_json: bool) -> None:
    """``eval --model``: :func:`gradebench.experiments.evaluate.evaluate_model`, then the record."""
    from gradebench.cli.harness_cmds import parse_settings
    from gradebench.experiments.evaluate import evaluate_model

    if benchmark is None:
        raise InvalidArgumentError("--model needs --benchmark DIR", hint="give the folder `gradebench build` printed")
    record = _with_progress(not as_json, lambda progress: evaluate_model(
        benchmark, model, adapter=adapter, options=parse_settings(settings), trust_remote_code=trust_remote_code,
        split=split, seed=seed, n_resamples=resamples, results_dir=results_dir, check_invariance=check_invariance,
        progress=progress))
    _report(record, as_json)


def _report(record, as_json: bool) -> None:
    """Print the record (JSON or a table) on the main process; a failed invariance check exits 1."""
    from gradebench.experiments.evaluate import is_main_process

    if not is_main_process():  # under torchrun/accelerate only rank 0 speaks (and writes)
        return
    if as_json:
        emit(record.to_dict())
    else:
        _print_record(record)
    inv = record.invariance
    if inv is not None and not inv.passed:
        from gradebench.scorers.adapters.base import InvarianceError

        raise InvarianceError(
            f"the invariance check failed: scores at batch size 1 differ by up to {inv.max_abs_diff:.3g} "
            f"(tolerance {inv.tolerance:.3g}, {inv.n_candidates} candidates of {inv.n_queries} queries)",
            path=record.path, hint="the model's scores depend on what it is batched with: check its padding, "
                                   "or set --set dtype=float32; raise invariance_tolerance only knowingly")


def _print_record(record) -> None:
    from rich.console import Console

    from gradebench.experiments.render import fmt_metric

    console = Console()
    loss = f" + {record.loss.name}" if record.loss.name else ""
    console.print(f"[bold]{record.scorer.name}{loss}[/bold] on {record.benchmark.name} ({record.split}, "
                  f"{record.benchmark.n_queries} queries) -> record [cyan]{record.id[:12]}[/cyan] in "
                  f"[cyan]{Path(record.path).parent}[/cyan]")  # the id prefix is enough for `plot --record`
    t = table("metric", "value [95% CI]", "excluded")
    for name, m in record.metrics.items():
        t.add_row(name, fmt_metric(m.model_dump()), str(m.n_excluded))
    console.print(t)
    s = record.separation
    if s.mean_centered_gap is not None:
        console.print(f"mean gap between adjacent grades {s.mean_gap:.4f} (list-centred {s.mean_centered_gap:.4f}, "
                      f"smallest {s.min_centered_gap:.4f}); scoring {record.timings.scoring_s:.3f}s")
    for line in _model_lines(record):
        console.print(line, highlight=False, markup=False)


def _model_lines(record) -> list[str]:
    """Provenance, invariance and bias-control lines under the metric table."""
    lines = []
    m = record.scorer.model
    if m is not None:
        where = f"{m.id} @ {m.revision[:12]}" if m.revision else m.id
        lines.append(f"model {where} ({m.adapter}, {m.dtype} on {m.device}, batch {m.batch_size}"
                     f"{f', {m.processes} processes' if m.processes > 1 else ''}); files sha256 {m.digest[:12]}")
    inv = record.invariance
    if inv is not None:
        lines.append(f"invariance: batch size 1 on {inv.n_candidates} candidates differs by at most "
                     f"{inv.max_abs_diff:.3g} (tolerance {inv.tolerance:.3g}): {'passed' if inv.passed else 'FAILED'}")
    b = record.bias
    if b is not None:
        lp = b.length_pairs

        def fmt(x) -> str:
            return "n/a" if x is None else f"{x:.3f}"

        lines.append(f"length pairs: agreement {fmt(lp.better_shorter.agreement)} where the better candidate is "
                     f"shorter ({lp.better_shorter.n_pairs} pairs), {fmt(lp.better_longer.agreement)} where it is "
                     f"longer ({lp.better_longer.n_pairs}); gap {fmt(lp.gap)}")
        base = ", ".join(f"{k} {fmt(v.value)}" for k, v in b.baselines.items())
        lines.append(f"baselines ({b.metric}): {base}; this system {fmt(b.system)}")
        if b.group_column is not None:
            lines.append(f"per {b.group_column}: " + ", ".join(f"{g.name} {fmt(g.system)}" for g in b.groups))
        lines += [f"warning: {w}" for w in [*b.warnings, *(w for g in b.groups for w in g.warnings)]]
    return lines


def _json_format(fmt: str | None, as_json: bool) -> str | None:
    if as_json and fmt not in (None, "json"):
        raise InvalidArgumentError(f"--json conflicts with --format {fmt}", hint="give one of --json or --format")
    return "json" if as_json else fmt


@app.command()
def leaderboard(
    benchmark: Annotated[Optional[str], typer.Option(help="only this benchmark (its name)",
                                                     show_default="every benchmark")] = None,
    split: Annotated[str, typer.Option(help="split of the records")] = "test",
    sort_by: Annotated[str, typer.Option(help="metric to rank and test by")] = "ndcg@5",
    alpha: Annotated[float, typer.Option(help="family-wise error rate of the Holm-corrected tests")] = 0.05,
    fmt: Annotated[Optional[str], typer.Option(
        "--format", help="text (fits the terminal) | md (every column; LEADERBOARD.md) | html (one self-contained "
        "page; LEADERBOARD.html) | json", show_default="text")] = None,
    out: Annotated[Optional[list[Path]], typer.Option(
        "--out", metavar="FILE", help="write to this file instead of stdout, in the format of its suffix (.md, .html, .json, .txt; "
        "else --format); repeat for several formats of one leaderboard", show_default="print to stdout")] = None,
    wide: Annotated[bool, typer.Option("--wide", help="text with every metric column, lines unwrapped")] = False,
    results_dir: Annotated[Path, _results_dir] = RESULTS_DIR,
    as_json: Annotated[bool, typer.Option("--json", help="same as --format json")] = False,
) -> None:
    """Rank systems (scorer + loss + config, mean over seeds) with CIs and tests against the best."""
    from gradebench.cli._outputs import out_formats
    from gradebench.experiments.leaderboard import leaderboard as leaderboard_api

    fmt = _json_format(fmt, as_json)
    if fmt is not None and fmt not in LEADERBOARD_FORMATS:
        raise InvalidArgumentError(f"unknown --format {fmt!r}", hint=f"one of {', '.join(LEADERBOARD_FORMATS)}")
    targets = out_formats(out or [], None if as_json else fmt, LEADERBOARD_FORMATS)
    if wide and (fmt or "text") != "text":
        raise InvalidArgumentError(f"--wide conflicts with --format {fmt}",
                                   hint="--wide widens the text table; md, html and json hold every column already")
    fmt = fmt or "text"
    results_dir = _resolve(results_dir)
    board = leaderboard_api(results_dir, benchmark=benchmark, split=split, sort_by=sort_by, alpha=alpha)
    options = {"benchmark": benchmark, "split": split, "sort_by": sort_by, "alpha": alpha}
    if targets:
        from gradebench.paths import write_text_atomic

        texts = [(path, _leaderboard_text(board, f, results_dir, options, wide=wide, width=80)) for path, f in targets]
        for path, text_ in texts:  # every file rendered before any is written
            write_text_atomic(path, text_)
        if as_json:
            emit(board.to_dict())
        else:
            sys.stdout.write("".join(f"wrote {path}\n" for path, _ in texts))
        return
    if fmt == "json":
        emit(board.to_dict())
        return
    from gradebench.cli.app import terminal_width

    sys.stdout.write(_leaderboard_text(board, fmt, results_dir, options, wide=wide, width=terminal_width()))


def _leaderboard_text(board: Any, fmt: str, results_dir: Path, options: dict[str, Any], *, wide: bool,
                      width: int) -> str:
    """The leaderboard in one format (``html`` also reads the rows' records for its figures)."""
    if fmt == "json":
        import json

        return json.dumps(board.to_dict(), indent=2, sort_keys=True) + "\n"  # what --json prints
    if fmt == "md":
        return board.to_markdown()
    if fmt == "html":
        from gradebench.experiments.leaderboard_html import html_of

        return html_of(board, results_dir, **options)
    from gradebench.experiments.render import text

    return text(board, width=width, wide=wide)


@app.command()
def query(
    sql: Annotated[str, typer.Argument(help="one SELECT over the views results, metrics, per_query, predictions, "
                                            "candidates, records, policies")],
    fmt: Annotated[Optional[str], typer.Option("--format", help="table | csv | json", show_default="table")] = None,
    results_dir: Annotated[Path, _results_dir] = RESULTS_DIR,
    as_json: Annotated[bool, typer.Option("--json", help="same as --format json")] = False,
) -> None:
    """Run one read-only SQL query (DuckDB) over the result records; views are defined in leaderboard/views.sql.

    The query is a single SELECT (or WITH ... SELECT) over the views results, metrics, per_query, predictions, \
candidates, records and policies. Nothing else runs: a second statement after ';' and any COPY, ATTACH, CREATE, \
SET, PRAGMA or INSTALL are refused, and no file but the records and their benchmarks can be read \
(read_csv('/etc/passwd') fails); nothing is written.
    """
    from gradebench.experiments.query import FORMATS, run_query

    fmt = _json_format(fmt, as_json)

    if fmt is not None and fmt not in FORMATS:
        raise InvalidArgumentError(f"unknown --format {fmt!r}", hint=f"one of {', '.join(FORMATS)}")
    result = run_query(sql, results_dir=_resolve(results_dir))
    if fmt == "json":
        emit(result.to_dict())
    elif fmt == "csv":
        sys.stdout.write(result.render("csv"))
    elif _tty():
        from rich.console import Console
        from rich.table import Table

        t = Table(*result.columns)
        for row in result.rows:
            t.add_row(*("NULL" if v is None else f"{v:.6g}" if isinstance(v, float) else str(v) for v in row))
        Console().print(t)
    else:
        sys.stdout.write(result.render("table"))


@app.command()
def plot(
    out: Annotated[Path, typer.Option(help="PNG file to write")],
    record: Annotated[Optional[str], typer.Option(help="a record id (or unique prefix) or a record JSON path",
                                                  show_default="none: give --record or --run")] = None,
    run: Annotated[Optional[Path], typer.Option("--run", help="a run folder: plot its training curves",
                                                show_default="none: give --record or --run")] = None,
    results_dir: Annotated[Path, _results_dir] = RESULTS_DIR,
    as_json: Annotated[bool, typer.Option("--json", help="print {\"out\": PATH} as JSON")] = False,
) -> None:
    """Plot a record's score distribution per tier (--record) or a run's training curves (--run)."""
    from gradebench.experiments.plot import plot_history, plot_run

    if (record is None) == (run is None):
        raise InvalidArgumentError("give exactly one of --record and --run" if record is None else
                                   "--record and --run conflict: give one",
                                   hint="--record ID plots score distributions, --run DIR training curves")
    path = plot_run(record, out, results_dir=results_dir) if record is not None else plot_history(run, out)
    if as_json:
        emit({"out": str(path)})
        return
    sys.stdout.write(f"wrote {path}\n")


@app.command()
def sweep(
    experiment: Annotated[Path, typer.Argument(help="experiment YAML (see recipes/experiments/demo.yaml)")],
    results_dir: Annotated[Path, _results_dir] = RESULTS_DIR,
    runs_dir: Annotated[Path, typer.Option(help="root of the training run folders")] = RUNS_DIR,
    threads: Annotated[Optional[int], THREADS_OPTION] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Run an experiment grid (train, then evaluate), skipping cells whose records all exist.

    A cell's records: its own, and one per benchmark under the grid's transfer: key (counted in
    the summary and in --json); a cell missing some writes only those.

    Exit status: 0 when every cell has its records; exit 3 when a cell is in use by another
    process (a second sweep on the same grid, a train into its run folder): that cell is left to
    it, named on stderr, never run twice, and the grid is done once the same command is run again
    after the other process ends.
    """
    from gradebench.experiments.sweep import IN_USE
    from gradebench.experiments.sweep import sweep as sweep_api
    from gradebench.threads import limit_torch_threads

    with limit_torch_threads(threads):
        result = _with_progress(not as_json, lambda progress: sweep_api(
            experiment, results_dir=results_dir, runs_dir=runs_dir, progress=progress))
    if as_json:
        emit(result.to_dict())
    else:
        _print_sweep(result)
    named = set()
    for c in result.cells:
        cell = c.run_dir or c.record_id  # once per cell (a trained cell's transfer records share its run folder)
        if c.status == IN_USE and cell not in named:
            named.add(cell)
            who = "another process" if c.pid is None else f"pid {c.pid}"
            where = "" if c.run_dir is None else f" ({c.run_dir})"
            sys.stderr.write(f"gradebench: {c.trained_on or c.benchmark}/{c.scorer} seed {c.seed}{where} is "
                             f"in use by {who}: run the same command again when it ends\n")
    if result.in_use:
        raise typer.Exit(SWEEP_IN_USE_EXIT)


def _list_size(cell: Any) -> str:
    """A sweep row's list size: K, ``full`` (trained on whole lists) or empty (an untrained scorer)."""
    return "" if cell.run_dir is None else str(cell.list_size or "full")


def _print_sweep(result: Any) -> None:
    """The sweep's records as a table: a cell's transfer records (``→ benchmark``) under its own."""
    from rich.console import Console

    sizes = any(c.list_size is not None for c in result.cells)
    transfer = result.transfer
    t = table("benchmark", "scorer", "loss", *(["K"] if sizes else []), "seed", "status", "ndcg@5", "record")
    for c in result.cells:
        t.add_row(f"→ {c.benchmark}" if c.transfer else c.benchmark, c.scorer, c.loss or "",
                  *([_list_size(c)] if sizes else []), str(c.seed), c.status,
                  "n/a" if c.value is None else f"{c.value:.4f}", c.record_id[:8])
    console = Console()
    console.print(t)
    in_use = f", {result.in_use} in use" if result.in_use else ""
    of_which = ""
    if transfer["records"]:
        busy = f", {transfer['in_use']} in use" if transfer["in_use"] else ""
        of_which = (f" ({transfer['records']} of them transfer records: {transfer['evaluated']} evaluated, "
                    f"{transfer['skipped']} skipped{busy})")
    console.print(f"{result.evaluated} evaluated, {result.skipped} skipped{in_use}{of_which} in {result.seconds:.1f}s; "
                  f"records in [cyan]{result.results_dir}[/cyan]")
