"""Entry point: run a command and turn every way it can fail into one line and an exit code.

=====================================  =====  ===============================================
what happened                          exit   stderr
=====================================  =====  ===============================================
success                                0
usage error (bad value, unknown        2      ``gradebench: error: <what> (hint: run
option/command, missing argument)             'gradebench build --help')``
:class:`~gradebench.errors.            2      ``gradebench: error: <path>: <what> (hint: ...)``
GradebenchError`
:class:`OSError` (disk full, no        2      ``gradebench: error: <path>: <strerror> (hint: ...)``
permission, a file in the way)
SIGINT (Ctrl-C) / SIGTERM              130 /  ``gradebench: interrupted; nothing was left
                                       143    half-written`` (``terminated`` for SIGTERM)
the reader of stdout went away         141    nothing (``gradebench build ... | head``: the work
                                              is done, only unread output is dropped)
any other exception (a bug)            1      ``gradebench: internal error: <type>: <what>
                                              (hint: rerun with --debug ...)``
=====================================  =====  ===============================================

A :class:`~gradebench.errors.GradebenchWarning` (a record left out, ...) is one line on stderr,
``gradebench: warning: <what>``, and changes no exit code.

``--debug`` (anywhere on the line) prints the traceback before the line; the exit code is
the same. Commands are found through :data:`gradebench.cli.app.app`, so every command module
that registers on it is covered without changes here.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
import warnings

import typer

from gradebench.cli._argv import GLOBAL_FLAGS, normalize, resolve
from gradebench.cli._signals import Interrupted, exit_code, signals_as_exceptions
from gradebench.cli.app import _state, app, fit_help_to_width
from gradebench.errors import GradebenchError, GradebenchWarning
from gradebench.paths import os_error_hint

PROG = "gradebench"


def _line(text: str) -> str:
    return " ".join(text.split())


def _error(message: str, hint: str | None = None) -> None:
    text = f"{PROG}: error: {_line(message)}"
    if hint:
        text += f" (hint: {_line(hint)})"
    sys.stderr.write(text + "\n")


def _usage_error(e: BaseException, args: list[str]) -> int:
    """Click's usage errors (bad value, unknown option or command) in the one-line form."""
    ctx = getattr(e, "ctx", None)
    if type(e).__name__ == "NoArgsIsHelpError":  # bare `gradebench`: the help is the answer
        text = e.format_message()  # type: ignore[attr-defined]  # "" when typer's rich help printed itself
        if text.strip():
            sys.stdout.write(text.rstrip("\n") + "\n")
        return 2
    message = e.format_message().strip().rstrip(".")  # type: ignore[attr-defined]
    message = message[:1].lower() + message[1:] if message[1:2].islower() else message
    if ctx is not None:
        path = ctx.command_path
    else:  # some parser errors carry no context: find the command from the arguments
        names = resolve(typer.main.get_command(app), [a for a in args if a not in GLOBAL_FLAGS])[1]
        path = " ".join([PROG, *names])
    _error(message, f"run '{path} --help'")
    return 2


def _os_error(e: OSError) -> int:
    where = e.filename if e.filename is not None else None
    if where is not None and e.filename2 is not None:
        where = f"{e.filename} -> {e.filename2}"
    what = e.strerror or str(e) or type(e).__name__
    _error(f"{where}: {what}" if where is not None else what, os_error_hint(e))
    return 2


#: the exit status when stdout's reader went away: ``128 + SIGPIPE``, what a shell reports for
#: ``git log | head`` or ``yes | head`` (1 would read as the internal error of the table above)
BROKEN_PIPE_EXIT = 128 + getattr(signal, "SIGPIPE", 13)


def _broken_pipe() -> int:
    """The reader went away (``gradebench list --json | head``): exit quietly with 141."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit does not fail again
    except (OSError, ValueError):
        pass
    return BROKEN_PIPE_EXIT


def main(argv: list[str] | None = None) -> int:
    """Run ``gradebench <argv>`` and return its exit code (see the module table)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args[: args.index("--") if "--" in args else len(args)]
    _state["debug"] = debug
    try:
        with signals_as_exceptions() as received:
            try:
                return _run(args)
            except BaseException as e:
                if debug and not isinstance(e, (SystemExit, typer.Exit)) and not _is_usage(e):
                    traceback.print_exc()
                if received and isinstance(e, Exception):  # the signal's exception, wrapped by an extension
                    raise Interrupted(received[-1]) from e
                if received and isinstance(e, KeyboardInterrupt) and not isinstance(e, Interrupted):
                    # another thread's interrupt_main() (Ray's, when the signal has stopped its
                    # processes) came first: the signal that was received is what ended the run
                    raise Interrupted(received[-1]) from e
                raise
    except (typer.Exit, SystemExit) as e:
        if isinstance(e.__context__, BrokenPipeError):  # rich's Console exits 1 when its reader went away
            return _broken_pipe()
        code = getattr(e, "exit_code", getattr(e, "code", 0))
        if code is None or isinstance(code, int):
            return code or 0
        sys.stderr.write(f"{PROG}: {_line(str(code))}\n")  # sys.exit("message")
        return 1
    except typer.Abort:
        sys.stderr.write(f"{PROG}: aborted\n")
        return 1
    except KeyboardInterrupt as e:  # Interrupted (SIGINT/SIGTERM) or a plain Ctrl-C
        verb = "terminated" if isinstance(e, Interrupted) and e.signum != signal.SIGINT else "interrupted"
        sys.stderr.write(f"{PROG}: {verb}; nothing was left half-written\n")
        return exit_code(e)
    except GradebenchError as e:
        sys.stderr.write(f"{PROG}: error: {e.one_line()}\n")
        return e.exit_code
    except BrokenPipeError:
        return _broken_pipe()
    except OSError as e:
        return _os_error(e)
    except Exception as e:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        if _is_usage(e):
            return _usage_error(e, args)
        if hasattr(e, "format_message"):  # another click exception (a file option it could not open)
            _error(e.format_message())  # type: ignore[attr-defined]
            return 2
        _error(f"internal error: {type(e).__name__}: {e}", "rerun with --debug for the traceback and report it")
        return 1


def _is_usage(e: BaseException) -> bool:
    return hasattr(e, "format_message") and getattr(e, "exit_code", None) == 2


def _run(args: list[str]) -> int:
    root = typer.main.get_command(app)
    norm = normalize(root, args, PROG)
    if "--help" in norm.args or not norm.args:
        fit_help_to_width()
    # make_context + invoke, not app(): typer's own main turns Ctrl-C into a silent return
    # value and prints usage boxes; here every exception reaches main()'s single mapping
    with warnings.catch_warnings(), root.make_context(PROG, norm.args) as ctx:
        warnings.simplefilter("always", GradebenchWarning)  # each record left out is named, every time
        warnings.showwarning = _one_line_warnings(warnings.showwarning)
        root.invoke(ctx)
    return 0


def _one_line_warnings(show):  # noqa: ANN001, ANN202
    """``warnings.showwarning`` printing a :class:`GradebenchWarning` as one line (``gradebench: warning:
    <what>``) and passing others to ``show``."""
    def _show(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
        if issubclass(category, GradebenchWarning):
            sys.stderr.write(f"{PROG}: warning: {_line(str(message))}\n")
        else:
            show(message, category, filename, lineno, file, line)
    return _show


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
