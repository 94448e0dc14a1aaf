"""Any table of NLI pairs (CSV, TSV, JSON Lines, Parquet) as five synthetic tiers.

The recipe's ``columns`` names the user's column for each role (premise, hypothesis, label,
and optionally explanation, id, split); ``label_values`` maps raw labels (``0``, ``e``, ...)
onto the recipe's label names. Files and splits are found as :func:`~gradebench.datasets.nli_table.reader.locate_table`
describes; reading is :func:`~gradebench.datasets.nli_table.reader.read_nli_table`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from pydantic import Field, field_validator, model_validator

from gradebench.datasets import register_builder
from gradebench.datasets.nli_table.reader import FORMATS, ColumnRoles, locate_table, read_nli_table
from gradebench.datasets.records import InputFile, NLIExample
from gradebench.datasets.tiers.builder import TieredNLIBuilder
from gradebench.datasets.tiers.spec import TieredSection
from gradebench.strict import StrictModel

#: tier candidate kinds that need a human explanation column
_NEEDS_EXPLANATION = ("explanation", "sibling_explanation", "unrelated_explanation")


class ColumnMap(StrictModel):
    """The source table's column for each role (a JSON Lines column may be a dotted path)."""

    premise: str = Field(default="premise", min_length=1)
    hypothesis: str = Field(default="hypothesis", min_length=1)
    label: str = Field(default="label", min_length=1)
    explanation: str | list[str] | None = Field(
        default=None, description="the human explanation column, or up to three of them in order; null: none"
    )
    id: str | None = Field(default=None, description="a column of unique pair ids; null: ids are file:line")
    split: str | None = Field(
        default=None, description="a column naming each row's split; null: the split comes from the file name"
    )

    @field_validator("explanation")
    @classmethod
    def _explanations_ok(cls, v: str | list[str] | None) -> str | list[str] | None:
        if isinstance(v, list) and not 1 <= len(v) <= 3:
            raise ValueError(f"explanation lists 1 to 3 columns, got {len(v)}")
        for c in [v] if isinstance(v, str) else v or []:
            if not c:
                raise ValueError("an explanation column name is empty")
        return v

    @field_validator("id", "split")
    @classmethod
    def _not_empty(cls, v: str | None) -> str | None:
        if v == "":
            raise ValueError("a column name is empty; write null to leave the role unmapped")
        return v

    def explanations(self) -> tuple[str, ...]:
        """The explanation columns in order (empty when unmapped)."""
        if self.explanation is None:
            return ()
        return (self.explanation,) if isinstance(self.explanation, str) else tuple(self.explanation)

    def roles(self) -> ColumnRoles:
        return ColumnRoles(self.premise, self.hypothesis, self.label, self.explanations(), self.id, self.split)

    @model_validator(mode="after")
    def _distinct(self) -> ColumnMap:
        seen: dict[str, str] = {}
        for role, column in self.roles().mapped():
            if column in seen:
                raise ValueError(f"column {column!r} is mapped to both {seen[column]} and {role}")
            seen[column] = role
        return self


class NLITableSection(TieredSection):
    """The tiered keys plus the table's column mapping and label values."""

    columns: ColumnMap = Field(default_factory=ColumnMap)
    label_values: dict[str, str] = Field(
        default_factory=dict,
        description="raw label (as text: integers as '0', '1', ...) -> one of labels, or '-' for 'no gold label' "
        "(e.g. Hugging Face's -1); unlisted values are kept as they are",
    )

    @model_validator(mode="after")
    def _table_checks(self) -> NLITableSection:
        bad = {k: v for k, v in self.label_values.items() if v not in self.labels and v != "-"}
        if bad:
            k, v = next(iter(bad.items()))
            raise ValueError(f"label_values maps {k!r} to {v!r}, which is neither one of labels {self.labels} nor '-'")
        n = len(self.columns.explanations())
        for t in self.tiers:
            if t.candidates in _NEEDS_EXPLANATION and t.explanation > n:
                have = "no explanation column is mapped" if n == 0 else f"only {n} explanation column(s) are mapped"
                raise ValueError(
                    f"tier {t.name!r} takes human explanation {t.explanation} ({t.candidates}) but {have}; "
                    "map columns.explanation or make the tier a template tier"
                )
        return self


@register_builder
class NLITableBuilder(TieredNLIBuilder):
    name = "nli-table"
    version = 1
    section: ClassVar[type] = NLITableSection
    formats = FORMATS
    summary = "NLI pairs from any CSV/TSV/JSONL/Parquet table with mapped columns; five synthetic tiers"

    def locate(self, source: Path) -> list[InputFile]:
        return locate_table(source, self.recipe.source.formats, split_column=self.recipe.columns.split is not None)

    def read(self, files: Sequence[InputFile]) -> Mapping[str, Sequence[NLIExample]]:
        return read_nli_table(files, self.recipe.columns.roles(), self.recipe.label_values)

    def card_section(self) -> list[str]:
        cols = self.recipe.columns
        mapped = ", ".join(f"{role} = `{column}`" for role, column in cols.roles().mapped())
        lines = super().card_section() + ["", f"Source columns: {mapped}."]
        if self.recipe.label_values:
            lines.append("Label values: " + ", ".join(f"`{k}` -> {v}" for k, v in self.recipe.label_values.items()) + ".")
        return lines
