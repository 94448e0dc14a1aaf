"""Reading source files as text, with typed errors that name the file and the 1-based line.

What every reader needs before it parses anything: opening a file (:class:`SourceNotFoundError`
when it is missing, :class:`SourceFormatError` when it is a folder), rejecting compressed and
binary files (:func:`check_head`), decoding UTF-8 with the first bad byte located at its line and
column (:func:`decode_utf8`), iterating text lines (:func:`iter_text_lines`) and JSON Lines
(:func:`iter_jsonl`) with 1-based line numbers, and typed access to the keys of a JSON object
(:class:`JsonFields`). A leading UTF-8 byte order mark is dropped everywhere.

Readers pass their own ``what`` (``"a ChaosNLI SNLI/MNLI JSON Lines file"``) and hints (how to
get a good copy of *their* data); the wording of JSON Lines errors can be changed per reader
with a :class:`JsonLinesWording` subclass.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Literal

from gradebench.errors import SourceFormatError, SourceNotFoundError

__all__ = [
    "BOM",
    "DECOMPRESS_HINT",
    "HEAD_BYTES",
    "MAGIC",
    "UTF8_HINT",
    "JsonFields",
    "JsonLinesWording",
    "check_head",
    "decode_utf8",
    "iter_jsonl",
    "iter_text_lines",
    "json_kind",
    "open_binary",
    "read_bytes",
    "read_text",
    "split_lines",
    "utf8_error",
]

#: leading bytes of compressed files -> what they are
MAGIC: dict[bytes, str] = {
    b"\x1f\x8b": "a gzip file",
    b"PK\x03\x04": "a zip file",
    b"BZh": "a bzip2 file",
    b"\xfd7zXZ": "an xz file",
}
#: the UTF-8 byte order mark (dropped from the start of a file)
BOM = b"\xef\xbb\xbf"
#: how much of a file :func:`check_head` looks at when a reader streams it
HEAD_BYTES = 1 << 16
DECOMPRESS_HINT = "decompress it first and pass the extracted file"
UTF8_HINT = "the file may be truncated or corrupted; re-download it or convert it to UTF-8"


# --------------------------------------------------------------------------- opening and checking


def open_binary(path: str | Path, expected: str = "a file") -> BinaryIO:
    """``open(path, "rb")``, with typed errors.

    Raises:
        SourceNotFoundError: no such file (``file not found``).
        SourceFormatError: ``path`` is a folder (``is a folder, expected <expected>``).
    """
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except FileNotFoundError:
        raise SourceNotFoundError("file not found", path=path, hint="check the path") from None
    except IsADirectoryError:
        raise SourceFormatError(f"is a folder, expected {expected}", path=path, hint="check the path") from None


def read_bytes(path: str | Path, expected: str = "a file") -> bytes:
    """A file's bytes, with the typed errors of :func:`open_binary`."""
    with open_binary(path, expected) as f:
        return f.read()


def check_head(path: str | Path, head: bytes, what: str, *, hint: str = DECOMPRESS_HINT) -> None:
    """Reject compressed and binary files before parsing them as text.

    Args:
        head: the file's first bytes (:data:`HEAD_BYTES` of them, or all to find a NUL anywhere).
        what: what the file should be, for the message (``"a JSON Lines file"``).
        hint: the hint for a compressed file.

    Raises:
        SourceFormatError: ``head`` starts with a gzip/zip/bzip2/xz signature (``is a gzip
            file, not <what>``, line 1), or holds a NUL byte (at the NUL's line).
    """
    for magic, kind in MAGIC.items():
        if head.startswith(magic):
            raise SourceFormatError(f"is {kind}, not {what}", path=path, line=1, hint=hint)
    nul = head.find(b"\0")
    if nul >= 0:
        raise SourceFormatError(
            f"is a binary file (NUL byte at offset {nul}), not {what}",
            path=path,
            line=head.count(b"\n", 0, nul) + 1,
            hint="check that this is the right file",
        )


# --------------------------------------------------------------------------- decoding


def utf8_error(
    path: str | Path, data: bytes, err: UnicodeDecodeError, *, hint: str, offset: int = 0, first_line: int = 1
) -> SourceFormatError:
    """The error for the first byte of ``data`` that is not UTF-8, at its line and (byte) column.

    Args:
        err: the error of decoding ``data[offset:]``.
        first_line: the line number of ``data``'s first line (``data`` may be one line of a file).
    """
    pos = err.start + offset
    line = first_line + data.count(b"\n", 0, pos)
    col = pos - (data.rfind(b"\n", 0, pos) + 1) + 1
    return SourceFormatError(
        f"is not valid UTF-8: byte 0x{data[pos]:02x} at column {col} ({err.reason})", path=path, line=line, hint=hint
    )


def decode_utf8(path: str | Path, data: bytes, *, hint: str = UTF8_HINT) -> str:
    """A whole file's bytes as text, a leading BOM dropped.

    Raises:
        SourceFormatError: a byte that is not UTF-8 (:func:`utf8_error`).
    """
    start = len(BOM) if data.startswith(BOM) else 0
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as e:
        raise utf8_error(path, data, e, hint=hint, offset=start) from None


def read_text(path: str | Path, what: str, *, hint: str = UTF8_HINT, expected: str = "a file") -> str:
    """A file's text (UTF-8, a leading BOM dropped), after rejecting compressed and binary files.

    Args:
        what: what the file should be (for :func:`check_head`); ``hint``: the hint for bytes
            that are not UTF-8; ``expected``: what a folder should have been.

    Raises:
        SourceNotFoundError: no such file.
        SourceFormatError: a folder, a compressed or binary file, or bytes that are not UTF-8
            (naming the line and column of the first bad byte).
    """
    data = read_bytes(path, expected)
    check_head(path, data[:HEAD_BYTES], what)
    return decode_utf8(path, data, hint=hint)


def split_lines(text: str) -> list[str]:
    """The lines of a text split on ``\\n`` only; a final newline ends the last line, it does not start one."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


# --------------------------------------------------------------------------- line iterators


def iter_text_lines(
    path: str | Path, what: str, *, hint: str = UTF8_HINT, expected: str = "a file"
) -> Iterator[tuple[int, str]]:
    """``(1-based line, text)`` of a UTF-8 text file, read line by line.

    Lines are split on ``\\n`` only (a U+2028 or form feed inside a text never splits one); each
    text keeps its ``\\n`` (the csv module needs it inside quoted fields), a ``\\r\\n`` is turned
    into ``\\n`` and a leading BOM is dropped.

    Raises:
        SourceNotFoundError: no such file.
        SourceFormatError: a folder, a compressed or binary file (:func:`check_head` on the first
            :data:`HEAD_BYTES`), or a byte that is not UTF-8 (at its line and column; ``hint``).
    """
    with open_binary(path, expected) as fb:
        check_head(path, fb.read(HEAD_BYTES), what)
        fb.seek(0)
        for n, raw in enumerate(fb, 1):
            if raw.endswith(b"\r\n"):
                raw = raw[:-2] + b"\n"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise utf8_error(path, raw, e, hint=hint, first_line=n) from None
            if n == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield n, text


class JsonLinesWording:
    """The words of :func:`iter_jsonl`'s per-line errors.

    The defaults are the ChaosNLI and ART readers' (ART's JSON Lines file is line-aligned with a
    labels file); a reader whose users (and tests) know other words overrides the methods.
    """

    def bad_json(self, path: Path, line: int, err: json.JSONDecodeError, last: bool) -> SourceFormatError:
        """A line that is not JSON; ``last``: it is the file's last line and has no newline
        (``err.doc`` is the line without its line end)."""
        return SourceFormatError(
            f"not valid JSON at column {err.colno}: {err.msg}",
            path=path,
            line=line,
            hint="the line looks truncated or garbled; re-download the file",
        )

    def not_object(self, path: Path, line: int, value: Any, what: str) -> SourceFormatError:
        """A line holding a JSON value other than an object."""
        hint = f"each line of {what} is one object"
        return SourceFormatError(f"expected a JSON object, got {json_kind(value)}", path=path, line=line, hint=hint)

    def blank_line(self, path: Path, line: int) -> SourceFormatError:
        """A blank line inside a line-aligned file (``blank_lines="error"``)."""
        return SourceFormatError(
            "blank line: this format needs one JSON object on every line",
            path=path,
            line=line,
            hint="remove the blank line and the matching line of the labels file, or re-download both",
        )


_WORDING = JsonLinesWording()


def iter_jsonl(
    path: str | Path,
    what: str,
    *,
    hint: str = UTF8_HINT,
    blank_lines: Literal["skip", "error"] = "skip",
    allow_empty: bool = True,
    wording: JsonLinesWording = _WORDING,
    expected: str = "a file",
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(1-based line, object)`` for every non-blank line of a JSON Lines file, read line by line.

    Each line is parsed without its line end. Blank lines are skipped, or with
    ``blank_lines="error"`` (line-aligned formats) rejected unless they end the file.

    Args:
        what: what the file should be (messages); ``hint``: the hint for bytes that are not
            UTF-8; ``allow_empty``: whether a file without an object is fine (else an error);
            ``wording``: the words of the per-line errors; ``expected``: what a folder should
            have been.

    Raises:
        SourceFormatError: a line that is not JSON, not a JSON object, or blank where
            ``blank_lines="error"`` (worded by ``wording``), an empty file unless ``allow_empty``, and
            the errors of :func:`iter_text_lines`.
    """
    p = Path(path)
    blank: int | None = None  # the first blank line since the last object
    found = False
    for n, text in iter_text_lines(p, what, hint=hint, expected=expected):
        if not text.strip():
            blank = blank or n
            continue
        if blank is not None and blank_lines == "error":
            raise wording.blank_line(p, blank)
        blank = None
        last = not text.endswith("\n")
        try:
            obj = json.loads(text if last else text[:-1])
        except json.JSONDecodeError as e:
            raise wording.bad_json(p, n, e, last) from None
        if not isinstance(obj, dict):
            raise wording.not_object(p, n, obj, what)
        found = True
        yield n, obj
    if not found and not allow_empty:
        raise SourceFormatError(f"is empty, expected {what}", path=p, line=1, hint="re-download the file")


# --------------------------------------------------------------------------- JSON values


def json_kind(value: Any) -> str:
    """The JSON type of a parsed value with its article: ``"a string"``, ``"an integer"``, ``"null"``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {str: "a string", int: "an integer", float: "a number", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )


class JsonFields:
    """Typed access to one JSON object's keys, raising errors that name file, line and key.

    Messages read ``key '<prefix><key>' <problem>`` (``key 'example.premise' is missing``);
    :meth:`sub` gives the fields of a nested object, of the same class, with the key as prefix.
    """

    def __init__(self, obj: dict[str, Any], path: Path, line: int, hint: str, prefix: str = "") -> None:
        self.obj, self.path, self.line, self.hint, self.prefix = obj, path, line, hint, prefix

    def _bad(self, key: str, msg: str) -> SourceFormatError:
        return SourceFormatError(f"key '{self.prefix}{key}' {msg}", path=self.path, line=self.line, hint=self.hint)

    def get(self, key: str) -> Any:
        """The value of ``key``, any type."""
        if key not in self.obj:
            raise self._bad(key, "is missing")
        return self.obj[key]

    def text(self, key: str) -> str:
        """A string."""
        v = self.get(key)
        if not isinstance(v, str):
            raise self._bad(key, f"must be a string, got {json_kind(v)}")
        return v

    def number(self, key: str) -> float:
        """A finite number (an integer becomes a float)."""
        v = self.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise self._bad(key, f"must be a finite number, got {v!r}"[:120])
        return float(v)

    def numbers(self, key: str, n: int) -> tuple[float, ...]:
        """A list of ``n`` finite numbers."""
        v = self.get(key)
        if (
            not isinstance(v, list)
            or len(v) != n
            or any(isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) for x in v)
        ):
            raise self._bad(key, f"must be a list of {n} finite numbers, got {v!r}"[:120])
        return tuple(float(x) for x in v)

    def texts(self, key: str) -> tuple[str, ...]:
        """A list of strings."""
        v = self.get(key)
        if not isinstance(v, list) or any(not isinstance(x, str) for x in v):
            raise self._bad(key, f"must be a list of strings, got {v!r}"[:120])
        return tuple(v)

    def sub(self, key: str) -> JsonFields:
        """The fields of the nested object at ``key`` (same class, ``key.`` prefixed to its keys)."""
        v = self.get(key)
        if not isinstance(v, dict):
            raise self._bad(key, f"must be an object, got {json_kind(v)}")
        return type(self)(v, self.path, self.line, self.hint, f"{self.prefix}{key}.")
