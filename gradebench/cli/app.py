"""The typer application and the helpers every command module shares."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from gradebench.errors import InvalidArgumentError

app = typer.Typer(
    name="gradebench",
    help="Graded ranking benchmarks from explanation and NLI datasets.",
    epilog="--json and --debug may be given anywhere on the command line.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
_state = {"debug": False}
#: cell padding of the options table in ``--help``: one space between columns (typer's default is
#: two), so that every flag name shows in full at 80 columns (tests/cli/test_help_width.py)
HELP_TABLE_PADDING = (0, 1, 0, 0)


def fit_help_to_width() -> None:
    """Narrow the gaps of typer's help tables; called only when help is shown (typer.rich_utils imports rich)."""
    from typer import rich_utils

    rich_utils.STYLE_OPTIONS_TABLE_PADDING = HELP_TABLE_PADDING


def _print_version(value: bool) -> None:
    if value:
        from gradebench._version import __version__

        sys.stdout.write(f"gradebench {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="show tracebacks (allowed anywhere on the line)")] = False,
    version: Annotated[
        bool, typer.Option("--version", help="print the version and exit", callback=_print_version, is_eager=True)
    ] = False,
) -> None:
    # ``--json`` is not a global option: gradebench.cli.main moves it to the command that runs
    _state["debug"] = debug


def pip_extra(extra: str) -> str:
    """``pip install 'gradebench[EXTRA]'`` as a help text must say it.

    typer renders help through rich markup, which reads ``[ray]`` as a style tag and drops it
    ("pip install 'gradebench'"); the bracket is escaped there, and left bare where typer prints
    click's plain help (``TYPER_USE_RICH=0``). Error hints go to stderr as plain text and need no
    escape (tests/cli/test_help_markup.py).
    """
    from typer.core import HAS_RICH

    bracket = "\\[" if HAS_RICH else "["
    return f"pip install 'gradebench{bracket}{extra}]'"


#: ``--threads`` of the commands that run torch (train, eval, sweep): :mod:`gradebench.threads`
THREADS_OPTION = typer.Option("--threads", min=1, metavar="N", help="torch CPU threads",
                              show_default="the free cores, or $OMP_NUM_THREADS")


def emit(obj: Any) -> None:
    """Print ``obj`` as the JSON that ``--json`` promises (sorted keys, 2-space indent)."""
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")


_emit = emit


def table(*columns: str, numeric: bool = False, **kwargs: Any) -> Any:
    """A rich table that fits an 80-column terminal: no vertical rules, no edge padding, and a first
    column (the name) that is never wrapped or cut; a header may break with ``\\n``.

    ``numeric``: the other columns hold numbers (right-aligned, never wrapped).
    """
    from rich import box
    from rich.table import Column, Table

    first, *rest = columns
    others = [Column(c, justify="right", no_wrap=True) for c in rest] if numeric else rest
    return Table(Column(first, no_wrap=True), *others, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
                 **kwargs)


def terminal_width() -> int:
    """The width output is fitted to: the terminal's, else ``$COLUMNS``, else 80 (rich's rule)."""
    from rich.console import Console

    return Console().width


def parse_resplit(text: str) -> tuple[int, int, int]:
    """``"80/10/10"`` -> ``(80, 10, 10)``, with the command line's error (the API takes the string too)."""
    from gradebench.benchmark.engine import split_percentages

    values = split_percentages(text) or ()
    if len(values) != 3 or sum(values) != 100:
        raise InvalidArgumentError(
            f"--resplit {text!r} is not three percentages summing to 100", hint="e.g. --resplit 80/10/10"
        )
    return values  # type: ignore[return-value]
