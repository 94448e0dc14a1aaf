"""SIGINT and SIGTERM as exceptions, so every command unwinds (and cleans up) the same way.

Python turns SIGINT into :class:`KeyboardInterrupt` but lets SIGTERM kill the process on
the spot, skipping every ``finally`` and leaving temporary folders behind. While a command
runs, both raise :class:`Interrupted` (a :class:`KeyboardInterrupt`, so library code that
cleans up on Ctrl-C does so for SIGTERM too); :func:`gradebench.cli.main` turns it into one
line and exit code ``128 + signal number``: 130 for SIGINT, 143 for SIGTERM, as a shell
reports a process killed by that signal.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: the signals a command turns into :class:`Interrupted`
HANDLED = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGINT or SIGTERM."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(exc: BaseException) -> int:
    """``128 + signal number`` (130 for a plain :class:`KeyboardInterrupt`)."""
    return 128 + getattr(exc, "signum", signal.SIGINT)


@contextmanager
def signals_as_exceptions() -> Iterator[list[int]]:
    """Within the block, SIGINT and SIGTERM raise :class:`Interrupted`; handlers restored after.

    Yields the list of signals received so far: an extension that calls back into Python
    (pydantic-core serializing, for one) can wrap the :class:`Interrupted` raised there in an
    exception of its own, and the caller still knows the command was interrupted.

    A signal that was ignored on entry (``nohup``, a background job) stays ignored. Does
    nothing outside the main thread (Python only lets the main thread set handlers).
    """
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in HANDLED if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        yield received
    finally:
        for s, h in previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
