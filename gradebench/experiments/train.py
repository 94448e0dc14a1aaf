"""``train()``: one scorer trained on one benchmark into a run folder (see :mod:`.runs`).

The train split trains, the validation split early-stops (when the benchmark has one), and the
test split is never read. ``options.list_size`` subsamples each list by content
(:meth:`gradebench.benchmark.lists.Lists.subsample`), ``options.max_train_queries`` and
``options.max_validation_queries`` keep the first N training/validation queries (deterministic
subsets for quick CPU runs).

Under ``accelerate launch``/torchrun every process runs this function; only the main process
(``RANK`` 0) writes the run folder (see :class:`gradebench.experiments.runs.RunClaim`).

A run killed at any step (before its first checkpoint, during a checkpoint save, during the
final save) is continued by calling ``train`` again with the same arguments, ``resume`` or not:
from its last complete checkpoint if it has one, from scratch otherwise; either way it ends
with the weights and history of an uninterrupted run of the same seed.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gradebench.benchmark.lists import OPTIONAL_COLUMNS, Benchmark, open_benchmark
from gradebench.errors import InvalidArgumentError
from gradebench.experiments.runs import MODEL_DIR, SCORER_RUN, RunClaim, RunInfo, claim, from_final, run_fingerprint
from gradebench.scorers import TrainOptions, get_scorer_class
from gradebench.scorers.base import ProgressFn


@dataclass
class TrainResult:
    """What ``train`` returns and ``gradebench train --json`` prints."""

    run_dir: str
    scorer: str
    loss: str | None
    benchmark: str
    benchmark_fingerprint: str
    run_fingerprint: str
    seed: int
    best_epoch: int | None
    best_metrics: dict[str, Any]
    epochs_run: int
    timings: dict[str, float] = field(default_factory=dict)
    cached: bool = False
    #: the checkpoint an interrupted run was continued from (its folder name), or None
    resumed_from: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_info(cls, info: RunInfo, *, cached: bool, resumed_from: str | None = None) -> TrainResult:
        return cls(
            run_dir=info.run_dir, scorer=info.scorer, loss=info.loss, benchmark=info.benchmark,
            benchmark_fingerprint=info.benchmark_fingerprint, run_fingerprint=info.run_fingerprint,
            seed=info.seed, best_epoch=info.best_epoch, best_metrics=info.best_metrics,
            epochs_run=len(info.history), timings=info.timings, cached=cached, resumed_from=resumed_from,
        )


def resolve_options(scorer_cls: type, loss: str | None, options: TrainOptions | dict[str, Any] | None) -> TrainOptions:
    """Validated :class:`TrainOptions` with the loss resolved (argument > options > scorer default)."""
    from pydantic import ValidationError

    if options is None:
        opts = TrainOptions()
    elif isinstance(options, TrainOptions):
        opts = options
    elif isinstance(options, dict):
        try:
            opts = TrainOptions.model_validate(options)
        except ValidationError as e:
            err = e.errors()[0]
            key = ".".join(str(p) for p in err.get("loc", ())) or None
            raise InvalidArgumentError(f"bad training option: {err.get('msg')}", key=key,
                                       hint=f"options: {', '.join(TrainOptions.model_fields)}") from None
    else:
        raise InvalidArgumentError(f"options must be a dict or TrainOptions, got {type(options).__name__}")
    chosen = loss if loss is not None else opts.loss
    if scorer_cls.uses_loss:
        chosen = chosen or scorer_cls.default_loss
        from gradebench.losses import get_loss

        spec = get_loss(chosen)  # unknown names list close matches
        unknown = sorted(set(opts.loss_params) - set(spec.params))
        if unknown:
            raise InvalidArgumentError(f"loss {chosen!r} has no parameter(s) {', '.join(unknown)}",
                                       hint=f"its parameters: {', '.join(spec.params) or '(none)'}")
    elif chosen is not None:
        raise InvalidArgumentError(
            f"scorer {scorer_cls.name!r} does not train with a gradebench loss (got --loss {chosen})",
            hint="drop --loss; scorers that take one: see `gradebench scorers`",
        )
    return opts.model_copy(update={"loss": chosen})


def train(
    benchmark: str | Path | Benchmark,
    scorer: str,
    *,
    loss: str | None = None,
    config: dict[str, Any] | None = None,
    options: TrainOptions | dict[str, Any] | None = None,
    out: str | Path,
    resume: bool = False,
    progress: ProgressFn | None = None,
) -> TrainResult:
    """Train ``scorer`` on ``benchmark`` into the run folder ``out``.

    A finished run with the same fingerprint in ``out`` is returned as is (``cached=True``).
    An interrupted run of the same fingerprint is continued from its last complete checkpoint
    (``resumed_from``), or started again if it has none; ``resume=True`` only insists that there
    is an interrupted run. A folder holding another run is refused, one that another process
    works on too (the protocol of :mod:`gradebench.experiments.runs`). A failure leaves the
    folder as it was unless a checkpoint was written (then the same call continues from it).

    Raises:
        UnknownNameError: unknown scorer or loss.
        InvalidArgumentError: bad config/options, or a loss given to a scorer that takes none.
        RunError: ``out`` holds another run, or ``resume`` without an interrupted run there.
        RunInUse: another process is training into ``out``.
        BenchmarkError: the benchmark folder is missing or malformed.
    """
    if not isinstance(scorer, str):
        raise InvalidArgumentError(f"scorer must be a name, got {type(scorer).__name__}")
    if not isinstance(out, (str, Path)):
        raise InvalidArgumentError(f"out must be a path, got {type(out).__name__}")
    t0 = time.perf_counter()
    bench = open_benchmark(benchmark)
    cls = get_scorer_class(scorer)
    opts = resolve_options(cls, loss, options)
    instance = cls(config, seed=opts.seed)
    if not cls.trainable:
        raise InvalidArgumentError(f"scorer {scorer!r} is not trainable",
                                   hint=f"evaluate it directly: gradebench eval --scorer {scorer}")
    described = instance.describe()
    fp = run_fingerprint(benchmark_fingerprint=bench.fingerprint, scorer=described,
                         options=opts.model_dump(mode="json"))
    run = claim(out, fp, SCORER_RUN, resume=resume)
    if run.done:
        return TrainResult.from_info(from_final(RunInfo, run.finished, run.run_dir, SCORER_RUN), cached=True)
    with run:  # releases the folder's lock; a failure discards what cannot be continued
        return _train(run, bench, scorer, instance, cls, opts, described, fp, t0, progress)


def _train(run: RunClaim, bench: Benchmark, scorer: str, instance: Any, cls: type, opts: TrainOptions,
           described: dict[str, Any], fp: str, t0: float, progress: ProgressFn | None) -> TrainResult:
    if "train" not in bench.files:
        raise InvalidArgumentError(f"benchmark {bench.name} has no train split", path=bench.path,
                                   hint="build it with --resplit 80/10/10")
    columns = (*OPTIONAL_COLUMNS, *instance.list_columns())
    train_lists = bench.lists("train", columns=columns)
    if opts.max_train_queries is not None:
        train_lists = train_lists.head(opts.max_train_queries)
    if opts.list_size is not None:
        train_lists = train_lists.subsample(opts.list_size, seed=opts.seed)
    validation = bench.lists("validation", columns=columns) if "validation" in bench.files else None
    if validation is not None and opts.max_validation_queries is not None:
        validation = validation.head(opts.max_validation_queries)
    if validation is not None and opts.list_size is not None:
        validation = validation.subsample(opts.list_size, seed=opts.seed)
    run.begin({"benchmark": bench.name, "benchmark_fingerprint": bench.fingerprint, "benchmark_path": str(bench.path),
               "scorer": described, "options": opts.model_dump(mode="json")})
    start = run.checkpoint  # after begin(): half-written checkpoints are gone
    t_fit = time.perf_counter()
    history = instance.fit(train_lists, validation, opts, run_dir=run.run_dir, resume=start is not None,
                           progress=progress)
    fit_s = time.perf_counter() - t_fit
    best_epoch, best = _best(history, opts.eval_metric)
    info = RunInfo(
        run_dir=str(run.run_dir), scorer=scorer, scorer_version=cls.version,
        config=described["config"], loss=opts.loss, loss_params=dict(opts.loss_params),
        options=opts.model_dump(mode="json"), seed=opts.seed, benchmark=bench.name,
        benchmark_fingerprint=bench.fingerprint, benchmark_path=str(bench.path), run_fingerprint=fp,
        best_epoch=best_epoch, best_metrics=best, history=history,
        timings={"fit_s": round(fit_s, 3), "total_s": round(time.perf_counter() - t0, 3)},
        n_train_queries=train_lists.n_queries,
        n_validation_queries=0 if validation is None else validation.n_queries,
    )
    run.publish(MODEL_DIR, instance.save)
    run.finish(info.to_dict())
    return TrainResult.from_info(info, cached=False, resumed_from=None if start is None else start.name)


def _best(history: list[dict[str, Any]], metric: str) -> tuple[int | None, dict[str, Any]]:
    from gradebench.training.evaluation import metric_key

    key = metric if metric.startswith("eval_") else metric_key(metric)  # "NDCG@5" -> "eval_ndcg@5"
    scored = [h for h in history if isinstance(h.get(key), (int, float))]
    if not scored:
        return (history[-1].get("epoch") if history else None), (dict(history[-1]) if history else {})
    best = max(scored, key=lambda h: h[key])  # first of equal values: max keeps the earliest
    return best.get("epoch"), dict(best)
