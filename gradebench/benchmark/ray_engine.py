"""The ``ray`` build engine: the build's batches as Ray tasks, on this machine or a cluster.

The engine's stages are those of the local engine (:mod:`gradebench.benchmark.workers`): the
building process reads and selects the source, cuts the work into batches whose boundaries are
fixed by content (:data:`gradebench.benchmark.engine.BATCH_QUERIES` queries in input order,
never by the number of workers or the engine), and writes the results, in batch order, into a
staging folder that is renamed into place at the end. Only where a batch's lists are made
differs: a Ray task (:func:`build_batch` in a Ray worker) instead of a worker process. So the
files, their bytes and the fingerprint are the local engine's, with any number of workers.

Where Ray runs: ``address`` (``--ray-address``), else ``RAY_ADDRESS``, else a local instance
started for the build with ``workers`` CPUs and stopped after it. An instance already running in
this process (``ray.init`` called by the caller) is used as it is and left running.

At most ``2 * workers`` batches are in flight, so a slow batch does not make the results that
come back early pile up. An exception in a task is raised here as the task raised it (Ray wraps
it; the original is unwrapped). On Ctrl-C or any other exception the tasks in flight are
cancelled, and a local instance started here is stopped: the staging folder is then removed by
the engine as with the local engine, so nothing half-written remains. A ``kill -9`` of the building
process runs none of that: a watchdog process started beside a local instance
(:mod:`gradebench.benchmark.ray_watch`) then stops it.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from gradebench.benchmark import ray_watch
from gradebench.benchmark.workers import Batch, Encoding, build_batch
from gradebench.errors import InvalidArgumentError

ENGINES = ("local", "ray")

_INSTALL_HINT = "pip install 'gradebench[ray]', or build with --engine local"


def check_engine(engine: Any, ray_address: Any) -> None:
    """Type checks at the API boundary; the ``ray`` engine also needs Ray installed."""
    if engine not in ENGINES:
        raise InvalidArgumentError(f"unknown build engine {engine!r}; engines: {', '.join(ENGINES)}",
                                   hint="pass engine='local' (the default) or engine='ray'")
    if ray_address is not None and (not isinstance(ray_address, str) or not ray_address.strip()):
        raise InvalidArgumentError(f"ray_address must be a non-empty string, got {ray_address!r}",
                                   hint="e.g. ray_address='ray://head-node:10001', or omit it")
    if ray_address is not None and engine != "ray":
        raise InvalidArgumentError("a Ray address applies to the ray engine only",
                                   hint="add --engine ray, or drop --ray-address")
    if engine == "ray":
        _ray()


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InvalidArgumentError("the ray build engine needs Ray, which is not installed",
                                   hint=_INSTALL_HINT) from None
    return ray


def _check_reachable(address: str) -> None:
    """A ``host:port`` (or ``ray://host:port``) that takes no connection is refused in seconds;
    Ray itself would retry for minutes. ``auto`` and other forms are left to Ray."""
    hostport = address.split("://", 1)[-1]
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=3).close()
    except OSError as e:
        raise InvalidArgumentError(f"could not start or reach the Ray cluster at {address}: {e.strerror or e}",
                                   hint="check --ray-address (or RAY_ADDRESS), or build with --engine local") \
            from None


def _task(builder_name: str, recipe_json: str, packed: Any, out_splits: list[str],
          encoding: Encoding | None = None) -> tuple[dict, dict[str, float]]:
    """One batch in a Ray worker: the builder is made from the resolved recipe, as in a worker process.

    With ``encoding`` the rows come back as Parquet row groups where the Ray worker's pyarrow is the
    driver's, else as tables (which the driver encodes): the files are the same either way.
    """
    from gradebench.benchmark.workers import _make_builder

    builder = _make_builder(builder_name, recipe_json)
    return build_batch(builder, builder.unpack_units(packed), out_splits, encoding)


def ray_batches(builder_name: str, recipe_json: str, batches: Iterable[Batch], workers: int, *,
                address: str | None = None, encoding: Encoding | None = None
                ) -> Iterator[tuple[dict, dict[str, float]]]:
    """Results of each batch, in order, computed as Ray tasks (see the module docstring)."""
    ray = _ray()
    address = address or os.environ.get("RAY_ADDRESS") or None
    started = False
    watch = None
    try:
        if not ray.is_initialized():
            if address is None:  # a local instance: stopped by the watchdog if this process is killed
                watch = ray_watch.start(os.path.dirname(ray.__file__))
            started = _init(ray, address, workers)
        yield from _run(ray, builder_name, recipe_json, batches, workers, encoding)
    finally:
        try:
            if started:
                ray.shutdown()
        finally:
            ray_watch.stop(watch)


def _init(ray: Any, address: str | None, workers: int) -> bool:
    """Start a local instance (``address`` None) or connect to one; True once it runs."""
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
    if address is None:
        kwargs["num_cpus"] = workers
    if address is not None:
        _check_reachable(address)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    terminated = False
    try:
        ray.init(address=address, **kwargs)
    except SystemExit as e:  # Ray's own SIGTERM handler, while it started
        if e.code != signal.SIGTERM:
            raise
        terminated = True
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise InvalidArgumentError(f"could not start or reach {where}: {str(e).splitlines()[0]}",
                                   hint="check --ray-address (or RAY_ADDRESS), or build with --engine local") \
            from None
    finally:  # ray.init installs its own SIGTERM handler (exit code 15, no line): ours stay
        for sig, handler in handlers.items():
            if (handler is not None and signal.getsignal(sig) is not handler
                    and threading.current_thread() is threading.main_thread()):
                signal.signal(sig, handler)
    if terminated:  # the SIGTERM goes to this process's own handler, as it would have without Ray
        if ray.is_initialized():
            ray.shutdown()
        signal.raise_signal(signal.SIGTERM)
        raise SystemExit(128 + signal.SIGTERM)
    return True


def _run(ray: Any, builder_name: str, recipe_json: str, batches: Iterable[Batch],
         workers: int, encoding: Encoding | None = None) -> Iterator[tuple[dict, dict[str, float]]]:
    """The batches' results, in order, from Ray tasks (at most ``2 * workers`` in flight)."""
    from gradebench.benchmark.workers import _make_builder

    remote = ray.remote(num_cpus=1, max_retries=0)(_task)
    packer = _make_builder(builder_name, recipe_json)
    batches = iter(batches)
    in_flight: deque[Any] = deque()
    try:
        while True:
            while len(in_flight) < 2 * max(1, workers):
                batch = next(batches, None)
                if batch is None:
                    break
                units, splits = batch
                in_flight.append(remote.remote(builder_name, recipe_json, packer.pack_units(units), list(splits),
                                               encoding))
                del units, batch
            if not in_flight:
                return
            ref = in_flight.popleft()
            # waited on in short slices: a blocking ray.get holds off Ctrl-C and SIGTERM (their
            # Python handlers run only between calls)
            while not ray.wait([ref], timeout=0.2, fetch_local=False)[0]:
                pass
            try:
                result, seconds = ray.get(ref)
            except ray.exceptions.RayTaskError as e:
                cause = e.as_instanceof_cause()
                raise (getattr(cause, "cause", None) or cause) from None
            del ref
            yield result, seconds
    finally:
        for ref in in_flight:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - a task that finished meanwhile, or a cluster that is gone
                pass
