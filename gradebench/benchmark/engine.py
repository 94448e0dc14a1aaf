"""``build()``: recipe + source -> one deterministic, content-hashed Parquet benchmark folder.

The engine knows nothing about any source: the recipe's builder (``source.family``, see
:mod:`gradebench.datasets`) locates, reads and grades; the engine hashes the inputs, checks
the cache before any parsing, assigns output splits, drops duplicate query ids, runs the work
in batches (in worker processes for large builds), computes the stats and the dataset card,
validates the result and writes it atomically.
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gradebench._version import DATA_FORMAT_VERSION, __version__
from gradebench.benchmark.card import render_card
from gradebench.benchmark.format import MANIFEST, SCHEMA_VERSION
from gradebench.benchmark.manifest import cached_problem, file_digests, read_manifest
from gradebench.benchmark.splits import resplit_of
from gradebench.benchmark.summary import RowFeatures, summarize
from gradebench.benchmark.workers import (
    NOT_YET,
    STARTED,
    Encoding,
    gc_paused,
    prestart,
    run_batches,
    start_method,
)
from gradebench.threads import available_cores
from gradebench.benchmark.writer import BenchmarkWriter, final_dir, is_complete, staging, uninterrupted
from gradebench.datasets import Builder, get_builder
from gradebench.datasets.base import SelectionKeys, ShardedSelection
from gradebench.datasets.records import SourceFile
from gradebench.errors import BenchmarkError, InvalidArgumentError
from gradebench.hashing import sha256_files, sha256_json
from gradebench.paths import OUT_DIR, check_writable_dir
from gradebench.recipes.loader import load_recipe
from gradebench.recipes.models import Recipe, check_resplit

#: queries per work unit; fixed so that row groups (and bytes) never depend on worker count
BATCH_QUERIES = 8192
#: a source the workers read (:meth:`Builder.select_sharded`) has at least this many of its tasks:
#: a smaller one is read here, which is quicker than the round trip (the real e-SNLI dev split,
#: 2 tasks: 1.70 against 1.26 s of list making, median of 3)
SHARDED_MIN_TASKS = 4
DEFAULT_OUT = str(OUT_DIR)


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
    #: why a cached folder was rebuilt (files missing or changed), else None
    repaired: str | None = None
    #: validation summary (None with validate=False)
    validation: dict[str, Any] | None = None
    #: learned validity figures (None with validity=False); see gradebench.experiments.validity
    validity: dict[str, Any] | None = None
    #: wall seconds per build phase (:class:`PhaseTimer`); not part of the result's identity,
    #: so ``to_dict`` leaves it out unless asked (``gradebench build --timings``)
    timings: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    def to_dict(self, *, timings: bool = False) -> dict[str, Any]:
        d = asdict(self)
        if not timings:
            del d["timings"]
        return d


class PhaseTimer:
    """Wall seconds per named build phase, in the order the phases first ran (and, as ``main.cpu``,
    the CPU seconds of the building process from reading to the end).

    ``with timer.phase("read"): ...`` adds the block's time to ``read``; :meth:`add` adds a
    measured amount (e.g. the seconds workers report for their part of a batch).
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def phase(self, name: str):
        from contextlib import contextmanager

        @contextmanager
        def timed():
            t0 = time.perf_counter()
            try:
                yield
            finally:
                self.add(name, time.perf_counter() - t0)

        return timed()

    def rounded(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in self.seconds.items()}


#: recipe keys that only document the benchmark and so stay out of its fingerprint
DOC_ONLY_KEYS = ("card_notes",)


def fingerprint(
    recipe: Recipe,
    files: Sequence[SourceFile],
    limit: int | None,
    resplit: Sequence[int] | None,
    builder_version: int = 1,
) -> str:
    """sha256 over everything that determines the output bytes.

    The builder's name enters through the recipe (``source.family``); its ``version`` enters
    when it is above 1, so bumping one builder's version changes the fingerprints of its own
    benchmarks only, and the benchmarks built before versions existed keep theirs.
    """
    payload: dict[str, Any] = {
        "data_format_version": DATA_FORMAT_VERSION,
        "schema_version": SCHEMA_VERSION,
        "recipe": recipe.model_dump(mode="json", exclude=set(DOC_ONLY_KEYS)),
        "recipe_version": recipe.version,
        "inputs": [{"role": f.role, "sha256": f.sha256} for f in files],
        "options": {"limit": limit, "resplit": None if resplit is None else list(resplit)},
    }
    if builder_version != 1:
        payload["builder_version"] = builder_version
    return sha256_json(payload)


def refresh_cached(folder: Path, recipe: Recipe, builder: Any) -> dict[str, Any]:
    """The manifest of a cached build, brought up to date where that needs no rebuild.

    The documentation-only recipe keys (:data:`DOC_ONLY_KEYS`) are outside the fingerprint, so
    editing one finds the old folder cached: the manifest takes the new text, and the card and
    then the manifest are rewritten in place (each atomically; the data files are untouched).
    """
    m = read_manifest(folder)
    now = recipe.model_dump(mode="json")
    stale = {k: now.get(k, "") for k in DOC_ONLY_KEYS if m["recipe"].get(k, "") != now.get(k, "")}
    if stale:
        m = update_manifest(folder, builder, {"recipe": {**m["recipe"], **stale}})
    return m


def builder_of(manifest: dict[str, Any]) -> Builder:
    """The builder that made a benchmark, configured with the recipe recorded in its manifest."""
    import json

    from gradebench.recipes.loader import recipe_from_json

    return get_builder(manifest["builder"]["name"])(recipe_from_json(json.dumps(manifest["recipe"])))


def update_manifest(folder: Path, builder: Any, changes: dict[str, Any]) -> dict[str, Any]:
    """Set top-level manifest keys of a built folder; the card, then the manifest, are rewritten.

    Only keys that describe the benchmark change this way (documentation, the learned validity
    figures that :mod:`gradebench.experiments` measures after a build); the data files and their
    digests are never touched, so the folder stays verifiable against its fingerprint.
    """
    from gradebench.paths import write_json_atomic, write_text_atomic

    m = read_manifest(folder)
    m.update(changes)
    write_text_atomic(folder / "README.md", render_card(m, builder))
    write_json_atomic(folder / MANIFEST, m)
    return m


def _progress(enabled: bool | None):
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


def status(enabled: bool | None, text: str):
    """A spinner with ``text`` on stderr while a step without a count runs (on a TTY, or when
    ``enabled``; nothing with ``enabled=False``)."""
    from contextlib import nullcontext

    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(text)


def _result_from_manifest(path: Path, m: dict[str, Any], *, cached: bool) -> BuildResult:
    return BuildResult(
        recipe=m["recipe"]["name"],
        fingerprint=m["fingerprint"],
        path=str(path),
        splits={s: {"queries": v["queries"], "candidates": v["candidates"]} for s, v in m["splits"].items()},
        skipped=m["skipped"],
        stats=m["stats"],
        cached=cached,
        files={s: v["files"] for s, v in m["splits"].items()},
        validation=m.get("validation"),
        validity=m.get("validity"),
    )


def split_percentages(text: str) -> tuple[int, ...] | None:
    """``"80/10/10"`` -> ``(80, 10, 10)`` (spaces ignored); None if a part is not a whole number >= 0."""
    parts = [p.strip() for p in text.split("/")]
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def check_build_args(
    *, source: Any, out: Any, limit: Any, resplit: Any, force: Any, workers: Any, progress: Any, validate: Any
) -> tuple[int | None, tuple[int, int, int] | None]:
    """Type and range checks at the API boundary (the CLI passes through the same checks).

    ``resplit`` is ``(train, validation, test)`` percentages as a tuple or list, or the string
    ``"80/10/10"`` (the command line's spelling).
    """
    if source is not None and not isinstance(source, (str, os.PathLike)):
        raise InvalidArgumentError(f"source must be a path or URL string, got {type(source).__name__}",
                                   hint="pass source='path/to/data' or omit it for the recipe's default")
    if not isinstance(out, (str, os.PathLike)):
        raise InvalidArgumentError(f"out must be a path, got {type(out).__name__}", hint=f"pass out='{OUT_DIR}'")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
        raise InvalidArgumentError(f"limit must be a whole number, got {limit!r}", hint="e.g. limit=100, or None")
    if limit is not None and limit < 1:
        raise InvalidArgumentError(f"limit must be >= 1, got {limit}", hint="omit --limit to read everything")
    for name, value in (("force", force), ("validate", validate)):
        if not isinstance(value, bool):
            raise InvalidArgumentError(f"{name} must be True or False, got {value!r}", hint=f"pass {name}=True")
    if progress is not None and not isinstance(progress, bool):
        raise InvalidArgumentError(f"progress must be True, False or None, got {progress!r}", hint="omit it")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InvalidArgumentError(f"workers must be a whole number >= 1, got {workers!r}", hint="e.g. workers=2")
    checked = None
    if resplit is not None:
        value = split_percentages(resplit) if isinstance(resplit, str) else resplit
        try:
            if value is None:
                raise ValueError(f"resplit {resplit!r} is not three whole percentages")
            checked = check_resplit(value)
        except ValueError as e:
            raise InvalidArgumentError(str(e), hint="pass a tuple such as (80, 10, 10), or the string '80/10/10'") \
                from None
    return limit, checked


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
    validate: bool = True,
    engine: str = "local",
    ray_address: str | None = None,
    alongside: Callable[[Path, dict[str, Any]], AbstractContextManager[Callable[[], dict[str, Any]]]] | None = None,
) -> BuildResult:
    """Build a graded benchmark.

    Args:
        recipe: a recipe name (``esnli``), a path to a recipe YAML, or a :class:`Recipe`.
        source: a local file/folder or a base URL; ``None`` uses the recipe's default
            (embedded data, or the verified download into the cache).
        out: output root; the benchmark goes to ``<out>/<recipe>/<fingerprint[:12]>``.
        limit: read at most this many source records per split.
        resplit: ``(train, validation, test)`` percentages carved by query-id hash
            (overrides the recipe's ``resplit``).
        force: rebuild even if the fingerprint folder exists.
        workers: worker processes (default: the cores this process may use,
            :func:`gradebench.threads.available_cores`; the output never depends on it).
        progress: show a progress bar (default: when stderr is a TTY).
        engine: where the batches' lists are made: ``local`` (worker processes on this machine)
            or ``ray`` (Ray tasks: :mod:`gradebench.benchmark.ray_engine`); the same files
            either way.
        ray_address: the Ray cluster to use with ``engine="ray"`` (default: ``RAY_ADDRESS``,
            else a local instance with ``workers`` CPUs).
        validate: check the benchmark against its expectation suite before declaring it built
            (``gradebench validate``); a failing build is refused.
        alongside: work on the written data that runs while it is validated (the validity
            figures, which :mod:`gradebench.experiments` measures): called with the unfinished
            folder and the manifest so far just before validation; the context manager it returns
            yields a getter, called once validation has passed, whose keys are added to the
            manifest (timed as ``validity``). Unused with ``validate=False`` or a cached build.

    Returns:
        :class:`BuildResult`; building into an existing, intact fingerprint folder is a no-op
        that returns the cached result (``cached=True``). A cached folder whose files are
        missing or changed is rebuilt (``repaired`` says why).

    Raises:
        BenchmarkError: every source record was skipped (the message lists the reasons), or
            the benchmark failed validation.
    """
    from gradebench.benchmark.inputs import locate_source

    limit, resplit = check_build_args(
        source=source, out=out, limit=limit, resplit=resplit, force=force, workers=workers, progress=progress,
        validate=validate,
    )
    from gradebench.benchmark.ray_engine import check_engine

    check_engine(engine, ray_address)
    if not isinstance(recipe, (str, os.PathLike, Recipe)):
        raise InvalidArgumentError(f"recipe must be a name, a path or a Recipe, got {type(recipe).__name__}",
                                   hint="e.g. build('esnli')")
    # a Recipe object may have been changed without validation (model_copy, model_construct):
    # it is validated again, as a recipe file would be, before anything is written
    r = _revalidated(recipe) if isinstance(recipe, Recipe) else load_recipe(recipe)
    builder_cls = get_builder(r.source.family)
    builder = builder_cls(r)
    # before any reading, hashing or downloading: an unusable --out fails in milliseconds
    check_writable_dir(Path(out) / r.name, what="--out")
    effective_resplit = resplit if resplit is not None else r.resplit
    files = locate_source(builder, r, source)
    hashed = [SourceFile(f.path, digest, f.role) for f, digest in zip(files, sha256_files([f.path for f in files]))]
    fp = fingerprint(r, hashed, limit, effective_resplit, builder_cls.version)
    target = final_dir(Path(out), r.name, fp)
    staging(target.parent).clean_stale()
    repaired = None
    if is_complete(target) and not force:
        problem = cached_problem(target)
        if problem is None:
            return _result_from_manifest(target, refresh_cached(target, r, builder), cached=True)
        repaired = problem

    n_workers = workers if workers is not None else available_cores()
    if engine != "ray" and n_workers > 1:  # the workers' imports, on another core while the source is indexed
        prestart()  # the workers start before a progress bar's thread (see run_batches' announce below)
    timer = PhaseTimer()
    cpu = time.process_time()
    sharded = None
    if engine != "ray" and n_workers > 1 and start_method() is not None:
        # where the builder can, the workers read and key the source too: this process only indexes it
        with timer.phase("read"):
            sharded = builder.select_sharded(files, limit=limit)
        if sharded is not None and len(sharded.tasks) < SHARDED_MIN_TASKS:  # read here: no round trip
            sharded = None
    units: list[Any] | None = None
    carve = effective_resplit
    if sharded is not None:
        skipped = sharded.skipped
    else:
        with timer.phase("read"):
            records = builder.read(files)
        with timer.phase("select"), gc_paused():
            grouped = (builder.regroup(records, lambda key: resplit_of(key, effective_resplit))
                       if effective_resplit else None)
            if grouped is not None:  # the builder carved the output splits itself, before selecting
                records = grouped
            carve = None if grouped is not None else effective_resplit
            # where the builder can, units are selected as the workers ask for batches (streamed)
            streamed = builder.select_stream(records, limit=limit)
            if streamed is None:
                selection = builder.select(records, limit=limit)
                units, out_splits, skipped = _assign(selection.units, selection.skipped, carve)
                del selection
            else:
                stream, skipped = streamed
            del records, grouped  # the units (or the stream) hold what is still needed (see _batches)
    adversarial = None
    if units:
        t_refine = time.perf_counter()
        units, out_splits, adversarial = builder.refine(units, out_splits)
        if adversarial is not None:  # a phase of its own only where the builder has such a step
            timer.add("adversarial", time.perf_counter() - t_refine)
    if units is not None and not units:
        raise _nothing_to_build(skipped, source)
    feats: dict[str, list[RowFeatures]] = {}
    counts: dict[str, Counter] = {}
    writer: BenchmarkWriter | None = None
    try:
        # a Ctrl-C during creation is raised when `writer` is set, so abort() below removes its folder
        metadata = {"gradebench.fingerprint": fp, "gradebench.recipe": r.name, "gradebench.version": __version__}
        with uninterrupted():
            writer = BenchmarkWriter(target, builder_cls.columns, metadata)
        encoding = Encoding(metadata)  # the workers encode the row groups; this process appends them
        with timer.phase("make_lists"):
            selected: _Selected | None = None
            if sharded is not None:
                selected = _Selected(sharded, skipped, carve, ahead=2 * n_workers + 2)
                batches = selected.batches()
                sharded = None  # held by `selected` until its last task is in
            elif units is None:
                batches = _batches(_assigned(stream, skipped, carve, set()), None, timer)
                del stream
            else:
                batches = _batches(units, out_splits)
            # closing(): on an exception the pool is stopped now, not when the traceback is freed
            if engine == "ray":
                from gradebench.benchmark.ray_engine import ray_batches

                running = ray_batches(builder_cls.name, r.model_dump_json(), batches, n_workers, address=ray_address,
                                      encoding=encoding)
            else:
                running = run_batches(builder_cls.name, r.model_dump_json(), batches, n_workers, encoding,
                                      ahead=None if units is not None else 2 * n_workers, announce=True,
                                      home=None if selected is None else selected.home)
            with closing(running) as results:
                # the workers start here, before a progress bar's thread: this program still runs one
                # thread, so where its workers can be forks of it (start_method) they are, on a terminal too
                if engine != "ray" and next(results, None) is not STARTED:
                    raise RuntimeError("the workers did not announce their start")
                with _progress(progress) as bar:
                    task = bar.add_task("build", total=None if units is None else len(units)) if bar else None
                    for result, seconds in results:
                        for name, s in seconds.items():
                            timer.add(name, s)
                        if isinstance(result, SelectionKeys):  # a slice of the source, keyed by a worker
                            selected.add(result, timer)
                            continue
                        t_write = time.perf_counter()
                        for split, (rows, f) in result.items():
                            writer.write(split, rows)
                            feats.setdefault(split, []).append(f)
                            c = counts.setdefault(split, Counter())
                            c["queries"] += f.n_queries
                            c["candidates"] += rows.num_rows
                            if bar:
                                bar.advance(task, f.n_queries)
                        # writing runs inside the batch loop: its time is moved from make_lists to write
                        spent = time.perf_counter() - t_write
                        timer.add("write", spent)
                        timer.add("make_lists", -spent)
                        result = rows = None  # written: not held while the next batch is awaited
            # the selection's state (ids and digests of every row kept) is not held from here on
            selected = sharded = batches = running = None
            if not counts:  # a stream that gave no unit (a selected list is never empty)
                raise _nothing_to_build(skipped, source)
        with timer.phase("write"):
            names = writer.close_shards()
        with timer.phase("stats"):
            per_split = {s: RowFeatures.concat(feats.pop(s)) for s in sorted(feats)}
            stats = summarize(builder, per_split)
            del per_split
        splits = {s: {"queries": counts[s]["queries"], "candidates": counts[s]["candidates"]} for s in sorted(counts)}
        manifest = {
            "format": "gradebench.benchmark",
            "data_format_version": DATA_FORMAT_VERSION,
            "schema_version": SCHEMA_VERSION,
            "gradebench_version": __version__,
            "fingerprint": fp,
            "builder": {"name": builder_cls.name, "version": builder_cls.version},
            "recipe": r.model_dump(mode="json"),
            "options": {"limit": limit, "resplit": None if effective_resplit is None else list(effective_resplit)},
            "inputs": [{"role": f.role, "file": Path(f.path).name, "sha256": f.sha256} for f in hashed],
            "source_format": builder.source_format(files),
            "redistributable": builder.redistributable(),
            "splits": {s: {**v, "files": names.get(s, [])} for s, v in splits.items()},
            "skipped": dict(sorted(skipped.items())),
            **({"adversarial": adversarial} if adversarial is not None else {}),
            "stats": stats,
            "columns": [c.name for c in writer.schema],
        }
        with timer.phase("digests"):
            manifest["file_digests"] = file_digests(writer.tmp, [n for v in names.values() for n in v])
        if validate:
            from gradebench.benchmark.validate import validate_folder

            # leaving this block early (a failed validation, an interrupt) stops the work alongside
            with ExitStack() as stack:
                pending = None
                if alongside is not None:
                    with timer.phase("validity"):  # its start-up (reading, a worker) counts as its time
                        pending = stack.enter_context(alongside(writer.tmp, manifest))
                with timer.phase("validation"), status(progress, "validating the benchmark"):
                    report = validate_folder(writer.tmp, manifest=manifest)
                manifest["validation"] = report.summary()
                if not report.success:
                    raise BenchmarkError(
                        f"the built benchmark fails validation: {report.first_failure()}",
                        path=target,
                        hint=f"run `gradebench validate` on a --no-validate build for every failure; "
                        f"fix the recipe or the builder {builder_cls.name!r}",
                    )
                if pending is not None:
                    with timer.phase("validity"), status(progress, "measuring the validity figures"):
                        manifest.update(pending())
        with timer.phase("finish"):
            path, cached = writer.finish(manifest, render_card(manifest, builder),
                                         replace=force or repaired is not None)
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    if cached:
        return _result_from_manifest(path, read_manifest(path), cached=True)
    result = _result_from_manifest(path, manifest, cached=False)
    result.repaired = repaired
    # the building process's own CPU seconds (all its threads), the part no worker can take over
    timer.add("main.cpu", time.process_time() - cpu)
    result.timings = timer.rounded()
    return result


def _revalidated(recipe: Recipe) -> Recipe:
    from gradebench.errors import RecipeError
    from gradebench.recipes.loader import recipe_from_dict

    try:
        data = recipe.model_dump(mode="json", warnings=False)
    except Exception as e:  # noqa: BLE001 - a constructed model can hold anything
        raise RecipeError(f"the recipe cannot be serialised ({type(e).__name__}: {e})",
                          hint="build Recipe objects with load_recipe() or Recipe.model_validate()") from None
    return recipe_from_dict(data)


def _nothing_to_build(skipped: Counter, source: Any) -> BenchmarkError:
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(skipped.items())) or "the source has no records"
    return BenchmarkError(
        f"nothing to build: every source record was skipped ({reasons})",
        path=source if source is not None else None,
        hint="check the source and the recipe's labels/filters; a benchmark needs at least one graded list",
    )


def _assign(units: list[Any], skipped: Counter, resplit: Sequence[int] | None) -> tuple[list, list[str], Counter]:
    """Drop repeated query ids (counted as ``duplicate_query``) and give each unit its output split."""
    skipped = Counter(skipped)
    kept, splits = [], []
    for u, split in _assigned(units, skipped, resplit, set()):
        kept.append(u)
        splits.append(split)
    return kept, splits, skipped


def _assigned(units: Iterable[Any], skipped: Counter, resplit: Sequence[int] | None,
              seen: set[str]) -> Iterator[tuple[Any, str]]:
    """``(unit, output split)`` of each unit whose query id is not in ``seen`` (added); the others
    are counted in ``skipped`` as ``duplicate_query``."""
    for u in units:
        qid = u.query_id
        if qid in seen:
            skipped["duplicate_query"] += 1
            continue
        seen.add(qid)
        yield u, (resplit_of(qid, resplit) if resplit else u.split)


class _Selected:
    """The batches of a sharded selection (:meth:`Builder.select_sharded`): its tasks, and batches of
    the units its keys keep, cut as the selected list is (so the same batches, the same bytes),
    each as soon as the keys before it are in (:data:`.workers.NOT_YET` until then).

    The tasks go at most ``ahead`` ahead of the keys taken in, so each batch follows its rows' keys
    closely: a worker keeps the rows it has just keyed, and :meth:`home` names the task that gave
    a batch most of its units, whose worker then builds it without reading them again."""

    def __init__(self, sharded: ShardedSelection, skipped: Counter, carve: Sequence[int] | None, ahead: int) -> None:
        self.sharded, self.skipped, self.carve, self.ahead = sharded, skipped, carve, ahead
        self.units: list[Any] = []  # kept, not yet in a batch
        self.splits: list[str] = []
        self.added = 0
        self._seen: set[str] = set()
        self._given = 0  # what batches() has given so far (NOT_YET not counted): the next one's number
        self._task_given: list[int] = []  # each task's number among them
        self._consumed = 0  # tasks whose units are all in batches given (or that kept none)
        self._runs: deque[list[int]] = deque()  # [number of a task, its units not yet in a batch], in order
        self._homes: dict[int, int] = {}  # a batch's number -> the number of the task that gave it most units

    def add(self, keys: SelectionKeys, timer: PhaseTimer) -> None:
        """A task's keys, in task order: its units kept (a repeated query id dropped as in :func:`_assigned`)."""
        t0 = time.perf_counter()
        with gc_paused():
            units, splits, carve = self.units, self.splits, self.carve
            kept = self.sharded.add(keys)
            n = len(units)
            if self.sharded.unique_ids:  # no id it gave before: nothing for _assigned to drop
                units += kept
                splits += [resplit_of(u.query_id, carve) for u in kept] if carve else [u.split for u in kept]
            else:
                for u, split in _assigned(kept, self.skipped, carve, self._seen):
                    units.append(u)
                    splits.append(split)
            if len(units) > n:
                self._runs.append([self._task_given[self.added], len(units) - n])
            else:  # nothing kept: the task is done with
                self._consumed += 1
        self.added += 1
        if self.added == len(self.sharded.tasks):  # the selection is complete: its state (a set entry
            self.sharded = self._seen = None  # per row kept) is freed now, while workers are busy, not at the end
        spent = time.perf_counter() - t0
        timer.add("select", spent)
        timer.add("make_lists", -spent)

    def home(self, number: int) -> int | None:
        """The number of the task whose worker should build the batch ``batches()`` gave as its
        ``number``-th (None: a task, or a batch without a home); asked once a batch."""
        return self._homes.pop(number, None)

    def batches(self) -> Iterator[Any]:
        tasks = self.sharded.tasks
        n_tasks = len(tasks)
        while True:
            given = len(self._task_given)
            ready = len(self.units) >= BATCH_QUERIES or (self.units and self.added == n_tasks)
            # a task whenever fewer than `ahead` are given and not yet all in batches (or when nothing
            # else can go: then a batch waits for more rows), so tasks and batches alternate
            if given < n_tasks and (given - self._consumed < self.ahead or (given == self.added and not ready)):
                self._task_given.append(self._given)
                self._given += 1
                yield tasks[given], None
            elif ready:
                yield self._cut()
            elif self.added == n_tasks:
                return
            else:
                yield NOT_YET

    def _cut(self) -> tuple[list[Any], list[str]]:
        """The next batch, taken from the units kept; its home is noted (:meth:`home`)."""
        units, splits = self.units, self.splits
        batch = units[:BATCH_QUERIES], splits[:BATCH_QUERIES]
        del units[:BATCH_QUERIES], splits[:BATCH_QUERIES]
        left, most, home = len(batch[0]), 0, None
        runs = self._runs
        while left:
            run = runs[0]
            took = min(left, run[1])
            if took > most:
                most, home = took, run[0]
            left -= took
            run[1] -= took
            if not run[1]:
                runs.popleft()
                self._consumed += 1
        self._homes[self._given] = home
        self._given += 1
        return batch


def _streamed_batches(pairs: Iterator[tuple[Any, str]], timer: PhaseTimer | None
                      ) -> Iterator[tuple[list[Any], list[str]]]:
    """The batches of :data:`BATCH_QUERIES` units of a selection stream of ``(unit, output split)``,
    cut as the selected list is (so the same batches, the same bytes).

    Runs while the workers build the batches before: the time spent here, selecting, is moved
    from ``make_lists`` to ``select``, and the collector is paused while it runs.
    """
    timer = timer or PhaseTimer()
    while True:
        t0 = time.perf_counter()
        with gc_paused():
            batch = list(itertools.islice(pairs, BATCH_QUERIES))
        spent = time.perf_counter() - t0
        timer.add("select", spent)
        timer.add("make_lists", -spent)
        if not batch:
            return
        units, splits = map(list, zip(*batch))
        del batch
        yield units, splits


def _batches(units: list[Any] | Iterator[tuple[Any, str]], out_splits: list[str] | None,
             timer: PhaseTimer | None = None) -> Iterator[tuple[list[Any], list[str]]]:
    """Work units in batches of :data:`BATCH_QUERIES`; each batch's slots in ``units`` are cleared
    once it is handed out, so its source records are freed as soon as its worker is done with it.

    With ``out_splits`` None, ``units`` is a selection stream of ``(unit, output split)``
    (:func:`_streamed_batches`, timed into ``timer``).
    """
    if out_splits is None:
        yield from _streamed_batches(units, timer)
        return
    for a, b in _ranges(len(units)):
        yield units[a:b], out_splits[a:b]
        units[a:b] = [None] * (b - a)


def _ranges(n: int) -> Iterator[tuple[int, int]]:
    for i in range(0, n, BATCH_QUERIES):
        yield i, min(n, i + BATCH_QUERIES)
