"""``sweep()``: run an experiment grid (train where needed, then evaluate), skipping done cells.

Each cell (benchmark x scorer x loss x seed) has a record id that is computed *before*
anything runs: for a trainable scorer from the run fingerprint that
:func:`gradebench.experiments.train.train` would give it (same option resolution and hashing),
for an untrained one from the scorer's resolved config and seed. A cell whose record already
exists under ``results_dir`` is skipped without training or scoring, so a second invocation
of the same experiment does nothing, and an interrupted sweep continues where it stopped: a
cell killed mid-training is continued from its run folder (see :func:`~gradebench.experiments.train.train`).
Cells run in grid order; the first error stops the sweep (finished cells stay recorded).

Two sweeps may run on one grid at once: a cell whose run folder another live process is
training into is left alone (status ``"in use"``, with that process's pid in ``note``; no record),
never taken over; run the sweep again once the other has finished to evaluate it.

Run folders: ``<runs_dir>/<benchmark>/<scorer>/<run fingerprint[:16]>`` (a finished run there
is reused by ``train``). The cell seed is the training seed, the scorer seed and the
bootstrap seed.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gradebench.benchmark.lists import Benchmark, open_benchmark
from gradebench.errors import GradebenchError, RecipeError
from gradebench.experiments.evaluate import DEFAULT_RESULTS_DIR, evaluate_scorer, expected_id
from gradebench.experiments.grid import Experiment, LossEntry, load_experiment
from gradebench.experiments.record import RECORD_SUFFIX, RecordError
from gradebench.experiments.runs import RunInUse
from gradebench.experiments.store import read_record, record_dir
from gradebench.paths import RUNS_DIR
from gradebench.scorers.base import ProgressFn

DEFAULT_RUNS_DIR = RUNS_DIR
#: the status of a cell whose run folder another live process holds
IN_USE = "in use"


@dataclass(frozen=True)
class Cell:
    """One evaluated (or skipped) cell of the grid."""

    benchmark: str
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


@dataclass(frozen=True)
class SweepResult:
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

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(evaluated=self.evaluated, skipped=self.skipped, in_use=self.in_use)
        return d


def _benchmarks(exp: Experiment) -> list[Benchmark]:
    out = []
    for entry in exp.benchmarks:
        if entry.path is not None:
            out.append(open_benchmark(entry.path))
        else:
            from gradebench.experiments.build import build

            out.append(open_benchmark(build(entry.recipe, out=exp.build_dir, progress=False).path))
    return out


def _cell_losses(exp: Experiment, scorer_cls: type, losses: list[LossEntry] | None) -> list[LossEntry | None]:
    if not scorer_cls.uses_loss:
        return [None]
    listed = exp.losses if losses is None else losses
    return list(listed) or [None]  # None: the scorer's default loss


def _existing(results_dir: Path, bench: Benchmark, rid: str) -> Any:
    path = record_dir(results_dir, bench.name) / f"{rid}{RECORD_SUFFIX}"
    if not path.is_file():
        return None
    try:
        return read_record(path)
    except RecordError:  # unreadable: evaluate again (the new record replaces it)
        return None


def sweep(
    experiment_yaml: str | Path,
    *,
    results_dir: str | Path = DEFAULT_RESULTS_DIR,
    runs_dir: str | Path = DEFAULT_RUNS_DIR,
    progress: ProgressFn | None = None,
) -> SweepResult:
    """Run every cell of the experiment at ``experiment_yaml`` that has no record yet.

    Raises:
        RecipeError: the experiment file is malformed (file, line and key named).
        GradebenchError: any failure of a cell (unknown scorer/loss, bad config, ...).
    """
    from gradebench.experiments.runs import load_run, run_fingerprint
    from gradebench.experiments.train import resolve_options, train
    from gradebench.scorers import get_scorer_class, make_scorer

    t0 = time.perf_counter()
    exp = load_experiment(experiment_yaml)
    results_dir, runs_dir = Path(results_dir), Path(runs_dir)
    classes = [get_scorer_class(entry.name) for entry in exp.scorers]  # unknown names fail before any work
    for i, (entry, cls) in enumerate(zip(exp.scorers, classes)):
        if entry.losses and not cls.uses_loss:
            raise RecipeError(f"scorer {entry.name!r} does not train with a gradebench loss", path=experiment_yaml,
                              key=f"scorers[{i}].losses", hint="remove its losses: list (see `gradebench scorers`)")
    plan = []
    for bench in _benchmarks(exp):
        for entry, cls in zip(exp.scorers, classes):
            for loss in _cell_losses(exp, cls, entry.losses):
                for seed in exp.seeds:
                    plan.append((bench, entry, cls, loss, seed))
    cells: list[Cell] = []
    for i, (bench, entry, cls, loss, seed) in enumerate(plan):
        label = f"{bench.name} {entry.name}{'' if loss is None else ' + ' + loss.name} seed {seed}"
        if progress is not None:
            progress(i, len(plan), label)
        run_dir = None
        if cls.trainable:
            options = {**exp.train, "seed": seed, "loss_params": {} if loss is None else dict(loss.params)}
            opts = resolve_options(cls, None if loss is None else loss.name, options)
            scorer = cls(entry.config, seed=opts.seed)
            desc = scorer.describe()
            fp = run_fingerprint(benchmark_fingerprint=bench.fingerprint, scorer=desc,
                                 options=opts.model_dump(mode="json"))
            planned = _PlannedRun(loss=opts.loss, loss_params=dict(opts.loss_params), run_fingerprint=fp,
                                  seed=opts.seed)
            rid = expected_id(bench, scorer, split=exp.split, seed=seed, n_resamples=exp.n_resamples, run=planned)
            run_dir = runs_dir / bench.name / entry.name / fp[:16]
        else:
            scorer = make_scorer(entry.name, entry.config, seed=seed)
            rid = expected_id(bench, scorer, split=exp.split, seed=seed, n_resamples=exp.n_resamples)
        record = _existing(results_dir, bench, rid)
        status = "skipped"
        if record is None:
            run = None
            if cls.trainable:
                # a cell killed mid-training left its run folder: train() continues it
                try:
                    result = train(bench, entry.name, loss=None if loss is None else loss.name, config=entry.config,
                                   options=opts, out=run_dir, progress=None)
                except RunInUse as busy:  # another sweep trains this cell right now: leave it to that one
                    cells.append(Cell(
                        benchmark=bench.name, benchmark_fingerprint=bench.fingerprint, scorer=entry.name,
                        config=desc["config"], loss=opts.loss, loss_params=dict(opts.loss_params), seed=seed,
                        record_id=rid, status=IN_USE, record_path="", run_dir=str(run_dir), value=None,
                        note=busy.message, pid=busy.pid,
                    ))
                    if progress is not None:
                        progress(i + 1, len(plan), f"{label}: {busy.message}")
                    continue
                scorer, run = load_run(result.run_dir)
            record = evaluate_scorer(bench, scorer, split=exp.split, seed=seed, n_resamples=exp.n_resamples,
                                     run=run, results_dir=results_dir)
            status = "evaluated"
            if record.id != rid:  # pragma: no cover - the harness hashed differently than planned
                raise GradebenchError(
                    f"cell {label}: the record id {record.id[:12]} differs from the planned {rid[:12]}",
                    hint="gradebench.experiments.train's run fingerprint changed; report this as a bug",
                )
        cells.append(Cell(
            benchmark=bench.name, benchmark_fingerprint=bench.fingerprint, scorer=entry.name,
            config=record.scorer.config, loss=record.loss.name, loss_params=record.loss.params, seed=seed,
            record_id=record.id, status=status, record_path=str(record.path),
            run_dir=None if run_dir is None else str(run_dir),
            value=record.value("ndcg@5"),
        ))
    if progress is not None:
        progress(len(plan), len(plan), "done")
    return SweepResult(experiment=exp.name, file=str(experiment_yaml), results_dir=str(results_dir),
                       runs_dir=str(runs_dir), split=exp.split, cells=cells,
                       seconds=round(time.perf_counter() - t0, 3))


@dataclass(frozen=True)
class _PlannedRun:
    """The parts of a ``RunInfo`` that enter a record id, known before training."""

    loss: str | None
    loss_params: dict[str, Any]
    run_fingerprint: str
    seed: int
