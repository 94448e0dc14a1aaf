"""A watchdog that stops a build's local Ray instance when the building process dies.

When the ``ray`` engine starts a local instance (:mod:`gradebench.benchmark.ray_engine`), Ray's
core processes end by themselves when the building process is gone, but its per-node agents
(``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``) are children of the raylet and outlive it:
after a ``kill -9`` of the building process alone they stayed, idle, until ``ray stop``. A Ctrl-C,
a SIGTERM or an error stops the instance through ``ray.shutdown()``; a ``kill -9`` runs no code in
the building process, so this small process does it instead.

It is started next to the instance (:func:`start`) with a pipe from the building process on its
standard input. While the building process lives, it notes, a few times a second, every process
of the Ray instance: the building process's descendants that run Ray's binaries or scripts or
carry a ``ray::`` title, and their own descendants, each with its start time (so a pid used
again by an unrelated process is never touched). If the pipe says ``done`` (:func:`stop`, after
``ray.shutdown()``), it exits and touches nothing. If the pipe closes without it, or the building
process is gone, the building process died: it sends SIGTERM to each noted process still running,
SIGKILL after 3 seconds to any left, and exits.

It imports nothing from gradebench (it runs as ``python ray_watch.py PID RAY_DIR``). It ignores
SIGINT, so a Ctrl-C to the terminal's process group leaves the clean-up to the building process
(which then says ``done``), and SIGHUP, so a closed terminal that ends the building process
without clean-up does not end this one too. A zombie counts as gone. Linux only (``/proc``);
elsewhere :func:`start` returns None.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

#: seconds between two looks at the process table
TICK = 0.2
#: seconds between SIGTERM and SIGKILL of the processes left
GRACE = 3.0
#: what the building process writes when it stopped the instance itself
DONE = b"done\n"


def start(ray_dir: str) -> subprocess.Popen | None:
    """Start the watchdog of this process's Ray instance (``ray_dir``: the ``ray`` package's folder);
    None where there is no ``/proc`` to watch."""
    if not Path("/proc/self/stat").exists():
        return None
    return subprocess.Popen([sys.executable, "-S", str(Path(__file__).resolve()), str(os.getpid()), ray_dir],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            close_fds=True)


def stop(proc: subprocess.Popen | None) -> None:
    """Tell the watchdog the instance was stopped here, and wait for it to exit."""
    if proc is None:
        return
    try:
        proc.stdin.write(DONE)
        proc.stdin.close()
    except (BrokenPipeError, OSError, ValueError):  # it is gone already
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - it exits on "done" at once
        proc.kill()
        proc.wait()


# -- the watchdog process ---------------------------------------------------------------------
def _stat(pid: int) -> tuple[int, int] | None:
    """``(ppid, start time)`` of ``pid`` from ``/proc/PID/stat``, or None when it is gone (a
    zombie, which only waits for its parent to reap it, counts as gone)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rindex(b")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), int(fields[19])


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode("utf-8", "replace").split("\0")


def _is_ray(cmdline: list[str], ray_dir: str) -> bool:
    """A Ray binary, a script of the ray package (a path inside ``ray_dir``), or a process that
    took a ``ray::`` title."""
    inside = ray_dir.rstrip(os.sep) + os.sep
    return any(arg.startswith(inside) for arg in cmdline[:3]) or (bool(cmdline) and cmdline[0].startswith("ray::"))


def _table() -> tuple[dict[int, tuple[int, int]], dict[int, list[int]]]:
    """Every live process's ``(ppid, start time)``, and each pid's children."""
    table: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None:
                table[int(entry)] = st
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    return table, children


def ray_processes(root: int, ray_dir: str, *, skip: int) -> dict[int, int]:
    """``{pid: start time}`` of the Ray processes below ``root`` (``skip`` and its own excluded)."""
    if not ray_dir.strip(os.sep):
        raise ValueError("ray_dir must be the ray package's folder")
    table, children = _table()
    found = _below(children, [(root, False)], lambda pid: _is_ray(_cmdline(pid), ray_dir), skip=skip)
    return {pid: table[pid][1] for pid in found}


def _below(children: dict[int, list[int]], roots: list[tuple[int, bool]], is_ray: Callable[[int], bool], *,
           skip: int = -1) -> list[int]:
    """The pids below ``roots`` (``(pid, inside)`` pairs; the roots themselves are not listed) that
    are Ray's: ``is_ray(pid)``, or a descendant of one that is (or of an ``inside`` root). ``skip``
    and what is below it are left out."""
    found = []
    stack = [(c, inside) for root, inside in roots for c in children.get(root, [])]
    while stack:
        pid, inside = stack.pop()
        if pid == skip:
            continue
        inside = inside or is_ray(pid)
        if inside:
            found.append(pid)
        stack.extend((c, inside) for c in children.get(pid, []))
    return found


def _alive(pid: int, started: int) -> bool:
    st = _stat(pid)
    return st is not None and st[1] == started


def _with_descendants(noted: dict[int, int]) -> dict[int, int]:
    """``noted`` and the current descendants of those of its processes still running (what they
    started since the last look, or start while they are being stopped)."""
    table, children = _table()
    live = [(p, True) for p, started in noted.items() if p in table and table[p][1] == started]
    return {**noted, **{pid: table[pid][1] for pid in _below(children, live, lambda _: True) if pid not in noted}}


def _end(noted: dict[int, int]) -> None:
    """SIGTERM to every noted process still running (and its descendants), then SIGKILL to those
    left after :data:`GRACE`."""
    for sig, wait in ((signal.SIGTERM, GRACE), (signal.SIGKILL, 0.0)):
        noted = _with_descendants(noted)
        left = {p: s for p, s in noted.items() if _alive(p, s)}
        for pid in left:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while wait and time.monotonic() < deadline and any(_alive(p, s) for p, s in left.items()):
            time.sleep(0.05)


def main(argv: list[str]) -> int:
    # a terminal's Ctrl-C is the building process's to handle; a hang-up that ends the building
    # process without clean-up is the case this process is for, so it must outlive it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    parent, ray_dir = int(argv[0]), argv[1]
    parent_stat = _stat(parent)
    if parent_stat is None:
        return 0
    me = os.getpid()
    noted: dict[int, int] = {}
    fd = sys.stdin.buffer.fileno()
    said = b""
    while True:
        if not _alive(parent, parent_stat[1]):
            break
        noted.update(ray_processes(parent, ray_dir, skip=me))
        ready, _, _ = select.select([fd], [], [], TICK)
        if ready:
            chunk = os.read(fd, 64)
            said += chunk
            if said.startswith(DONE):
                return 0
            if not chunk:  # the pipe closed without "done": the building process died
                break
    _end(noted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
