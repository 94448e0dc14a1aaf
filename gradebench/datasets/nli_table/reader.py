"""Reader for NLI pairs in any table: CSV, TSV, JSON Lines or Parquet, with user-named columns.

A :class:`ColumnRoles` names the file's column for each role: ``premise``, ``hypothesis`` and
``label`` (required), ``explanation`` (none, one or several columns, in order), ``id`` and
``split`` (optional). Formats come from the file suffix (:data:`SUFFIX_FORMATS`):

- ``.csv``: comma-separated with a header line, RFC 4180 quoting (stdlib :mod:`csv`, strict).
- ``.tsv``: tab-separated with a header line, read literally: no quoting, so ``"`` is text
  (the GLUE/MultiNLI convention); a field cannot hold a tab or a newline.
- ``.jsonl``: one JSON object per line; a column may be a dotted path into nested objects
  (``example.premise``) when no key has that exact name.
- ``.parquet``: the named columns (string; integer also for ``label`` and ``id``).

Lines are split on ``\\n`` only (a ``\\r`` before it is dropped), so a U+2028 or a form feed
inside a text never splits a record. Values: texts are stripped, a null/empty text is kept as
``""`` (the builder counts it as a skip), an integer label becomes its decimal string (``0`` ->
``"0"``) before ``label_values`` maps it, a null label becomes ``""`` (no gold label). A missing
or empty ``id`` falls back to ``"<file name>:<line>"`` (Parquet: ``"<file name>:<row>"``, 1-based).
A split comes from the ``split`` column if mapped, else from the file name
(:func:`split_from_name`). Readers do not filter; anything malformed raises a
:class:`SourceFormatError` naming the file and the 1-based line.

Reading the rows of each format is generic and lives in :mod:`gradebench.io.tables` (shared with
the MultiNLI reader); this module maps the rows' columns onto NLI roles.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradebench.datasets.records import SPLITS, InputFile, NLIExample
from gradebench.errors import SourceFormatError
from gradebench.io.tables import (
    ABSENT,
    TableJsonWording,
    iter_csv,
    iter_parquet_rows,
    iter_table_jsonl,
    iter_tsv,
    keys_near,
    lookup,
    open_parquet,
    table_files,
)

# TableJsonWording, iter_table_jsonl and iter_tsv moved to gradebench.io.tables; still importable from here
__all__ = [
    "FORMATS",
    "SUFFIX_FORMATS",
    "ColumnRoles",
    "TableJsonWording",
    "format_of",
    "iter_table_jsonl",
    "iter_tsv",
    "locate_table",
    "read_nli_table",
    "split_from_name",
    "split_value",
]

#: file suffix (lower case) -> format name
SUFFIX_FORMATS = {".csv": "nli-csv", ".tsv": "nli-tsv", ".jsonl": "nli-jsonl", ".parquet": "nli-parquet"}
FORMATS = tuple(SUFFIX_FORMATS.values())

#: split words (in file names and split columns) -> output split
SPLIT_WORDS = {
    "train": "train",
    "training": "train",
    "dev": "validation",
    "validation": "validation",
    "valid": "validation",
    "val": "validation",
    "test": "test",
}

_TOKEN = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class ColumnRoles:
    """The file's column (or JSON key / dotted path) for each role; ``None`` = not mapped."""

    premise: str
    hypothesis: str
    label: str
    explanation: tuple[str, ...] = ()
    id: str | None = None
    split: str | None = None

    def mapped(self) -> list[tuple[str, str]]:
        """``(role, column)`` for every mapped role, in reading order."""
        out = [("premise", self.premise), ("hypothesis", self.hypothesis), ("label", self.label)]
        out += [(f"explanation[{k + 1}]" if len(self.explanation) > 1 else "explanation", c)
                for k, c in enumerate(self.explanation)]
        if self.id is not None:
            out.append(("id", self.id))
        if self.split is not None:
            out.append(("split", self.split))
        return out


# --------------------------------------------------------------------------- splits


def split_from_name(path: str | Path) -> str | None:
    """The output split a file's name implies, or ``None`` when it names none.

    The name's stem is cut into lower-case alphanumeric words; ``train``/``training`` ->
    ``train``, ``dev``/``validation``/``valid``/``val`` -> ``validation``, ``test`` -> ``test``
    (``snli_1.0_dev.jsonl`` -> validation; ``testing.csv`` names none).

    Raises:
        SourceFormatError: the name holds words of two different splits (``train_test.csv``).
    """
    stem = Path(path).name
    for suffix in SUFFIX_FORMATS:
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
    found = {SPLIT_WORDS[w] for w in _TOKEN.findall(stem.lower()) if w in SPLIT_WORDS}
    if len(found) > 1:
        raise SourceFormatError(
            f"the file name names several splits ({', '.join(sorted(found))})",
            path=path,
            hint="rename the file so its name holds one of train/dev/validation/test, or map a split column",
        )
    return found.pop() if found else None


def split_value(value: Any, path: Path, line: int | None, column: str, where: str = "line") -> str:
    """The output split named by a split-column value (``dev`` -> ``validation``)."""
    if isinstance(value, str) and value.strip().lower() in SPLIT_WORDS:
        return SPLIT_WORDS[value.strip().lower()]
    raise SourceFormatError(
        f"split column {column!r} holds {value!r}{'' if line is None else f' on {where} {line}'}, "
        f"not a split name",
        path=path,
        line=line if where == "line" else None,
        hint=f"use {', '.join(SPLITS)} (or dev/valid/val for validation), or unmap the split column",
    )


# --------------------------------------------------------------------------- value conversion


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class _Converter:
    """Turns one record's raw values (in :meth:`ColumnRoles.mapped` order) into an NLIExample."""

    def __init__(
        self,
        path: Path,
        roles: ColumnRoles,
        label_values: Mapping[str, str],
        file_split: str | None,
        rows: dict[str, int],
    ) -> None:
        self.path = path
        self.name = path.name
        self.roles = roles
        self.label_values = label_values
        self.file_split = file_split
        self.n_expl = len(roles.explanation)
        #: records so far per output split (shared across the files of one read)
        self.rows = rows

    def _error(self, msg: str, line: int | None, row: int | None, hint: str) -> SourceFormatError:
        return SourceFormatError(msg if line is not None else f"{msg} (row {row})", path=self.path, line=line, hint=hint)

    def text(self, value: Any, role: str, column: str, line: int | None, row: int | None) -> str:
        if value is None:
            return ""
        if isinstance(value, str):
            return value.strip()
        raise self._error(
            f"column {column!r} ({role}) holds a {_type_name(value)} ({str(value)[:40]!r}), expected text",
            line, row, f"map {role} to a text column, or fix the value",
        )

    def label(self, value: Any, column: str, line: int | None, row: int | None) -> str:
        if value is None:
            text = ""
        elif isinstance(value, str):
            text = value.strip()
        elif isinstance(value, int) and not isinstance(value, bool):
            text = str(value)
        elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
            text = str(int(value))  # integer labels stored as floats (a pandas column with NaN)
        elif isinstance(value, float) and math.isnan(value):
            text = ""
        else:
            raise self._error(
                f"label column {column!r} holds a {_type_name(value)} ({str(value)[:40]!r}), "
                "expected a label name or an integer",
                line, row, "map label to the column holding the gold label",
            )
        return self.label_values.get(text, text)

    def source_id(self, value: Any, column: str, line: int | None, row: int | None) -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int, type(None))):
            raise self._error(
                f"id column {column!r} holds a {_type_name(value)} ({str(value)[:40]!r}), expected text or an integer",
                line, row, "map id to a column of unique ids, or leave it unmapped (ids then are file:line)",
            )
        text = "" if value is None else str(value).strip()
        return text or f"{self.name}:{line if line is not None else row}"

    def split(self, value: Any, line: int | None, row: int | None) -> str:
        if self.roles.split is None:
            return self.file_split or "test"
        if line is not None:
            return split_value(value, self.path, line, self.roles.split)
        return split_value(value, self.path, row, self.roles.split, where="row")

    def example(self, values: Sequence[Any], line: int | None, row: int | None = None) -> NLIExample:
        r = self.roles
        premise = self.text(values[0], "premise", r.premise, line, row)
        hypothesis = self.text(values[1], "hypothesis", r.hypothesis, line, row)
        label = self.label(values[2], r.label, line, row)
        expl = tuple(
            self.text(values[3 + k], "explanation", c, line, row) for k, c in enumerate(r.explanation)
        )
        i = 3 + self.n_expl
        sid = self.source_id(values[i] if r.id is not None else None, r.id or "", line, row)
        if r.id is not None:
            i += 1
        split = self.split(values[i] if r.split is not None else None, line, row)
        n = self.rows.get(split, 0)
        self.rows[split] = n + 1
        return NLIExample(split, n, sid, premise, hypothesis, label, expl)


# --------------------------------------------------------------------------- per-format readers


def _missing_error(path: Path, role: str, column: str, present: Sequence[str], line: int | None,
                   what: str = "columns") -> SourceFormatError:
    """The error for a mapped column the file lacks, naming the columns that exist."""
    base = role.split("[")[0]
    shown = ", ".join(repr(c) for c in list(present)[:30]) + (" ..." if len(present) > 30 else "")
    return SourceFormatError(
        f"has no column {column!r} (mapped as {role}); its {what} are: {shown or '(none)'}",
        path=path,
        line=line,
        hint=f"map {base} to one of these (recipe key columns.{base} or --map {base}=COLUMN)",
    )


def _missing(path: Path, roles: ColumnRoles, present: Sequence[str], line: int | None) -> None:
    """Raise on the first mapped column not in ``present``."""
    have = set(present)
    for role, column in roles.mapped():
        if column not in have:
            raise _missing_error(path, role, column, present, line)


def _header_index(path: Path, header: list[str], roles: ColumnRoles) -> list[int]:
    names = [h.strip() for h in header]
    _missing(path, roles, names, 1)
    out = []
    for role, column in roles.mapped():
        if names.count(column) > 1:
            raise SourceFormatError(
                f"the header names column {column!r} (mapped as {role}) {names.count(column)} times",
                path=path,
                line=1,
                hint="rename the duplicate columns so the mapped one is unique",
            )
        out.append(names.index(column))
    return out


def _read_csv(path: Path, conv: _Converter) -> list[NLIExample]:
    header, rows = iter_csv(path, "a CSV file")
    index = _header_index(path, header, conv.roles)
    return [conv.example([fields[i] for i in index], n) for n, fields in rows]


def _read_tsv(path: Path, conv: _Converter) -> list[NLIExample]:
    header, rows = iter_tsv(path, "a TSV file")
    index = _header_index(path, header, conv.roles)
    ncols = len(header)
    out: list[NLIExample] = []
    for n, fields in rows:
        if len(fields) != ncols:
            raise SourceFormatError(
                f"row has {len(fields)} tab-separated fields but the header has {ncols}",
                path=path,
                line=n,
                hint="TSV is read without quoting: a text must not hold a tab; the file may be truncated",
            )
        out.append(conv.example([fields[i] for i in index], n))
    return out


def _read_jsonl(path: Path, conv: _Converter) -> list[NLIExample]:
    mapped = conv.roles.mapped()
    columns = [c for _, c in mapped]
    out: list[NLIExample] = []
    for n, obj in iter_table_jsonl(path):
        values = [lookup(obj, c) for c in columns]
        for (role, column), v in zip(mapped, values):
            if v is ABSENT:
                raise _missing_error(path, role, column, keys_near(obj, column), n, what="keys on this line")
        out.append(conv.example(values, n))
    return out


def _parquet_type_ok(role: str, t: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    text = pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)
    if role == "label":
        return text or pa.types.is_integer(t) or pa.types.is_floating(t)
    if role == "id":
        return text or pa.types.is_integer(t)
    return text


def _read_parquet(path: Path, conv: _Converter) -> list[NLIExample]:
    pf = open_parquet(path)
    schema = pf.schema_arrow
    _missing(path, conv.roles, schema.names, None)
    for role, column in conv.roles.mapped():
        t = schema.field(column).type
        if not _parquet_type_ok(role.split("[")[0], t):
            raise SourceFormatError(
                f"column {column!r} ({role}) has type {t}, expected "
                + ("string or integer" if role in ("label", "id") else "string"),
                path=path,
                hint=f"map {role.split('[')[0]} to another column, or convert this one",
            )
    columns = [c for _, c in conv.roles.mapped()]
    return [conv.example(values, None, row) for row, values in iter_parquet_rows(pf, path, columns)]


_READERS = {"nli-csv": _read_csv, "nli-tsv": _read_tsv, "nli-jsonl": _read_jsonl, "nli-parquet": _read_parquet}


def format_of(path: str | Path) -> str | None:
    """The format a file's suffix names (case-insensitive), or ``None``."""
    return SUFFIX_FORMATS.get(Path(path).suffix.lower())


def locate_table(source: str | Path, formats: Sequence[str] = FORMATS, *, split_column: bool = False,
                 suffix_formats: Mapping[str, str] = SUFFIX_FORMATS) -> list[InputFile]:
    """The table files ``source`` holds: the file itself, or every file of a folder with a known suffix.

    A folder is not searched recursively; hidden files are ignored; files come in name order
    (:func:`gradebench.io.tables.table_files`). Only ``formats`` are accepted; ``suffix_formats``
    maps a file suffix to its format (the response families name their own). A file's split comes
    from its name (:func:`split_from_name`, ``test`` when it names none); its role is
    ``"<format>:<file name>:<split>"``, or ``"<format>:<file name>:split-column"`` when a split
    column decides instead (the file's split then being a placeholder).

    Raises:
        SourceNotFoundError: ``source`` does not exist.
        SourceFormatError: a file of another format, a folder with no file of ``formats``, or a
            file name naming two splits.
    """
    out = []
    for p, fmt in table_files(source, suffix_formats, formats):
        if split_column:
            out.append(InputFile(str(p), f"{fmt}:{p.name}:split-column", "test"))
        else:
            split = split_from_name(p) or "test"
            out.append(InputFile(str(p), f"{fmt}:{p.name}:{split}", split))
    return out


def read_nli_table(
    files: Sequence[InputFile], roles: ColumnRoles, label_values: Mapping[str, str] | None = None
) -> dict[str, list[NLIExample]]:
    """Read NLI pairs from table files, in the given order, into examples per output split.

    Each file's format comes from its suffix. Without a split column, every record of a file
    goes to ``file.split``; with one, to the split its value names. ``row`` counts per output
    split across all files.

    Raises:
        SourceNotFoundError: a file is missing.
        SourceFormatError: an unsupported suffix, a mapped column the file lacks (naming the
            columns it has), a value of the wrong type, a malformed line, or bad bytes; each
            names the file and, for text formats, the 1-based line.
    """
    label_values = label_values or {}
    out: dict[str, list[NLIExample]] = {}
    rows: dict[str, int] = {}
    for f in files:
        path = Path(f.path)
        fmt = format_of(path)
        if fmt is None:
            raise SourceFormatError(
                f"unsupported file suffix {path.suffix!r}",
                path=path,
                hint=f"use one of {', '.join(SUFFIX_FORMATS)}",
            )
        conv = _Converter(path, roles, label_values, f.split, rows)
        for ex in _READERS[fmt](path, conv):
            out.setdefault(ex.split, []).append(ex)
    return {s: out[s] for s in SPLITS if s in out}
