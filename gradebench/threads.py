"""How many CPU threads torch may use: the cores this process may run on, less the machine's load.

torch's default is one intra-op thread per core. On a machine that is already busy those threads
fight the other processes for the cores and every kernel waits for its slowest thread: on a loaded
2-core machine a ``hashed-mlp`` training epoch took 43.9 s at torch's default against 14.9 s at one
thread, and a MiniLM evaluation 145 s against 33 s.

:func:`choose_threads` is the policy; the first rule that applies wins:

1. an explicit count (``--threads N`` of ``train``, ``eval`` and ``sweep``);
2. ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` set by the user: left to torch, which reads them
   (``MKL_NUM_THREADS`` first, as torch does);
3. otherwise the cores this process may use (its CPU affinity, capped by a cgroup CPU quota and
   shared among the processes of a ``torchrun``/``accelerate`` launch on this machine) less the
   1-minute load average, rounded; at least 1, at most those cores.

Inter-op threads (torch's pool for independent ops, little used here) are kept modest: 1 up to 3
intra-op threads, else 2. :func:`limit_torch_threads` applies the choice for the duration of a
command without importing torch: if torch is already imported it is set directly, otherwise
``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` are set for torch to read when the work imports it (the
OpenMP runtimes of LightGBM and similar libraries read them too; torch caps a count read this way
at the machine's cores). Records state the count torch ran with (``environment.torch_threads``).

:func:`ordered_map` is the other use of threads here: work that spends its time in C with the GIL
released (hashing a source's files, finding their line starts) spread over the same cores.

This module imports nothing heavy and changes nothing at import time.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from gradebench.errors import InvalidArgumentError

#: the variables torch's intra-op default is read from, in torch's order of precedence
THREAD_VARIABLES = ("MKL_NUM_THREADS", "OMP_NUM_THREADS")
#: the cgroup v2 CPU quota of this process's container ("max 100000" or "<quota> <period>")
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


@dataclass(frozen=True)
class ThreadChoice:
    """What :func:`choose_threads` decided, and from what."""

    #: torch's intra-op threads; None when left to an environment variable that is not a count
    intra_op: int | None
    #: torch's inter-op threads; None when left to torch
    interop: int | None
    source: Literal["option", "env", "auto"]
    #: the cores this process may use (affinity, quota, launch); the load average (auto only)
    cores: int
    load: float | None = None


def interop_threads(intra_op: int) -> int:
    """Inter-op threads beside ``intra_op`` intra-op threads: 1 up to 3, else 2."""
    return 1 if intra_op < 4 else 2


def _env_count(env: Mapping[str, str]) -> tuple[bool, int | None]:
    """``(set, count)`` of the first of :data:`THREAD_VARIABLES` that is set (count None if not a positive int)."""
    for name in THREAD_VARIABLES:
        value = env.get(name, "").strip()
        if value:
            return True, int(value) if value.isdigit() and int(value) > 0 else None
    return False, None


def cgroup_cpu_quota(path: Path = CGROUP_CPU_MAX) -> int | None:
    """Whole CPUs of the cgroup v2 quota (rounded up), or None (no quota, no cgroup v2, unreadable)."""
    try:
        quota, period = path.read_text(encoding="ascii").split()[:2]
        return None if quota == "max" else max(1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        return None


def available_cores(*, affinity: int | None = None, quota: int | None = None,
                    env: Mapping[str, str] | None = None) -> int:
    """The cores this process may use: its CPU affinity (``os.sched_getaffinity``; else ``os.cpu_count()``),
    capped by the cgroup CPU ``quota``, divided among ``LOCAL_WORLD_SIZE`` processes of a launch; at least 1."""
    env = os.environ if env is None else env
    if affinity is None:
        try:
            affinity = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            affinity = os.cpu_count() or 1
    cores = max(1, affinity)
    if quota is not None:
        cores = min(cores, max(1, quota))
    local = env.get("LOCAL_WORLD_SIZE", "").strip()
    if local.isdigit() and int(local) > 1:
        cores = max(1, cores // int(local))
    return cores


_T = TypeVar("_T")
_R = TypeVar("_R")


def ordered_map(fn: Callable[[_T], _R], items: Iterable[_T], *, threads: int | None = None) -> list[_R]:
    """``[fn(x) for x in items]``, with up to ``threads`` (default: :func:`available_cores`) calls at
    once in threads: for work whose time is spent in C with the GIL released (``hashlib`` over
    large buffers, file reads, NumPy). Results come in the order of ``items``, and where calls
    raise, the exception of the first of those items in order is raised, as the loop would.
    One item, or one thread: the loop itself, in this thread.
    """
    items = list(items)
    n = min(len(items), available_cores() if threads is None else max(1, threads))
    if n <= 1:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="gradebench") as pool:
        futures = [pool.submit(fn, x) for x in items]
        try:
            return [f.result() for f in futures]
        finally:  # a raise (or Ctrl-C) leaves no queued call to start
            for f in futures:
                f.cancel()


def load_average() -> float | None:
    """The 1-minute load average, or None where the OS has none (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def choose_threads(requested: int | None = None, *, env: Mapping[str, str] | None = None,
                   cores: int | None = None, load: float | None = None) -> ThreadChoice:
    """The thread counts for torch by the module's policy (see the module docstring).

    ``env``, ``cores`` and ``load`` default to this process's environment, :func:`available_cores`
    and :func:`load_average` (given, they make the policy a pure function).

    >>> choose_threads(env={}, cores=8, load=2.6).intra_op   # 8 cores, about 3 busy
    5
    >>> choose_threads(env={}, cores=2, load=3.1).intra_op   # more work than cores
    1
    >>> choose_threads(env={"OMP_NUM_THREADS": "1"}, cores=8, load=0.0).source
    'env'
    """
    env = os.environ if env is None else env
    cores = available_cores(env=env, quota=cgroup_cpu_quota()) if cores is None else max(1, cores)
    if requested is not None:
        if requested < 1:
            raise InvalidArgumentError(f"threads must be at least 1, not {requested}",
                                       hint="give --threads 1 or more, or leave it out for the free cores")
        return ThreadChoice(requested, interop_threads(requested), "option", cores)
    is_set, count = _env_count(env)
    if is_set:
        return ThreadChoice(count, None, "env", cores)
    if load is None:
        load = load_average()
    busy = 0 if load is None else math.floor(max(0.0, load) + 0.5)
    intra = min(cores, max(1, cores - busy))
    return ThreadChoice(intra, interop_threads(intra), "auto", cores, load)


@contextlib.contextmanager
def limit_torch_threads(requested: int | None = None) -> Iterator[ThreadChoice]:
    """Run the block with torch's threads set by :func:`choose_threads`, then restore what it changed.

    Never imports torch: an imported torch is set directly (intra-op and, if its pool has not
    started, inter-op threads); otherwise ``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` are set for
    the block, for torch to read when the work imports it. A user's ``OMP_NUM_THREADS`` or
    ``MKL_NUM_THREADS`` is left alone unless ``requested`` overrides it.
    """
    choice = choose_threads(requested)
    if choice.source == "env" or choice.intra_op is None:
        yield choice
        return
    torch = sys.modules.get("torch")
    saved_env = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    saved_torch = None
    if torch is not None:
        saved_torch = torch.get_num_threads()
        torch.set_num_threads(choice.intra_op)
        with contextlib.suppress(RuntimeError):  # inter-op threads are fixed once that pool has started
            torch.set_num_interop_threads(choice.interop)
    else:
        for name in THREAD_VARIABLES:
            os.environ[name] = str(choice.intra_op)
    try:
        yield choice
    finally:
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if saved_torch is not None:
            torch.set_num_threads(saved_torch)
