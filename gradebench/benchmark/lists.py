"""Benchmark folders as dense ``[n_queries, list_size]`` arrays with a mask: the one reader.

Everything downstream of a build (training, scoring, evaluation, the leaderboard) reads a
benchmark through :func:`open_benchmark`, which needs only the core columns
(:data:`REQUIRED_COLUMNS`) and treats every other column as optional, so benchmarks with natural
grades, variable list sizes or no tiers plug in unchanged.

Layout of a :class:`Lists` (one split):

* queries keep the order in which they first appear in the Parquet files, candidates their
  stored order within a query (content-hash order, so position reveals nothing);
* ragged lists are padded on the right: ``mask`` is True at real candidates, padding has
  ``candidate == ""``, ``candidate_id == ""`` and grades 0.

Example::

    bench = open_benchmark("gradebench-out/demo/0123456789ab")
    test = bench.lists("test")
    test.relevance.shape == test.mask.shape == (test.n_queries, test.list_size)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from gradebench.benchmark.format import MANIFEST, REQUIRED_COLUMNS
from gradebench.errors import BenchmarkError, InvalidArgumentError, UnknownNameError
from gradebench.hashing import sha256_json

#: Optional columns read along when present (used for per-tier reports and plots).
OPTIONAL_COLUMNS: tuple[str, ...] = ("tier",)


@dataclass(frozen=True)
class Lists:
    """One split of a benchmark as dense arrays (see the module docstring for the layout).

    Attributes:
        benchmark: the benchmark's name (its recipe).
        fingerprint: the benchmark's full fingerprint.
        split: split name (``train``/``validation``/``test``...).
        query_ids: ``[n_queries]`` query ids.
        queries: ``[n_queries]`` query texts.
        candidate_ids: ``[n_queries, list_size]`` candidate ids (``""`` at padding).
        candidates: ``[n_queries, list_size]`` candidate texts (``""`` at padding).
        relevance: ``[n_queries, list_size]`` float64 integer grades (0 at padding).
        score: ``[n_queries, list_size]`` float64 graded quality (0 at padding).
        mask: ``[n_queries, list_size]`` bool, True at real candidates.
        extra: optional columns, each ``[n_queries, list_size]`` (e.g. ``tier``; None at padding).
    """

    benchmark: str
    fingerprint: str
    split: str
    query_ids: np.ndarray
    queries: np.ndarray
    candidate_ids: np.ndarray
    candidates: np.ndarray
    relevance: np.ndarray
    score: np.ndarray
    mask: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_queries(self) -> int:
        return int(self.mask.shape[0])

    @property
    def list_size(self) -> int:
        return int(self.mask.shape[1])

    @property
    def n_candidates(self) -> int:
        return int(self.mask.sum())

    @property
    def lengths(self) -> np.ndarray:
        """``[n_queries]`` number of real candidates per query."""
        return self.mask.sum(axis=1)

    def take(self, rows: Sequence[int] | np.ndarray) -> Lists:
        """The lists of the queries at ``rows`` (in that order), trimmed to their longest list."""
        idx = np.asarray(rows, dtype=np.int64)
        width = int(self.mask[idx].sum(axis=1).max()) if len(idx) else 0
        cut = lambda a: a[idx, :width]  # noqa: E731
        return replace(
            self,
            query_ids=self.query_ids[idx],
            queries=self.queries[idx],
            candidate_ids=cut(self.candidate_ids),
            candidates=cut(self.candidates),
            relevance=cut(self.relevance),
            score=cut(self.score),
            mask=cut(self.mask),
            extra={k: cut(v) for k, v in self.extra.items()},
        )

    def head(self, n: int) -> Lists:
        """The first ``n`` queries (a deterministic subset for quick runs)."""
        return self.take(np.arange(min(int(n), self.n_queries)))

    def subsample(self, k: int, *, seed: int) -> Lists:
        """At most ``k`` candidates per query (LiPO's list-size ablation), drawn by content.

        Which candidates stay depends only on ``seed`` and each candidate's id: the draw is
        the sha256 of ``(seed, query_id, candidate_id)``, so it is the same on every machine
        and independent of the other queries. Kept candidates stay in their stored order and
        every kept list holds at least one candidate of its best and one of its worst grade
        when ``k >= 2`` (so each list still has a preference to learn).
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidArgumentError(f"list size must be an integer >= 1, got {k!r}", hint="e.g. --list-size 3")
        if k >= self.list_size:
            return self
        keep = np.zeros_like(self.mask)
        for q in range(self.n_queries):
            valid = np.flatnonzero(self.mask[q])
            if len(valid) <= k:
                keep[q, valid] = True
                continue
            keys = [_draw(seed, self.query_ids[q], self.candidate_ids[q, j]) for j in valid]
            order = valid[np.argsort(keys, kind="stable")]
            chosen: list[int] = []
            if k >= 2:
                rel = self.relevance[q, order]
                chosen = [int(order[np.argmax(rel)]), int(order[np.argmin(rel)])]
            for j in order:
                if len(chosen) >= k:
                    break
                if int(j) not in chosen:
                    chosen.append(int(j))
            keep[q, chosen] = True
        return _compact(self, keep)

    def flat_index(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cols)`` of every real candidate, row-major (the order of :meth:`flat`)."""
        return np.nonzero(self.mask)

    def pairs(self) -> tuple[list[str], list[str]]:
        """``(queries, candidates)`` of every real candidate, row-major."""
        rows, cols = self.flat_index()
        return self.queries[rows].tolist(), self.candidates[rows, cols].tolist()

    def unflatten(self, values: Sequence[float] | np.ndarray, *, fill: float = 0.0) -> np.ndarray:
        """Row-major per-candidate ``values`` -> ``[n_queries, list_size]`` (``fill`` at padding)."""
        v = np.asarray(values, dtype=np.float64)
        if v.shape != (self.n_candidates,):
            raise InvalidArgumentError(
                f"expected {self.n_candidates} values (one per candidate), got shape {v.shape}"
            )
        out = np.full(self.mask.shape, fill, dtype=np.float64)
        out[self.mask] = v
        return out


def _draw(seed: int, query_id: str, candidate_id: str) -> str:
    return sha256_json(["subsample", int(seed), str(query_id), str(candidate_id)])


def _compact(lists: Lists, keep: np.ndarray) -> Lists:
    """Move the kept candidates of each row to the left, preserving their order."""
    width = int(keep.sum(axis=1).max()) if keep.size else 0
    n = lists.n_queries
    order = np.argsort(~keep, axis=1, kind="stable")[:, :width]
    rows = np.arange(n)[:, None]
    new_mask = keep[rows, order]

    def pick(a: np.ndarray, pad: Any) -> np.ndarray:
        out = a[rows, order].copy()
        out[~new_mask] = pad
        return out

    return replace(
        lists,
        candidate_ids=pick(lists.candidate_ids, ""),
        candidates=pick(lists.candidates, ""),
        relevance=pick(lists.relevance, 0.0),
        score=pick(lists.score, 0.0),
        mask=new_mask,
        extra={k: pick(v, None) for k, v in lists.extra.items()},
    )


@dataclass(frozen=True)
class Benchmark:
    """A built benchmark folder: its manifest and a reader of its splits.

    Attributes:
        path: the folder.
        name: the recipe's name.
        fingerprint: the full build fingerprint.
        manifest: the parsed ``manifest.json``.
        files: split -> Parquet files (sorted).
    """

    path: Path
    name: str
    fingerprint: str
    manifest: dict[str, Any]
    files: dict[str, list[Path]]

    @property
    def splits(self) -> list[str]:
        return sorted(self.files)

    @property
    def short_fingerprint(self) -> str:
        return self.fingerprint[:12]

    def lists(self, split: str, *, columns: Sequence[str] = OPTIONAL_COLUMNS) -> Lists:
        """The ``split`` as dense arrays; ``columns`` names optional columns to read when present."""
        if split not in self.files:
            raise UnknownNameError(
                f"benchmark {self.name} has no split {split!r}", path=self.path,
                hint=f"its splits: {', '.join(self.splits) or '(none)'}"
                     + (f"; score one with --split {self.splits[0]}" if self.splits else ""),
            )
        return read_lists(self.files[split], benchmark=self.name, fingerprint=self.fingerprint,
                          split=split, columns=columns)

    def default_split(self, preferred: Sequence[str] = ("test", "validation", "train")) -> str:
        for s in preferred:
            if s in self.files:
                return s
        return self.splits[0]


def open_benchmark(path: str | Path | Benchmark) -> Benchmark:
    """Open a folder written by ``gradebench build`` (checks the manifest and the core columns).

    An already opened :class:`Benchmark` is returned as it is, so every API that takes a
    benchmark accepts either.

    Raises:
        BenchmarkError: no such folder, no/invalid manifest, no data files, data files that do
            not match the manifest's sizes and sha256s (files edited, swapped or truncated after
            the build), or a missing core column; the message names the file and how to fix it.
    """
    if isinstance(path, Benchmark):
        return path
    if not isinstance(path, (str, Path)):
        raise InvalidArgumentError(f"benchmark path must be a str or Path, got {type(path).__name__}")
    from gradebench.benchmark.info import info
    from gradebench.benchmark.manifest import verify_data

    p = Path(path)
    manifest = info(p)
    manifest.pop("path", None)
    name, fp = manifest["recipe"]["name"], manifest["fingerprint"]  # checked by read_manifest
    # the files the manifest lists (never a glob: a stray or renamed file must not join a split)
    files = {s: [p / f for f in sorted(v["files"])] for s, v in manifest["splits"].items() if v["files"]}
    if not files:
        raise BenchmarkError("the manifest lists no data files", path=p / MANIFEST, hint="rebuild with --force")
    verify_data(p, manifest)
    _check_columns(next(iter(files.values()))[0])
    return Benchmark(path=p, name=name, fingerprint=fp, manifest=manifest, files=files)


def _check_columns(file: Path) -> None:
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(file).names
    except Exception as e:  # noqa: BLE001 - pyarrow raises many types for bad files
        raise BenchmarkError(f"not a readable Parquet file ({type(e).__name__}: {e})", path=file,
                             hint="rebuild with --force") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing:
        raise BenchmarkError(
            f"missing core column(s) {', '.join(missing)}", path=file,
            hint=f"a benchmark needs the columns {', '.join(REQUIRED_COLUMNS)}",
        )


def read_lists(
    files: Sequence[Path], *, benchmark: str, fingerprint: str, split: str,
    columns: Sequence[str] = OPTIONAL_COLUMNS,
) -> Lists:
    """Read Parquet ``files`` (one split) into a :class:`Lists`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for f in files:
        try:
            names = pq.read_schema(f).names
            wanted = list(REQUIRED_COLUMNS) + [c for c in columns if c in names and c not in REQUIRED_COLUMNS]
            missing = [c for c in REQUIRED_COLUMNS if c not in names]
            if missing:
                raise BenchmarkError(f"missing core column(s) {', '.join(missing)}", path=f,
                                     hint=f"a benchmark needs the columns {', '.join(REQUIRED_COLUMNS)}")
            tables.append(pq.read_table(f, columns=wanted))
        except BenchmarkError:
            raise
        except Exception as e:  # noqa: BLE001
            raise BenchmarkError(f"cannot read Parquet ({type(e).__name__}: {e})", path=f,
                                 hint="rebuild with --force") from None
    if not tables:
        raise BenchmarkError(f"split {split!r} has no files", hint="rebuild with --force")
    common = set.intersection(*(set(t.column_names) for t in tables))
    table = pa.concat_tables([t.select([c for c in t.column_names if c in common]) for t in tables])
    return lists_from_table(table, benchmark=benchmark, fingerprint=fingerprint, split=split)


def lists_from_table(table: Any, *, benchmark: str = "", fingerprint: str = "", split: str = "") -> Lists:
    """Group a flat table (Arrow or pandas, core columns) by ``query_id`` into a :class:`Lists`."""
    cols = {c: _column(table, c) for c in (table.column_names if hasattr(table, "column_names") else table.columns)}
    for c in ("query_id", "query", "candidate_id", "candidate", "relevance", "score"):
        if c not in cols:
            raise BenchmarkError(f"missing core column {c!r}", hint=f"a benchmark needs {', '.join(REQUIRED_COLUMNS)}")
    qid = cols["query_id"]
    n_rows = len(qid)
    uniq, first, inverse = np.unique(qid, return_index=True, return_inverse=True)
    # queries in order of first appearance
    order_of_query = np.argsort(first, kind="stable")
    rank = np.empty_like(order_of_query)
    rank[order_of_query] = np.arange(len(order_of_query))
    row_query = rank[inverse]
    counts = np.bincount(row_query, minlength=len(uniq)) if n_rows else np.zeros(0, dtype=np.int64)
    width = int(counts.max()) if n_rows else 0
    # position of each row inside its query, in stored order
    sort = np.argsort(row_query, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]) if n_rows else np.zeros(0, dtype=np.int64)
    pos = np.empty(n_rows, dtype=np.int64)
    pos[sort] = np.arange(n_rows) - np.repeat(starts, counts)
    n_q = len(uniq)
    mask = np.zeros((n_q, width), dtype=bool)
    mask[row_query, pos] = True

    def dense(values: np.ndarray, pad: Any, dtype: Any) -> np.ndarray:
        out = np.full((n_q, width), pad, dtype=dtype)
        out[row_query, pos] = values
        return out

    _refuse_duplicate_candidates(row_query, cols["candidate_id"], qid, split)
    first_rows = first[order_of_query]
    rel = np.asarray(cols["relevance"], dtype=np.float64)
    sc = np.asarray(cols["score"], dtype=np.float64)
    for name, v in (("relevance", rel), ("score", sc)):
        if n_rows and not np.all(np.isfinite(v)):
            raise BenchmarkError(f"column {name!r} has NaN/inf values", hint="rebuild with --force")
    extra = {
        c: dense(np.asarray(cols[c], dtype=object), None, object)
        for c in cols if c not in REQUIRED_COLUMNS
    }
    return Lists(
        benchmark=benchmark,
        fingerprint=fingerprint,
        split=split,
        query_ids=np.asarray(qid, dtype=object)[first_rows],
        queries=np.asarray(cols["query"], dtype=object)[first_rows],
        candidate_ids=dense(np.asarray(cols["candidate_id"], dtype=object), "", object),
        candidates=dense(np.asarray(cols["candidate"], dtype=object), "", object),
        relevance=dense(rel, 0.0, np.float64),
        score=dense(sc, 0.0, np.float64),
        mask=mask,
        extra=extra,
    )


def _refuse_duplicate_candidates(row_query: np.ndarray, candidate_ids: np.ndarray, qid: np.ndarray, split: str) -> None:
    """A (query_id, candidate_id) pair stored twice would count one candidate twice in every metric."""
    if not len(row_query):
        return
    _, cid = np.unique(candidate_ids, return_inverse=True)
    key = row_query.astype(np.int64) * (int(cid.max()) + 1) + cid.astype(np.int64)
    uniq, first, counts = np.unique(key, return_index=True, return_counts=True)
    if len(uniq) != len(key):
        row = int(first[np.argmax(counts > 1)])
        where = f" in split {split!r}" if split else ""
        raise BenchmarkError(
            f"duplicate rows{where}: query_id {qid[row]!r} lists candidate_id {candidate_ids[row]!r} "
            f"{int(counts.max())} times", hint="each (query_id, candidate_id) must be unique; rebuild with --force",
        )


def _column(table: Any, name: str) -> np.ndarray:
    col = table[name]
    if hasattr(col, "to_numpy") and hasattr(col, "combine_chunks"):  # pyarrow ChunkedArray
        col = col.combine_chunks()
        if hasattr(col, "dictionary_decode"):
            col = col.dictionary_decode()
        return col.to_numpy(zero_copy_only=False)
    return np.asarray(col)
