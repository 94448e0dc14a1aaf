"""Run build batches in this process or in worker processes, with an explicit context per task.

Workers come from a ``forkserver`` context: they are forked from a clean server process, never
from the caller, so building is safe from a process that already runs threads (torch, the
harness). A task carries everything it needs (builder name, resolved recipe JSON, units), so
there is no module-level state to inherit.

A forkserver (like ``spawn``) imports the caller's main script again in the new processes, so
a script that calls ``gradebench.build`` at its top level, without an
``if __name__ == "__main__":`` guard, would build again there and fail. When the caller is such
a script (:func:`start_method`), workers are plain forks of this process instead, which import
nothing, as long as the process runs no other Python thread (one could hold a lock the child
then waits on); an unguarded script that runs threads builds in this process, with one
warning line.

Interruption: workers ignore SIGINT, so a Ctrl-C
(sent by a terminal to the whole process group) is handled once, in the parent, whose
exception ends the wait on the pool and terminates it (SIGTERM, at its default action in
workers, ends them without a traceback).
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing as mp
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gradebench.benchmark.tables import lists_to_tables
from gradebench.io.gcpause import gc_paused

if TYPE_CHECKING:
    from gradebench.datasets import Builder

#: what a worker must not get from the parent's handlers (see _init_pool_worker)
_POOL_SIGNALS = {signal.SIGINT, signal.SIGTERM}

Batch = tuple[Sequence[Any], Sequence[str]]


def _init_pool_worker() -> None:
    """Worker start-up: Ctrl-C is the parent's business, SIGTERM (``Pool.terminate``) just ends us.

    The parent starts the pool with both signals blocked (:func:`_signals_blocked`), so none
    can reach a worker before these dispositions are set; unblocking delivers any pending.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _POOL_SIGNALS)


@contextmanager
def _signals_blocked() -> Iterator[None]:
    """Block SIGINT/SIGTERM in this thread; processes and threads started inside inherit the mask."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _POOL_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def build_batch(builder: Builder, units: Sequence[Any], out_splits: Sequence[str]) -> tuple[dict, dict[str, float]]:
    """One batch: graded lists -> per-split (table, row features); in this process or a worker.

    Also returns the seconds spent making the lists and turning them into tables (summed over
    batches into the build's ``workers.*`` timings).
    """
    cls = type(builder)
    with gc_paused():
        t0 = time.perf_counter()
        lists = builder.make_lists(units)
        t1 = time.perf_counter()
        tables = lists_to_tables(cls.columns, lists, out_splits, cls.stat_columns)
    return tables, {"workers.make_lists": t1 - t0, "workers.tables": time.perf_counter() - t1}


def _make_builder(builder_name: str, recipe_json: str):
    from gradebench.datasets import get_builder
    from gradebench.recipes.loader import recipe_from_json

    return get_builder(builder_name)(recipe_from_json(recipe_json))


def _task(args: tuple[str, str, Sequence[Any], Sequence[str]]) -> tuple[dict, dict[str, float]]:
    builder_name, recipe_json, units, out_splits = args
    return build_batch(_make_builder(builder_name, recipe_json), units, out_splits)


def run_batches(
    builder_name: str, recipe_json: str, batches: Iterable[Batch], workers: int
) -> Iterator[tuple[dict, dict[str, float]]]:
    """Results of each batch, in order (``build_batch`` output); ``batches`` is consumed lazily."""
    batches = iter(batches)
    first = next(batches, None)
    second = next(batches, None)
    if first is None:
        return
    batches = itertools.chain([first] if second is None else [first, second], batches)
    if workers <= 1 or second is None:
        builder = _make_builder(builder_name, recipe_json)
        for units, splits in batches:
            yield build_batch(builder, units, splits)
        return
    method = start_method()
    if method is None:
        sys.stderr.write(SERIAL_WARNING)
        yield from run_batches(builder_name, recipe_json, batches, 1)
        return
    ctx = mp.get_context(method)
    pool = None
    try:
        with _signals_blocked(), _frozen_heap(method == "fork"):
            pool = ctx.Pool(workers, initializer=_init_pool_worker)
        tasks = ((builder_name, recipe_json, units, splits) for units, splits in batches)
        yield from pool.imap(_task, tasks, chunksize=1)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()


SERIAL_WARNING = (
    "gradebench: warning: building in one process: worker processes would run this script's top level "
    "again (put the build under `if __name__ == \"__main__\":` to use them)\n"
)


def start_method() -> str | None:
    """How to start workers for the calling program: ``forkserver``, ``fork``, or None (no workers).

    ``forkserver`` unless the main module is a script file (what multiprocessing would import
    again in the workers, see ``multiprocessing.spawn.get_preparation_data``) without an
    ``if __name__ == "__main__":`` guard. Such a script gets ``fork`` while it runs a single
    thread, else None.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if getattr(getattr(main, "__spec__", None), "name", None) is not None or path is None:
        return "forkserver"  # `python -m ...`, `python -c`, a REPL or notebook: nothing is re-run
    if _single_threaded():
        return "fork"
    return "forkserver" if _has_main_guard(path) else None


def _single_threaded() -> bool:
    """No Python thread but this one (one could hold a lock the forked child then waits on forever).

    Native thread pools are not counted: NumPy's BLAS starts one at import, and BLAS and Arrow
    re-create theirs in a forked child; the workers use no OpenMP (torch), whose pool does not.
    """
    return threading.active_count() == 1


def _has_main_guard(path: str) -> bool:
    """Whether the script at ``path`` has a top-level ``if __name__ == "__main__":``."""
    import ast

    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            names = [node.test.left, *node.test.comparators]
            if any(isinstance(n, ast.Name) and n.id == "__name__" for n in names) and any(
                isinstance(n, ast.Constant) and n.value == "__main__" for n in names
            ):
                return True
    return False


@contextmanager
def _frozen_heap(enabled: bool) -> Iterator[None]:
    """Around a fork: move this process's objects out of the collector's reach (``gc.freeze``).

    A forked worker shares the parent's memory pages until it writes to them; a garbage
    collection there would write to the header of every object it scans and so copy them all.
    """
    if not enabled:
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
