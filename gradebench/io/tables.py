"""Reading tables (CSV, TSV, JSON Lines, Parquet) row by row, with errors that name the file and line.

What any reader of a table needs, whatever its rows mean: the rows of a CSV file with its header
(:func:`iter_csv`: RFC 4180 quoting via the stdlib :mod:`csv` module in strict mode, every row as
wide as the header), of a tab-separated file (:func:`iter_tsv`: no quoting, so ``"`` is text), of a
JSON Lines file (:func:`iter_table_jsonl`), a value at a dotted path in a JSON object
(:func:`lookup`), and the rows of chosen Parquet columns (:func:`open_parquet`,
:func:`iter_parquet_rows`). Line numbers are 1-based and lines split on ``\\n`` only (see
:func:`gradebench.io.textio.iter_text_lines`). Which column means what is the reader's business
(:mod:`gradebench.datasets.nli_table.reader`, :mod:`gradebench.datasets.mnli.reader`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradebench.errors import SourceFormatError, SourceNotFoundError
from gradebench.io.textio import JsonLinesWording, iter_jsonl, iter_text_lines, open_binary

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = [
    "ABSENT",
    "UTF8_TABLE_HINT",
    "TableJsonWording",
    "iter_csv",
    "iter_parquet_rows",
    "iter_table_jsonl",
    "iter_tsv",
    "keys_near",
    "lookup",
    "open_parquet",
]

UTF8_TABLE_HINT = "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 FILE > FILE.utf8)"


# --------------------------------------------------------------------------- CSV and TSV


def iter_csv(path: Path, what: str = "a CSV file") -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """The header and ``(1-based line where the record starts, fields)`` of each non-blank CSV record.

    Raises:
        SourceFormatError: the file is empty (no header line); a record with another number of
            fields than the header; bad quoting or an unterminated quote at end of file; and
            those of :func:`gradebench.io.textio.iter_text_lines`.
    """
    lines = iter_text_lines(path, what, hint=UTF8_TABLE_HINT)
    reader = csv.reader((text for _, text in lines), strict=True)
    with _csv_errors(path, lambda: 1):
        header = next(reader, None)
    if header is None:
        raise SourceFormatError(f"is empty, expected {what} with a header line", path=path, line=1,
                                hint="check that this is the right file")

    def rows() -> Iterator[tuple[int, list[str]]]:
        last = reader.line_num
        with _csv_errors(path, lambda: last + 1):
            for fields in reader:
                if fields and len(fields) != len(header):
                    raise SourceFormatError(
                        f"row has {len(fields)} fields but the header has {len(header)}",
                        path=path,
                        line=last + 1,
                        hint="a field holding commas must be quoted; the file may be truncated",
                    )
                if fields:
                    yield last + 1, fields
                last = reader.line_num

    return header, rows()


@contextmanager
def _csv_errors(path: Path, line: Callable[[], int]) -> Iterator[None]:
    """A :class:`csv.Error` inside becomes a SourceFormatError at the line ``line()`` gives."""
    try:
        yield
    except csv.Error as err:
        msg = "unterminated quoted field at end of file" if "end of data" in str(err) else f"malformed CSV: {err}"
        raise SourceFormatError(
            f"{msg} (the record starting on this line)",
            path=path,
            line=line(),
            hint='a field holding commas, quotes or newlines must be wrapped in double quotes, with inner quotes doubled ("")',
        ) from None


def iter_tsv(path: Path, what: str = "a TSV file") -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """The header and ``(1-based line, fields)`` of each non-blank row of a tab-separated file.

    Fields are split on tabs literally (no quoting); a trailing ``\\r`` is dropped. Rows are not
    checked against the header's width (readers word that themselves).

    Raises:
        SourceFormatError: the file is empty (no header line).
    """
    lines = iter_text_lines(path, what, hint=UTF8_TABLE_HINT)
    for _, text in lines:
        header = text.rstrip("\n").split("\t")
        break
    else:
        raise SourceFormatError(f"is empty, expected {what} with a header line", path=path, line=1,
                                hint="check that this is the right file")

    def rows() -> Iterator[tuple[int, list[str]]]:
        for n, text in lines:
            body = text.rstrip("\n")
            if body.strip():
                yield n, body.split("\t")

    return header, rows()


# --------------------------------------------------------------------------- JSON Lines


class TableJsonWording(JsonLinesWording):
    """How table readers word JSON Lines errors."""

    def bad_json(self, path: Path, line: int, err: json.JSONDecodeError, last: bool) -> SourceFormatError:
        truncated = last and err.pos >= len(err.doc.rstrip()) - 1
        return SourceFormatError(
            f"malformed JSON at column {err.colno}: {err.msg}"
            + (" (the last line looks truncated)" if truncated else ""),
            path=path,
            line=line,
            hint="each line must be one complete JSON object; re-export or re-download the file",
        )

    def not_object(self, path: Path, line: int, value: Any, what: str) -> SourceFormatError:
        return SourceFormatError(
            f"line holds a JSON {type(value).__name__}, expected an object {{...}}",
            path=path,
            line=line,
            hint="each line must be one JSON object with the mapped keys",
        )


_TABLE_WORDING = TableJsonWording()


def iter_table_jsonl(path: Path, what: str = "a JSON Lines file") -> Iterator[tuple[int, dict[str, Any]]]:
    """``(1-based line, object)`` of every non-blank line of a JSON Lines file, errors worded for tables.

    Raises:
        SourceFormatError: a line that is not valid JSON (with the column), or not an object;
            and those of :func:`gradebench.io.textio.iter_text_lines`.
    """
    return iter_jsonl(path, what, hint=UTF8_TABLE_HINT, wording=_TABLE_WORDING)


#: what :func:`lookup` returns for a key that is not there (``None`` is a JSON null)
ABSENT = object()


def lookup(obj: dict[str, Any], key: str) -> Any:
    """``obj[key]``, else the value at the dotted path ``key`` (``"a.b"``); :data:`ABSENT` when neither exists."""
    if key in obj:
        return obj[key]
    if "." not in key:
        return ABSENT
    node: Any = obj
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return ABSENT
        node = node[part]
    return node


def keys_near(obj: dict[str, Any], key: str) -> list[str]:
    """The object's keys, then those of the deepest object a dotted ``key`` reaches (as dotted paths)."""
    keys = list(obj)
    node, prefix = obj, ""
    for part in key.split(".")[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            break
        prefix += part + "."
        keys += [prefix + k for k in node]
    return keys


# --------------------------------------------------------------------------- Parquet


def open_parquet(path: Path) -> pq.ParquetFile:
    """``path`` opened as Parquet, after checking its ``PAR1`` magic at both ends (a truncated copy fails).

    Raises:
        SourceNotFoundError: the file is missing.
        SourceFormatError: no magic, or pyarrow cannot read its footer.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open_binary(path) as fb:
        head = fb.read(4)
        fb.seek(0, 2)
        size = fb.tell()
        fb.seek(max(0, size - 4))
        tail = fb.read(4)
    if head != b"PAR1" or tail != b"PAR1":
        raise SourceFormatError(
            "is not a Parquet file (no PAR1 magic at its " + ("start)" if head != b"PAR1" else "end: truncated?)"),
            path=path,
            hint="pass a complete .parquet file, or give the file the suffix of its real format",
        )
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as e:
        raise SourceFormatError(f"cannot be read as Parquet: {e}", path=path, hint="re-export the file") from None


def iter_parquet_rows(pf: pq.ParquetFile, path: Path, columns: Sequence[str]) -> Iterator[tuple[int, tuple]]:
    """``(1-based row, values of columns in order)`` of every row (a column may be named twice).

    Raises:
        SourceFormatError: pyarrow fails while reading a batch.
    """
    import pyarrow as pa

    row = 0
    try:
        for batch in pf.iter_batches(columns=list(dict.fromkeys(columns)), batch_size=65536):
            data = {name: batch.column(name).to_pylist() for name in batch.schema.names}
            for values in zip(*(data[c] for c in columns)):
                row += 1
                yield row, values
    except (pa.ArrowException, OSError) as e:
        raise SourceFormatError(f"cannot be read as Parquet: {e}", path=path, hint="re-export the file") from None


def table_files(source: str | Path, suffix_formats: Mapping[str, str], allowed: Sequence[str]) -> list[tuple[Path, str]]:
    """The table files ``source`` holds, each with its format: the file itself, or a folder's files.

    ``suffix_formats``: lower-case file suffix -> format name; ``allowed``: the formats accepted. A
    folder is not searched recursively; hidden files are ignored; files come in name order.

    Raises:
        SourceNotFoundError: ``source`` does not exist.
        SourceFormatError: a file of another format, or a folder with no file of ``allowed``.
    """
    root = Path(source)
    suffixes = [s for s, f in suffix_formats.items() if f in allowed]
    if not root.exists():
        raise SourceNotFoundError("source not found", path=root, hint="check the path")
    if root.is_dir():
        paths = sorted(p for p in root.iterdir() if p.is_file() and not p.name.startswith(".")
                       and p.suffix.lower() in suffixes)
        if not paths:
            names = sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
            shown = ", ".join(names[:10]) + (" ..." if len(names) > 10 else "")
            raise SourceFormatError(
                f"no {'/'.join(suffixes)} file in this folder (it holds: {shown or 'nothing'})",
                path=root,
                hint="pass a folder of table files, or one file",
            )
    else:
        if root.suffix.lower() not in suffixes:
            raise SourceFormatError(
                f"unsupported file suffix {root.suffix!r}",
                path=root,
                hint=f"this recipe reads {', '.join(suffixes)} files; rename the file if its suffix is wrong",
            )
        paths = [root]
    return [(p, suffix_formats[p.suffix.lower()]) for p in paths]
