"""Finding and reading the tables of the response-ranking families (preferences, best-of-n, ratings).

The three families read CSV, JSON Lines and Parquet files (or a folder of them) whose columns a
recipe maps onto roles (``columns:`` in the recipe, ``--map role=column`` on the command line).
What they share lives here:

- :class:`ColumnMapBase`: a recipe's role -> column mapping. Required roles must be in every
  file (every line of a JSON Lines file). An optional role (``subset``, ``id``, ...) left at
  its own default column name is read where the file has that column and is empty elsewhere
  (the RewardBench layout has ``subset``, the TRL layout does not); mapped to another name,
  the column must exist (a typo in ``--map subset=categroy`` is an error, not an empty column).
  A JSON Lines column may be a dotted path into nested objects (``meta.subset``).
- :func:`locate_tables`: the files a source holds and each one's split (from its name:
  ``prefs_train.jsonl`` -> train, none -> test; or ``split-column`` when a split column decides).
- :func:`read_role_rows`: each row's raw value per role, its split and its place (for errors).
- value converters for the roles' types: :func:`subset_value`, :func:`id_value`,
  :func:`number_value`, :func:`list_value`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import model_validator

from gradebench.datasets.nli_table.reader import locate_table, split_value
from gradebench.datasets.records import SPLITS, InputFile
from gradebench.errors import SourceFormatError
from gradebench.io.table_rows import RowPlace, json_in_text, read_table_rows, table_kind
from gradebench.io.tables import ABSENT, keys_near, lookup
from gradebench.io.textio import json_kind
from gradebench.registry import suggest
from gradebench.strict import StrictModel

__all__ = [
    "ChosenRejectedColumns",
    "ColumnMapBase",
    "RoleColumn",
    "RoleRow",
    "id_value",
    "list_value",
    "locate_tables",
    "number_value",
    "read_role_rows",
    "read_rows",
    "subset_value",
    "suffix_formats",
]

#: text values meaning "no rating" (case-insensitive), besides null and an empty field
MISSING_NUMBERS = frozenset({"", "n/a", "na", "nan", "none", "null", "-"})


def suffix_formats(prefix: str) -> dict[str, str]:
    """File suffix -> format name of a family (``"preferences"`` -> ``{".csv": "preferences-csv", ...}``)."""
    return {".csv": f"{prefix}-csv", ".jsonl": f"{prefix}-jsonl", ".parquet": f"{prefix}-parquet"}


# --------------------------------------------------------------------------- column roles


@dataclass(frozen=True)
class RoleColumn:
    """A role, the column mapped to it, and whether every file must have that column."""

    role: str
    column: str
    required: bool


class ColumnMapBase(StrictModel):
    """A family's role -> column mapping; subclasses declare the roles as ``str`` (or ``str | None``) fields."""

    #: roles read only where the file has them when left at their default column name
    OPTIONAL: ClassVar[tuple[str, ...]] = ()
    #: roles that are not table columns (paths inside a nested value), left out of :meth:`role_columns`
    NESTED: ClassVar[tuple[str, ...]] = ()

    def role_columns(self) -> list[RoleColumn]:
        """The mapped table roles in declaration order (``None``: unmapped, left out)."""
        out = []
        for role, field in type(self).model_fields.items():
            column = getattr(self, role)
            if role in self.NESTED or not isinstance(column, str):
                continue
            out.append(RoleColumn(role, column, role not in self.OPTIONAL or column != field.default))
        return out

    @model_validator(mode="after")
    def _names_ok(self) -> ColumnMapBase:
        seen: dict[str, str] = {}
        for role in type(self).model_fields:
            column = getattr(self, role)
            if column == "":
                raise ValueError(f"columns.{role} is empty; name a column" + (
                    " or write null to leave it unmapped" if role in self.OPTIONAL else ""))
            if role in self.NESTED or not isinstance(column, str):
                continue
            if column in seen:
                raise ValueError(f"column {column!r} is mapped to both {seen[column]} and {role}")
            seen[column] = role
        return self


# --------------------------------------------------------------------------- locating files


def locate_tables(source: str | Path, formats: Mapping[str, str], allowed: Sequence[str], *,
                  split_column: bool) -> list[InputFile]:
    """The table files ``source`` holds: the file itself, or every table file of a folder.

    ``formats``: suffix -> format name (:func:`suffix_formats`); ``allowed``: the recipe's
    formats. Files and splits are found as :func:`~gradebench.datasets.nli_table.reader.locate_table`
    finds them.
    """
    return locate_table(source, allowed, split_column=split_column, suffix_formats=formats)


# --------------------------------------------------------------------------- reading rows


@dataclass(frozen=True)
class RoleRow:
    """One row: its output split, where it is, each role's raw value (``None`` where absent) and the
    roles whose column the row has (an optional role's column may be missing)."""

    split: str
    place: RowPlace
    values: dict[str, Any]
    present: frozenset[str]


def _missing_error(place: RowPlace, rc: RoleColumn, present: Sequence[str], what: str) -> SourceFormatError:
    shown = ", ".join(repr(c) for c in list(present)[:30]) + (" ..." if len(present) > 30 else "")
    return place.error(
        f"has no column {rc.column!r} (mapped as {rc.role}); its {what}: {shown or '(none)'}"
        + suggest(rc.column, [str(c) for c in present], n=1),
        f"map {rc.role} to one of these (recipe key columns.{rc.role} or --map {rc.role}=COLUMN)",
    )


def _present(names: frozenset[str], column: str) -> bool:
    return column in names or (column.split(".", 1)[0] in names and "." in column)


def read_role_rows(files: Sequence[InputFile], roles: Sequence[RoleColumn], *, split_role: str | None = None,
                   what: str = "a table") -> Iterator[RoleRow]:
    """Every row of ``files`` (in order) with its roles' values.

    ``split_role``: the role whose value names each row's split (else the file's split).

    Raises:
        SourceNotFoundError: a file is missing.
        SourceFormatError: an unsupported suffix, a required column a file (or a JSON Lines line)
            lacks, naming the columns it has, a split value that is not a split name, and the
            errors of :func:`gradebench.io.table_rows.read_table_rows`.
    """
    for f in files:
        path = Path(f.path)
        kind = table_kind(path)
        if kind is None:
            raise SourceFormatError(f"unsupported file suffix {path.suffix!r}", path=path,
                                    hint="use .csv, .jsonl or .parquet")
        names, rows = read_table_rows(path, kind, [rc.column for rc in roles], what)
        present = list(roles)
        if names is not None:
            for rc in roles:
                if rc.required and not _present(names, rc.column):
                    raise _missing_error(RowPlace(path, line=1 if kind == "csv" else None), rc, sorted(names),
                                         "columns are")
            present = [rc for rc in roles if _present(names, rc.column)]
        for place, obj in rows:
            values: dict[str, Any] = {rc.role: None for rc in roles}
            have = set()
            for rc in present:
                v = lookup(obj, rc.column)
                if v is ABSENT:
                    if rc.required:
                        raise _missing_error(place, rc, keys_near(obj, rc.column), "keys on this line are")
                    continue
                values[rc.role] = v
                have.add(rc.role)
            split = f.split
            if split_role is not None:
                column = next(rc.column for rc in roles if rc.role == split_role)
                if place.line is not None:
                    split = split_value(values[split_role], path, place.line, column)
                else:
                    split = split_value(values[split_role], path, place.row, column, where="row")
            yield RoleRow(split, place, values, frozenset(have))


_Row = TypeVar("_Row")


def read_rows(files: Sequence[InputFile], columns: ColumnMapBase, make: Callable[[RoleRow, dict[str, str]], _Row], *,
              what: str, roles: Sequence[RoleColumn] | None = None) -> dict[str, list[_Row]]:
    """``make(row, role -> column)`` for every row of ``files``, per output split, in file order.

    ``roles``: the roles to read (default ``columns.role_columns()``); a ``split`` column, where
    ``columns`` maps one, names each row's split. Raises what :func:`read_role_rows` and ``make`` raise.
    """
    roles = columns.role_columns() if roles is None else roles
    col = {rc.role: rc.column for rc in roles}
    out: dict[str, list[_Row]] = {}
    split_role = "split" if getattr(columns, "split", None) else None
    for r in read_role_rows(files, roles, split_role=split_role, what=what):
        out.setdefault(r.split, []).append(make(r, col))
    return {s: out[s] for s in SPLITS if s in out}


class ChosenRejectedColumns(ColumnMapBase):
    """The roles every chosen/rejected layout has (preference pairs, best-of-N lists)."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ("prompt", "subset", "id")

    prompt: str = "prompt"
    chosen: str = "chosen"
    rejected: str = "rejected"
    subset: str = "subset"
    id: str = "id"


# --------------------------------------------------------------------------- values


def subset_value(value: Any, place: RowPlace, column: str) -> str | None:
    """A subset/category name: text (stripped; empty is none) or an integer; ``None`` when absent."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise place.error(f"column {column!r} (subset) holds {json_kind(value)}, expected a subset name",
                      "map subset to a column of subset names, or leave it at its default")


def id_value(value: Any, place: RowPlace, column: str | None) -> str:
    """A row's source id: the id column's text or integer, else ``"<file name>:<line or row>"``."""
    if isinstance(value, bool) or not isinstance(value, (str, int, type(None))):
        raise place.error(f"column {column!r} (id) holds {json_kind(value)}, expected text or an integer",
                          "map id to a column of unique ids, or leave it at its default")
    text = "" if value is None else str(value).strip()
    return text or place.ref()


def number_value(value: Any, place: RowPlace, what: str) -> float | None:
    """A finite number, a numeric text (``"4"``, ``"4.5"``) or ``None`` for no value (null, NaN, ``"N/A"``).

    Raises:
        SourceFormatError: a boolean, an infinite number, a text that is no number, or another type.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise place.error(f"{what} is a boolean, expected a number", "store ratings and scores as numbers")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isnan(value):
            return None
        if not math.isfinite(value):
            raise place.error(f"{what} is {value}, expected a finite number", "store ratings and scores as numbers")
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in MISSING_NUMBERS:
            return None
        try:
            x = float(text)
        except ValueError:
            x = math.inf
        if not math.isfinite(x):
            raise place.error(f"{what} is {text[:40]!r}, expected a number (or N/A)",
                              "store ratings and scores as numbers; N/A or empty means no value")
        return x
    raise place.error(f"{what} is {json_kind(value)}, expected a number", "store ratings and scores as numbers")


def list_value(value: Any, place: RowPlace, column: str, role: str) -> list[Any]:
    """A list-valued role: a list, a text holding a JSON list (CSV), or one value as a list of one.

    ``None`` is an empty list.
    """
    if value is None:
        return []
    if isinstance(value, str):
        parsed = json_in_text(value.strip()) if value.strip().startswith("[") else None
        return parsed if isinstance(parsed, list) else [value]
    if isinstance(value, list):
        return value
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return [value]
    raise place.error(f"column {column!r} ({role}) holds {json_kind(value)}, expected a list",
                      f"map {role} to a column holding a list (a CSV field: JSON text such as [\"a\", \"b\"])")
