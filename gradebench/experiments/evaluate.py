"""``evaluate_scorer()``: score one split of a benchmark and write a result record.

Example::

    from gradebench.scorers import make_scorer
    from gradebench.experiments import evaluate_scorer

    rec = evaluate_scorer("gradebench-out/demo/f9d6d093ff87", make_scorer("bm25"), seed=0)
    rec.metrics["ndcg@5"].value, rec.metrics["ndcg@5"].ci_low, rec.path

    # any model (a folder or a Hub id) through an adapter: `gradebench eval --model`
    rec = evaluate_model("gradebench-out/demo/f9d6d093ff87", "path/to/model", adapter="auto",
                         check_invariance=True)
    rec.scorer.model.digest, rec.invariance.max_abs_diff, rec.bias.length_pairs.gap

Every record carries bias controls (:mod:`gradebench.experiments.bias`). Under ``torchrun`` or
``accelerate launch`` a model adapter shards its batches over the processes; every process
computes the same record and only the main one (``RANK`` 0) writes it.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from gradebench.benchmark.lists import OPTIONAL_COLUMNS, Benchmark, Lists, open_benchmark
from gradebench.ticks import reporting
from gradebench.errors import InvalidArgumentError, RunError
from gradebench.experiments import suite as S
from gradebench.experiments.bias import GROUP_COLUMNS, bias_controls
from gradebench.experiments.environment import environment
from gradebench.experiments.figures import dense_from_lists, figure_sets, query_figures
from gradebench.experiments.record import (
    SUITE_VERSION,
    EvalRecord,
    file_names,
    json_float,
    record_id,
)
from gradebench.experiments.store import write_record
from gradebench.paths import RESULTS_DIR
from gradebench.scorers.base import ProgressFn, Scorer, check_scores
from gradebench.stats._checks import check_n_resamples, check_seed
from gradebench.training.evaluation import evaluate_lists

#: where records go by default (``gradebench-out/results``, not the committed ``leaderboard/results``)
DEFAULT_RESULTS_DIR = RESULTS_DIR


def system_seed(scorer: Scorer, run: Any) -> int:
    """The seed that determines the scorer's outputs: the run's, else the scorer's own."""
    return int(run.seed) if run is not None else int(getattr(scorer, "seed", 0))


def expected_id(bench: Benchmark, scorer: Scorer, *, split: str, seed: int, n_resamples: int,
                run: Any = None) -> str:
    """The id the record of this evaluation will have (to skip work that is already done)."""
    desc = scorer.describe()
    return record_id(
        benchmark_fingerprint=bench.fingerprint, split=split, scorer=desc,
        loss=None if run is None else run.loss, loss_params={} if run is None else dict(run.loss_params or {}),
        run_fingerprint=None if run is None else run.run_fingerprint, system_seed=system_seed(scorer, run),
        seed=seed, n_resamples=n_resamples,
    )


def evaluate_scorer(
    benchmark: str | Path | Benchmark,
    scorer: Scorer,
    *,
    split: str = "test",
    seed: int = 0,
    n_resamples: int = 1000,
    run: Any = None,
    results_dir: str | Path = DEFAULT_RESULTS_DIR,
    write: bool = True,
    zero_shot: bool = False,
    progress: ProgressFn | None = None,
    check_invariance: bool = False,
) -> EvalRecord:
    """Score ``split`` of ``benchmark`` with ``scorer``, compute the suite with CIs, write the record.

    Args:
        benchmark: a benchmark folder or an opened :class:`~gradebench.benchmark.lists.Benchmark`.
        scorer: any :class:`~gradebench.scorers.Scorer` (trained ones come from
            :func:`gradebench.experiments.runs.load_run`, passed with its ``RunInfo`` as ``run``).
        split: the split to score. seed: bootstrap seed (>= 0).
        n_resamples: bootstrap resamples per CI.
        run: the run's ``RunInfo`` (loss, options, run fingerprint, training timings), or None.
        results_dir: root of the record store; the record goes to ``<results_dir>/<benchmark>/<id>.json``.
        write: False computes the record without writing it (``record.path`` stays None).
        zero_shot: allow a ``run`` trained on another benchmark (a transfer evaluation; the
            leaderboard labels such systems with the benchmark they were trained on).
        progress: optional ``progress(done, total, message)``.
        check_invariance: re-score a sample at batch size 1 and record the largest difference
            (``record.invariance``; model adapters only).

    Returns:
        The :class:`~gradebench.experiments.record.EvalRecord` (metrics: :mod:`gradebench.experiments.suite`).

    Raises:
        BenchmarkError / UnknownNameError: bad benchmark folder or split.
        InvalidArgumentError: the scorer returned a bad shape or NaN, bad seed/n_resamples.
    """
    seed = check_seed(seed)
    n_resamples = check_n_resamples(n_resamples)
    if not isinstance(scorer, Scorer):
        raise InvalidArgumentError(f"scorer must be a Scorer instance, got {type(scorer).__name__}",
                                   hint="make one with gradebench.scorers.make_scorer(name, config)")
    if check_invariance and not callable(getattr(scorer, "check_invariance", None)):
        raise InvalidArgumentError(f"--check-invariance applies to external models, not to scorer {scorer.name!r}",
                                   hint="drop --check-invariance, or evaluate a model with --model PATH")
    t_start = time.perf_counter()
    step = _stepper(progress, 6)
    if not isinstance(benchmark, Benchmark):
        from gradebench.experiments.build import check_benchmark_folder

        check_benchmark_folder(benchmark)  # a recipe folder names its builds
    bench = open_benchmark(benchmark)
    if write:
        from gradebench.paths import check_writable_dir

        check_writable_dir(results_dir, what="--results-dir")
    if run is not None and run.benchmark_fingerprint != bench.fingerprint and not zero_shot:
        raise RunError(
            f"the run was trained on {run.benchmark} ({run.benchmark_fingerprint[:12]}), not on {bench.name} "
            f"({bench.fingerprint[:12]})", path=getattr(run, "run_dir", None),
            hint="evaluate it on its own benchmark, or pass --zero-shot for a transfer evaluation",
        )
    lists = bench.lists(split, columns=(*OPTIONAL_COLUMNS, *GROUP_COLUMNS, *scorer.list_columns()))
    if lists.n_queries == 0:
        raise InvalidArgumentError(f"split {split!r} of {bench.name} has no queries", path=bench.path,
                                   hint="evaluate another split")
    return evaluate_lists_record(bench, lists, scorer, seed=seed, n_resamples=n_resamples, run=run,
                                 results_dir=results_dir, write=write, progress=progress,
                                 check_invariance=check_invariance, t_start=t_start, step=step)


def evaluate_lists_record(
    bench: Benchmark,
    lists: Lists,
    scorer: Scorer,
    *,
    seed: int,
    n_resamples: int,
    run: Any = None,
    results_dir: str | Path = DEFAULT_RESULTS_DIR,
    write: bool = True,
    progress: ProgressFn | None = None,
    check_invariance: bool = False,
    t_start: float | None = None,
    step: Any = None,
    human: dict[str, Any] | None = None,
) -> EvalRecord:
    """The second half of :func:`evaluate_scorer`: score ``lists`` (one split of ``bench``, already
    read) and compute, build and write the record. The human ceiling
    (:mod:`gradebench.experiments.human`) calls it with lists whose ``relevance`` is one half of the
    annotators' grades, so the ceiling goes through exactly the metrics of every system; ``human``
    is then the record's :class:`~gradebench.experiments.record.HumanAgreement`."""
    t_start = time.perf_counter() if t_start is None else t_start
    step = _stepper(progress, 6) if step is None else step
    split = lists.split
    desc = scorer.describe()
    scoring = f"scoring {lists.n_candidates} candidates with {desc['name']}"
    step(f"loading {desc['name']}")
    t0 = time.perf_counter()
    scorer.prepare()  # the model's loading (and a device's start-up) is not scoring time
    load_s = time.perf_counter() - t0
    step(scoring)
    t0 = time.perf_counter()
    with reporting(_pass_progress(progress, step, scoring)):
        scores = check_scores(scorer.score(lists), lists, who=desc["name"])
    scoring_s = time.perf_counter() - t0

    step("metrics")
    t0 = time.perf_counter()
    tiers = S.tier_info(lists)
    specs = S.suite(tiers=tiers is not None)
    labels = lists.relevance
    result = evaluate_lists(scores, lists, specs)
    separation = S.separation(lists, scores, labels)
    metrics_s = time.perf_counter() - t0

    step(f"bootstrap ({n_resamples} resamples)")
    t0 = time.perf_counter()
    metrics = S.metric_values(result, scores, labels, lists.mask, specs=specs, n_resamples=n_resamples, seed=seed)
    bootstrap_s = time.perf_counter() - t0

    step("bias controls" + (" and the invariance check" if check_invariance else ""))
    bias = bias_controls(lists, scores, system=desc["name"])
    invariance = None
    if check_invariance:
        checking = "the invariance check (one item a batch)"
        with reporting(_pass_progress(progress, step, checking)):
            invariance = scorer.check_invariance(lists, scores)

    rid = expected_id(bench, scorer, split=split, seed=seed, n_resamples=n_resamples, run=run)
    record = EvalRecord(
        id=rid,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        benchmark={"name": bench.name, "fingerprint": bench.fingerprint, "path": str(Path(bench.path).resolve()),
                   "split": split, "n_queries": lists.n_queries, "n_candidates": lists.n_candidates, "tiers": tiers},
        split=split,
        labels="relevance" if human is None else "other-half",
        scorer={**desc, "inference": scorer.inference_info()},
        loss={"name": None if run is None else run.loss,
              "params": {} if run is None else dict(run.loss_params or {})},
        run=None if run is None else _run_ref(run),
        seed=seed,
        system_seed=system_seed(scorer, run),
        suite_version=SUITE_VERSION,
        metrics=metrics,
        bootstrap={"n_resamples": n_resamples, "seed": seed, "confidence": S.CONFIDENCE, "method": S.CI_METHOD,
                   "unit": "query", "corpus_method": S.CORPUS_METHOD},
        separation=separation,
        timings={
            "load_s": round(load_s, 6),
            "scoring_s": round(scoring_s, 6),
            "candidates_per_s": json_float(round(lists.n_candidates / scoring_s, 3)) if scoring_s > 0 else None,
            "metrics_s": round(metrics_s, 6), "bootstrap_s": round(bootstrap_s, 6),
            "total_s": round(time.perf_counter() - t_start, 6),
            "train": None if run is None else dict(run.timings or {}),
        },
        environment=environment(scorer),
        files=file_names(rid),
        bias=bias,
        invariance=invariance,
        human=human,
    )
    if write and is_main_process():
        step("writing record")
        figures = query_figures(bench.name, dense_from_lists(lists, scores)) if figure_sets(bench.name) else {}
        write_record(record, predictions_table(rid, lists, scores),
                     per_query_table(rid, lists, result, specs, figures), results_dir)
    if progress is not None:
        progress(6, 6, "done")
    return record


def evaluate_model(
    benchmark: str | Path | Benchmark,
    model: str | Path,
    *,
    adapter: str = "auto",
    options: dict[str, Any] | None = None,
    trust_remote_code: bool = False,
    split: str = "test",
    seed: int = 0,
    n_resamples: int = 1000,
    results_dir: str | Path = DEFAULT_RESULTS_DIR,
    write: bool = True,
    check_invariance: bool = False,
    progress: ProgressFn | None = None,
) -> EvalRecord:
    """Evaluate any model (a local folder or a Hugging Face Hub id) on ``split``: what ``gradebench eval --model`` does.

    Args:
        model: the model folder or Hub id (offline: resolved from the local Hugging Face cache).
        adapter: ``auto`` (read from the model's configs) or one of
            :data:`gradebench.scorers.adapters.ADAPTER_NAMES`.
        options: the adapter's options (``--set key=value``: ``batch_size``, ``dtype``, ``label``,
            ``template``, ...; see ``gradebench scorers``).
        trust_remote_code: allow code inside the model folder to run.
        seed: the bootstrap seed, and the seed of the candidate order inside batches.
        check_invariance: re-score a sample at batch size 1 (``record.invariance``).
        Others: as :func:`evaluate_scorer`.

    Raises:
        InvalidArgumentError / SourceNotFoundError: not a model, a head that does not fit the
            adapter, a bad option or template, code in the folder without ``trust_remote_code``.
    """
    from gradebench.scorers.adapters import make_model_scorer

    scorer = make_model_scorer(model, adapter, options, trust_remote_code=trust_remote_code, seed=check_seed(seed))
    return evaluate_scorer(benchmark, scorer, split=split, seed=seed, n_resamples=n_resamples,
                           results_dir=results_dir, write=write, progress=progress,
                           check_invariance=check_invariance)


def is_main_process() -> bool:
    """Whether this process writes (``RANK`` 0, or no distributed launch)."""
    from gradebench.experiments.runs import is_main_process as main

    return main()


def _run_ref(run: Any) -> dict[str, Any]:
    return {
        "run_dir": str(run.run_dir), "run_fingerprint": run.run_fingerprint, "benchmark": run.benchmark,
        "benchmark_fingerprint": run.benchmark_fingerprint, "seed": int(run.seed),
        "options": dict(run.options or {}), "best_epoch": run.best_epoch,
        "best_metrics": _finite(dict(run.best_metrics or {})), "timings": dict(run.timings or {}),
    }


def _finite(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (json_float(v) if isinstance(v, float) else v) for k, v in d.items()}


def _stepper(progress: ProgressFn | None, total: int):
    state = {"done": 0}

    def step(message: str) -> None:
        if progress is not None:
            progress(state["done"], total, message)
        state["done"] += 1

    step.state, step.total = state, total  # type: ignore[attr-defined]  # read by _pass_progress
    return step


def _pass_progress(progress: ProgressFn | None, step: Any, message: str) -> Any:
    """A :func:`gradebench.ticks.reporting` callback that shows a pass's items done inside the
    current step (the bar moves within it; the message counts the items), or None."""
    if progress is None:
        return None
    at, total = step.state["done"] - 1, step.total  # the step in progress, of how many

    def update(done: int, of: int) -> None:
        progress(at + done / max(of, 1), total, f"{message}: {done:,}/{of:,}")

    return update


def predictions_table(rid: str, lists: Lists, scores: np.ndarray) -> Any:
    """One row per real candidate, row-major in the benchmark's list order."""
    import pyarrow as pa

    rows, cols = lists.flat_index()
    n = len(rows)
    data = {
        "record_id": pa.array([rid] * n, pa.string()).dictionary_encode(),
        "query_id": pa.array(lists.query_ids[rows].tolist(), pa.string()),
        "candidate_id": pa.array(lists.candidate_ids[rows, cols].tolist(), pa.string()),
        "split": pa.array([lists.split] * n, pa.string()).dictionary_encode(),
        "prediction": pa.array(scores[rows, cols], pa.float64()),
        "relevance": pa.array(lists.relevance[rows, cols], pa.float64()),
        "score": pa.array(lists.score[rows, cols], pa.float64()),
    }
    if "tier" in lists.extra:
        data["tier"] = pa.array([None if v is None else str(v) for v in lists.extra["tier"][rows, cols]], pa.string())
    return pa.table(data)


def per_query_table(rid: str, lists: Lists, result: Any, specs: list,
                    figures: dict[str, np.ndarray] | None = None) -> Any:
    """Per-query metric values in long form (metric-major, queries in list order); null = excluded.
    Then the record's report figures (:mod:`gradebench.experiments.figures`), one row per query
    each, named ``figure:<set>.<column>`` (NaN kept: undefined for that query)."""
    import pyarrow as pa

    names = [s.name for s in specs if s.level == "query"]
    figures = figures or {}
    n = lists.n_queries
    values = np.concatenate([result.per_query[m] for m in names]) if names else np.zeros(0)
    mask = np.isnan(values)
    if figures:
        values = np.concatenate([values, *(np.asarray(figures[f], dtype=np.float64) for f in figures)])
        mask = np.concatenate([mask, np.zeros(n * len(figures), dtype=bool)])
    labels = [*names, *figures]
    return pa.table({
        "record_id": pa.array([rid] * (n * len(labels)), pa.string()).dictionary_encode(),
        "query_id": pa.array(np.tile(lists.query_ids, len(labels)).tolist(), pa.string()),
        "metric": pa.array(np.repeat(labels, n).tolist(), pa.string()).dictionary_encode(),
        "value": pa.array(values, pa.float64(), mask=mask),
    })
