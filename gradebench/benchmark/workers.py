"""Run build batches in this process or in worker processes, with an explicit context per task.

Workers come from a ``forkserver`` context: they are forked from a server process that runs no
code of the caller's (it may have imported NumPy, Arrow and pydantic: :func:`prestart`), never
from the caller, so building is safe from a process that already runs threads (torch, the
harness). A task carries everything it needs (builder name, resolved recipe JSON, units, or the
byte ranges of the source rows the worker reads itself), so there is no module-level state to
inherit.

A forkserver (like ``spawn``) imports the caller's main script again in the new processes, so
a script that calls ``gradebench.build`` at its top level, without an
``if __name__ == "__main__":`` guard, would build again there and fail. When the caller is such
a script (:func:`start_method`), workers are plain forks of this process instead, which import
nothing, as long as the process runs no other Python thread (one could hold a lock the child
then waits on); an unguarded script that runs threads builds in this process, with one
warning line.

Each worker has its own pipe, and this process sends a batch only to a worker that is idle
(waiting on that pipe), from the calling thread, and reads a result only from a worker that is
busy with it. There is no ``multiprocessing.Pool``: its shared task pipe and locks let
``terminate()`` hang (issue 16.6). Its task thread could be writing a multi-megabyte task into
the pipe after ``terminate()`` had stopped draining it, and was then joined forever; and a
worker killed by a group SIGTERM while it waited for a task (inside the task pipe's lock) left
that lock taken, which ``terminate()`` then waited on. Here nothing is shared: a worker that
dies breaks only its own pipe, which this process sees (an error, never a hang).

Parent death: a worker ends as soon as the building process is gone, even in the middle of a
batch (its closed pipe is seen only between batches: after a ``kill -9`` of ``gradebench build``
its workers lived on for up to 5 s; now they are gone within milliseconds): :func:`_die_with_parent`.

Interruption: workers ignore SIGINT, so a Ctrl-C (sent by a terminal to the whole process
group) is handled once, in the parent, whose exception ends the wait and kills the workers;
a group SIGTERM ends the workers at its default action, without a traceback. A signal that
reaches the parent while it starts the workers is held back until they are all started.
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing as mp
import multiprocessing.connection as mp_connection
import os
import pickle
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from gradebench.benchmark.rowgroups import encode
from gradebench.benchmark.summary import query_figures
from gradebench.benchmark.tables import columns_to_tables
from gradebench.benchmark.writer import parquet_target, uninterrupted
from gradebench.datasets.base import SourceRef
from gradebench.errors import BenchmarkError
from gradebench.io.gcpause import gc_paused
from gradebench.stops import stop_point

if TYPE_CHECKING:
    from gradebench.datasets import Builder

#: what a worker must not get from the parent's handlers (see _init_worker)
_POOL_SIGNALS = {signal.SIGINT, signal.SIGTERM}

#: a batch's units and output splits; or a task of a sharded selection and None (answered with
#: its :class:`~gradebench.datasets.base.SelectionKeys`)
Batch = tuple[Sequence[Any], Sequence[str]]

#: what a stream of batches gives when its next batch depends on results not yet given to its
#: caller (a sharded selection's units): the workers that are idle wait for the next result
NOT_YET: Any = ("not yet", None)

#: what :func:`run_batches` gives first when asked to ``announce``: its workers are running (or
#: it builds in this process), so the caller can start a thread of its own (a progress bar's)
STARTED: Any = ("started", None)


#: ``prctl`` option: the signal this process gets when its parent ends (linux/prctl.h)
_PR_SET_PDEATHSIG = 1


def _init_worker() -> None:
    """Worker start-up: Ctrl-C is the parent's business, SIGTERM just ends us, and so does the end
    of the process that started us (:func:`_die_with_parent`).

    The parent starts the workers with both signals blocked (:func:`_signals_blocked`), so none
    can reach a worker before these dispositions are set; unblocking delivers any pending.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _POOL_SIGNALS)
    use_system_memory_pool()


def _die_with_parent() -> None:
    """End this worker (by a signal: it holds nothing to clean up) as soon as the building process
    is gone, even while it computes.

    Multiprocessing's parent sentinel is the read end of a pipe whose write end only the building
    process holds: it reads end-of-file the moment that process ends, however it ends. On Linux
    the kernel acts on it without this process's help (the main thread may hold the GIL for a
    while): the sentinel is put in ``O_ASYNC`` mode, so the writer's end sends this process
    SIGIO, whose default action ends it; and a forked worker, whose parent is the building
    process, also gets ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (the signal comes when the forking
    *thread* ends: :func:`start_method` forks only a single-threaded process). Everywhere, a
    daemon thread waits on the sentinel too (no polling): the portable way, and the one that
    sees a building process that ended before the kernel was asked. A forkserver's child needs
    the sentinel: its parent is the forkserver, which stays as long as any worker does (each
    holds the forkserver's "alive" pipe). Outside a multiprocessing child (a test) nothing is done.
    """
    parent = mp.parent_process()
    if parent is None:
        return
    if os.getppid() == parent.pid:
        _set_parent_death_signal(signal.SIGKILL)
    _signal_on_end_of_file(parent.sentinel)
    threading.Thread(target=_watch_parent, args=(parent,), name="gradebench-parent-watch", daemon=True).start()


def _signal_on_end_of_file(fd: Any) -> None:
    """Linux: SIGIO (default action: end the process) when the pipe ``fd`` reads end-of-file."""
    if not sys.platform.startswith("linux") or not isinstance(fd, int):
        return
    import fcntl

    signal.signal(signal.SIGIO, signal.SIG_DFL)
    fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)


def _set_parent_death_signal(sig: int) -> bool:
    """``prctl(PR_SET_PDEATHSIG, sig)`` for this process; False where there is no such call."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return False


def _watch_parent(parent: Any) -> None:
    """Wait for ``parent`` (a multiprocessing parent process) to end, then end this process."""
    parent.join()
    os.kill(os.getpid(), signal.SIGKILL)


def use_system_memory_pool() -> None:
    """Arrow's allocations from ``malloc``, in this process from now on.

    Arrow's default pool (mimalloc) keeps freed memory for later: in a build, where each batch
    allocates its tables afresh, that is about 40 MB more per worker and 50 MB more in the
    building process at the same speed (500k e-SNLI pairs: peak PSS 1.2 -> 1.1 GB, 19.5 s
    both). Set in every worker process (build batches, validity figures), and by ``gradebench
    build`` for its own process; a library call leaves its caller's pool alone.
    """
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())


#: what the forkserver imports for the build workers (:func:`prestart`): third-party modules only
#: pandas too: pyarrow imports it the first time an array is made from a Python list (its
#: array-like check), about 0.2 CPU-s in each worker otherwise
PRELOAD = ("numpy", "pyarrow", "pyarrow.parquet", "pydantic", "pandas")


@contextmanager
def _signals_blocked(forkserver: bool) -> Iterator[None]:
    """Block SIGINT/SIGTERM in this thread; processes and threads started inside inherit the mask.

    With ``forkserver``, multiprocessing's resource tracker is started first, inside: the
    forkserver starts it on first use, and it unblocks both signals once it is up
    (``SIG_UNBLOCK``, not the mask it found), so the forkserver, started next, would run
    unprotected, and its children (the workers) too until :func:`_init_worker`: a Ctrl-C there
    was a ``KeyboardInterrupt`` traceback from that process.
    """
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _POOL_SIGNALS)
    try:
        if forkserver:
            from multiprocessing import resource_tracker

            resource_tracker.ensure_running()
            signal.pthread_sigmask(signal.SIG_BLOCK, _POOL_SIGNALS)
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _pyarrow_version() -> str:
    import pyarrow as pa

    return pa.__version__


@dataclass(frozen=True)
class Encoding:
    """How a batch's rows are to be encoded where they are made: the data files' schema metadata,
    and the pyarrow version the building process writes with (the footers must match, so a worker
    with another version hands back its tables, which the building process encodes)."""

    metadata: dict[str, str]
    pyarrow: str = field(default_factory=_pyarrow_version)


def build_batch(builder: Builder, units: Sequence[Any], out_splits: Sequence[str],
                encoding: Encoding | None = None) -> tuple[dict, dict[str, float]]:
    """One batch: graded lists -> per-split (rows, row features); in this process or a worker.

    The rows are a table, or with ``encoding`` (and this process's pyarrow the one it names)
    the table's Parquet row group, encoded here (:mod:`gradebench.benchmark.rowgroups`). Also
    returns the seconds spent making the lists, turning them into tables, the stats' per-query
    figures and the encoding (summed over batches into the build's ``workers.*`` timings).
    """
    cls = type(builder)
    with gc_paused():
        t0 = time.perf_counter()
        batch = builder.make_columns(units)
        t1 = time.perf_counter()
        tables = columns_to_tables(cls.columns, batch, out_splits, cls.stat_columns)
        t2 = time.perf_counter()
        for _, features in tables.values():  # the stats' per-query part, here rather than in the parent
            if features.score.size:  # (lists without candidates: the parent computes on the whole split)
                features.figures = query_figures(features)
    t3 = time.perf_counter()
    seconds = {"workers.make_lists": t1 - t0, "workers.tables": t2 - t1, "workers.stats": t3 - t2}
    if encoding is not None and encoding.pyarrow == _pyarrow_version():
        schema, options = parquet_target(cls.columns, encoding.metadata)
        tables = {split: (encode(table, schema, options) if table.num_rows else table, f)
                  for split, (table, f) in tables.items()}
        seconds["workers.encode"] = time.perf_counter() - t3
    return tables, seconds


def run_task(builder: Builder, packed: Any, out_splits: Sequence[str] | None,
             encoding: Encoding | None = None) -> tuple[Any, dict[str, float]]:
    """A task as a worker gets it: a batch's packed units (:meth:`Builder.pack_units`) and output
    splits (:func:`build_batch`), or with ``out_splits`` None a task of a sharded selection
    (:meth:`Builder.select_sharded`), answered with its keys."""
    t0 = time.perf_counter()
    if out_splits is None:
        with gc_paused():
            keys = builder.selection_keys(packed)
        return keys, {"workers.select": time.perf_counter() - t0}
    with gc_paused():  # a batch read from the source is thousands of new objects at once
        units = builder.unpack_units(packed)
    del packed
    t1 = time.perf_counter()
    result, seconds = build_batch(builder, units, out_splits, encoding)
    seconds["workers.read"] = t1 - t0
    return result, seconds


def _make_builder(builder_name: str, recipe_json: str):
    from gradebench.datasets import get_builder
    from gradebench.recipes.loader import recipe_from_json

    return get_builder(builder_name)(recipe_from_json(recipe_json))


def _worker_main(conn: Connection, builder_name: str, recipe_json: str, inherited: Sequence[Connection] = (),
                 encoding: Encoding | None = None) -> None:
    """A worker: build each batch that arrives on ``conn`` and send back its result (:func:`run_task`).

    A batch arrives as two messages: its number (8 bytes), then ``(units, out_splits)``
    pickled (or ``(task, None)``: a sharded selection's task, answered with its keys). The answer
    is ``(seq, True, result)`` or, when the batch raised, ``(seq, False, exception)``. An empty
    message (no more batches) or a closed pipe (the parent is gone) ends the worker.
    ``inherited``: the parent's ends of the pipes, which a forked worker holds too; closed here,
    or a worker would never see its pipe close when the parent dies.
    """
    _init_worker()
    for c in inherited:
        c.close()
    builder = _make_builder(builder_name, recipe_json)
    while True:
        try:
            head = conn.recv_bytes()
        except (EOFError, OSError):  # the parent is gone
            return
        if not head:  # no more batches
            return
        seq = int.from_bytes(head, "little")
        failure: BaseException | None = None
        try:
            stop_point("batch-receiving", visit=seq + 1)  # crash tests: a signal while the batch is on its way
        except Exception as e:  # noqa: BLE001 - a bad GRADEBENCH_STOP_AT: the parent reports it
            failure = e
        try:
            packed, out_splits = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        try:
            if failure is not None:
                raise failure
            answer = (seq, True, run_task(builder, packed, out_splits, encoding))
        except BaseException as e:  # noqa: BLE001 - handed to the parent, which raises it
            answer = (seq, False, e)
        units = packed = None
        payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL) if answer[1] else _error_payload(answer)
        del answer
        try:
            conn.send_bytes(payload)
        except OSError:  # the parent is gone
            return
        del payload  # not held while the next batch is built (22 MB for 8,192 e-SNLI pairs)


def _error_payload(answer: tuple[int, bool, BaseException]) -> bytes:
    """The pickled failure, or a RuntimeError with its text when the exception does not round-trip."""
    seq, _, error = answer
    try:
        payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(payload)
        return payload
    except Exception:  # noqa: BLE001 - e.g. an exception class whose __init__ takes other arguments
        return pickle.dumps((seq, False, RuntimeError(f"{type(error).__name__}: {error}")))


class WorkerDied(BenchmarkError):
    """A build worker ended without answering (killed, out of memory)."""


def _died(proc: Any) -> WorkerDied:
    proc.join(1)  # it is gone or going: its exit code says how
    return WorkerDied(f"a build worker ended without answering (exit code {proc.exitcode})",
                      hint="a negative code is the signal that killed it (-9: perhaps out of memory)")


def _pooled(ctx: Any, fork: bool, builder_name: str, recipe_json: str, batches: Iterator[Batch],
            workers: int, encoding: Encoding | None = None,
            ahead: int | None = None, announce: bool = False,
            home: Callable[[int], int | None] | None = None) -> Iterator[tuple[dict, dict[str, float]]]:
    """``run_batches`` over ``workers`` processes: results in batch order, one batch per worker at a time.

    A batch is handed out at most ``2 * workers`` ahead of the result the caller waits for, so
    the results that come back early stay few when one batch is slow. Batches are pickled ahead
    of that, whenever every busy worker is still working: a pickled batch is a fraction of its
    units' memory (about 360 against 1,000 bytes an e-SNLI pair), and ``batches`` frees the
    units it has handed over, so the building process shrinks early in the build. ``ahead``
    caps the pickled batches waiting: a stream of batches (selected as they are asked for)
    frees nothing when it is drained early, so there it only adds the pickled copies.

    ``home``: see :func:`run_batches`. An idle worker takes the first batch it may take that
    prefers it, else the first that prefers no worker or one not known yet, else the first: a
    worker never waits for another's batch. The batches given with a ``home`` are a sharded
    selection's, its small tasks and its batches in turn, so there a batch may be ``4 * workers``
    ahead: as many of its batches as before fit.
    """
    packer = _make_builder(builder_name, recipe_json)  # packs each batch's units for the pipe
    window = (2 if home is None else 4) * workers  # how far ahead of the awaited result a batch may go
    procs: list[Any] = []
    conns: list[Connection] = []
    busy: dict[int, int] = {}  # worker index -> seq of the batch it holds
    done: dict[int, tuple[dict, dict[str, float]]] = {}  # results that came back before their turn
    ready: deque[tuple[int, bytes, int | None]] = deque()  # (seq, pickled batch, its home) not handed out, in order
    ran_on: dict[int, int] = {}  # seq -> the worker it went to
    taken = wanted = 0  # batches taken from `batches`; the seq of the result the caller waits for
    exhausted = finished = False

    def pack_one() -> bool:
        """Pickle the next batch of ``batches`` into ``ready`` (none left: ``exhausted``); False when
        there was none to pickle (none left, or :data:`NOT_YET`)."""
        nonlocal taken, exhausted
        batch = None if exhausted else next(batches, None)
        if batch is None:
            exhausted = True
            return False
        if batch is NOT_YET:
            return False
        units, splits = batch
        packed = units if splits is None else packer.pack_units(units)  # a selection task goes as it is
        ready.append((taken, pickle.dumps((packed, splits), protocol=pickle.HIGHEST_PROTOCOL),
                      None if home is None else home(taken)))
        taken += 1
        return True

    def choice(i: int) -> int | None:
        """Where in ``ready`` the batch for worker ``i`` is (None: none may be handed out yet)."""
        limit = wanted + window
        k = _pick(ready, i, limit, ran_on)
        while k is None and home is not None and taken < limit and pack_one():  # perhaps the next one
            k = _pick(ready, i, limit, ran_on)
        return k if k is not None else _pick(ready, i, limit, ran_on, anyone=True)

    def feed(i: int) -> None:
        """Hand worker ``i`` (idle, so reading its pipe) a batch (:func:`choice`), unless all are too far ahead."""
        if not ready:
            pack_one()
        k = choice(i)
        if k is not None:
            seq, payload, _ = ready[k]
            del ready[k]
            try:
                conns[i].send_bytes(seq.to_bytes(8, "little"))
                conns[i].send_bytes(payload)
            except OSError:  # EPIPE, ECONNRESET: the worker is gone
                raise _died(procs[i]) from None
            busy[i] = seq
            ran_on[seq] = i

    try:
        # A signal during start-up waits until every worker is started (uninterrupted):
        # blocking it in this thread is not enough, as the interpreter runs Python handlers
        # in the main thread whichever thread the kernel hands the signal to (NumPy's and
        # Arrow's native threads take it), and a Process.start() cut short by the exception
        # leaves a forkserver child reading an unwritten pipe ("EOFError: Ran out of input").
        # The mask is still what the forkserver (started here on first use, or by prestart
        # under the same mask) and forked workers
        # inherit, so none of them can take a signal before _init_worker has set its dispositions.
        with uninterrupted(), _signals_blocked(forkserver=not fork), _frozen_heap(fork):
            for _ in range(workers):
                parent_end, child_end = ctx.Pipe(duplex=True)
                conns.append(parent_end)
                try:
                    args = (child_end, builder_name, recipe_json, tuple(conns) if fork else (), encoding)
                    proc = ctx.Process(target=_worker_main, args=args, daemon=True)
                    proc.start()
                    procs.append(proc)
                finally:
                    child_end.close()
        for i in range(workers):
            feed(i)
        if announce:
            yield STARTED
        while busy or wanted in done:
            if wanted in done:
                result = done.pop(wanted)
                wanted += 1
                for i in range(workers):
                    if i not in busy:
                        feed(i)
                yield result
                for i in range(workers):  # a batch that waited on this result (NOT_YET) may be ready now
                    if i not in busy:
                        feed(i)
                continue
            waiting = [conns[i] for i in busy]
            while (not exhausted and (ahead is None or len(ready) < ahead)
                   and not mp_connection.wait(waiting, timeout=0)):
                if not pack_one():  # while every busy worker is still working
                    break
            for conn in mp_connection.wait(waiting):
                i = conns.index(conn)
                try:
                    message = conn.recv_bytes()
                except (EOFError, OSError):
                    raise _died(procs[i]) from None
                del busy[i]
                feed(i)  # the worker gets its next batch before this one's result is unpickled
                seq, ok, value = pickle.loads(message)
                del message
                if not ok:
                    raise value
                done[seq] = value
        if not exhausted and (pack_one() or not exhausted):  # every result given: nothing may wait
            raise RuntimeError("a stream of batches waited on results it had been given")
        finished = True
    finally:
        with uninterrupted():  # a second Ctrl-C cannot leave workers behind
            _stop(procs, conns, gracefully=finished)


def _pick(ready: Sequence[tuple[int, Any, int | None]], worker: int, limit: int, ran_on: dict[int, int], *,
          anyone: bool = False) -> int | None:
    """Where in ``ready`` (``(seq, batch, the seq whose worker it prefers)``, in order) the batch for
    ``worker`` is, among those before ``limit``: the first that prefers it, else the first that
    prefers no worker (or one whose worker is not known), else with ``anyone`` the first; or None."""
    neutral = None
    for k, (seq, _, prefers) in enumerate(ready):
        if seq >= limit:
            break
        where = None if prefers is None else ran_on.get(prefers)
        if where == worker:
            return k
        if neutral is None and where is None:
            neutral = k
    if neutral is None and anyone and ready and ready[0][0] < limit:
        return 0
    return neutral


def _stop(procs: Sequence[Any], conns: Sequence[Connection], *, gracefully: bool) -> None:
    """End the workers. ``gracefully`` (every batch answered, so every worker idle): each is told
    there is no more work and leaves. Otherwise (an error, a signal, a caller that stopped early)
    they are killed first, as nothing they hold needs cleaning up, and their pipes closed after,
    so none writes to a closed pipe on the way out.
    """
    if gracefully:
        for conn in conns:
            try:
                conn.send_bytes(b"")
            except OSError:
                pass
    else:
        for proc in procs:
            proc.kill()
    for proc in procs:
        proc.join(30 if gracefully else None)
        if proc.exitcode is None:  # pragma: no cover - an idle worker that did not leave
            proc.kill()
            proc.join()
    for conn in conns:
        conn.close()


def run_batches(
    builder_name: str, recipe_json: str, batches: Iterable[Batch], workers: int, encoding: Encoding | None = None,
    ahead: int | None = None, announce: bool = False, home: Callable[[int], int | None] | None = None,
) -> Iterator[tuple[dict, dict[str, float]]]:
    """Results of each batch, in order (:func:`run_task` output: ``build_batch``'s, or a selection
    task's keys); ``batches`` is consumed lazily (at most ``ahead`` batches pickled before a worker
    asks for them; None: no cap, see :func:`_pooled`). It may give :data:`NOT_YET` while its next
    batch depends on results not yet given to the caller; idle workers then wait for the next one.

    ``announce``: first give :data:`STARTED` once the workers run and have their first batches (at
    once where the batches are built here, or where there are none). The workers are started
    by the first ``next``, so a caller that wants them forked while it runs one thread
    (:func:`start_method`) takes that before it starts another (a progress bar's).

    ``home(n)``: the number of an earlier batch whose worker should preferably build the ``n``-th
    (counted from 0, :data:`NOT_YET` not counted), as it still holds what that one read; or None.
    Asked once a batch, where the batch is taken; it changes who builds what, never the results."""
    batches = iter(batches)
    first = next(batches, None)
    second = next(batches, None)
    if first is None:
        if announce:
            yield STARTED
        return
    batches = itertools.chain([first] if second is None else [first, second], batches)
    if workers <= 1 or second is None:
        if announce:
            yield STARTED
        builder = _make_builder(builder_name, recipe_json)
        for batch in batches:
            if batch is NOT_YET:  # never here, where each result is given before the next batch is asked for
                raise RuntimeError("a batch waits on results not yet given")
            units, splits = batch
            if splits is None or (units and isinstance(units[0], SourceRef)):
                yield run_task(builder, units if splits is None else builder.pack_units(units), splits, encoding)
            else:
                yield build_batch(builder, units, splits, encoding)
        return
    method = start_method()
    if method is None:
        sys.stderr.write(SERIAL_WARNING)
        yield from run_batches(builder_name, recipe_json, batches, 1, encoding, announce=announce)
        return
    yield from _pooled(mp.get_context(method), method == "fork", builder_name, recipe_json, batches, workers,
                       encoding, ahead, announce, home)


def _call_main(conn: Connection, fn: Any, args: tuple, inherited: Sequence[Connection] = ()) -> None:
    """A background call's process: run ``fn(*args)`` and send back ``(0, ok, value or exception)``."""
    _init_worker()
    for c in inherited:
        c.close()
    try:
        answer = (0, True, fn(*args))
        payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as e:  # noqa: BLE001 - handed to the parent, which raises it
        payload = _error_payload((0, False, e))
    try:
        conn.send_bytes(payload)
    except OSError:  # the parent is gone
        pass


@contextmanager
def background_call(fn: Any, *args: Any) -> Iterator[Any]:
    """Run ``fn(*args)`` in a worker process while the caller goes on; yields ``wait()`` -> its result.

    For independent pieces of single-threaded work that would otherwise leave the second core
    idle (the validity figures). ``fn`` must be a module-level function and ``args`` picklable;
    an exception in ``fn`` is raised by ``wait()``. The worker is started as the build workers
    are (:func:`start_method`, signals held back during the start, Ctrl-C left to this
    process) and killed if the block ends before ``wait()`` returned. Where no worker can be
    started (an unguarded script that runs threads, one CPU) ``wait()`` runs ``fn`` here.
    """
    method = start_method()
    if method is None or (os.cpu_count() or 1) < 2:
        yield lambda: fn(*args)
        return
    ctx = mp.get_context(method)
    fork = method == "fork"
    proc = None
    parent_end = None
    done = False
    try:
        with uninterrupted(), _signals_blocked(forkserver=not fork), _frozen_heap(fork):
            parent_end, child_end = ctx.Pipe(duplex=False)
            try:
                proc = ctx.Process(target=_call_main, args=(child_end, fn, args, (parent_end,) if fork else ()),
                                   daemon=True)
                proc.start()
            finally:
                child_end.close()

        def wait() -> Any:
            nonlocal done
            try:
                message = parent_end.recv_bytes()
            except (EOFError, OSError):
                raise _died(proc) from None
            done = True
            _, ok, value = pickle.loads(message)
            if not ok:
                raise value
            return value

        yield wait
    finally:
        with uninterrupted():
            if proc is not None:
                if not done:
                    proc.kill()
                proc.join()
            if parent_end is not None:
                parent_end.close()


SERIAL_WARNING = (
    "gradebench: warning: building in one process: worker processes would run this script's top level "
    "again (put the build under `if __name__ == \"__main__\":` to use them)\n"
)


def start_method() -> str | None:
    """How to start workers for the calling program: ``forkserver``, ``fork``, or None (no workers).

    This project's own command line, run as ``python -m gradebench`` or as the ``gradebench``
    script, gets ``fork`` while it runs a single thread: its workers are then ready at once, with
    every module it has imported, where a forkserver's must wait for the server's imports and then
    import this project's (0.4-0.9 s of a 13-14 s build on 2 cores, in alternating runs). Otherwise
    ``forkserver``, unless the main module is a script file (what multiprocessing would import again
    in the workers, see ``multiprocessing.spawn.get_preparation_data``) without an ``if __name__ ==
    "__main__":`` guard. Such a script gets ``fork`` while it runs a single thread, else None.

    It is asked when the workers start, so the build starts them before its progress bar's
    thread (:func:`run_batches` with ``announce``): on a terminal too, the command line's workers
    are forks of it.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    name = getattr(getattr(main, "__spec__", None), "name", None)
    single = _single_threaded()
    if name == "gradebench.__main__" and single:
        return "fork"  # `python -m gradebench`: the command line, as its console script gets
    if name is not None or path is None:
        return "forkserver"  # `python -m ...`, `python -c`, a REPL or notebook: nothing is re-run
    if single:
        return "fork"
    return "forkserver" if _has_main_guard(path) else None


def prestart(modules: Sequence[str] = PRELOAD) -> bool:
    """Start the forkserver now, with ``modules`` imported there once.

    The building process calls this once it knows it will build (after the cache check), before
    it indexes the source, so the server's imports (NumPy, Arrow, pydantic, pandas: about 0.4 CPU-s)
    run on another core meanwhile, and each worker is a fork that already has them; it imports
    only this project's modules itself, after multiprocessing has given it this process's
    ``sys.path``. Only third-party modules are preloaded: the server imports them with its own
    default path (Python before 3.14 ignores the caller's there) and outlives the build, so this
    project's modules, which a user may run from a checkout or edit between two builds of one
    session, are always imported afresh by each worker, as before.

    Nothing happens where workers are not a forkserver's (:func:`start_method`: an unguarded
    script, or this project's single-threaded command line, ``gradebench`` or ``python -m
    gradebench``, whose workers are plain forks of it and start at once anyway), where the
    platform has no forkserver, or when a server is already running (multiprocessing keeps one
    per process, whose imports stay as they were). The modules are added to the caller's preload
    list, not put in its place. The server is started with SIGINT and SIGTERM blocked, as
    :func:`_pooled` starts it. Returns whether a server was started."""
    if start_method() != "forkserver" or "forkserver" not in mp.get_all_start_methods():
        return False
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    if server is None or getattr(server, "_forkserver_pid", None) is not None:
        return False
    preload = list(getattr(server, "_preload_modules", ["__main__"]))
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(preload + [m for m in modules if m not in preload])
    with uninterrupted(), _signals_blocked(forkserver=True):
        forkserver.ensure_running()
    return True


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
