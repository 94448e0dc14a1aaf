"""Line files read a slice at a time: where each line starts, so that any range of lines can be read
by another process without reading the rest.

:func:`index_lines` checks a whole file once, as a reader that parses it at once would
(:func:`~.textio.check_head` on its head, UTF-8 with the first bad byte at its line and
column, a leading BOM dropped) and finds its line starts (lines split on ``\\n`` only, a final
newline ends the last line: :func:`~.textio.split_lines`). A :class:`LineSlice` names a range of
lines of one or more such files by their bytes, so it is small to send; :func:`read_slice` gives
the same lines as splitting the whole text would. A file whose size, modification time or inode
differ from when it was indexed is an error (a file edited in place within one tick of its
clock, at the same size, is not seen).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gradebench.errors import SourceFormatError
from gradebench.io.textio import (
    BOM,
    HEAD_BYTES,
    UTF8_HINT,
    check_head,
    decode_utf8,
    open_binary,
    split_lines,
    utf8_error,
)


@dataclass(frozen=True)
class LineStarts:
    """A file's line starts: line ``i`` is bytes ``starts[i]`` up to ``starts[i + 1]`` (its ``\\n``
    included); ``starts`` has one entry more than the file has lines."""

    path: str
    starts: np.ndarray
    stamp: tuple[int, int, int] = (0, 0, 0)  # (size, mtime_ns, inode) when indexed

    @property
    def n_lines(self) -> int:
        return len(self.starts) - 1


def index_lines(path: str | Path, what: str, *, hint: str = UTF8_HINT) -> LineStarts:
    """Check a text file whole and find its line starts.

    Raises:
        SourceNotFoundError / SourceFormatError: as :func:`~.textio.read_bytes`,
            :func:`~.textio.check_head` and :func:`~.textio.decode_utf8` would for the whole file.
    """
    with open_binary(path) as f:
        data = f.read()
        st = os.fstat(f.fileno())
    check_head(path, data[:HEAD_BYTES], what)
    if not data.isascii():  # ASCII is UTF-8: only other bytes need decoding to be checked
        decode_utf8(path, data, hint=hint)
    start = len(BOM) if data.startswith(BOM) else 0
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1  # a BOM holds no newline
    tail = [len(data)] if len(data) > start and not data.endswith(b"\n") else []  # a last line without one
    return LineStarts(str(path), np.concatenate(([start], ends, tail)).astype(np.int64),
                      (st.st_size, st.st_mtime_ns, st.st_ino))


@dataclass(frozen=True)
class LineSlice:
    """Lines ``first`` to ``first + n - 1`` (0-based) of each of ``files``: ``(path, start byte, end byte,
    the file's (size, mtime_ns, inode) when indexed)``."""

    first: int
    n: int
    files: tuple[tuple[str, int, int, tuple[int, int, int]], ...]

    @classmethod
    def of(cls, files: Sequence[LineStarts], a: int, b: int) -> LineSlice:
        """Lines ``a`` to ``b - 1`` of every file of ``files``."""
        return cls(a, b - a, tuple((f.path, int(f.starts[a]), int(f.starts[b]), f.stamp) for f in files))


def read_slice(s: LineSlice, *, hint: str = UTF8_HINT) -> list[list[str]]:
    """The slice's lines of each file, in order: what ``split_lines`` of the whole text gives there.

    Raises:
        SourceNotFoundError: a file is gone.
        SourceFormatError: a file changed since it was indexed (another size, modification time
            or inode), or no longer holds those lines.
    """
    out = []
    for path, start, end, stamp in s.files:
        with open_binary(path) as f:
            st = os.fstat(f.fileno())
            if (st.st_size, st.st_mtime_ns, st.st_ino) != tuple(stamp):
                raise _changed(path, s)
            f.seek(start)
            data = f.read(end - start)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise utf8_error(path, data, e, hint=hint, first_line=s.first + 1) from None
        lines = split_lines(text)
        if len(data) != end - start or len(lines) != s.n:
            raise _changed(path, s)
        out.append(lines)
    return out


def _changed(path: str, s: LineSlice) -> SourceFormatError:
    return SourceFormatError(f"changed while it was read (lines {s.first + 1}-{s.first + s.n})", path=path,
                             hint="do not edit a source while it is being built; build again")
