"""Atomic, deterministic Parquet output of one benchmark folder.

Everything is written under ``<out>/<recipe>/.staging/<fingerprint12>.incomplete-*`` and
renamed onto ``<out>/<recipe>/<fingerprint12>`` only when complete, so an interrupted build
leaves no folder that looks finished, and a glob such as ``<out>/<recipe>/*/data/*.parquet``
never sees half-built data (the staging folder is one level deeper). Each staging folder
holds a lock for the life of its build; one whose lock is free belongs to a process that
died (even by SIGKILL) and is removed by the next build (:meth:`Staging.clean_stale`).
Folders follow the umask like files. Shard boundaries depend only on row counts, never on
timing or the number of worker processes, so the bytes are reproducible.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

from gradebench.benchmark.format import CORE_DICTIONARY, MANIFEST, arrow_schema
from gradebench.benchmark.rowgroups import RowGroup, ShardFile, encode
from gradebench.datasets.base import Column
from gradebench.paths import current_umask

STAGING = ".staging"
LOCK = ".lock"
#: rows per shard file; a shard is closed at the first batch boundary past this size
SHARD_ROWS = 2_000_000
PARQUET_OPTIONS = dict(compression="zstd", compression_level=1, write_statistics=True)


def dictionary_columns(columns: Sequence[Column]) -> list[str]:
    """Columns repeated across a query's candidates are dictionary-encoded; free text is not."""
    return [*CORE_DICTIONARY, *(c.name for c in columns if c.dictionary)]


def parquet_target(columns: Sequence[Column], metadata: dict[str, str]) -> tuple[pa.Schema, dict]:
    """The Arrow schema and the Parquet writer options of a benchmark's data files (where the
    row groups are encoded: a build worker, or the building process)."""
    return arrow_schema(columns, metadata), dict(PARQUET_OPTIONS, use_dictionary=dictionary_columns(columns))


class Staging:
    """The hidden folder of a recipe's output where builds write before their final rename."""

    def __init__(self, recipe_dir: Path) -> None:
        self.path = Path(recipe_dir) / STAGING

    def new(self, prefix: str) -> tuple[Path, int]:
        """A fresh folder with its lock held by this process: ``(folder, lock fd)``."""
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=self.path))
        os.chmod(tmp, 0o777 & ~current_umask())
        fd = os.open(tmp / LOCK, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return tmp, fd

    def clean_stale(self) -> list[str]:
        """Remove staging folders whose builder died (their lock is free); returns their names."""
        if not self.path.is_dir():
            return []
        removed = []
        for entry in sorted(self.path.iterdir()):
            try:
                fd = os.open(entry / LOCK, os.O_RDWR)
            except FileNotFoundError:
                # no lock file: a folder caught between mkdtemp and its lock, or not ours
                if entry.is_dir() and not any(entry.iterdir()):
                    entry.rmdir()
                    removed.append(entry.name)
                continue
            except (NotADirectoryError, OSError):
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live build owns it
                with uninterrupted():
                    shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry.name)
            finally:
                os.close(fd)
        self.remove_if_empty()
        return removed


    def remove_if_empty(self) -> None:
        try:
            self.path.rmdir()
        except OSError:
            pass  # in use by another build, or already gone


def staging(recipe_dir: Path) -> Staging:
    return Staging(recipe_dir)


@contextmanager
def uninterrupted() -> Iterator[None]:
    """Hold SIGINT/SIGTERM back for the few milliseconds of a rename pair or a cleanup (or the
    start of the build workers, up to a second when the forkserver starts too).

    A Ctrl-C that lands inside is delivered when the block ends, so it is never lost, but it
    cannot leave a half-deleted temporary folder or a target renamed away. Only the main
    thread may change handlers; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    saved = {s: signal.signal(s, lambda signum, frame: pending.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in saved.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        if pending and saved[pending[0]] is not signal.SIG_IGN:
            signal.raise_signal(pending[0])


def final_dir(out: Path, recipe: str, fingerprint: str) -> Path:
    return Path(out) / recipe / fingerprint[:12]


def is_complete(path: Path) -> bool:
    return (path / MANIFEST).is_file()


class BenchmarkWriter:
    """Streams record batches per split into shard files inside a temporary folder.

    Create it inside :func:`uninterrupted` and assign it inside the ``try`` whose handler
    calls :meth:`abort`, so that no signal can land between the temporary folder's creation
    and the caller owning it (see ``gradebench.benchmark.engine.build``).
    """

    def __init__(self, target: Path, columns: Sequence[Column], metadata: dict[str, str]) -> None:
        self.target = target
        target.parent.mkdir(parents=True, exist_ok=True)
        self._staging = Staging(target.parent)
        tmp = None
        self._lock_fd: int | None = None
        try:
            with uninterrupted():  # a signal held back here is raised at the end of the block...
                tmp, self._lock_fd = self._staging.new(f"{target.name}.incomplete-")
                (tmp / "data").mkdir()
        except BaseException:  # ...and must not leave the folder behind
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            self._release()
            raise
        self.tmp = tmp
        self.schema, self._options = parquet_target(columns, metadata)
        self._writers: dict[str, ShardFile] = {}
        self._rows: dict[str, int] = {}
        self._shards: dict[str, list[Path]] = {}
        self._shard_rows: dict[str, int] = {}

    def write(self, split: str, part: pa.Table | RowGroup) -> None:
        """Append one batch's rows of ``split``: a table, or the row group a worker encoded from it
        (:func:`gradebench.benchmark.rowgroups.encode` with this writer's schema and options)."""
        if part.num_rows == 0:
            return
        group = part if isinstance(part, RowGroup) else encode(part, self.schema, self._options)
        writer = self._writers.get(split)
        if writer is None or self._shard_rows[split] >= SHARD_ROWS:
            if writer is not None:
                writer.close()
            shard = self.tmp / "data" / f".{split}-{len(self._shards.get(split, [])):05d}.parquet"
            self._shards.setdefault(split, []).append(shard)
            writer = ShardFile(shard)
            self._writers[split] = writer
            self._shard_rows[split] = 0
        writer.append(group)
        self._rows[split] = self._rows.get(split, 0) + group.num_rows
        self._shard_rows[split] += group.num_rows

    def close_shards(self) -> dict[str, list[str]]:
        """Close all writers and give shards their final ``<split>-0000i-of-0000N`` names."""
        for w in self._writers.values():
            w.close()
        self._writers.clear()
        names: dict[str, list[str]] = {}
        for split, shards in sorted(self._shards.items()):
            n = len(shards)
            names[split] = []
            for i, shard in enumerate(shards):
                name = f"{split}-{i:05d}-of-{n:05d}.parquet"
                shard.rename(shard.parent / name)
                names[split].append(f"data/{name}")
        return names

    def finish(self, manifest: dict, readme: str, *, replace: bool = False) -> tuple[Path, bool]:
        """Write manifest and card, then rename into place. Returns (path, was_cached).

        With ``replace`` an existing complete folder is swapped out (``--force``): it is
        first renamed aside, so at every moment the target is either old or new, never partial.
        """
        (self.tmp / "README.md").write_text(readme, encoding="utf-8")
        # the manifest is written last: its presence marks a complete folder
        (self.tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        # the lock file goes before the rename (the folder stays locked by the open fd until then)
        os.unlink(self.tmp / LOCK)
        if replace and self.target.exists():
            with uninterrupted():  # never leave the target missing between the two renames
                aside, aside_fd = self._staging.new(f"{self.target.name}.old-")
                try:
                    os.rename(self.target, aside / "old")
                    try:
                        os.rename(self.tmp, self.target)
                    except BaseException:
                        os.rename(aside / "old", self.target)
                        raise
                finally:
                    shutil.rmtree(aside, ignore_errors=True)
                    os.close(aside_fd)
            self._release()
            return self.target, False
        try:
            os.rename(self.tmp, self.target)
        except OSError:
            if is_complete(self.target):  # another process finished the same fingerprint first
                self.abort()
                return self.target, True
            if self.target.exists():  # a stale, incomplete folder: replace it
                shutil.rmtree(self.target)
                os.rename(self.tmp, self.target)
            else:
                raise
        self._release()
        return self.target, False

    def _release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        self._staging.remove_if_empty()

    def abort(self) -> None:
        """Remove the temporary folder (idempotent; a repeated Ctrl-C cannot cut it short)."""
        with uninterrupted():
            for w in self._writers.values():
                try:
                    w.abort()
                except Exception:  # noqa: BLE001 - best effort while cleaning up
                    pass
            self._writers.clear()
            shutil.rmtree(self.tmp, ignore_errors=True)
            self._release()
