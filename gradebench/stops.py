"""Named stop points: make a process stop at a chosen step, so crash tests need no timers.

The code that writes run folders and records calls :func:`stop_point` at the steps where a
crash matters (:data:`POINTS`). Normally that is a no-op. With the environment variable
``GRADEBENCH_STOP_AT=<point>[:<n>][:<how>]`` the process stops the ``n``-th time (default 1st)
it reaches ``<point>``:

* ``kill`` (the default): ``os._exit(137)``, as ``kill -9`` would -- no ``finally``, no cleanup,
  locks released by the OS;
* ``interrupt``: ``KeyboardInterrupt``, as Ctrl-C would -- cleanup handlers run;
* ``sigint-group`` / ``sigterm-group``: SIGINT (SIGTERM) to the whole process group, as a
  terminal's Ctrl-C (``kill -- -<pgid>``) would, then carry on if this process survives it --
  so the signal lands on the parent and every worker while this one is at that exact step.

Example: ``GRADEBENCH_STOP_AT=checkpoint-saving:2 gradebench train ...`` dies while writing its
second checkpoint (weights written, ``trainer_state.json`` not yet). In-process tests can install
their own reaction with :func:`stopping_with`. A spec naming an unknown point is an error the
first time any point is reached, so a typo never turns a crash test into a passing no-op.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator

from gradebench.errors import InvalidArgumentError

ENV = "GRADEBENCH_STOP_AT"
#: the exit status of a process stopped with ``kill`` (128 + SIGKILL, what a shell reports for kill -9)
KILLED_EXIT = 137
#: every named point, and where it lies
POINTS: dict[str, str] = {
    "run-begun": "a run folder's config file is written; nothing trained yet",
    "train-step": "an optimizer step is done (every step of every epoch)",
    "checkpoint-saving": "a checkpoint's weights, optimizer and RNG state are written, its trainer_state.json not",
    "checkpoint-saved": "a checkpoint is complete; its epoch's history line is not written yet",
    "output-saved": "a run's output (model, policy) is saved into its temp folder, not yet renamed onto its name",
    "output-published": "a run's output is published; its final file (run.json) is not written yet",
    "record-writing": "a record file is written to its temp file, not yet renamed onto its name",
    "batch-receiving": "a build worker has the number of its next batch, not the batch: the parent is writing it"
                       " (counted by batch number, across all the workers)",
}
HOWS = ("kill", "interrupt", "sigint-group", "sigterm-group")
#: the signal each group "how" sends
GROUP_SIGNALS = {"sigint-group": signal.SIGINT, "sigterm-group": signal.SIGTERM}

#: ``handler(point)`` replacing the default reaction (see :func:`stopping_with`)
Handler = Callable[[str], None]
_state: dict[str, object] = {"spec": None, "counts": {}, "handler": None}


def parse(spec: str) -> tuple[str, int, str]:
    """``"checkpoint-saving:2:interrupt"`` -> ``("checkpoint-saving", 2, "interrupt")``.

    Raises:
        InvalidArgumentError: an unknown point or way to stop, or a count that is not a positive integer.
    """
    parts = spec.strip().split(":")
    name, count, how = parts[0], "1", "kill"
    if len(parts) > 3:
        raise InvalidArgumentError(f"{ENV}={spec!r} has too many parts", hint=f"give <point>[:<n>][:{'|'.join(HOWS)}]")
    for part in parts[1:]:
        if part in HOWS:
            how = part
        else:
            count = part
    if name not in POINTS:
        raise InvalidArgumentError(f"{ENV} names an unknown stop point {name!r}", key=ENV,
                                   hint=f"points: {', '.join(POINTS)}")
    if not count.isdigit() or int(count) < 1:
        raise InvalidArgumentError(f"{ENV}={spec!r}: the count must be a positive integer", key=ENV,
                                   hint="e.g. checkpoint-saving:2")
    return name, int(count), how


def stop_point(name: str, visit: int | None = None) -> None:
    """Stop here if ``GRADEBENCH_STOP_AT`` names this point and this is its ``n``-th visit.

    ``visit`` numbers this visit (from 1) where the caller counts better than this process can
    (a build batch's number, the same whichever worker process gets the batch); by default the
    process counts its own visits.
    """
    if name not in POINTS:  # pragma: no cover - a programming error, caught by the tests
        raise InvalidArgumentError(f"unknown stop point {name!r}", hint=f"points: {', '.join(POINTS)}")
    spec = os.environ.get(ENV)
    if not spec:
        return
    if spec != _state["spec"]:
        _state["spec"], _state["counts"] = spec, {}
    target, n, how = parse(spec)
    counts: dict[str, int] = _state["counts"]  # type: ignore[assignment]
    counts[name] = counts.get(name, 0) + 1
    if name != target or (counts[name] if visit is None else visit) != n:
        return
    handler: Handler | None = _state["handler"]  # type: ignore[assignment]
    if handler is not None:
        handler(name)
    elif how == "interrupt":
        raise KeyboardInterrupt(f"stopped at {name} ({ENV})")
    elif how in GROUP_SIGNALS:
        os.killpg(os.getpgrp(), GROUP_SIGNALS[how])
    else:
        os._exit(KILLED_EXIT)


@contextlib.contextmanager
def stopping_with(handler: Handler) -> Iterator[None]:
    """Within the block, a reached stop point calls ``handler(point)`` instead of stopping the
    process (for in-process tests: snapshot what a kill would leave, then raise). Visit counts
    start from zero."""
    before = _state["handler"]
    _state["handler"], _state["spec"], _state["counts"] = handler, None, {}
    try:
        yield
    finally:
        _state["handler"], _state["spec"], _state["counts"] = before, None, {}


__all__ = ["ENV", "GROUP_SIGNALS", "HOWS", "KILLED_EXIT", "POINTS", "parse", "stop_point", "stopping_with"]
