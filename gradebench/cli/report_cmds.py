"""``gradebench report``: the reproduction report over a results folder (REPRODUCTION.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from gradebench.cli.app import app, emit
from gradebench.errors import InvalidArgumentError
from gradebench.paths import COMMITTED_RESULTS_DIR, OUT_DIR, RESULTS_DIR

REPORT_FORMATS = ("text", "md", "html", "json")
#: what --out writes
REPORT_FILE_FORMATS = ("md", "html")


@app.command()
def report(
    results_dir: Annotated[Path, typer.Option(
        "--results-dir", help=f"root of the result records (the project's committed ones: {COMMITTED_RESULTS_DIR})"
    )] = RESULTS_DIR,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="write the report to this file (atomically: a temp file, then a rename): HTML for a "
        ".html name, else Markdown",
        show_default="print to stdout")] = None,
    fmt: Annotated[Optional[str], typer.Option(
        "--format", help="what stdout gets: text (fits the terminal) | md (REPRODUCTION.md) | html (one "
        "self-contained page) | json",
        show_default="text")] = None,
    alpha: Annotated[float, typer.Option(help="family-wise error rate of each claim's Holm-corrected tests")] = 0.05,
    build_dir: Annotated[Path, typer.Option(
        "--build-dir", help="where the benchmarks were built (build --out): WinoWhy's train prior is read there")] = OUT_DIR,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON (same as --format json)")] = False,
) -> None:
    """Check the papers' claims against the records: per claim, the paper's figure, ours with its CI, and a
    verdict (reproduced, contradicted, inconclusive, not testable) by paired tests, Holm-corrected per claim."""
    from gradebench.cli._outputs import SUFFIXES, out_formats
    from gradebench.experiments.reproduction import html, markdown, reproduction_report, text, write_report

    if as_json and fmt not in (None, "json"):
        raise InvalidArgumentError(f"--json conflicts with --format {fmt}", hint="give one of --json or --format")
    fmt = "json" if as_json else fmt
    if fmt is not None and fmt not in REPORT_FORMATS:
        raise InvalidArgumentError(f"unknown --format {fmt!r}", hint=f"one of {', '.join(REPORT_FORMATS)}")
    if out is not None and fmt == "text":
        raise InvalidArgumentError(f"--out conflicts with --format {fmt}",
                                   hint="--out writes the Markdown or HTML report; drop --format (or give --json)")
    target = None
    if out is not None:  # the file's format: its suffix (.html, .md), else --format md|html, else Markdown
        named = fmt if fmt in REPORT_FILE_FORMATS else None
        default = None if SUFFIXES.get(out.suffix.lower()) else "md"
        target = out_formats([out], named or default, REPORT_FILE_FORMATS)[0]
    result = reproduction_report(results_dir, alpha=alpha, build_dir=build_dir)
    if target is not None:
        path = write_report(result, target[0], fmt=target[1])
    if fmt == "json":
        emit(result.to_dict())
    elif out is not None:
        counts = ", ".join(f"{v} {k}" for k, v in result.counts.items())
        sys.stdout.write(f"wrote {path}: {len(result.claims)} claims ({counts})\n")
    elif fmt == "md":
        sys.stdout.write(markdown(result))
    elif fmt == "html":
        sys.stdout.write(html(result))
    else:
        from gradebench.cli.app import terminal_width

        sys.stdout.write(text(result, width=terminal_width()))
