"""Every row of a CSV, JSON Lines or Parquet file as a ``dict``, with the place each came from.

The readers of :mod:`gradebench.io.tables` give a format's rows in its own shape (CSV fields by
position, Parquet values of chosen columns); a reader whose columns hold nested values (lists of
chat messages, lists of completions with their ratings) wants one shape for all three formats:
a ``dict`` from column name to value, and a :class:`RowPlace` to word its errors. That is
:func:`read_table_rows`:

- ``csv``: the header names the keys (stripped; a name twice is an error); every value is a string, an empty field is ``None``
  (nested values are JSON text inside a field: the reader parses them, see :func:`json_in_text`).
- ``jsonl``: each line's object as it is (keys may differ from line to line).
- ``parquet``: the top-level columns named by ``wanted`` (a dotted path ``a.b`` reads column
  ``a``) as Python values (lists, dicts for structs, ``None`` for null).

Line numbers are 1-based (a CSV record's is the line it starts on); Parquet rows are counted
from 1 per file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gradebench.errors import SourceFormatError
from gradebench.io.tables import iter_csv, iter_parquet_rows, iter_table_jsonl, open_parquet

__all__ = ["TABLE_KINDS", "RowPlace", "TableKind", "json_in_text", "read_table_rows", "table_kind"]

TableKind = Literal["csv", "jsonl", "parquet"]
#: file suffix (lower case) -> table kind
TABLE_KINDS: dict[str, TableKind] = {".csv": "csv", ".jsonl": "jsonl", ".parquet": "parquet"}


def table_kind(path: str | Path) -> TableKind | None:
    """The kind a file's suffix names (case-insensitive), or ``None``."""
    return TABLE_KINDS.get(Path(path).suffix.lower())


@dataclass(frozen=True)
class RowPlace:
    """Where a row is: its file and 1-based ``line`` (CSV, JSON Lines) or ``row`` (Parquet)."""

    path: Path
    line: int | None = None
    row: int | None = None

    def error(self, message: str, hint: str) -> SourceFormatError:
        """A SourceFormatError at this place (a Parquet row is named in the message: it has no line)."""
        if self.line is None and self.row is not None:
            message = f"{message} (row {self.row})"
        return SourceFormatError(message, path=self.path, line=self.line, hint=hint)

    def ref(self) -> str:
        """``"<file name>:<line or row>"``: a stable reference that does not depend on the folder."""
        return f"{self.path.name}:{self.line if self.line is not None else self.row}"


def json_in_text(text: str) -> Any:
    """The JSON value a text holds, or ``None`` when it is not JSON (a CSV field holding a list)."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None


def read_table_rows(
    path: Path, kind: TableKind, wanted: Sequence[str], what: str = "a table"
) -> tuple[frozenset[str] | None, Iterator[tuple[RowPlace, dict[str, Any]]]]:
    """The file's column names (``None`` for JSON Lines, whose keys vary per line) and its rows.

    Args:
        wanted: the columns (or dotted paths) the caller will look up; Parquet reads only
            these columns' top-level names that the file has; the others read every column.
        what: what the file should be, for messages (``"a preference-pairs CSV file"``).

    Raises:
        SourceNotFoundError: the file is missing.
        SourceFormatError: a file that is empty (CSV), binary, compressed, not UTF-8, not
            Parquet, or with a malformed line (as :mod:`gradebench.io.tables` words them). Errors
            inside the iterator are raised while iterating.
    """
    if kind == "csv":
        raw, rows = iter_csv(path, what)
        header = [h.strip() for h in raw]
        twice = sorted({h for h in header if header.count(h) > 1})
        if twice:
            raise SourceFormatError(f"the header names column {twice[0]!r} {header.count(twice[0])} times", path=path,
                                    line=1, hint="rename the duplicate columns so that each name is unique")

        def csv_rows() -> Iterator[tuple[RowPlace, dict[str, Any]]]:
            for n, fields in rows:
                yield RowPlace(path, line=n), {k: (v if v != "" else None) for k, v in zip(header, fields)}

        return frozenset(header), csv_rows()
    if kind == "jsonl":
        return None, ((RowPlace(path, line=n), obj) for n, obj in iter_table_jsonl(path, what))
    pf = open_parquet(path)
    names = pf.schema_arrow.names
    columns = [c for c in dict.fromkeys(w if w in names else w.split(".", 1)[0] for w in wanted) if c in names]

    def parquet_rows() -> Iterator[tuple[RowPlace, dict[str, Any]]]:
        for n, values in iter_parquet_rows(pf, path, columns):
            yield RowPlace(path, row=n), dict(zip(columns, values))

    return frozenset(names), parquet_rows()
