"""``sweep()``: run an experiment grid (train where needed, then evaluate), skipping done cells.

Each cell (benchmark x scorer x loss x list size x seed) has one record on its own benchmark
and one per ``transfer:`` benchmark (see :mod:`gradebench.experiments.grid`). Every record id
is computed *before* anything runs: for a trainable scorer from the run fingerprint that
:func:`gradebench.experiments.train.train` would give it (same option resolution and hashing),
for an untrained one from the scorer's resolved config and seed. A cell is done when all its
records exist under ``results_dir``: it is skipped without training or scoring, so a second
invocation of the same experiment does nothing, and an interrupted sweep continues where it
stopped: a cell killed mid-training is continued from its run folder (see
:func:`~gradebench.experiments.train.train`). A cell that lacks some of its records writes only
those: its finished run is reused, or trained again if its folder is gone (same options, same
fingerprint, same folder; training is deterministic per seed). Cells run in grid order; the
first error stops the sweep (finished records stay written).

Two sweeps may run on one grid at once, and no cell is run twice: a sweep holds a cell's lock
(``.<own record id>.lock`` beside the cell's own record, :class:`gradebench.locks.FileLock`)
from before it trains until its last record is written, and looks for the records again once it
holds it (the other sweep may have written them meanwhile). A cell whose lock another live
process holds, or whose run folder another process trains into (a ``gradebench train``), is left
alone and the sweep takes the next one: its missing records get status ``"in use"``, with that
process's pid in ``note``, unless they exist by the end of the sweep (then ``"skipped"``, written
by the other). Run the sweep again once the other has finished.

Run folders: ``<runs_dir>/<benchmark>/<scorer>/<run fingerprint[:16]>`` (a finished run there
is reused by ``train``). The cell seed is the training seed, the scorer seed and the
bootstrap seed, on its own benchmark and on every transfer benchmark.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gradebench.benchmark.lists import Benchmark, open_benchmark
from gradebench.errors import Busy, GradebenchError, RecipeError
from gradebench.experiments.evaluate import DEFAULT_RESULTS_DIR, evaluate_scorer, expected_id
from gradebench.experiments.grid import BenchmarkEntry, Experiment, LossEntry, ScorerEntry, load_experiment
from gradebench.experiments.record import RECORD_SUFFIX
from gradebench.experiments.runs import RunInUse
from gradebench.experiments.store import record_dir
from gradebench.experiments.verify import existing_record
from gradebench.locks import FileLock
from gradebench.paths import RUNS_DIR
from gradebench.scorers.base import ProgressFn

DEFAULT_RUNS_DIR = RUNS_DIR
#: the status of a cell whose run folder another live process holds
IN_USE = "in use"


@dataclass(frozen=True)
class Cell:
    """One record of a cell of the grid (its own, or a transfer record), evaluated or skipped."""

    benchmark: str  # the benchmark the record is on
    benchmark_fingerprint: str
    scorer: str
    config: dict[str, Any]
    loss: str | None
    loss_params: dict[str, Any]
    seed: int
    record_id: str
    status: str  # "evaluated" | "skipped" | "in use" (another process trains its run; no record)
    record_path: str
    run_dir: str | None
    value: float | None  # the record's ndcg@5
    note: str = ""  # why a cell was not evaluated
    pid: int | None = None  # status "in use": the process that holds the run folder, when known
    list_size: int | None = None  # the cell's training option list_size (None: full lists, or untrained)
    transfer: bool = False  # a record on a transfer: benchmark, not on the cell's own
    trained_on: str | None = None  # a trained cell's transfer record: the benchmark its run learned from


@dataclass(frozen=True)
class SweepResult:
    """Every record of the grid, in grid order (a cell's own record, then its transfer records).

    ``evaluated``, ``skipped`` and ``in_use`` count records, transfer records included."""

    experiment: str
    file: str
    results_dir: str
    runs_dir: str
    split: str
    cells: list[Cell] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def evaluated(self) -> int:
        return sum(c.status == "evaluated" for c in self.cells)

    @property
    def skipped(self) -> int:
        return sum(c.status == "skipped" for c in self.cells)

    @property
    def in_use(self) -> int:
        return sum(c.status == IN_USE for c in self.cells)

    @property
    def transfer(self) -> dict[str, int]:
        """The transfer records among :attr:`cells` (which :attr:`evaluated` etc. count too), by status."""
        rows = [c for c in self.cells if c.transfer]
        return {"records": len(rows), "evaluated": sum(c.status == "evaluated" for c in rows),
                "skipped": sum(c.status == "skipped" for c in rows), "in_use": sum(c.status == IN_USE for c in rows)}

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(evaluated=self.evaluated, skipped=self.skipped, in_use=self.in_use, transfer=self.transfer)
        return d


def _benchmarks(exp: Experiment, entries: list[BenchmarkEntry], key: str,
                experiment_yaml: str | Path) -> list[Benchmark]:
    """The benchmarks of ``entries`` (recipes built into ``build_dir``), each checked to have ``split:``."""
    out = []
    for i, entry in enumerate(entries):
        if entry.path is not None:
            bench = open_benchmark(entry.path)
        else:
            from gradebench.experiments.build import build

            bench = open_benchmark(build(entry.recipe, out=exp.build_dir, progress=False).path)
        if exp.split not in bench.files:
            raise RecipeError(f"benchmark {bench.name} ({bench.path}) has no split {exp.split!r}", path=experiment_yaml,
                              key=f"{key}[{i}]", hint=f"its splits: {', '.join(bench.splits) or '(none)'}; "
                                                      "change split: or build it with --resplit 80/10/10")
        out.append(bench)
    return out


def _cell_losses(exp: Experiment, scorer_cls: type, losses: list[LossEntry] | None) -> list[LossEntry | None]:
    if not scorer_cls.uses_loss:
        return [None]
    listed = exp.losses if losses is None else losses
    return list(listed) or [None]  # None: the scorer's default loss


def _existing(results_dir: Path, bench: Benchmark, rid: str) -> Any:
    # unreadable or failing its checks: evaluate again (the new record replaces it)
    return existing_record(record_dir(results_dir, bench.name) / f"{rid}{RECORD_SUFFIX}")


def sweep(
    experiment_yaml: str | Path,
    *,
    results_dir: str | Path = DEFAULT_RESULTS_DIR,
    runs_dir: str | Path = DEFAULT_RUNS_DIR,
    progress: ProgressFn | None = None,
) -> SweepResult:
    """Run every cell of the experiment at ``experiment_yaml`` that lacks one of its records.

    ``progress(done, total, message)`` counts records (own and transfer), not cells.

    Raises:
        RecipeError: the experiment file is malformed (file, line and key named), or a benchmark
            lacks the ``split:`` (before any work).
        GradebenchError: any failure of a cell (unknown scorer/loss, bad config, ...).
    """
    t0 = time.perf_counter()
    exp = load_experiment(experiment_yaml)
    results_dir, runs_dir = Path(results_dir), Path(runs_dir)
    plan = _plan(exp, experiment_yaml, runs_dir)
    total = sum(len(c.targets) for c in plan)
    cells: list[Cell] = []
    for c in plan:
        found = [(bench, rid, _existing(results_dir, bench, rid)) for bench, rid in c.targets]
        if all(record is not None for _, _, record in found):
            if progress is not None:
                progress(len(cells), total, c.label)
            cells.extend(c.row(bench, rid, record, "skipped") for bench, rid, record in found)
            continue
        try:
            lock = _lock_cell(results_dir, c)
        except Busy as busy:  # another sweep runs this cell right now: leave it to that one
            who = "another process" if busy.pid is None else f"pid {busy.pid}"
            _leave(cells, c, found, f"the cell is in use by {who}", busy.pid, progress, total)
            continue
        try:
            # looked up again under the lock: the sweep that held it may have written them
            found = [(bench, rid, _existing(results_dir, bench, rid)) for bench, rid in c.targets]
            _run_cell(c, found, cells, exp, results_dir, progress, total)
        finally:
            lock.release()
    _written_meanwhile(plan, cells, results_dir)
    if progress is not None:
        progress(total, total, "done")
    return SweepResult(experiment=exp.name, file=str(experiment_yaml), results_dir=str(results_dir),
                       runs_dir=str(runs_dir), split=exp.split, cells=cells,
                       seconds=round(time.perf_counter() - t0, 3))


def _lock_cell(results_dir: Path, c: _PlannedCell) -> FileLock:
    """The lock of cell ``c`` (beside its own record), held from before training until its records
    are written.

    Raises:
        Busy: another live process holds it.
    """
    bench, rid = c.targets[0]
    folder = record_dir(results_dir, bench.name)
    folder.mkdir(parents=True, exist_ok=True)
    return FileLock.acquire(folder / f".{rid}.lock")


def _leave(cells: list[Cell], c: _PlannedCell, found: list[tuple[Benchmark, str, Any]], note: str,
           pid: int | None, progress: ProgressFn | None, total: int) -> None:
    """Rows for a cell another process runs: its records that exist are skipped, the others in use."""
    for bench, rid, record in found:
        cells.append(c.row(bench, rid, record, "skipped") if record is not None else c.row(
            bench, rid, None, IN_USE, note=note, pid=pid))
    if progress is not None:
        progress(len(cells), total, f"{c.label}: {note}")


def _written_meanwhile(plan: list[_PlannedCell], cells: list[Cell], results_dir: Path) -> None:
    """Turn the rows left to another process into ``skipped`` where it has written their records
    since (``cells`` holds each planned cell's rows in plan order)."""
    rows = iter(range(len(cells)))
    for c in plan:
        for bench, rid in c.targets:
            i = next(rows)
            if cells[i].status == IN_USE and (record := _existing(results_dir, bench, rid)) is not None:
                cells[i] = c.row(bench, rid, record, "skipped", note=f"written meanwhile ({cells[i].note})")


def _run_cell(c: _PlannedCell, found: list[tuple[Benchmark, str, Any]], cells: list[Cell], exp: Experiment,
              results_dir: Path, progress: ProgressFn | None, total: int) -> None:
    """Train cell ``c`` if it trains (a finished run is reused) and write its missing records."""
    from gradebench.experiments.runs import load_run
    from gradebench.experiments.train import train

    scorer, run = c.scorer, None
    if c.opts is not None and any(record is None for _, _, record in found):
        # the run folder may hold a finished run (reused), an interrupted one (continued: a cell
        # killed mid-training), or nothing (a cell whose run folder was deleted is trained again:
        # same options, same fingerprint, same folder)
        if progress is not None:
            progress(len(cells), total, f"{c.label}: training")
        try:
            result = train(c.bench, c.entry.name, loss=None if c.loss is None else c.loss.name,
                           config=c.entry.config, options=c.opts, out=c.run_dir, progress=None)
        except RunInUse as busy:  # another process (`gradebench train`) trains this run right now
            _leave(cells, c, found, busy.message, busy.pid, progress, total)
            return
        scorer, run = load_run(result.run_dir)
    for bench, rid, record in found:
        if progress is not None:
            progress(len(cells), total, c.label if bench is c.bench else f"{c.label} on {bench.name}")
        status = "skipped"
        if record is None:
            record = evaluate_scorer(bench, scorer, split=exp.split, seed=c.seed, n_resamples=exp.n_resamples,
                                     run=run, results_dir=results_dir, zero_shot=bench is not c.bench)
            status = "evaluated"
            if record.id != rid:  # pragma: no cover - the harness hashed differently than planned
                raise GradebenchError(
                    f"cell {c.label} on {bench.name}: the record id {record.id[:12]} differs from the "
                    f"planned {rid[:12]}",
                    hint="gradebench.experiments.train's run fingerprint changed; report this as a bug",
                )
        cells.append(c.row(bench, rid, record, status))


@dataclass
class _PlannedCell:
    """One cell of the grid, before anything runs: its scorer, its run (if it trains) and its records."""

    bench: Benchmark
    entry: ScorerEntry
    loss: LossEntry | None
    seed: int
    scorer: Any
    opts: Any  # the TrainOptions of a trained cell, else None
    run_dir: Path | None
    #: ``(benchmark, record id)`` of every record of the cell: its own first, then its transfer records
    targets: list[tuple[Benchmark, str]]
    label: str

    def row(self, bench: Benchmark, rid: str, record: Any, status: str, *, note: str = "",
            pid: int | None = None) -> Cell:
        """The cell's row for its record ``rid`` on ``bench`` (``record`` None: not written)."""
        return Cell(
            benchmark=bench.name, benchmark_fingerprint=bench.fingerprint, scorer=self.entry.name,
            config=self.scorer.describe()["config"] if record is None else record.scorer.config,
            loss=None if self.opts is None else self.opts.loss,
            loss_params={} if self.opts is None else dict(self.opts.loss_params), seed=self.seed,
            record_id=rid, status=status, record_path="" if record is None else str(record.path),
            run_dir=None if self.run_dir is None else str(self.run_dir),
            value=None if record is None else record.value("ndcg@5"), note=note, pid=pid,
            list_size=None if self.opts is None else self.opts.list_size,
            transfer=bench is not self.bench,
            trained_on=self.bench.name if bench is not self.bench and self.opts is not None else None,
        )


def _plan(exp: Experiment, experiment_yaml: str | Path, runs_dir: Path) -> list[_PlannedCell]:
    """Every cell of the grid in grid order (benchmarks x scorers x losses x list sizes x seeds),
    with the ids of its records; fails on a bad scorer, loss or benchmark before any work."""
    from gradebench.experiments.runs import run_fingerprint
    from gradebench.experiments.train import resolve_options
    from gradebench.scorers import get_scorer_class, make_scorer

    classes = [get_scorer_class(entry.name) for entry in exp.scorers]  # unknown names fail before any work
    for i, (entry, cls) in enumerate(zip(exp.scorers, classes)):
        if entry.losses and not cls.uses_loss:
            raise RecipeError(f"scorer {entry.name!r} does not train with a gradebench loss", path=experiment_yaml,
                              key=f"scorers[{i}].losses", hint="remove its losses: list (see `gradebench scorers`)")
    benches = _benchmarks(exp, exp.benchmarks, "benchmarks", experiment_yaml)
    transfers = _benchmarks(exp, exp.transfer, "transfer", experiment_yaml)
    planned: set[tuple[str, str]] = set()
    plan: list[_PlannedCell] = []
    for bench in benches:
        for entry, cls in zip(exp.scorers, classes):
            for loss in _cell_losses(exp, cls, entry.losses):
                for list_size in exp.cell_list_sizes() if cls.trainable else [None]:
                    for seed in exp.seeds:
                        label = (f"{bench.name} {entry.name}{'' if loss is None else ' + ' + loss.name}"
                                 f"{'' if list_size is None else f' K={list_size}'} seed {seed}")
                        opts = run = run_dir = None
                        if cls.trainable:
                            options = {**exp.train, "seed": seed, "list_size": list_size,
                                       "loss_params": {} if loss is None else dict(loss.params)}
                            opts = resolve_options(cls, None if loss is None else loss.name, options)
                            scorer = cls(entry.config, seed=opts.seed)
                            fp = run_fingerprint(benchmark_fingerprint=bench.fingerprint, scorer=scorer.describe(),
                                                 options=opts.model_dump(mode="json"))
                            run = _PlannedRun(loss=opts.loss, loss_params=dict(opts.loss_params),
                                              run_fingerprint=fp, seed=opts.seed)
                            run_dir = runs_dir / bench.name / entry.name / fp[:16]
                        else:
                            scorer = make_scorer(entry.name, entry.config, seed=seed)
                        targets = []
                        for target in [bench, *(t for t in transfers if t.fingerprint != bench.fingerprint)]:
                            rid = expected_id(target, scorer, split=exp.split, seed=seed,
                                              n_resamples=exp.n_resamples, run=run)
                            if target is not bench and (target.name, rid) in planned:
                                continue  # an untrained scorer's transfer record, planned by an earlier cell
                            planned.add((target.name, rid))
                            targets.append((target, rid))
                        plan.append(_PlannedCell(bench=bench, entry=entry, loss=loss, seed=seed, scorer=scorer,
                                                 opts=opts, run_dir=run_dir, targets=targets, label=label))
    return plan


@dataclass(frozen=True)
class _PlannedRun:
    """The parts of a ``RunInfo`` that enter a record id, known before training."""

    loss: str | None
    loss_params: dict[str, Any]
    run_fingerprint: str
    seed: int
