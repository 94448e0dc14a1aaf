"""Write a planned Hub folder atomically: into a hidden temporary sibling, then one rename.

A destination that already holds a publish folder (it has ``gradebench.json`` of format
``gradebench.hub``) or is empty is replaced; at every moment it is either the old folder or
the new one. Any other existing path is refused, so ``--dry-run`` never overwrites data that
is not its own.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from gradebench.errors import InvalidArgumentError
from gradebench.hub.layout import FORMAT, INDEX, Layout

Progress = Callable[[int, int, str], None]


def is_publish_folder(path: Path, fmt: str = FORMAT) -> bool:
    """Whether ``path`` holds a folder written by ``publish`` (a dry run or a downloaded repo), or of
    another format ``fmt`` with the same index file (``publish-results``)."""
    try:
        return json.loads((path / INDEX).read_text(encoding="utf-8")).get("format") == fmt
    except (OSError, ValueError, AttributeError):
        return False


def check_destination(dest: Path, *, fmt: str = FORMAT, command: str = "publish") -> None:
    """Refuse a destination that exists and is neither empty nor a folder ``command`` wrote (format ``fmt``)."""
    from gradebench.paths import check_writable_dir

    if dest.exists() and not dest.is_dir():
        raise InvalidArgumentError("--dry-run is a file, not a folder", path=dest,
                                   hint="choose a new folder for --dry-run")
    if (dest / ".git").exists():
        raise InvalidArgumentError("--dry-run folder is a git checkout (a cloned repo?)", path=dest,
                                   hint="choose a new folder for --dry-run; publishing without it pushes to the repo")
    if dest.is_dir() and any(dest.iterdir()) and not is_publish_folder(dest, fmt):
        raise InvalidArgumentError(
            f"--dry-run folder exists and is not an earlier {command} folder", path=dest,
            hint="choose a new or empty folder (an earlier dry run is replaced, anything else is kept)",
        )
    check_writable_dir(dest.parent if dest.exists() else dest, what="--dry-run")


def _place(src: Path, dst: Path, link: bool) -> None:
    if link:
        try:
            os.link(src, dst)
            return
        except OSError:
            pass  # another file system, or links not allowed: copy
    shutil.copyfile(src, dst)


def write_folder(layout: Layout, dest: str | Path, *, link: bool = False, progress: Progress | None = None) -> Path:
    """Write ``layout`` to ``dest`` atomically and return ``dest``.

    Args:
        layout: the planned files (:func:`gradebench.hub.layout.plan`).
        dest: the folder to create or replace (see the module docstring).
        link: hard-link data files where the file system allows (for a temporary push folder;
            a dry run copies, so the folder never shares bytes with the benchmark).
        progress: ``progress(done, total, message)`` after each file.
    """
    from gradebench.benchmark.writer import uninterrupted

    dest = Path(dest)
    check_destination(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.incomplete-", dir=dest.parent))
    try:
        names = layout.files()
        for i, name in enumerate(names):
            target = tmp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if name in layout.texts:
                target.write_text(layout.texts[name], encoding="utf-8")
            else:
                _place(layout.data[name], target, link)
            if progress is not None:
                progress(i + 1, len(names), "writing")
        _swap(tmp, dest)
    except BaseException:
        with uninterrupted():
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def _swap(tmp: Path, dest: Path) -> None:
    """Rename ``tmp`` onto ``dest``, moving an existing ``dest`` aside first and removing it after."""
    from gradebench.benchmark.writer import uninterrupted

    with uninterrupted():
        if not dest.exists():
            os.rename(tmp, dest)
            return
        aside = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=dest.parent))
        try:
            os.rename(dest, aside / "old")
            try:
                os.rename(tmp, dest)
            except BaseException:
                os.rename(aside / "old", dest)
                raise
        finally:
            shutil.rmtree(aside, ignore_errors=True)
