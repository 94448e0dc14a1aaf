"""``gradebench publish``: built benchmarks -> a Hugging Face Hub dataset repo (or a dry-run folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from gradebench.cli.app import app, emit
from gradebench.paths import COMMITTED_RESULTS_DIR, RESULTS_DIR


@app.command()
def publish(
    benchmarks: Annotated[list[Path], typer.Argument(
        help="benchmark folders written by `gradebench build`; each becomes the config named after its recipe "
        "(the first is the default)", metavar="BENCHMARK_DIR", show_default=False)],
    repo_id: Annotated[str, typer.Option("--repo-id", help="ORG/NAME of the Hub dataset repo", show_default=False)],
    private: Annotated[bool, typer.Option("--private", help="create the repo private")] = False,
    dry_run: Annotated[Optional[Path], typer.Option(
        "--dry-run", help="write exactly the folder that would be pushed into DIR; push nothing",
        metavar="DIR", show_default="off: push")] = None,
    allow_non_redistributable: Annotated[bool, typer.Option(
        "--allow-non-redistributable", help="publish benchmarks whose source license forbids republishing")] = False,
    license_: Annotated[Optional[list[str]], typer.Option(
        "--license", help="Hub license id for the README (repeatable)",
        show_default="from the recipes' licenses")] = None,
    pretty_name: Annotated[Optional[str], typer.Option(help="title of the dataset card",
                                                       show_default="gradebench <config>, ...")] = None,
    results_dir: Annotated[Optional[Path], typer.Option(
        "--results-dir", help="result records whose leaderboard verdicts go into the cards (a folder or the "
        "Hub id of publish-results)", show_default=f"{RESULTS_DIR}, where it exists")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Publish built benchmarks to the Hugging Face Hub as one dataset repo (one config per benchmark)."""
    from gradebench.cli.harness_cmds import with_progress
    from gradebench.hub.publish import publish as publish_api

    verdicts = _verdicts(results_dir)
    result = with_progress(not as_json, lambda progress: publish_api(
        benchmarks, repo_id=repo_id, private=private, dry_run=dry_run,
        allow_non_redistributable=allow_non_redistributable, license=license_, pretty_name=pretty_name,
        verdicts=verdicts, progress=progress))
    if as_json:
        emit(result.to_dict())
        return
    import sys

    from rich.console import Console

    for w in result.warnings:
        sys.stderr.write(f"gradebench: warning: {w}\n")
    console = Console()
    configs = ", ".join(c["config"] for c in result.configs)
    rows = sum(s["candidates"] for c in result.configs for s in c["splits"].values())
    if result.dry_run is not None:
        console.print(f"wrote [cyan]{result.dry_run}[/cyan]: {len(result.files)} files, configs {configs} "
                      f"({rows:,} rows), license {', '.join(result.license)}; nothing was pushed")
        console.print(f"check it with `datasets.load_dataset({result.dry_run!r})`, then run the same command "
                      "without --dry-run to push it")
        return
    console.print(f"pushed configs {configs} ({rows:,} rows) to [cyan]{result.url}[/cyan]"
                  + (f" (commit {result.commit[:12]})" if result.commit else ""))


def _verdicts(results_dir: Path | None) -> dict[str, str] | None:
    """The leaderboard's validity verdicts by fingerprint from ``results_dir`` (the default folder
    only where it exists; a folder given that does not exist is an error)."""
    from gradebench.experiments.leaderboard import verdict_texts
    from gradebench.experiments.results_hub import resolve_results_dir

    if results_dir is None:
        if not RESULTS_DIR.is_dir():
            return None
        results_dir = RESULTS_DIR
    return verdict_texts(resolve_results_dir(results_dir))


@app.command("publish-results")
def publish_results(
    repo_id: Annotated[str, typer.Option("--repo-id", help="ORG/NAME of the Hub dataset repo", show_default=False)],
    results_dir: Annotated[Path, typer.Option(
        "--results-dir", help=f"root of the result records (the project's committed ones: {COMMITTED_RESULTS_DIR})"
    )] = RESULTS_DIR,
    private: Annotated[bool, typer.Option("--private", help="create the repo private")] = False,
    dry_run: Annotated[Optional[Path], typer.Option(
        "--dry-run", help="write exactly the folder that would be pushed into DIR; push nothing",
        metavar="DIR", show_default="off: push")] = None,
    license_: Annotated[str, typer.Option("--license", help="Hub license id of the records")] = "cc-by-4.0",
    pretty_name: Annotated[Optional[str], typer.Option(help="title of the dataset card",
                                                       show_default="gradebench results (ORG/NAME)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Publish result records (JSON and their Parquet tables) as a Hugging Face dataset with a card."""
    from gradebench.experiments.results_hub import publish_results as publish_results_api

    result = publish_results_api(results_dir, repo_id=repo_id, dry_run=dry_run, private=private, license=license_,
                                 pretty_name=pretty_name)
    if as_json:
        emit(result.to_dict())
        return
    import sys

    what = f"{result.records} records, {result.policy_records} policy records, {len(result.files)} files"
    if result.dry_run is not None:
        sys.stdout.write(f"wrote {result.dry_run}: {what}; nothing was pushed\n"
                         f"read it:  gradebench leaderboard --results-dir {result.dry_run}\n"
                         "push it:  the same command without --dry-run\n")
        return
    sys.stdout.write(f"pushed {what} to {result.url}\n")
