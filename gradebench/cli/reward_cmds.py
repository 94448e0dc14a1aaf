"""``gradebench export-reward | reward-report``: thin commands over gradebench.reward."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from gradebench.cli.app import app, emit
from gradebench.paths import RESULTS_DIR


def _progress(enabled: bool, fn):
    from gradebench.cli.harness_cmds import with_progress

    return with_progress(enabled, fn)


def _fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


@app.command("export-reward")
def export_reward_cmd(
    out: Annotated[Path, typer.Option(help="the reward folder to write (absent or empty)")],
    run: Annotated[Optional[Path], typer.Argument(help="a finished run folder (or pick one with --best)")] = None,
    best: Annotated[Optional[str], typer.Option(
        help="pick the best run by this leaderboard metric (e.g. ndcg@5); needs --benchmark",
        show_default="none: export RUN")] = None,
    benchmark: Annotated[Optional[str], typer.Option(
        help="with --best: the benchmark (name or folder) whose records rank the runs", show_default="none")] = None,
    results_dir: Annotated[Path, typer.Option(help="root of the result records")] = RESULTS_DIR,
    split: Annotated[str, typer.Option(help="with --best: records of this split rank the runs")] = "test",
    calibration_split: Annotated[Optional[str], typer.Option(
        help="split of the run's benchmark to calibrate on", show_default="validation")] = None,
    device: Annotated[Optional[str], typer.Option(help="device of a model-backed scorer (cpu, cuda...)",
                                                  show_default="the scorer's choice")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Export a trained run as a self-contained reward folder (model + gradebench-reward.json)."""
    from gradebench.reward.export import export_reward

    result = _progress(not as_json, lambda progress: export_reward(
        run, out=out, best=best, benchmark=benchmark, results_dir=results_dir, split=split,
        calibration_split=calibration_split, device=device, progress=progress))
    if as_json:
        emit(result.to_dict())
        return
    from rich.console import Console

    console = Console()
    verb = "found (already exported)" if result.cached else "exported"
    loss = f" + {result.loss}" if result.loss else ""
    console.print(f"[bold]{result.scorer}{loss}[/bold] ({result.run_dir}) {verb} -> [cyan]{result.out}[/cyan] "
                  f"as {result.format}")
    if result.selected_by:
        s = result.selected_by
        console.print(f"picked by {s['metric']} on {s['split']}: {s['system']} (mean {_fmt(s['system_value'], 4)} over "
                      f"{s['n_seeds']} seed(s); this run {_fmt(s['record_value'], 4)})")
    c = result.calibration
    console.print(f"calibration on {c['split']} ({c['n']} candidates): mean {c['mean']:.4f}, std {c['std']:.4f}, "
                  f"range [{c['min']:.4f}, {c['max']:.4f}]")
    for note in result.notes:
        console.print(f"note: {note}")


@app.command("reward-report")
def reward_report_cmd(
    source: Annotated[Path, typer.Argument(help="a reward folder (export-reward) or a finished run folder")],
    benchmark: Annotated[Path, typer.Option(help="a benchmark folder written by `gradebench build`")],
    split: Annotated[str, typer.Option(help="split to score")] = "test",
    device: Annotated[Optional[str], typer.Option(help="device of a model-backed scorer (cpu, cuda...)",
                                                  show_default="the scorer's choice")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """How fit a trained scorer is as an RL reward (the core paper's Table 24, plus scale-free figures)."""
    from gradebench.reward.report import reward_report

    report = _progress(not as_json, lambda progress: reward_report(
        source, benchmark=benchmark, split=split, device=device, progress=progress))
    if as_json:
        emit(report.to_dict())
        return
    from rich.console import Console

    from gradebench.cli.app import table

    console = Console()
    loss = f" + {report.loss}" if report.loss else ""
    b = report.benchmark
    console.print(f"[bold]{report.scorer}{loss}[/bold] as a reward on {b['name']} ({b['split']}, {b['n_queries']} "
                  f"queries, {b['n_candidates']} candidates)")
    f = report.figures
    t = table("figure", "value", numeric=True)  # the style of every other command's tables
    for name in ("score_std", "score_range", "separation_ratio", "separation_ratio_vs_score", "grade_eta2",
                 "grade_eta2_centered", "advantage_snr", "min_adjacent_snr", "inverted_adjacent_grades", "ndcg@5"):
        v = f[name]
        if v is None and name.endswith("snr") and f["within_grade_std"] == 0 and (f["mean_adjacent_gap"] or 0) > 0:
            text = "inf (no within-grade spread)"
        else:
            text = str(v) if isinstance(v, int) else _fmt(v, 4)
        t.add_row(name, text)
    console.print(t)
    console.print(f"verdict (standardised rewards: GRPO, RLOO, PPO with normalize): [bold]{report.verdict}[/bold]; "
                  f"the paper's Table 24 verdict (raw rewards, separation ratio): [bold]{report.paper_verdict}[/bold]")
    for note in report.notes:
        console.print(f"note: {note}")
