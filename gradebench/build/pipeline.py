"""``build()``: recipe + source -> one deterministic, content-hashed Parquet benchmark folder."""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import signal
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from gradebench._version import DATA_FORMAT_VERSION, __version__
from gradebench.build.candidates import CandidateBuilder, Pool, Query
from gradebench.build.card import render_card
from gradebench.build.schema import SCHEMA_VERSION
from gradebench.build.select import select
from gradebench.build.summary import RowFeatures, summarize
from gradebench.build.writer import MANIFEST, BenchmarkWriter, final_dir, is_complete, uninterrupted
from gradebench.errors import BenchmarkError, InvalidArgumentError
from gradebench.hashing import sha256_json
from gradebench.paths import check_writable_dir
from gradebench.recipes.loader import load_recipe
from gradebench.recipes.models import Recipe, check_resplit
from gradebench.sources.base import SourceData, SourceFile

#: queries per work unit; fixed so that row groups (and bytes) never depend on worker count
BATCH_QUERIES = 8192
DEFAULT_OUT = "gradebench-out"


@dataclass
class BuildResult:
    """What ``build`` returns and ``gradebench build --json`` prints."""

    recipe: str
    fingerprint: str
    path: str
    splits: dict[str, dict[str, int]]
    skipped: dict[str, int]
    stats: dict[str, Any]
    cached: bool = False
    files: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def fingerprint(
    recipe: Recipe, files: Sequence[SourceFile], limit: int | None, resplit: Sequence[int] | None
) -> str:
    """sha256 over everything that determines the output bytes."""
    return sha256_json(
        {
            "data_format_version": DATA_FORMAT_VERSION,
            "schema_version": SCHEMA_VERSION,
            "recipe": recipe.model_dump(mode="json"),
            "recipe_version": recipe.version,
            "inputs": [{"role": f.role, "sha256": f.sha256} for f in files],
            "options": {"limit": limit, "resplit": None if resplit is None else list(resplit)},
        }
    )


# -- work units (run in worker processes) -------------------------------------------------------
_BUILDER: CandidateBuilder | None = None
#: the selected queries; forked workers inherit it, so a task is just an index range
_QUERIES: list[Query] = []


def _init_worker(recipe_json: str, pools: dict[str, Pool]) -> None:
    global _BUILDER
    _BUILDER = CandidateBuilder(Recipe.model_validate_json(recipe_json), pools)


#: what a worker must not get from the parent's handlers (see _init_pool_worker)
_POOL_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _init_pool_worker(recipe_json: str, pools: dict[str, Pool]) -> None:
    """Worker start-up: Ctrl-C is the parent's business, SIGTERM (``Pool.terminate``) just ends us.

    The parent forks with both signals blocked (:func:`_signals_blocked`), so none can reach
    a worker before these dispositions are set; unblocking delivers any that arrived meanwhile.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _POOL_SIGNALS)
    _init_worker(recipe_json, pools)


@contextmanager
def _signals_blocked() -> Iterator[None]:
    """Block SIGINT/SIGTERM in this thread; processes and threads started inside inherit the mask.

    Signals that arrive meanwhile stay pending and are delivered (to this process) on exit.
    """
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _POOL_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _build_range(bounds: tuple[int, int]) -> dict[str, tuple[pa.Table, RowFeatures]]:
    return _build_batch(_QUERIES[bounds[0] : bounds[1]])


def _build_batch(queries: list[Query]) -> dict[str, tuple[pa.Table, RowFeatures]]:
    """Rows of a batch of queries, grouped by output split (input order kept)."""
    assert _BUILDER is not None
    builder = _BUILDER
    template = builder.recipe.query_template
    by_split: dict[str, list[Query]] = {}
    for q in queries:
        by_split.setdefault(q.split, []).append(q)
    out = {}
    for split, qs in by_split.items():
        cand_cols: list[list] = [[] for _ in range(10)]
        counts = []
        for q in qs:
            rows = builder.rows(q)
            counts.append(len(rows))
            for col, value in zip(cand_cols, zip(*rows)):
                col.extend(value)
        repeat = np.repeat(np.arange(len(qs)), counts)
        per_query = {
            "query_id": [q.query_id for q in qs],
            "query": [
                template.format(premise=q.example.premise, hypothesis=q.example.hypothesis, label=q.example.label)
                for q in qs
            ],
            "premise": [q.example.premise for q in qs],
            "hypothesis": [q.example.hypothesis for q in qs],
            "label": [q.example.label for q in qs],
            "source_id": [q.example.source_id for q in qs],
            "source_row": [q.example.row for q in qs],
        }
        take = pa.array(repeat)
        columns = {k: pa.array(v).take(take) for k, v in per_query.items()}
        cid, text, score, rel, tier, csrc, tid, origin, n_words, overlap = cand_cols
        table = pa.table(
            {
                "query_id": columns["query_id"],
                "query": columns["query"],
                "candidate_id": pa.array(cid, pa.string()),
                "candidate": pa.array(text, pa.string()),
                "score": pa.array(score, pa.float64()),
                "relevance": pa.array(rel, pa.int16()),
                "tier": pa.array(tier, pa.string()),
                "split": pa.array([split] * len(cid), pa.string()),
                "premise": columns["premise"],
                "hypothesis": columns["hypothesis"],
                "label": columns["label"],
                "source_id": columns["source_id"],
                "source_row": columns["source_row"].cast(pa.int64()),
                "candidate_source_id": pa.array(csrc, pa.string()),
                "template_id": pa.array(tid, pa.string()),
                "origin": pa.array(origin, pa.string()),
            }
        )
        feats = RowFeatures.from_rows(counts, score, rel, tier, origin, n_words, overlap)
        out[split] = (table, feats)
    return out


def _ranges(n: int) -> Iterator[tuple[int, int]]:
    for i in range(0, n, BATCH_QUERIES):
        yield i, min(n, i + BATCH_QUERIES)


def _run(recipe: Recipe, pools: dict[str, Pool], queries: list[Query], workers: int) -> Iterator:
    global _QUERIES
    n_batches = (len(queries) + BATCH_QUERIES - 1) // BATCH_QUERIES
    recipe_json = recipe.model_dump_json()
    if workers <= 1 or n_batches <= 1:
        _init_worker(recipe_json, pools)
        yield from (_build_batch(queries[a:b]) for a, b in _ranges(len(queries)))
        return
    _QUERIES = queries
    # fork shares the parent's memory copy-on-write; gc.freeze() keeps the children's garbage
    # collector from touching (and so copying) every inherited object.
    # Interruption: workers ignore SIGINT, so Ctrl-C (sent by a terminal to the whole process
    # group) is handled once, in the parent, whose exception ends the wait on the pool and
    # terminates it (SIGTERM, at its default action in workers, ends them without a traceback).
    ctx = mp.get_context("fork")
    gc.freeze()
    pool = None
    try:
        with _signals_blocked():
            pool = ctx.Pool(workers, initializer=_init_pool_worker, initargs=(recipe_json, pools))
        yield from pool.imap(_build_range, _ranges(len(queries)), chunksize=1)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        gc.unfreeze()
        _QUERIES = []


def _progress(enabled: bool | None, total: int):
    from contextlib import nullcontext

    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return nullcontext(None)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn("building"), BarColumn(), MofNCompleteColumn(), TextColumn("queries"), TimeRemainingColumn(),
        transient=True,
    )


def _cached_result(path: Path) -> BuildResult:
    import json

    try:
        m = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BenchmarkError(f"unreadable manifest ({e})", path=path / MANIFEST, hint="rebuild with --force") from None
    return BuildResult(
        recipe=m["recipe"]["name"],
        fingerprint=m["fingerprint"],
        path=str(path),
        splits={s: {"queries": v["queries"], "candidates": v["candidates"]} for s, v in m["splits"].items()},
        skipped=m["skipped"],
        stats=m["stats"],
        cached=True,
        files={s: v["files"] for s, v in m["splits"].items()},
    )


def build(
    recipe: str | Path | Recipe,
    *,
    source: str | Path | None = None,
    out: str | Path = DEFAULT_OUT,
    limit: int | None = None,
    resplit: Sequence[int] | None = None,
    force: bool = False,
    workers: int | None = None,
    progress: bool | None = None,
) -> BuildResult:
    """Build a graded benchmark.

    Args:
        recipe: a recipe name (``esnli``), a path to a recipe YAML, or a :class:`Recipe`.
        source: a local file/folder or a base URL; ``None`` uses the recipe's default
            (embedded data, or the verified download into the cache).
        out: output root; the benchmark goes to ``<out>/<recipe>/<fingerprint[:12]>``.
        limit: read at most this many source rows per split.
        resplit: ``(train, validation, test)`` percentages carved by query-id hash
            (overrides the recipe's ``resplit``).
        force: rebuild even if the fingerprint folder exists.
        workers: worker processes (default: up to 2; the output never depends on it).
        progress: show a progress bar (default: when stderr is a TTY).

    Returns:
        :class:`BuildResult`; building into an existing fingerprint folder is a no-op that
        returns the cached result (``cached=True``).
    """
    from gradebench.build.inputs import load_source

    r = recipe if isinstance(recipe, Recipe) else load_recipe(recipe)
    # before any reading, hashing or downloading: an unusable --out fails in milliseconds
    check_writable_dir(Path(out) / r.name, what="--out")
    if limit is not None and limit < 1:
        raise InvalidArgumentError(f"limit must be >= 1, got {limit}", hint="omit --limit to read everything")
    if resplit is not None:
        try:
            resplit = check_resplit(resplit)
        except ValueError as e:
            raise InvalidArgumentError(str(e), hint="e.g. --resplit 80/10/10") from None
    effective_resplit = resplit if resplit is not None else r.resplit
    data: SourceData = load_source(r, source)
    fp = fingerprint(r, data.files, limit, effective_resplit)
    target = final_dir(Path(out), r.name, fp)
    if is_complete(target) and not force:
        return _cached_result(target)

    selection = select(r, data.examples, limit=limit, resplit=effective_resplit)
    queries = selection.queries
    n_workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    feats: dict[str, list[RowFeatures]] = {}
    counts: dict[str, Counter] = {}
    writer: BenchmarkWriter | None = None
    try:
        # a Ctrl-C during creation is raised when `writer` is set, so abort() below removes its folder
        with uninterrupted():
            writer = BenchmarkWriter(
                target, {"gradebench.fingerprint": fp, "gradebench.recipe": r.name, "gradebench.version": __version__}
            )
        with _progress(progress, len(queries)) as bar:
            task = bar.add_task("build", total=len(queries)) if bar else None
            # closing(): on an exception the pool is stopped now, not when the traceback is freed
            with closing(_run(r, selection.pools, queries, n_workers)) as results:
                for result in results:
                    for split, (table, f) in result.items():
                        writer.write(split, table)
                        feats.setdefault(split, []).append(f)
                        c = counts.setdefault(split, Counter())
                        c["queries"] += f.n_queries
                        c["candidates"] += table.num_rows
                        if bar:
                            bar.advance(task, f.n_queries)
        names = writer.close_shards()
        stats = summarize(r, {s: RowFeatures.concat(v) for s, v in feats.items()})
        splits = {s: {"queries": counts[s]["queries"], "candidates": counts[s]["candidates"]} for s in sorted(counts)}
        manifest = {
            "format": "gradebench.benchmark",
            "data_format_version": DATA_FORMAT_VERSION,
            "schema_version": SCHEMA_VERSION,
            "gradebench_version": __version__,
            "fingerprint": fp,
            "recipe": r.model_dump(mode="json"),
            "options": {"limit": limit, "resplit": None if effective_resplit is None else list(effective_resplit)},
            "inputs": [{"role": f.role, "file": Path(f.path).name, "sha256": f.sha256} for f in data.files],
            "splits": {s: {**v, "files": names.get(s, [])} for s, v in splits.items()},
            "skipped": dict(sorted(selection.skipped.items())),
            "stats": stats,
        }
        path, cached = writer.finish(manifest, render_card(manifest), replace=force)
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    if cached:
        return _cached_result(path)
    return BuildResult(
        recipe=r.name,
        fingerprint=fp,
        path=str(path),
        splits=splits,
        skipped=manifest["skipped"],
        stats=stats,
        cached=False,
        files=names,
    )
