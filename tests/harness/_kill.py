"""Kill a run at a named step (``GRADEBENCH_STOP_AT``), in-process, leaving what ``kill -9`` leaves.

``os._exit`` would end pytest too, so in-process tests stop at the point by an exception and
put back every given folder exactly as it was at that moment: a snapshot taken at the stop
point, before any ``finally``/``except`` cleanup of the code under test runs. That is the disk
state a ``kill -9`` leaves (the lock is the OS's: a copied lock file is held by nobody). One
subprocess test per kind of kill checks the real ``os._exit`` path.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from gradebench.stops import ENV, stopping_with


class Killed(BaseException):
    """Raised at the stop point (a BaseException: nothing treats it as an ordinary error)."""


def killed_at(monkeypatch: pytest.MonkeyPatch, point: str, folders: Iterable[Path], fn: Callable[[], Any]) -> None:
    """Run ``fn()`` until it reaches ``point`` (``name[:n]``); leave ``folders`` as they were then."""
    folders = [Path(f) for f in folders]
    snaps: dict[Path, Path | None] = {}

    def snapshot(name: str) -> None:
        for f in folders:
            snap = f.with_name(f.name + ".at-kill")
            if f.exists():
                shutil.copytree(f, snap, symlinks=True)
                snaps[f] = snap
            else:
                snaps[f] = None
        raise Killed(name)

    monkeypatch.setenv(ENV, point)
    with stopping_with(snapshot), pytest.raises(Killed):
        fn()
    monkeypatch.delenv(ENV)
    for f, snap in snaps.items():
        shutil.rmtree(f, ignore_errors=True)
        if snap is not None:
            snap.rename(f)


def digests(folder: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file under ``folder``."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def names(folder: Path) -> list[str]:
    """The entries of ``folder`` and of its sub-folders, relative, sorted."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
