"""Reader for multi-response ratings: a prompt, several responses, per-aspect ratings of each.

Two layouts (column names are the recipes' defaults; ``--map`` renames any of them):

- **nested** (UltraFeedback, ``openbmb/UltraFeedback``): one row per prompt, ``instruction`` and
  ``completions``, a list of ``{"model", "response", "annotations": {"helpfulness": {"Rating":
  "4", "Rationale": ...}, "honesty": {...}, "instruction_following": {...}, "truthfulness":
  {...}}, ...}``; ``source`` names the prompt's origin (the subset). The ``response`` and ``model``
  roles and each aspect are paths inside a completion (``annotations.helpfulness``).
- **flat** (HelpSteer / HelpSteer2, ``nvidia/HelpSteer2``): one row per response, ``prompt``,
  ``response`` and one column per aspect (``helpfulness``, ``correctness``, ``coherence``,
  ``complexity``, ``verbosity``); rows sharing a prompt form its list (the builder groups them).

An aspect's value is a number, a numeric text (``"4"``), an object holding the rating under
``rating_key`` (UltraFeedback's ``{"Rating": "4", ...}``), or a list of one such value; null,
NaN, ``"N/A"`` and an empty text mean "not rated". A rating outside the recipe's
``rating_range`` is an error (the recipe does not match the file's scale). Readers do not filter
otherwise: empty texts and unrated responses are returned and the builder counts them; a
malformed value raises a :class:`SourceFormatError` naming the file and the 1-based line
(Parquet: row).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from gradebench.datasets.records import InputFile
from gradebench.datasets.responses.conversation import Conversation, MessagesMode, parse_value
from gradebench.datasets.responses.table import (
    ColumnMapBase,
    RoleColumn,
    RoleRow,
    id_value,
    list_value,
    number_value,
    read_rows,
    subset_value,
)
from gradebench.io.table_rows import RowPlace
from gradebench.io.tables import ABSENT, keys_near, lookup
from gradebench.io.textio import json_kind

__all__ = ["Completion", "Layout", "RatingScale", "RatingsColumns", "RatingsRow", "read_ratings"]

Layout = Literal["nested", "flat"]


class RatingsColumns(ColumnMapBase):
    """Where each role is: a table column, or (nested layout) a path inside a completion object."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ("model", "subset", "id")
    #: roles that are paths inside a completion in the nested layout
    IN_COMPLETION: ClassVar[tuple[str, ...]] = ("response", "model")

    prompt: str = "prompt"
    completions: str | None = Field(
        default=None, description="nested layout: the column holding each prompt's list of completions; flat: null"
    )
    response: str = "response"
    model: str = "model"
    subset: str = "subset"
    id: str = "id"
    split: str | None = None
    aspects: dict[str, str] = Field(
        min_length=1,
        description="aspect name -> its column (flat) or its path inside a completion (nested), e.g. "
        "helpfulness: annotations.helpfulness",
    )

    @field_validator("aspects")
    @classmethod
    def _aspects_ok(cls, v: dict[str, str]) -> dict[str, str]:
        for name, path in v.items():
            if not name.strip() or not path.strip():
                raise ValueError(f"aspect {name!r} -> {path!r}: aspect names and columns must not be empty")
        paths = list(v.values())
        twice = sorted({p for p in paths if paths.count(p) > 1})
        if twice:
            raise ValueError(f"column {twice[0]!r} is mapped to several aspects")
        return v

    def table_roles(self, layout: Layout) -> list[RoleColumn]:
        """The roles read from table columns: the completion-level ones only in the flat layout, then the aspects."""
        roles = [rc for rc in self.role_columns() if layout == "flat" or rc.role not in self.IN_COMPLETION]
        if layout == "flat":
            roles += [RoleColumn(f"aspect:{name}", column, True) for name, column in self.aspects.items()]
        return roles

    def in_completion(self, role: str) -> RoleColumn:
        """A completion-level role of the nested layout (required unless optional and at its default)."""
        column = getattr(self, role)
        return RoleColumn(role, column, role not in self.OPTIONAL or column != type(self).model_fields[role].default)


@dataclass(frozen=True)
class RatingScale:
    """How ratings are read: the key of a rating inside an aspect object, and the valid range."""

    key: str
    low: float
    high: float


@dataclass(frozen=True)
class Completion:
    """One rated response: ``ratings`` follow the recipe's aspect order (``None``: not rated)."""

    response: Conversation
    model: str | None
    source_id: str
    ratings: tuple[float | None, ...]


@dataclass(frozen=True)
class RatingsRow:
    """One source row: a prompt with its completions (one in the flat layout)."""

    split: str
    subset: str | None
    prompt: Conversation
    completions: tuple[Completion, ...]


def _rating(value: Any, scale: RatingScale, place: RowPlace, what: str) -> float | None:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, dict):
        if scale.key not in value:
            raise place.error(f"{what} is an object without the key {scale.key!r} (its keys: "
                              f"{', '.join(map(str, value)) or 'none'})",
                              "set rating_key in the recipe to the key holding the rating")
        value = value[scale.key]
    x = number_value(value, place, what)
    if x is not None and not scale.low <= x <= scale.high:
        raise place.error(f"{what} is {x:g}, outside rating_range [{scale.low:g}, {scale.high:g}]",
                          "set rating_range in the recipe to the scale of the file's ratings")
    return x


def _model(value: Any, place: RowPlace, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return (value or "").strip() or None
    raise place.error(f"{what} holds {json_kind(value)}, expected a model name",
                      "map model to a text column, or leave it at its default")


def _nested(value: Any, columns: RatingsColumns, scale: RatingScale, mode: MessagesMode, place: RowPlace,
            row_id: str) -> tuple[Completion, ...]:
    items = list_value(value, place, columns.completions or "", "completions")
    response, model = columns.in_completion("response"), columns.in_completion("model")
    out = []
    for k, item in enumerate(items):
        where = f"completion {k + 1} of column {columns.completions!r}"
        if not isinstance(item, dict):
            raise place.error(f"{where} is {json_kind(item)}, expected an object",
                              "the completions column holds a list of objects with the response and its ratings")

        def get(path: str, required: bool, role: str) -> Any:
            v = lookup(item, path)
            if v is ABSENT:
                if required:
                    keys = keys_near(item, path)
                    shown = ", ".join(repr(c) for c in keys[:30])
                    raise place.error(f"{where} has no key {path!r} (mapped as {role}); its keys are: {shown}",
                                      f"map {role} to one of these (recipe key columns.{role})")
                return None
            return v

        text = parse_value(get(response.column, True, "response"), mode, place, f"{columns.completions}.{response.column}")
        ratings = tuple(_rating(get(path, True, f"aspects.{name}"), scale, place, f"{where}: aspect {name!r}")
                        for name, path in columns.aspects.items())
        out.append(Completion(text, _model(get(model.column, model.required, "model"), place, f"{where}: model"),
                              f"{row_id}#{k}", ratings))
    return tuple(out)


def read_ratings(files: Sequence[InputFile], columns: RatingsColumns, layout: Layout, scale: RatingScale,
                 mode: MessagesMode) -> Mapping[str, list[RatingsRow]]:
    """The rows of ``files`` per output split, in file order.

    Raises:
        SourceFormatError: a missing column (or key inside a completion), a value of the wrong
            type, a malformed chat message, a rating that is no number or outside the range,
            each naming the file and line.
    """

    def row(r: RoleRow, col: dict[str, str]) -> RatingsRow:
        v, place = r.values, r.place
        row_id = id_value(v["id"], place, col["id"])
        prompt = parse_value(v["prompt"], mode, place, col["prompt"])
        if layout == "nested":
            completions = _nested(v["completions"], columns, scale, mode, place, row_id)
        else:
            ratings = tuple(_rating(v[f"aspect:{name}"], scale, place, f"column {column!r} (aspect {name!r})")
                            for name, column in columns.aspects.items())
            completions = (Completion(parse_value(v["response"], mode, place, col["response"]),
                                      _model(v["model"], place, f"column {col['model']!r}"), row_id, ratings),)
        return RatingsRow(r.split, subset_value(v["subset"], place, col["subset"]), prompt, completions)

    return read_rows(files, columns, row, what="a ratings table", roles=columns.table_roles(layout))
