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
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
_state = {"debug": False}


@app.callback()
def _main(debug: Annotated[bool, typer.Option("--debug", help="show tracebacks")] = False) -> None:
    _state["debug"] = debug


def emit(obj: Any) -> None:
    """Print ``obj`` as the JSON that ``--json`` promises (sorted keys, 2-space indent)."""
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")


_emit = emit


def parse_resplit(text: str) -> tuple[int, int, int]:
    """``"80/10/10"`` -> ``(80, 10, 10)``."""
    parts = text.split("/")
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or any(v < 0 for v in values) or sum(values) != 100:
        raise InvalidArgumentError(
            f"--resplit {text!r} is not three percentages summing to 100", hint="e.g. --resplit 80/10/10"
        )
    return values  # type: ignore[return-value]
