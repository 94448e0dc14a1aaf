"""How far a long pass deep inside a call has got, for whoever shows progress above it.

A scoring pass runs in the scorers' batch loops, several layers below the command that shows a
progress bar. The caller opens :func:`reporting` with a callback; every batch loop calls
:func:`tick` with the items done and the items of its pass. Without a caller listening, a tick
costs one context-variable lookup. The callback runs in the loop's thread, between batches.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

#: ``(done, total)`` of the current pass, or None when nobody listens
_SINK: ContextVar[Callable[[int, int], None] | None] = ContextVar("gradebench_ticks", default=None)


@contextlib.contextmanager
def reporting(callback: Callable[[int, int], None] | None) -> Iterator[None]:
    """Within the block, every :func:`tick` calls ``callback(done, total)`` (None: nothing)."""
    token = _SINK.set(callback)
    try:
        yield
    finally:
        _SINK.reset(token)


def tick(done: int, total: int) -> None:
    """``done`` of ``total`` items of the current pass are finished."""
    callback = _SINK.get()
    if callback is not None:
        callback(done, total)
