"""Writing small input files for the reader and builder tests (exact bytes, folders created),
and the error a reader raises on one."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from gradebench.errors import SourceFormatError


def write_file(path: Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8, bytes as they are; no newline translation) to ``path``,
    creating its folders; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def jsonl_text(rows: Iterable[dict | str]) -> str:
    """JSON Lines: one ``json.dumps`` line per dict; a str row is written as it is (for broken lines)."""
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def write_jsonl(path: Path, rows: Iterable[dict | str]) -> Path:
    """:func:`write_file` of :func:`jsonl_text`."""
    return write_file(path, jsonl_text(rows))


def read_error(
    read: Callable[[Path], object], path: Path, match: str | None = None, *, data: str | bytes | None = None
) -> SourceFormatError:
    """The :class:`SourceFormatError` (message matching the regex ``match``, if given) that
    ``read(path)`` raises, after writing ``data`` to ``path`` if given."""
    if data is not None:
        write_file(path, data)
    with pytest.raises(SourceFormatError, match=match) as e:
        read(path)
    return e.value
