"""The synthetic-tier strategy as a builder base: NLI pairs -> five graded candidate tiers.

A subclass only says how to find and read its files (:meth:`locate`, :meth:`read`) and
returns :class:`~gradebench.datasets.records.NLIExample` records per split; this class does the
rest: filtering and ids (:mod:`.select`), candidate texts and Algorithm 1 scores
(:mod:`.candidates`), and the Parquet columns shared by every tiered NLI benchmark.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from itertools import repeat, takewhile
from operator import itemgetter
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from gradebench.datasets.base import (
    Builder,
    Column,
    GradedColumns,
    GradedList,
    Selection,
    SelectionKeys,
    ShardedSelection,
    SourceRef,
)
from gradebench.datasets.common import query_renderer
from gradebench.datasets.records import InputFile, NLIExample
from gradebench.datasets.tiers.candidates import CandidateBuilder, Query
from gradebench.datasets.tiers.select import KeyedStream, RowKeys, row_keys, select, stream, streams
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
        if not self._streams():
            return None
        return stream(self.recipe, records, limit=limit, consume=True)

    def _streams(self) -> bool:
        return (type(self).select is TieredNLIBuilder.select and self.recipe.adversarial is None
                and streams(self.recipe))

    def select_sharded(self, files: Sequence[InputFile], *, limit: int | None) -> ShardedSelection | None:
        """:meth:`select_stream` with the rows read in the workers, where the builder can read its
        files by slices (:meth:`source_parts`) and the stream applies, with no resplit by premise."""
        if not self._streams() or self.recipe.resplit_by == "premise":
            return None
        parts = self.source_parts(files, limit=limit)
        return None if parts is None else _ShardedTiers(parts)

    def source_parts(self, files: Sequence[InputFile], *, limit: int | None) -> list[SourcePart] | None:
        """The source's splits as :class:`SourcePart` s, checked as :meth:`read` would and indexed (not
        parsed); ``limit``: the first rows of each split. ``None`` (the default): not readable in slices."""
        return None

    def read_part(self, key: Any, s: Any) -> list[NLIExample]:
        """The examples of slice ``s`` of the part whose :attr:`SourcePart.key` is ``key`` (in a worker):
        equal to those :meth:`read` gives at those rows."""
        raise NotImplementedError(f"{type(self).__name__} does not read its source in slices")

    def selection_keys(self, task: Any) -> SelectionKeys:
        """The task's rows read and keyed. The rows are kept until a batch here has taken the last one
        without a skip reason or one of a later task (batches take the kept rows in order), or
        :data:`KEPT_READS` later tasks have been keyed, so a batch of them that comes to this worker
        takes them from here rather than reading them again (:meth:`unpack_units`; the engine sends
        a batch where its rows were keyed when it can)."""
        key, s = task
        examples = self.read_part(key, s)
        keys = row_keys(self.recipe, examples)
        last = next((i for i in range(len(examples) - 1, -1, -1) if keys.reasons[i] is None), None)
        kept = self.__dict__.setdefault("_kept_reads", {})
        if last is not None:
            kept[(key, s)] = (examples, last)
            while len(kept) > KEPT_READS:  # the oldest go first: their batches are built by now
                del kept[next(iter(kept))]
        return SelectionKeys(keys)

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

        if units and type(units[0]) is RowRef:
            return _slices_of(units)
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
        if isinstance(packed, _Slices):
            kept = self.__dict__.get("_kept_reads", {})
            out = []
            for key, s, rows, qids, task, offset in packed.groups:
                found = kept.get((key, task))  # keyed here: the same rows, read once
                if found is None:
                    examples = self.read_part(key, s)
                else:
                    examples, last = found
                    if offset:
                        rows = [offset + r for r in rows]
                    for earlier in list(takewhile((key, task).__ne__, kept)):
                        del kept[earlier]  # tasks before this one (keyed in order): no later batch has their rows
                    if rows[-1] >= last:  # nor this one's, once its last row without a skip reason is taken
                        del kept[(key, task)]
                out += [Query(ex, qid, ex.split, {}) for ex, qid in zip(map(examples.__getitem__, rows), qids)]
            return out
        kind, fields, query_ids, splits, borrowed = packed
        return [Query(kind(*values), *rest) for values, rest in
                zip(zip(*fields), zip(query_ids, splits, borrowed))]

    def query_values(self, q: Query) -> tuple:
        """The values of the builder's query-level columns for ``q``, in declared order."""
        ex = q.example
        return ex.premise, ex.hypothesis, ex.label, ex.source_id, ex.row

    def make_columns(self, units: Sequence[Query]) -> GradedColumns:
        """The batch's lists straight into columns (no per-list objects; equal to :meth:`make_lists`)."""
        render = self._query_renderer()
        out = GradedColumns.empty(self.columns)
        texts = [render(ex.premise, ex.hypothesis, ex.label) for ex in (q.example for q in units)]
        self._candidate_builder().append_batch(units, out, texts, [self.query_values(q) for q in units])
        return out

    def _query_renderer(self) -> Callable[[str, str, str], str]:
        """The recipe's ``query_template`` as ``render(premise, hypothesis, label)`` (:func:`.common.query_renderer`)."""
        made = self.__dict__.get("_query")
        if made is None or made[0] != self.recipe.query_template:
            made = self.__dict__["_query"] = (self.recipe.query_template, query_renderer(self.recipe.query_template))
        return made[1]

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


class SourcePart:
    """One split of a source that a builder reads in slices (:meth:`TieredNLIBuilder.source_parts`):
    ``key`` (small, picklable) tells the builder's :meth:`~TieredNLIBuilder.read_part` which part
    a slice is of; :meth:`slice` names rows ``a`` to ``b - 1`` (a small picklable value too). The
    shape a part has (a subclass, or any object with these members)."""

    split: str
    n: int  # its rows (the first ``limit`` of them)
    key: Any

    def slice(self, a: int, b: int) -> Any:
        raise NotImplementedError


#: rows a selection task of a sharded selection keys (fixed: the decisions do not depend on it)
SLICE_ROWS = 8192

#: the selection tasks whose rows a worker keeps for the batches that follow (about 7 MB each for
#: e-SNLI); the engine hands out batches a few tasks behind the keys (``_Selected``)
KEPT_READS = 8


def _task_slice(part: SourcePart, row: int) -> tuple[int, Any]:
    """The first row and the slice of the selection task of ``part`` that holds ``row``."""
    a = row - row % SLICE_ROWS
    return a, part.slice(a, min(part.n, a + SLICE_ROWS))


class RowRef(SourceRef, tuple):
    """A selected row still in its source file: its part, row, query id and split (a tuple, so that
    :meth:`of` makes a slice's refs in C)."""

    __slots__ = ()
    part: SourcePart = property(itemgetter(0))  # type: ignore[assignment]
    row: int = property(itemgetter(1))  # type: ignore[assignment]
    query_id: str = property(itemgetter(2))  # type: ignore[assignment]
    split: str = property(itemgetter(3))  # type: ignore[assignment]

    def __new__(cls, part: SourcePart, row: int, query_id: str) -> RowRef:
        return tuple.__new__(cls, (part, row, query_id, part.split))

    @classmethod
    def of(cls, part: SourcePart, kept: Sequence[tuple[int, str]]) -> list[RowRef]:
        """The refs of ``part``'s rows ``kept`` (``(row, query id)`` each), as ``RowRef(part, row, id)`` each."""
        if not kept:
            return []
        rows, ids = zip(*kept)
        return list(map(partial(tuple.__new__, cls), zip(repeat(part), rows, ids, repeat(part.split))))


class _Slices:
    """A batch of :class:`RowRef` as a worker reads it, per run of rows of one selection task:
    ``(part key, slice, rows in the slice, query ids, the task's slice, the slice's first row
    in the task's)``. A worker that keyed the task takes the rows it kept then; another reads the
    slice (only the run's rows, from its first to its last)."""

    __slots__ = ("groups",)

    def __init__(self, groups: list[tuple[Any, Any, list[int], list[str], Any, int]]) -> None:
        self.groups = groups


def _slices_of(refs: Sequence[RowRef]) -> _Slices:
    """The rows of ``refs`` (in order) as slices of their parts, from each run's first row to its last;
    a run ends where the part or the selection task changes (:data:`SLICE_ROWS` rows each: a run's
    rows are then one task's, so a batch whose rows are far apart reads them, not everything
    between). The runs are found in NumPy over the batch (the refs are tuples: one transpose in C)."""
    if not refs:
        return _Slices([])
    parts, rows, ids, _ = zip(*refs)
    row = np.asarray(rows, dtype=np.int64)
    part_id = np.fromiter(map(id, parts), dtype=np.uint64, count=len(parts))
    task = row // SLICE_ROWS
    ends = np.flatnonzero((part_id[1:] != part_id[:-1]) | (task[1:] != task[:-1])) + 1
    bounds = [0, *ends.tolist(), len(refs)]
    groups = []
    for i, j in zip(bounds, bounds[1:]):
        part, a, b = parts[i], rows[i], rows[j - 1] + 1
        first, task_slice = _task_slice(part, a)
        groups.append((part.key, part.slice(a, b), (row[i:j] - a).tolist(), list(ids[i:j]), task_slice, a - first))
    return _Slices(groups)


class _ShardedTiers(ShardedSelection):
    """:func:`.select.stream` over parts read in slices: one task per :data:`SLICE_ROWS` rows."""

    unique_ids = True  # KeyedStream drops a repeated query id, in any split

    def __init__(self, parts: list[SourcePart]) -> None:
        self.skipped = Counter()
        self._keyed = KeyedStream(self.skipped)
        self._of: list[tuple[SourcePart, int]] = []
        self.tasks = []
        for part in sorted(parts, key=lambda p: p.split):  # the stream's split order
            for a in range(0, part.n, SLICE_ROWS):
                self.tasks.append((part.key, _task_slice(part, a)[1]))
                self._of.append((part, a))
        self._next = 0

    def add(self, keys: SelectionKeys) -> list[RowRef]:
        part, first = self._of[self._next]
        self._next += 1
        found: RowKeys = keys.keys
        return RowRef.of(part, self._keyed.kept(part.split, first, found))
