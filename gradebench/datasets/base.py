"""The builder contract: what one source family must provide to become graded benchmarks.

The engine (:mod:`gradebench.benchmark`) owns everything generic: input hashing, the
fingerprint, the cache check before any parsing, output splits (``--resplit``), duplicate
query ids, parallel work, stats, the dataset card and the atomic write. A builder owns only
what is specific to its source:

- ``name`` and ``version``: both enter the fingerprint, so bumping one builder's ``version``
  invalidates only its own benchmarks (``version`` 1 is implied, see
  :func:`gradebench.benchmark.engine.fingerprint`).
- ``section``: its recipe keys, a pydantic model with ``extra="forbid"`` (the keys sit at
  the top level of the recipe YAML next to the common keys ``name``, ``version``, ``source``, ...).
- ``formats``: the on-disk formats it reads (``source.formats`` in a recipe names a subset).
- ``columns``: the extra Parquet columns it writes after the core ones.
- :meth:`locate`: which files a source path holds, from names alone (no content read).
- :meth:`read`: parse them into records, errors naming the file and 1-based line.
- :meth:`select`: records -> work units (one per graded list) or skip reasons.
- :meth:`make_lists`: work units -> :class:`GradedList` (runs in worker processes; pure);
  :meth:`make_columns` gives the same lists in columns (override it to skip the list objects).

A builder is registered in the builder registry (see :mod:`gradebench.datasets`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import pyarrow as pa
from pydantic import BaseModel

from gradebench.datasets.records import InputFile


@dataclass(frozen=True)
class Column:
    """An extra Parquet column a builder writes (after the core columns, in declared order).

    ``level="query"`` values come once per list (:attr:`GradedList.query_extra`) and are
    repeated over its candidates; ``level="candidate"`` values come per candidate
    (:attr:`GradedList.candidate_extra`).
    """

    name: str
    type: pa.DataType
    nullable: bool
    description: str
    level: Literal["query", "candidate"]
    #: dictionary-encode in Parquet (values repeated across rows)
    dictionary: bool = False


@dataclass(frozen=True, slots=True)
class GradedList:
    """One query with its graded candidates, in output order.

    Attributes:
        query_id: content id of the query, unique in the benchmark.
        query: the text a scorer sees.
        split: the source split (train/validation/test); the engine may re-carve it (resplit).
        candidate_ids, candidates, scores, relevance: one entry per candidate; ``score`` in
            [0, 1], ``relevance`` an integer grade, higher is better.
        tiers: per-candidate tier names, or ``None`` for natural grades (no tiers).
        query_extra: values of the builder's ``level="query"`` columns, in declared order.
        candidate_extra: one list per ``level="candidate"`` column, in declared order.
        vocab: the words candidates' query overlap is measured against in the build stats
            (default: the words of ``query``).
        human: per candidate, whether a person wrote it (the authorship shortcut probe);
            ``None`` when unknown.
        measured: ``{candidate text: (word count, query overlap)}`` where the builder has
            measured them already (Algorithm 1 does), so the build stats need not tokenize the
            text again; a text missing from it is measured from scratch (``None``: all are).
    """

    query_id: str
    query: str
    split: str
    candidate_ids: list[str]
    candidates: list[str]
    scores: list[float]
    relevance: list[int]
    tiers: list[str] | None = None
    query_extra: tuple = ()
    candidate_extra: tuple = ()
    vocab: frozenset[str] | None = None
    human: list[bool] | None = None
    measured: dict[str, tuple[int, float]] | None = None


@dataclass(slots=True)
class GradedColumns:
    """A batch of graded lists in columns: what a worker turns into Arrow tables in one go.

    The rows of a query are contiguous and in output order; ``counts`` gives each query's
    number of candidates. Per-candidate fields hold one entry per row, per-query fields one per
    query. ``human`` is 1 (a person wrote it), 0 (not) or -1 (unknown); ``n_words`` and
    ``overlap`` are each candidate's :func:`~gradebench.words.words` count and its word overlap
    with the query (see :class:`GradedList`), for the build stats. ``query_extra`` and
    ``candidate_extra`` hold one list per builder column of that level, in declared order.

    A per-candidate field may also be a numpy array, or an Arrow array for the string ones
    (what the tiered builders fill a batch with at once); :meth:`empty` starts with lists.

    A builder that makes its lists row by row returns them from :meth:`Builder.make_lists`;
    one that can fill columns directly (the tiered NLI builders) overrides
    :meth:`Builder.make_columns` and skips the per-list objects.
    """

    query_ids: list[str]
    queries: list[str]
    counts: list[int]
    candidate_ids: list[str]
    candidates: list[str]
    scores: list[float]
    relevance: list[int]
    tiers: list[str | None]
    human: list[int]
    n_words: list[int]
    overlap: list[float]
    query_extra: list[list]
    candidate_extra: list[list]

    @classmethod
    def empty(cls, columns: Sequence[Column]) -> GradedColumns:
        n_q = sum(c.level == "query" for c in columns)
        return cls([], [], [], [], [], [], [], [], [], [], [], [[] for _ in range(n_q)],
                   [[] for _ in range(len(columns) - n_q)])

    @classmethod
    def from_lists(cls, lists: Sequence[GradedList], columns: Sequence[Column]) -> GradedColumns:
        """The columns of ``lists`` (checked against ``columns``); unmeasured texts are measured here."""
        from gradebench.words import words

        out = cls.empty(columns)
        for g in lists:
            _check_list(g, len(out.query_extra), len(out.candidate_extra))
            n = len(g.candidates)
            out.query_ids.append(g.query_id)
            out.queries.append(g.query)
            out.counts.append(n)
            out.candidate_ids += g.candidate_ids
            out.candidates += g.candidates
            out.scores += g.scores
            out.relevance += g.relevance
            out.tiers += g.tiers if g.tiers is not None else [None] * n
            out.human += [-1] * n if g.human is None else [int(bool(h)) for h in g.human]
            for col, value in zip(out.query_extra, g.query_extra):
                col.append(value)
            for col, values in zip(out.candidate_extra, g.candidate_extra):
                col += values
            measured = g.measured or {}
            vocab = None
            for t in g.candidates:
                m = measured.get(t)
                if m is None:
                    if vocab is None:
                        vocab = g.vocab if g.vocab is not None else frozenset(words(g.query))
                    w = words(t)
                    m = len(w), (len(vocab.intersection(w)) / len(vocab) if vocab else 0.0)
                out.n_words.append(m[0])
                out.overlap.append(m[1])
        return out


def _check_list(gl: GradedList, n_query_columns: int, n_candidate_columns: int) -> None:
    from gradebench.errors import BenchmarkError

    n = len(gl.candidates)
    for name in ("candidate_ids", "scores", "relevance"):
        if len(getattr(gl, name)) != n:
            raise BenchmarkError(f"list {gl.query_id}: {name} has {len(getattr(gl, name))} entries for {n} candidates",
                                 hint="a bug in the builder: every per-candidate field needs one entry per candidate")
    if len(gl.query_extra) != n_query_columns or len(gl.candidate_extra) != n_candidate_columns:
        raise BenchmarkError(
            f"list {gl.query_id}: {len(gl.query_extra)} query and {len(gl.candidate_extra)} candidate extra values, "
            f"but the builder declares {n_query_columns} and {n_candidate_columns} columns",
            hint="a bug in the builder: query_extra/candidate_extra must follow its declared columns",
        )


@dataclass
class Selection:
    """What :meth:`Builder.select` returns: work units in output order and skip counts.

    Each unit must be picklable and self-contained (workers see only the unit, the recipe and
    the builder) and carry ``query_id`` and ``split`` attributes. A builder whose lists need no
    further work may return :class:`GradedList` objects as units (the default
    :meth:`Builder.make_lists` passes them through).
    """

    units: list[Any]
    skipped: Counter = field(default_factory=Counter)


class SourceRef:
    """A unit that stands for records still in the source files (a row and its query id): the
    builder's :meth:`~Builder.pack_units` turns a batch of them into what a worker reads the
    records with, and :meth:`~Builder.unpack_units` there into the units themselves."""

    __slots__ = ()


class ShardedSelection(ABC):
    """A selection whose source is read and keyed in the worker processes (:meth:`Builder.select_sharded`).

    The building process only indexes the source; ``tasks`` (picklable, small, in source order)
    each name a slice of it, whose rows a worker reads and turns into selection keys
    (:meth:`Builder.selection_keys`); :meth:`add` takes those keys back, in task order, and makes
    the decisions that need every row before (repeated rows and ids), giving the units kept.
    """

    tasks: list[Any]
    skipped: Counter
    #: True where :meth:`add` never gives a query id it has given before (it drops and counts the
    #: repeats itself): the engine then skips its own check, a set lookup a row in the building process
    unique_ids: ClassVar[bool] = False

    @abstractmethod
    def add(self, keys: Any) -> list[Any]:
        """The units the next task's keys keep, in order (each with ``query_id`` and ``split``)."""


@dataclass(frozen=True)
class SelectionKeys:
    """A worker's answer to a task of a :class:`ShardedSelection`: the keys of its rows."""

    keys: Any


class Builder(ABC):
    """Base class of every builder; one instance per build, made from the resolved recipe."""

    name: ClassVar[str]
    version: ClassVar[int] = 1
    section: ClassVar[type[BaseModel]]
    formats: ClassVar[tuple[str, ...]]
    columns: ClassVar[tuple[Column, ...]] = ()
    #: one line for `gradebench list` and the README's recipe table
    summary: ClassVar[str] = ""
    #: numeric ``level="query"`` extra columns summarised in the build stats (e.g. annotator entropy)
    stat_columns: ClassVar[tuple[str, ...]] = ()

    def __init__(self, recipe: Any) -> None:
        self.recipe = recipe

    @abstractmethod
    def locate(self, source: Path) -> list[InputFile]:
        """The files ``source`` (a file or folder) holds for this builder, from names alone.

        Raises:
            SourceNotFoundError: ``source`` does not exist.
            SourceFormatError: nothing of this builder's formats is there.
        """

    def source_format(self, files: Sequence[InputFile]) -> str:
        """The format (one of :attr:`formats`) of located files; by default the role's prefix."""
        return files[0].role.split(":", 1)[0] if files else self.formats[0]

    @abstractmethod
    def read(self, files: Sequence[InputFile]) -> Mapping[str, Sequence[Any]]:
        """Parse the located files into records per split (no filtering beyond the format)."""

    @abstractmethod
    def select(self, records: Mapping[str, Sequence[Any]], *, limit: int | None) -> Selection:
        """Turn records into work units (one per graded list) in output order, counting skips.

        ``limit``: read at most this many records per split. Skips are counted by reason,
        never raised on.
        """

    def select_stream(
        self, records: Mapping[str, Sequence[Any]], *, limit: int | None
    ) -> tuple[Iterator[Any], Counter] | None:
        """:meth:`select`'s units as an iterator, and its skip counts (complete once the units are exhausted).

        The engine hands batches to the workers as the iterator yields them, so selection and
        list making overlap. ``None`` (the default): the builder selects with :meth:`select`.
        A builder returns an iterator only where it gives exactly :meth:`select`'s units and
        counts, and :meth:`refine` leaves the units as they are (no step needs them all). It may
        clear what it has read from ``records`` (the engine reads them once), so that the source
        records are freed as their batches are built.
        """
        return None

    def select_sharded(self, files: Sequence[InputFile], *, limit: int | None) -> ShardedSelection | None:
        """:meth:`select_stream`'s units with the source read in the workers, not here; ``None`` (the
        default) where the builder cannot. The engine uses it with the local engine and two or more
        worker processes, where the source has enough tasks (``engine.SHARDED_MIN_TASKS``).

        A builder returns one only where it gives exactly :meth:`select_stream`'s units and counts
        (the same files, then), raises the same errors for a bad source as :meth:`read` in the
        same order, and where :meth:`regroup` and :meth:`refine` have nothing to do.
        """
        return None

    def selection_keys(self, task: Any) -> SelectionKeys:
        """A task of :meth:`select_sharded`: its rows read and keyed (runs in a worker)."""
        raise NotImplementedError(f"{type(self).__name__} has no sharded selection")

    def regroup(
        self, records: Mapping[str, Sequence[Any]], split_of: Callable[[str], str]
    ) -> Mapping[str, Sequence[Any]] | None:
        """Records per OUTPUT split when the builder carves a resplit itself, else ``None``.

        ``split_of`` maps a content key (e.g. ``"premise:<words>"``) to its output split, by the
        same hash and percentages as the query-id resplit.

        ``None`` (the default): :meth:`select` sees the source splits and each unit's output
        split is carved from its query id afterwards. A builder whose units borrow from other
        records of their split returns records already grouped by output split (e.g. by premise),
        so that building one output split never reads another.
        """
        return None

    def refine(self, units: list[Any], splits: list[str]) -> tuple[list[Any], list[str], dict[str, Any] | None]:
        """The units and their output splits after any step that needs them all (an adversarial filter),
        and that step's report for the manifest (None: no such step; the default)."""
        return units, splits, None

    def make_lists(self, units: Sequence[Any]) -> list[GradedList]:
        """Build the graded lists of a batch of units (pure; runs in worker processes)."""
        return list(units)

    def pack_units(self, units: Sequence[Any]) -> Any:
        """A batch of units in the form sent to a worker process (pickled); :meth:`unpack_units` inverts it.

        By default the units themselves. A builder with millions of small units may pack them
        into columns of plain values, which pickle several times faster.
        """
        return units

    def unpack_units(self, packed: Any) -> Sequence[Any]:
        """The units :meth:`pack_units` packed (equal to them)."""
        return packed

    def make_columns(self, units: Sequence[Any]) -> GradedColumns:
        """The lists of a batch of units in columns (what the engine calls, in worker processes).

        By default :meth:`make_lists`, then :meth:`GradedColumns.from_lists`; a builder that can
        fill the columns directly overrides this (the outputs must be equal).
        """
        return GradedColumns.from_lists(self.make_lists(units), self.columns)

    def tiers(self) -> list[tuple[str, int]] | None:
        """``(tier, relevance)`` best first when lists have synthetic tiers, else ``None`` (natural grades)."""
        return None

    def card_section(self) -> list[str]:
        """Markdown lines describing the construction, for the dataset card."""
        return [self.summary] if self.summary else []

    def redistributable(self) -> bool:
        """False when the source's license forbids republishing (``publish`` then needs a flag).

        The recipe's structured license says it (``redistributable`` in the family's
        ``source.yaml``, see :mod:`gradebench.datasets.source`).
        """
        return self.recipe.source.license_terms.redistributable
