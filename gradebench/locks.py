"""Advisory file locks (``fcntl.flock``): one writer per run folder, and temp files a cleaner can tell apart.

A lock is held on an open file, so the operating system releases it when its process dies --
``kill -9`` included: a killed run never leaves a stale lock, only a lock file that the next
process locks again. :class:`FileLock` writes its holder's pid into the file, for the
message of the process that finds it busy (:class:`Busy`).

:func:`locked_temp_beside` makes a temp file for an atomic write and holds a lock on it until the
write is renamed onto its name; :func:`remove_stale_temps` removes only temp files nobody holds
(their writer was killed), never a live writer's.

Where ``fcntl`` does not exist (Windows) the locks are no-ops: nothing is refused, nothing stale
is recognised.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from gradebench.errors import Busy

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def _try_flock(fd: int) -> bool:
    if fcntl is None:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def holder(path: str | Path) -> int | None:
    """The pid written in a lock file, or None (no file, or not written yet)."""
    try:
        text = Path(path).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


class FileLock:
    """An exclusive lock on the file ``path`` (created if missing), holding this process's pid.

    :meth:`acquire` never waits: a lock held elsewhere raises :class:`Busy`. :meth:`release`
    removes the file (while still holding the lock) and closes it; a process that opened the
    same file just before notices on its own acquire that the path no longer names the file it
    locked, and tries again on the new one -- so two processes never both hold ``path``.
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self._fd = path, fd

    @classmethod
    def acquire(cls, path: str | Path) -> FileLock:
        p = Path(path)
        while True:
            fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if not _try_flock(fd):
                    raise Busy(p, holder(p))
                try:
                    same = os.path.samestat(os.fstat(fd), os.stat(p))
                except FileNotFoundError:
                    same = False
                if same:
                    os.ftruncate(fd, 0)
                    os.write(fd, f"{os.getpid()}\n".encode("ascii"))
                    return cls(p, fd)
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # the file was removed or replaced under us: lock the one there now

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Remove the lock file and let go of the lock (idempotent)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        finally:
            os.close(fd)

    def __del__(self) -> None:  # a lock dropped without release() (an abandoned object) is let go
        if getattr(self, "_fd", None) is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


@contextlib.contextmanager
def locked_temp_beside(path: Path) -> Iterator[Path]:
    """A new temp file beside ``path`` (``.<name>.<random>.tmp``), locked while the block runs.

    The caller writes it and renames it onto ``path`` inside the block; if the block fails the
    temp file is removed. Only a killed writer leaves one behind, unlocked, for
    :func:`remove_stale_temps`.
    """
    while True:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        tmp = Path(name)
        if fcntl is None:  # pragma: no cover - Windows
            break
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits only while a cleaner that found it unlocked removes it
        try:
            if os.path.samestat(os.fstat(fd), os.stat(tmp)):
                break
        except FileNotFoundError:
            pass
        os.close(fd)  # a cleaner removed it before we locked it: take a new one
    try:
        yield tmp
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)


def remove_stale_temps(folder: Path, pattern: str = ".*.tmp") -> list[Path]:
    """Remove the temp files in ``folder`` (``pattern``) that no live writer holds; returns them."""
    removed: list[Path] = []
    if fcntl is None or not folder.is_dir():
        return removed
    for p in sorted(folder.glob(pattern)):
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:  # renamed or removed meanwhile
            continue
        try:
            if _try_flock(fd):
                with contextlib.suppress(FileNotFoundError):
                    if os.path.samestat(os.fstat(fd), os.stat(p)):
                        p.unlink()
                        removed.append(p)
        finally:
            os.close(fd)
    return removed


__all__ = ["Busy", "FileLock", "holder", "locked_temp_beside", "remove_stale_temps"]
