"""MultiNLI 1.0: the five synthetic tiers over its pairs, with TEMPLATE gold (no human explanations exist).

Reads the release's ``.jsonl`` or ``.txt`` files (:mod:`gradebench.datasets.mnli.reader`). Parts map
onto splits fixed by :data:`~gradebench.datasets.mnli.reader.PART_SPLITS`: ``train`` -> train,
``dev_matched`` -> validation, ``dev_mismatched`` -> test (held-out genres). When a folder
holds both formats, the first one the recipe's ``source.formats`` lists that is present wins
(the other copy of the same records is not read).

Besides the tiered columns, each list keeps the pair's ``genre`` and ``annotator_agreement``
(share of the individual annotator labels equal to gold). Both travel inside the work unit
(:class:`~gradebench.datasets.mnli.reader.MNLIExample` is an ``NLIExample`` subclass), because worker
processes rebuild the builder from the recipe and never see state kept by :meth:`read`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import pyarrow as pa

from gradebench.datasets import register_builder
from gradebench.datasets.base import Column
from gradebench.datasets.mnli.reader import (
    FORMAT_JSONL,
    FORMAT_TXT,
    PART_SPLITS,
    MNLIExample,
    find_mnli_files,
    read_mnli_file,
)
from gradebench.datasets.records import SPLITS, InputFile
from gradebench.datasets.tiers.builder import TIERED_COLUMNS, TieredNLIBuilder
from gradebench.datasets.tiers.candidates import Query
from gradebench.errors import SourceFormatError

MNLI_COLUMNS: tuple[Column, ...] = TIERED_COLUMNS + (
    Column("genre", pa.string(), False, "MultiNLI genre of the pair (fiction, government, slate, telephone, "
           "travel; dev_mismatched: facetoface, letters, nineeleven, oup, verbatim)", "query", dictionary=True),
    Column("annotator_agreement", pa.float64(), True, "share of the individual annotator labels (5 in dev, "
           "mostly 1 in train) equal to the gold label; null when the record lists none", "query"),
)


@register_builder
class MNLIBuilder(TieredNLIBuilder):
    name = "mnli"
    version = 1
    formats = (FORMAT_JSONL, FORMAT_TXT)
    columns: ClassVar[tuple[Column, ...]] = MNLI_COLUMNS
    stat_columns = ("annotator_agreement",)
    summary = "MultiNLI pairs; all five tiers from templates (gold = the most specific correct-label template)"

    def locate(self, source: Path) -> list[InputFile]:
        found = find_mnli_files(source)
        allowed = list(self.recipe.source.formats)
        fmt = next((f for f in allowed if f in found), None)
        if fmt is None:
            raise SourceFormatError(
                f"only {', '.join(sorted(found))} files here, but this recipe reads {', '.join(allowed)}",
                path=source,
                hint="pass the other format's files, or add the format to the recipe's source.formats",
            )
        parts = sorted(found[fmt], key=lambda part: SPLITS.index(PART_SPLITS[part]))
        return [InputFile(str(found[fmt][part]), f"{fmt}:{part}", PART_SPLITS[part]) for part in parts]

    def read(self, files: Sequence[InputFile]) -> Mapping[str, Sequence[MNLIExample]]:
        out: dict[str, list[MNLIExample]] = {}
        for f in files:
            rows = out.setdefault(f.split, [])
            rows += read_mnli_file(f.path, f.split, len(rows))
        return out

    def query_values(self, q: Query) -> tuple:
        return super().query_values(q) + (getattr(q.example, "genre", ""), _agreement(q.example))

    def card_section(self) -> list[str]:
        return super().card_section() + [
            "",
            (
                "Splits: MultiNLI train -> train, dev_matched -> validation, dev_mismatched -> test "
                "(genres unseen in train). Every candidate is a template, gold included: MultiNLI has no "
                "human explanations, so no candidate is human-written and authorship gives nothing away."
            ),
        ]


def _agreement(ex: object) -> float | None:
    return ex.agreement() if isinstance(ex, MNLIExample) else None
