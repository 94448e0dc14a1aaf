"""The synthetic-tier strategy as a builder base: NLI pairs -> five graded candidate tiers.

A subclass only says how to find and read its files (:meth:`locate`, :meth:`read`) and
returns :class:`~gradebench.datasets.records.NLIExample` records per split; this class does the
rest: filtering and ids (:mod:`.select`), candidate texts and Algorithm 1 scores
(:mod:`.candidates`), and the Parquet columns shared by every tiered NLI benchmark.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import pyarrow as pa

from gradebench.datasets.base import Builder, Column, GradedColumns, GradedList, Selection
from gradebench.datasets.records import NLIExample
from gradebench.datasets.tiers.candidates import CandidateBuilder, Query
from gradebench.datasets.tiers.select import select, stream
from gradebench.datasets.tiers.spec import TieredSection

#: the columns every tiered NLI benchmark carries after the core ones (schema v1 order)
TIERED_COLUMNS: tuple[Column, ...] = (
    Column("premise", pa.string(), False, "source premise", "query", dictionary=True),
    Column("hypothesis", pa.string(), False, "source hypothesis", "query", dictionary=True),
    Column("label", pa.string(), False, "source gold label", "query", dictionary=True),
    Column("source_id", pa.string(), False, "the query's id in the source (e-SNLI pairID, or file:line)", "query",
           dictionary=True),
    Column("source_row", pa.int64(), False, "0-based row of the query in its source split", "query"),
    Column("candidate_source_id", pa.string(), True, "source id of the row whose human text the candidate is",
           "candidate", dictionary=True),
    Column("template_id", pa.string(), True, "tier/label/index of the template used; null for human text",
           "candidate", dictionary=True),
    Column("origin", pa.string(), False, "'human' (written by a person) or 'template'", "candidate", dictionary=True),
)


class TieredNLIBuilder(Builder):
    """Base of builders whose lists are the five synthetic tiers over NLI pairs."""

    section: ClassVar[type] = TieredSection
    columns: ClassVar[tuple[Column, ...]] = TIERED_COLUMNS
    query_label: ClassVar[str | None] = "label"  # the query's label (NLI label, δ-NLI update type): validity figures

    def select(self, records: Mapping[str, Sequence[NLIExample]], *, limit: int | None) -> Selection:
        sel = select(self.recipe, records, limit=limit)
        return Selection(units=sel.queries, skipped=sel.skipped)

    def select_stream(
        self, records: Mapping[str, Sequence[NLIExample]], *, limit: int | None
    ) -> tuple[Iterator[Query], Counter] | None:
        """The queries one at a time where no tier borrows or flips and there is no adversarial step
        (:func:`.select.stream`); a subclass with its own :meth:`select` does not stream."""
        if type(self).select is not TieredNLIBuilder.select or self.recipe.adversarial is not None:
            return None
        return stream(self.recipe, records, limit=limit, consume=True)

    def regroup(
        self, records: Mapping[str, Sequence[NLIExample]], split_of: Callable[[str], str]
    ) -> Mapping[str, Sequence[NLIExample]] | None:
        """With ``resplit_by: premise``: records per output split, carved by premise (source order kept)."""
        if self.recipe.resplit_by != "premise":
            return None
        from gradebench.datasets.tiers.candidates import premise_key

        out: dict[str, list[NLIExample]] = {}
        for split in sorted(records):
            for ex in records[split]:
                out.setdefault(split_of("premise:" + premise_key(ex.premise)), []).append(ex)
        return out

    def refine(self, units: list[Any], splits: list[str]) -> tuple[list[Any], list[str], dict[str, Any] | None]:
        """With ``adversarial:``, the lists after the adversarial step (:mod:`.adversarial`) and its report."""
        if self.recipe.adversarial is None:
            return units, splits, None
        from gradebench.datasets.tiers.adversarial import refine

        return refine(self.recipe, units, splits)

    def tiers(self) -> list[tuple[str, int]]:
        return [(t.name, t.relevance) for t in self.recipe.tiers]

    def pack_units(self, units: Sequence[Query]) -> Any:
        """The queries as columns of plain values (example class, its fields, ids, splits, borrowed).

        Pickling a column of strings is a loop in C; pickling a dataclass per query is not
        (about 3.8 against 1.0 us a query, in the parent, which is the busiest process of a
        build). Falls back to the units themselves when they are not all queries, or their examples
        are of mixed classes.
        """
        import dataclasses

        if not all(type(q) is Query for q in units):
            return list(units)
        kinds = {type(q.example) for q in units}
        if len(kinds) != 1:
            return list(units)
        kind = kinds.pop()
        names = [f.name for f in dataclasses.fields(kind)]
        examples = [q.example for q in units]
        return (kind, [[getattr(e, n) for e in examples] for n in names], [q.query_id for q in units],
                [q.split for q in units], [q.borrowed for q in units])

    def unpack_units(self, packed: Any) -> list[Query]:
        if isinstance(packed, list):
            return packed
        kind, fields, query_ids, splits, borrowed = packed
        return [Query(kind(*values), *rest) for values, rest in
                zip(zip(*fields), zip(query_ids, splits, borrowed))]

    def query_values(self, q: Query) -> tuple:
        """The values of the builder's query-level columns for ``q``, in declared order."""
        ex = q.example
        return ex.premise, ex.hypothesis, ex.label, ex.source_id, ex.row

    def make_columns(self, units: Sequence[Query]) -> GradedColumns:
        """The batch's lists straight into columns (no per-list objects; equal to :meth:`make_lists`)."""
        template = self.recipe.query_template
        out = GradedColumns.empty(self.columns)
        texts = [template.format(premise=q.example.premise, hypothesis=q.example.hypothesis, label=q.example.label)
                 for q in units]
        self._candidate_builder().append_batch(units, out, texts, [self.query_values(q) for q in units])
        return out

    def _candidate_builder(self) -> CandidateBuilder:
        """One per builder: its template and text caches serve every batch a worker builds."""
        cb = self.__dict__.get("_cb")
        if cb is None or cb.recipe is not self.recipe:
            cb = self.__dict__["_cb"] = CandidateBuilder(self.recipe)
        return cb

    def make_lists(self, units: Sequence[Query]) -> list[GradedList]:
        cb = self._candidate_builder()
        template = self.recipe.query_template
        out = []
        for q in units:
            ex = q.example
            rows, vocab = cb.rows_and_vocab(q)
            cid, text, score, rel, tier, csrc, tid, origin, n_words, overlap = _columns(rows)
            out.append(
                GradedList(
                    query_id=q.query_id,
                    query=template.format(premise=ex.premise, hypothesis=ex.hypothesis, label=ex.label),
                    split=q.split,
                    candidate_ids=cid,
                    candidates=text,
                    scores=score,
                    relevance=rel,
                    tiers=tier,
                    query_extra=self.query_values(q),
                    candidate_extra=(csrc, tid, origin),
                    vocab=vocab,
                    human=[o == "human" for o in origin],
                    measured=dict(zip(text, zip(n_words, overlap))),
                )
            )
        return out

    def card_section(self) -> list[str]:
        r = self.recipe
        lines = [
            f"Each query is one source pair (`{r.query_template}`); its candidates are:",
            "",
            "| tier | relevance | score range | candidates from | per query |",
            "|---|---|---|---|---|",
        ]
        for t in r.tiers:
            lo, hi = t.score_range
            lines.append(f"| {t.name} | {t.relevance} | [{lo:.2f}, {hi:.2f}] | {t.description or t.candidates} | {t.count} |")
        mode = r.scoring.mode
        lines += [
            "",
            f"Scores: `{mode}`"
            + (
                " (seeds/000 Algorithm 1: content-seeded uniform draw in the tier range, then label-word, "
                "reasoning-keyword and query-overlap bonuses, short and gibberish penalties, clipped to [0, 1])."
                if mode == "algorithm1"
                else " (content-seeded uniform draw in the tier range)." if mode == "uniform"
                else " (relevance divided by the highest relevance)."
            ),
        ]
        return lines


def _columns(rows: list[tuple]) -> list[list]:
    """CandidateBuilder rows (10 fields each) as 10 columns."""
    return [list(c) for c in zip(*rows)] if rows else [[] for _ in range(10)]
