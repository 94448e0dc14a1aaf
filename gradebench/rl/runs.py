"""Policy run folders: what ``gradebench lipo | grpo | ppo`` write, and the driver they share.

Layout of ``RUN_DIR``::

    policy-run-config.json  written first (after every input check): method, policy, benchmark,
                            reward, loss, options, run fingerprint
    history.jsonl           one line per optimisation step (see gradebench.rl.steplog)
    policy/                 the trained policy + tokenizer, saved to a temp folder then renamed
    policy-run.json         written last, atomically: the run is complete iff this file exists

The run fingerprint is sha256 over the method, the policy folder's content, the benchmark
fingerprint and split, the reward's identity, the loss, every option and the gradebench
version. A finished run of the same fingerprint in ``RUN_DIR`` is returned as is
(``cached=True``); an interrupted one of the same fingerprint is started over; a folder holding
anything else is refused. Nothing is written before every input has been checked.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gradebench._version import __version__
from gradebench.errors import RunError
from gradebench.experiments.policy_record import (
    PolicyRecord,
    policy_record_id,
    write_policy_record,
)
from gradebench.experiments.runs import read_json
from gradebench.hashing import sha256_json
from gradebench.paths import check_writable_dir, publish_dir, write_json_atomic
from gradebench.rl.steplog import StepLog, summarize

RUN_CONFIG = "policy-run-config.json"
RUN_JSON = "policy-run.json"
HISTORY = "history.jsonl"
POLICY_DIR = "policy"
TRAINER_DIR = ".trainer"
RUN_SCHEMA_VERSION = 1
#: the last steps whose mean is a record's metrics
WINDOW = 10


@dataclass
class PolicyRunResult:
    """What ``lipo``/``grpo``/``ppo`` return, what ``--json`` prints and ``policy-run.json`` holds."""

    run_dir: str
    method: str
    run_fingerprint: str
    benchmark: str
    benchmark_fingerprint: str
    benchmark_path: str
    split: str
    policy: dict[str, Any]
    policy_out: str
    reward: dict[str, Any] | None
    loss: dict[str, Any] | None
    options: dict[str, Any]
    seed: int
    n_steps: int
    metrics: dict[str, float | None]
    history: list[dict[str, Any]]
    record: str
    record_id: str
    timings: dict[str, float] = field(default_factory=dict)
    cached: bool = False
    gradebench_version: str = __version__
    schema_version: int = RUN_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PolicyJob:
    """Everything a policy run needs, checked; ``train`` does the method's work.

    ``train(trainer_dir, steplog)`` trains and returns the model to save (with the policy's
    original tokenizer, loaded again from its folder, so training-time changes such as a pad
    token never reach the saved policy).
    """

    method: str
    bench: Any
    split: str
    n_queries: int
    reference: str
    policy: Any  # PolicyInfo
    reward: dict[str, Any] | None
    loss: dict[str, Any] | None
    options: dict[str, Any]
    seed: int
    steps: int
    key_map: dict[str, str]
    train: Callable[[Path, StepLog], Any]

    def fingerprint(self) -> str:
        return sha256_json({
            "method": self.method, "policy": self.policy.fingerprint,
            "benchmark_fingerprint": self.bench.fingerprint, "split": self.split,
            "reward": None if self.reward is None else {
                "identity": self.reward.get("fingerprint") or self.reward.get("source"),
                "normalize": self.reward.get("normalize")},
            "loss": self.loss, "options": self.options, "seed": self.seed, "gradebench_version": __version__,
        })


def is_main_process() -> bool:
    return os.environ.get("RANK", "0") == "0"


def run_job(job: PolicyJob, *, out: str | Path, results_dir: str | Path,
            progress: Callable[[int, int, str], None] | None = None) -> PolicyRunResult:
    """Run ``job`` into ``out`` and write its record under ``results_dir`` (see the module docstring)."""
    t0 = time.perf_counter()
    run_dir = Path(out)
    fp = job.fingerprint()
    finished = _check_run_dir(run_dir, fp)
    check_writable_dir(run_dir, what="--out")
    check_writable_dir(results_dir, what="--results-dir")
    if finished is not None:
        return _cached(finished, run_dir, results_dir)
    _clean_interrupted(run_dir)
    existed = run_dir.is_dir()
    main = is_main_process()
    try:
        return _run(job, run_dir, fp, results_dir, progress, t0, main)
    except BaseException:
        if main:
            _remove_partial(run_dir, remove_dir=not existed)
        raise


def _run(job: PolicyJob, run_dir: Path, fp: str, results_dir: str | Path,
         progress: Callable[[int, int, str], None] | None, t0: float, main: bool) -> PolicyRunResult:
    if main:
        write_json_atomic(run_dir / RUN_CONFIG, {
            "run_fingerprint": fp, "method": job.method, "policy": job.policy.as_dict(),
            "benchmark": job.bench.name, "benchmark_fingerprint": job.bench.fingerprint,
            "benchmark_path": str(job.bench.path), "split": job.split, "reward": job.reward, "loss": job.loss,
            "options": job.options, "seed": job.seed, "gradebench_version": __version__,
        })
    steplog = StepLog(run_dir / HISTORY if main else None, key_map=job.key_map, total_steps=job.steps,
                      progress=progress)
    trainer_dir = run_dir / TRAINER_DIR
    t_fit = time.perf_counter()
    try:
        model = job.train(trainer_dir, steplog)
    finally:
        shutil.rmtree(trainer_dir, ignore_errors=True)
    fit_s = time.perf_counter() - t_fit
    timings = {"fit_s": round(fit_s, 3)}
    if not main:
        return _result(job, run_dir, fp, steplog.lines, "", "", timings)
    _save_policy(model, job.policy.path, run_dir)
    timings["total_s"] = round(time.perf_counter() - t0, 3)
    record = _record(job, run_dir, fp, steplog.lines, timings)
    path = write_policy_record(record, results_dir)
    try:
        result = _result(job, run_dir, fp, steplog.lines, str(path), record.id, timings)
        write_json_atomic(run_dir / RUN_JSON, {**result.to_dict(), "record_json": record.to_dict()})
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return result


def read_policy_run(run_dir: str | Path) -> PolicyRunResult:
    """The :class:`PolicyRunResult` of a finished policy run folder."""
    d = Path(run_dir)
    if not (d / RUN_JSON).is_file():
        raise RunError("not a finished policy run (no policy-run.json)", path=d,
                       hint="give the --out folder of a finished `gradebench lipo|grpo|ppo`")
    raw = read_json(d / RUN_JSON, what=RUN_JSON)
    if raw.get("schema_version") != RUN_SCHEMA_VERSION:
        raise RunError(f"policy run format v{raw.get('schema_version')} is not supported", path=d / RUN_JSON,
                       hint="run it again with this gradebench version")
    fields = PolicyRunResult.__dataclass_fields__
    try:
        result = PolicyRunResult(**{k: v for k, v in raw.items() if k in fields})
    except TypeError as e:
        raise RunError(f"policy-run.json lacks fields ({e})", path=d / RUN_JSON, hint="run it again") from None
    result.run_dir = str(d)
    return result


def _result(job: PolicyJob, run_dir: Path, fp: str, lines: list[dict[str, Any]], record: str, record_id: str,
            timings: dict[str, float]) -> PolicyRunResult:
    return PolicyRunResult(
        run_dir=str(run_dir), method=job.method, run_fingerprint=fp, benchmark=job.bench.name,
        benchmark_fingerprint=job.bench.fingerprint, benchmark_path=str(job.bench.path), split=job.split,
        policy=job.policy.as_dict(), policy_out=str(run_dir / POLICY_DIR), reward=job.reward, loss=job.loss,
        options=job.options, seed=job.seed, n_steps=len(lines), metrics=summarize(lines, window=WINDOW),
        history=lines, record=record, record_id=record_id, timings=timings,
    )


def _record(job: PolicyJob, run_dir: Path, fp: str, lines: list[dict[str, Any]],
            timings: dict[str, float]) -> PolicyRecord:
    from gradebench.experiments.environment import environment

    return PolicyRecord(
        id=policy_record_id(fp), created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        method=job.method,
        benchmark={"name": job.bench.name, "fingerprint": job.bench.fingerprint, "path": str(job.bench.path),
                   "split": job.split, "n_queries": job.n_queries, "reference": job.reference},
        policy={"path": job.policy.path, "fingerprint": job.policy.fingerprint, "model_type": job.policy.model_type,
                "context": job.policy.context, "output_path": str(run_dir / POLICY_DIR)},
        reward=job.reward, loss=job.loss, options=job.options, seed=job.seed, n_steps=len(lines), window=WINDOW,
        metrics=summarize(lines, window=WINDOW), first_step=lines[0] if lines else None,
        last_step=lines[-1] if lines else None, run={"run_dir": str(run_dir), "run_fingerprint": fp},
        timings=timings, environment=environment(),
    )


def _cached(raw: dict[str, Any], run_dir: Path, results_dir: str | Path) -> PolicyRunResult:
    """A finished run: its result, with its record (re)written under ``results_dir`` if missing there."""
    result = read_policy_run(run_dir)
    record = PolicyRecord.model_validate(raw["record_json"])
    path = Path(results_dir) / record.benchmark.name / Path(result.record).name if result.record else None
    if path is None or not path.is_file():
        path = write_policy_record(record, results_dir)
    result.record = str(path)
    result.cached = True
    return result


def _check_run_dir(run_dir: Path, fp: str) -> dict[str, Any] | None:
    """The finished run's raw ``policy-run.json`` if ``run_dir`` holds this run, None to start it."""
    if run_dir.exists() and not run_dir.is_dir():
        raise RunError("--out is a file, not a folder", path=run_dir, hint="choose another --out")
    if (run_dir / RUN_JSON).is_file():
        raw = read_json(run_dir / RUN_JSON, what=RUN_JSON)
        if raw.get("run_fingerprint") == fp and isinstance(raw.get("record_json"), dict):
            return raw
        raise RunError("the folder holds another finished policy run", path=run_dir,
                       hint="choose another --out (or delete that run)")
    if (run_dir / RUN_CONFIG).is_file():
        started = read_json(run_dir / RUN_CONFIG, what=RUN_CONFIG)
        if started.get("run_fingerprint") != fp:
            raise RunError("the folder holds an interrupted policy run of another configuration", path=run_dir,
                           hint="choose another --out, or repeat that run's exact options to start it over")
        return None
    if run_dir.is_dir() and any(run_dir.iterdir()):
        raise RunError("--out is a non-empty folder that holds no policy run", path=run_dir,
                       hint="choose a new or empty folder")
    return None


def _remove_partial(run_dir: Path, *, remove_dir: bool) -> None:
    """A run that failed leaves nothing: its config, history and temp folders go (and the folder, if it made it)."""
    if (run_dir / RUN_JSON).is_file():
        return
    _clean_interrupted(run_dir)
    shutil.rmtree(run_dir / POLICY_DIR, ignore_errors=True)
    (run_dir / RUN_CONFIG).unlink(missing_ok=True)
    if remove_dir:
        with contextlib.suppress(OSError):
            run_dir.rmdir()


def _clean_interrupted(run_dir: Path) -> None:
    """Remove what an interrupted run of this configuration left (it starts over)."""
    if not run_dir.is_dir():
        return
    (run_dir / HISTORY).unlink(missing_ok=True)
    shutil.rmtree(run_dir / TRAINER_DIR, ignore_errors=True)
    for leftover in run_dir.glob(".policy.incomplete-*"):
        shutil.rmtree(leftover, ignore_errors=True)


def _save_policy(model: Any, policy_path: str, run_dir: Path) -> None:
    """The model and the policy's original tokenizer, saved into a temp folder inside ``run_dir``
    and renamed onto ``run_dir/policy``."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(policy_path)
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".policy.incomplete-", dir=run_dir))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        publish_dir(tmp, run_dir / POLICY_DIR)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
