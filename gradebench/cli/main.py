"""Entry point: run the app, mapping typed errors to one line and exit code 2."""

from __future__ import annotations

import sys

import typer

from gradebench.cli.app import app
from gradebench.errors import GradebenchError


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, mapping typed errors to one line and exit code 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        app(args=args, prog_name="gradebench", standalone_mode=False)
    except GradebenchError as e:
        if debug:
            raise
        sys.stderr.write(f"gradebench: error: {e.one_line()}\n")
        return e.exit_code
    except typer.Exit as e:
        return e.exit_code
    except typer.Abort:
        sys.stderr.write("gradebench: aborted\n")
        return 130
    except typer.TyperException as e:  # usage errors: bad option, missing argument
        show = getattr(e, "show", None)
        if show is not None:
            show()
        else:
            sys.stderr.write(f"gradebench: error: {e}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("gradebench: interrupted; nothing was left half-written\n")
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
