"""Verified downloads: every remote file carries a checksum, and nothing unverified is kept.

A file is downloaded with :mod:`urllib` to ``<dest>/<name>.incomplete-<pid>``, verified
against its ``git_blob_sha1`` and/or ``sha256``, then renamed into place (atomic on one
filesystem). A verified copy already at ``<dest>/<name>`` is reused with no network access. A
failed download leaves nothing behind: no temp file, and no cache folder it created (a folder
left empty would read as a cache that exists).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import socket
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gradebench._version import __version__
from gradebench.errors import ChecksumError, DownloadError, InvalidArgumentError

__all__ = ["RemoteFile", "cache_dir", "fetch", "fetch_all", "verify"]

_CHUNK = 1 << 20
_LOCAL_HINT = "check your network, or download the file yourself and pass --source PATH with a local copy"


@dataclass(frozen=True)
class RemoteFile:
    """A file to download and the checksum(s) that verify its bytes.

    Attributes:
        filename: the name it gets in the destination folder (a plain file name).
        url: where to get it (``http(s)://``; pin it to a commit or version).
        split: the output split it belongs to (``train``/``validation``/``test``).
        sha256: hex sha256 of the bytes.
        git_blob_sha1: hex git blob id, ``sha1(b"blob <len>\\0" + bytes)``, as listed in a
            repository tree; at least one of the two checksums is required.
    """

    filename: str
    url: str
    split: str
    sha256: str | None = None
    git_blob_sha1: str | None = None


def cache_dir() -> Path:
    """Where downloads are kept: ``$GRADEBENCH_CACHE``, else ``~/.cache/gradebench``."""
    env = os.environ.get("GRADEBENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "gradebench"


# --------------------------------------------------------------------------- checksums


class _Digests:
    """Accumulates the digests a remote file is checked against, chunk by chunk."""

    def __init__(self, remote: RemoteFile, size: int) -> None:
        self.expected: dict[str, str] = {}
        self._h: dict[str, hashlib._Hash] = {}
        if remote.git_blob_sha1 is not None:
            self.expected["git_blob_sha1"] = remote.git_blob_sha1.lower()
            h = hashlib.sha1()
            h.update(b"blob %d\0" % size)
            self._h["git_blob_sha1"] = h
        if remote.sha256 is not None:
            self.expected["sha256"] = remote.sha256.lower()
            self._h["sha256"] = hashlib.sha256()

    def update(self, block: bytes) -> None:
        for h in self._h.values():
            h.update(block)

    def mismatches(self) -> list[tuple[str, str, str]]:
        """(kind, expected, actual) for each checksum that does not match."""
        out = []
        for kind, want in self.expected.items():
            got = self._h[kind].hexdigest()
            if got != want:
                out.append((kind, want, got))
        return out


def _require_checksum(remote: RemoteFile) -> None:
    if remote.sha256 is None and remote.git_blob_sha1 is None:
        raise ChecksumError(
            f"no checksum for {remote.filename} ({remote.url}); refusing to download a file that cannot be verified",
            hint="add sha256: or git_blob_sha1: for this file in the recipe's source.files",
        )


def _file_digests(remote: RemoteFile, path: Path) -> _Digests:
    d = _Digests(remote, path.stat().st_size)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            d.update(block)
    return d


def verify(remote: RemoteFile, path: str | Path) -> bool:
    """True if the file at ``path`` matches every checksum of ``remote``."""
    _require_checksum(remote)
    p = Path(path)
    return p.is_file() and not _file_digests(remote, p).mismatches()


# --------------------------------------------------------------------------- progress


def _want_progress(progress: bool | None) -> bool:
    if progress is None:
        return sys.stderr.isatty()
    return bool(progress)


@contextmanager
def _progress_bar(enabled: bool, name: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """Yields ``advance(nbytes)``; draws a rich bar on stderr when enabled."""
    if not enabled:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(name, total=total)
        yield lambda n: bar.advance(task, n)


# --------------------------------------------------------------------------- fetch


def _dest_path(remote: RemoteFile, dest_dir: Path) -> Path:
    name = remote.filename
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        raise InvalidArgumentError(
            f"RemoteFile.filename must be a plain file name, got {name!r}",
            hint="keep sub-folders in the url, not in the filename",
        )
    return dest_dir / name


def _download_error(remote: RemoteFile, what: str) -> DownloadError:
    return DownloadError(f"cannot download {remote.url}: {what}", hint=_LOCAL_HINT)


def _download(remote: RemoteFile, tmp: Path, timeout: float, progress: bool) -> _Digests:
    request = urllib.request.Request(remote.url, headers={"User-Agent": f"gradebench/{__version__}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            length = resp.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            size = 0
            with open(tmp, "wb") as out, _progress_bar(progress, remote.filename, total) as advance:
                for block in iter(lambda: resp.read(_CHUNK), b""):
                    out.write(block)
                    size += len(block)
                    advance(len(block))
            if total is not None and size < total:
                raise _download_error(remote, f"the connection broke off after {size} of {total} bytes")
    except urllib.error.HTTPError as e:
        raise _download_error(remote, f"HTTP {e.code} {e.reason}") from None
    except urllib.error.URLError as e:
        raise _download_error(remote, str(e.reason)) from None
    except (TimeoutError, socket.timeout):
        raise _download_error(remote, f"no data for {timeout:g} s (timed out)") from None
    except http.client.HTTPException as e:
        raise _download_error(remote, f"the connection broke off ({type(e).__name__})") from None
    except ConnectionError as e:
        raise _download_error(remote, str(e) or type(e).__name__) from None
    # git's blob id needs the size before the bytes, so hash the written file (page-cached).
    return _file_digests(remote, tmp)


def fetch(
    remote: RemoteFile,
    dest_dir: str | Path,
    *,
    timeout: float = 60,
    progress: bool | None = None,
) -> Path:
    """Download ``remote`` into ``dest_dir`` (or reuse a verified copy there) and return its path.

    Args:
        remote: the file, with at least one checksum.
        dest_dir: destination folder (created if needed); usually under :func:`cache_dir`.
        timeout: seconds to wait for the connection and for each read.
        progress: draw a progress bar on stderr; ``None`` = only when stderr is a TTY.

    Raises:
        ChecksumError: ``remote`` has no checksum, or the downloaded bytes do not match it
            (the download is deleted; the message gives the url, expected and actual digests).
        DownloadError: an HTTP error, a refused or broken connection, a timeout, or a write
            failure; the message gives the url.
    """
    _require_checksum(remote)
    dest_dir = Path(dest_dir)
    final = _dest_path(remote, dest_dir)
    if final.is_file() and not _file_digests(remote, final).mismatches():
        return final
    created = _make_dirs(dest_dir)
    tmp = dest_dir / f"{remote.filename}.incomplete-{os.getpid()}"
    ok = False
    try:
        try:
            bad = _download(remote, tmp, timeout, _want_progress(progress)).mismatches()
            if not bad:
                os.replace(tmp, final)
        except OSError as e:  # writing or renaming failed (disk full, permissions)
            raise DownloadError(
                f"cannot write {final.name} while downloading {remote.url} ({e.strerror or e})",
                path=dest_dir,
                hint="free disk space or set GRADEBENCH_CACHE to a writable folder",
            ) from None
        if bad:
            detail = "; ".join(f"expected {kind} {want}, got {got}" for kind, want, got in bad)
            raise ChecksumError(
                f"checksum mismatch for {remote.url}: {detail}; the download was deleted",
                hint="the file at the url changed or the transfer was corrupted: retry, "
                "check the recipe's checksum and url, or pass --source PATH with a verified local copy",
            )
        ok = True
    finally:
        tmp.unlink(missing_ok=True)
        if not ok:
            _remove_empty(created)
    return final


def _make_dirs(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; returns the folders created, deepest first."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        _remove_empty(missing)
        raise DownloadError(
            f"cannot create the download folder ({e.strerror or e})",
            path=folder,
            hint="check permissions or set GRADEBENCH_CACHE to a writable folder",
        ) from None
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove the folders this download created, deepest first, while they are empty (a folder
    that another download has put a file into meanwhile stays, and so do its parents)."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def fetch_all(
    remotes: Iterable[RemoteFile],
    dest_dir: str | Path,
    *,
    timeout: float = 60,
    progress: bool | None = None,
) -> dict[str, list[Path]]:
    """:func:`fetch` each remote in order; the paths grouped by split (splits in first-seen order).

    Every remote is checked for a checksum before anything is downloaded. The result can be
    passed straight to :func:`gradebench.datasets.esnli.reader.read_esnli_csv`.
    """
    remotes = list(remotes)
    for r in remotes:
        _require_checksum(r)
    out: dict[str, list[Path]] = {}
    for r in remotes:
        out.setdefault(r.split, []).append(fetch(r, dest_dir, timeout=timeout, progress=progress))
    return out
