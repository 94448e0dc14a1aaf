"""Output paths: the default folders, a preflight check, and the atomic writers.

The default folders (:data:`OUT_DIR` and the folders under it) are defined here and nowhere
else: every command and API function that writes or reads outputs takes its default from
them, so a new user's builds, runs, records and plots all land under ``gradebench-out/``
(ignored by git), never in the project's committed ``leaderboard/results``
(:data:`COMMITTED_RESULTS_DIR`, which is only ever named explicitly).

Every command that writes (``build``, ``train``, ``eval``, ``results``) calls
:func:`check_writable_dir` on its output root first, so a typo'd or read-only ``--out``
costs milliseconds, not a download or a training run. The atomic writers
(:func:`write_text_atomic`, :func:`write_json_atomic`) are how every file a user reads is
written: a temp file beside it, then a rename.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from gradebench.errors import InvalidArgumentError

#: the output root: benchmarks are built into ``<OUT_DIR>/<recipe>/<fingerprint[:12]>``
OUT_DIR = Path("gradebench-out")
#: sub-folder names of an output root (``demo --out DIR`` writes ``DIR/results`` etc.)
RESULTS_NAME, RUNS_NAME, PLOTS_NAME, REWARDS_NAME = "results", "runs", "plots", "rewards"
#: result records: what ``eval`` and ``sweep`` write and ``leaderboard``, ``query``, ``plot`` read
RESULTS_DIR = OUT_DIR / RESULTS_NAME
#: training run folders of ``sweep`` (``<RUNS_DIR>/<benchmark>/<scorer>/<run fingerprint[:16]>``)
RUNS_DIR = OUT_DIR / RUNS_NAME
#: plots, and exported rewards (the README's examples put them here)
PLOTS_DIR = OUT_DIR / PLOTS_NAME
REWARDS_DIR = OUT_DIR / REWARDS_NAME
#: the project's own, committed records (rendered in ``leaderboard/LEADERBOARD.md``); never a default
COMMITTED_RESULTS_DIR = Path("leaderboard") / "results"

#: errno -> how to fix it, for the output-path checks and the CLI's OSError mapping
OS_ERROR_HINTS = {
    errno.EACCES: "choose a folder you can write to, or fix its permissions",
    errno.EPERM: "this location refuses new entries; choose a folder you can write to",
    errno.EROFS: "the file system is read-only; choose another folder",
    errno.ENOSPC: "the disk is full; free some space or choose another folder",
    errno.ENOTDIR: "a file is in the way of a folder on this path; remove it or choose another path",
    errno.EEXIST: "something is already there; remove it or choose another path",
    errno.EISDIR: "a folder is in the way of a file; remove it or choose another path",
    errno.ENOENT: "check the path: a folder on it does not exist and cannot be created there",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.ELOOP: "the path has a symlink loop; choose another path",
}
if hasattr(errno, "EDQUOT"):  # not on every platform
    OS_ERROR_HINTS[errno.EDQUOT] = "your disk quota is used up; free some space or choose another folder"


def os_error_hint(err: OSError, what: str = "the path") -> str:
    """A fix hint for ``err`` (by errno); falls back to asking for ``--debug``."""
    return OS_ERROR_HINTS.get(err.errno or 0, f"check {what}; rerun with --debug for the traceback")


def check_writable_dir(path: str | Path, *, what: str = "--out") -> Path:
    """Check that ``path`` is, or can be created as, a folder this process can write into.

    Nothing is left behind: the nearest existing folder on the path is probed by creating
    and removing an empty temporary folder in it. That probe, unlike ``os.access``, is right
    for root, read-only mounts and pseudo file systems (``/proc``, ``/sys``).

    Args:
        path: the output folder (it need not exist yet; missing parents count as creatable).
        what: how the user named it, for the message (``"--out"``, ``"--results"``, ...).

    Returns:
        ``Path(path)``, unchanged.

    Raises:
        InvalidArgumentError: ``path`` (or a folder on it) is a file, a broken symlink, or
            lies in a folder that does not accept new entries; the message names ``path``
            and the offending component, the hint says how to fix it.

    Example:
        >>> check_writable_dir("/proc/x")  # doctest: +SKIP
        InvalidArgumentError: /proc/x: --out cannot be created in /proc: No such file or directory (hint: ...)
    """
    target = Path(path)
    full = Path(os.path.abspath(target))
    here = full
    while not os.path.exists(here):
        if os.path.lexists(here):
            raise InvalidArgumentError(
                f"{what} cannot be created: {here} is a broken symlink",
                path=target, hint=f"remove the link or choose another {what}",
            )
        if here.parent == here:  # a root that does not exist (a missing drive)
            raise InvalidArgumentError(f"{what} cannot be created: {here} does not exist", path=target,
                                       hint=f"choose another {what}")
        here = here.parent
    if not os.path.isdir(here):
        kind = "is a file, not a folder" if os.path.isfile(here) else "is not a folder"
        where = kind if here == full else f"cannot be created: {here} {kind}"
        raise InvalidArgumentError(f"{what} {where}", path=target, hint=f"choose another {what} or move the file away")
    try:
        probe = tempfile.mkdtemp(prefix=".gradebench-probe-", dir=here)
    except OSError as e:
        verb = "is not writable" if here == full else f"cannot be created in {here}"
        hint = (
            f"this location does not accept new folders; choose another {what}"
            if e.errno == errno.ENOENT  # e.g. /proc: the folder exists but mkdir says ENOENT
            else os_error_hint(e, what)
        )
        raise InvalidArgumentError(f"{what} {verb}: {e.strerror or e}", path=target, hint=hint) from None
    try:
        os.rmdir(probe)
    except OSError:  # pragma: no cover - we just made it; a racing cleaner may have removed it
        pass
    return target


def current_umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def temp_beside(path: Path) -> Path:
    """A new, empty temp file in ``path``'s folder (hidden, ``.tmp``), for an atomic write onto ``path``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(tmp)


def publish(tmp: Path, final: Path) -> None:
    """Give ``tmp`` the permissions a new file would have (umask), then rename it onto ``final``."""
    os.chmod(tmp, 0o666 & ~current_umask())
    os.replace(tmp, final)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temp file beside ``path``, then rename it onto ``path``: readers see
    the old file or the new one, never half of one."""
    tmp = temp_beside(path)
    try:
        tmp.write_text(text, encoding="utf-8")
        publish(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented, key-sorted JSON atomically (creating ``path``'s folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def publish_dir(tmp: Path, final: Path) -> None:
    """Rename the finished folder ``tmp`` onto ``final`` (replacing a folder there).

    Every file and folder in it first gets the permissions a new one would have (savers such as
    ``tempfile`` write 0600 files), so the published folder reads like any other output.
    """
    import shutil

    mask = current_umask()
    for p in sorted(tmp.rglob("*")):
        os.chmod(p, (0o777 if p.is_dir() else 0o666) & ~mask)
    os.chmod(tmp, 0o777 & ~mask)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
