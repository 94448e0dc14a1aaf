"""Policy run folders: what ``gradebench lipo | grpo | ppo`` write, and the driver they share.

Layout of ``RUN_DIR``::

    policy-run-config.json  written first (after every input check): method, policy, benchmark,
                            reward, loss, options, run fingerprint
    history.jsonl           one line per optimisation step (see gradebench.rl.steplog)
    policy/                 the trained policy + tokenizer, saved to a temp folder then renamed
    policy-run.json         written last, atomically: the run is complete iff this file exists

The folder follows the run-folder protocol of :mod:`gradebench.experiments.runs`
(:data:`POLICY_RUN`): a finished run of the same fingerprint in ``RUN_DIR`` is returned as is
(``cached=True``); an interrupted one of the same fingerprint (killed at any step) is started
over by the same command (its history, trainer state and policy are discarded: a policy run
has no checkpoints to resume from); a failed run removes what it wrote; a folder another live
process works on is refused ("in use by pid N"), as is a folder holding anything else.
Nothing is written before every input has been checked.

The run fingerprint is sha256 over the method, the policy folder's content, the benchmark
fingerprint and split, the reward's identity, the loss, every option and the gradebench
version, and the held-out judge's identity and options when the run has one (a run without
a judge keeps the fingerprint it had before judges existed).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gradebench._version import __version__
from gradebench.errors import RunError
from gradebench.experiments.policy_record import POLICY_SUFFIX, PolicyRecord, policy_record_id
from gradebench.experiments.runs import RunClaim, RunLayout, claim, from_final, read_final
from gradebench.experiments.store import record_dir, write_record
from gradebench.hashing import sha256_json
from gradebench.paths import check_writable_dir
from gradebench.rl.options import PolicyOptions
from gradebench.rl.policy import RUN_POLICY_DIR, precision
from gradebench.rl.steplog import StepLog, summarize, trajectory

RUN_CONFIG = "policy-run-config.json"
RUN_JSON = "policy-run.json"
HISTORY = "history.jsonl"
POLICY_DIR = RUN_POLICY_DIR
TRAINER_DIR = ".trainer"
RUN_SCHEMA_VERSION = 1
#: the last steps whose mean is a record's metrics
WINDOW = 10
#: ``gradebench lipo | grpo | ppo``: no checkpoints, so an interrupted run starts over
POLICY_RUN = RunLayout(what="policy run", command="gradebench lipo|grpo|ppo", redo="run it again", config=RUN_CONFIG,
                       final=RUN_JSON, schema_version=RUN_SCHEMA_VERSION, resumable=False, outputs=(POLICY_DIR,),
                       scratch=(HISTORY, TRAINER_DIR))


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
    judge: dict[str, Any] | None = None
    signal: dict[str, Any] | None = None
    trajectory: dict[str, Any] | None = None
    gradebench_version: str = __version__
    schema_version: int = RUN_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PolicyJob:
    """Everything a policy run needs, checked; ``train`` does the method's work.

    ``train(trainer_dir, steplog)`` trains and returns the model to save (with the policy's
    original tokenizer, loaded again from its folder, so training-time changes such as a pad
    token never reach the saved policy). ``options`` is the method's options model; the run
    records :meth:`~gradebench.rl.options.PolicyOptions.recorded` and the precision.
    ``judge``: the held-out judge's identity and options (part of the fingerprint), or None;
    ``extras()``, called after ``train``, gives the record's ``judge`` and ``signal`` sections.
    """

    bench: Any
    n_queries: int
    reference: str
    policy: Any  # PolicyInfo
    reward: dict[str, Any] | None
    loss: dict[str, Any] | None
    options: PolicyOptions
    key_map: dict[str, str]
    train: Callable[[Path, StepLog], Any]
    judge: dict[str, Any] | None = None
    extras: Callable[[], dict[str, Any]] | None = None
    method: str = field(init=False)
    split: str = field(init=False)
    seed: int = field(init=False)
    recorded: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.method = self.options.method
        self.split, self.seed = self.options.split, self.options.seed
        self.recorded = {**self.options.recorded(), "precision": precision()}

    def fingerprint(self) -> str:
        parts = {
            "method": self.method, "policy": self.policy.fingerprint,
            "benchmark_fingerprint": self.bench.fingerprint, "split": self.split,
            "reward": None if self.reward is None else {
                "identity": self.reward.get("fingerprint") or self.reward.get("source"),
                "normalize": self.reward.get("normalize")},
            "loss": self.loss, "options": self.recorded, "seed": self.seed, "gradebench_version": __version__,
        }
        if self.judge is not None:  # a run without a judge keeps the fingerprint it always had
            parts["judge"] = {"identity": self.judge.get("fingerprint") or self.judge.get("source"),
                              "options": self.judge.get("options")}
        return sha256_json(parts)


def run_job(job: PolicyJob, *, out: str | Path, results_dir: str | Path,
            progress: Callable[[int, int, str], None] | None = None) -> PolicyRunResult:
    """Run ``job`` into ``out`` and write its record under ``results_dir`` (see the module docstring)."""
    t0 = time.perf_counter()
    run = claim(out, job.fingerprint(), POLICY_RUN)
    with run:  # releases the folder's lock; a failure removes what the run wrote
        check_writable_dir(results_dir, what="--results-dir")
        if run.done:
            return _cached(run, results_dir)
        return _run(job, run, results_dir, progress, t0)


def _run(job: PolicyJob, run: RunClaim, results_dir: str | Path, progress: Callable[[int, int, str], None] | None,
         t0: float) -> PolicyRunResult:
    run.begin({"method": job.method, "policy": job.policy.as_dict(), "benchmark": job.bench.name,
               "benchmark_fingerprint": job.bench.fingerprint, "benchmark_path": str(job.bench.path),
               "split": job.split, "reward": job.reward, "loss": job.loss, "options": job.recorded, "seed": job.seed,
               "gradebench_version": __version__})
    steplog = StepLog(run.run_dir / HISTORY if run.main else None, key_map=job.key_map,
                      total_steps=job.options.steps, progress=progress)
    trainer_dir = run.run_dir / TRAINER_DIR
    t_fit = time.perf_counter()
    try:
        model = job.train(trainer_dir, steplog)
    finally:
        shutil.rmtree(trainer_dir, ignore_errors=True)
    timings = {"fit_s": round(time.perf_counter() - t_fit, 3)}
    extras = job.extras() if job.extras is not None else {}
    timings.update(extras.pop("timings", {}))
    if not run.main:
        return _result(job, run, steplog.lines, "", "", timings, extras)
    run.publish(POLICY_DIR, lambda tmp: _save_policy(model, job.policy.path, tmp))
    timings["total_s"] = round(time.perf_counter() - t0, 3)
    record = _record(job, run, steplog.lines, timings, extras)
    path = write_record(record, results_dir=results_dir)
    try:
        result = _result(job, run, steplog.lines, str(path), record.id, timings, extras)
        run.finish({**result.to_dict(), "record_json": record.to_dict()})
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return result


def read_policy_run(run_dir: str | Path) -> PolicyRunResult:
    """The :class:`PolicyRunResult` of a finished policy run folder."""
    return from_final(PolicyRunResult, read_final(run_dir, POLICY_RUN), run_dir, POLICY_RUN)


def _result(job: PolicyJob, run: RunClaim, lines: list[dict[str, Any]], record: str, record_id: str,
            timings: dict[str, float], extras: dict[str, Any]) -> PolicyRunResult:
    return PolicyRunResult(
        run_dir=str(run.run_dir), method=job.method, run_fingerprint=run.fingerprint, benchmark=job.bench.name,
        benchmark_fingerprint=job.bench.fingerprint, benchmark_path=str(job.bench.path), split=job.split,
        policy=job.policy.as_dict(), policy_out=str(run.run_dir / POLICY_DIR), reward=job.reward, loss=job.loss,
        options=job.recorded, seed=job.seed, n_steps=len(lines), metrics=summarize(lines, window=WINDOW),
        history=lines, record=record, record_id=record_id, timings=timings, judge=extras.get("judge"),
        signal=extras.get("signal"), trajectory=trajectory(lines),
    )


def _record(job: PolicyJob, run: RunClaim, lines: list[dict[str, Any]], timings: dict[str, float],
            extras: dict[str, Any]) -> PolicyRecord:
    from gradebench.experiments.environment import environment

    return PolicyRecord(
        id=policy_record_id(run.fingerprint), created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        method=job.method,
        benchmark={"name": job.bench.name, "fingerprint": job.bench.fingerprint, "path": str(job.bench.path),
                   "split": job.split, "n_queries": job.n_queries, "reference": job.reference},
        policy={"path": job.policy.path, "fingerprint": job.policy.fingerprint, "model_type": job.policy.model_type,
                "context": job.policy.context, "output_path": str(run.run_dir / POLICY_DIR)},
        reward=job.reward, loss=job.loss, options=job.recorded, seed=job.seed, n_steps=len(lines), window=WINDOW,
        metrics=summarize(lines, window=WINDOW), first_step=lines[0] if lines else None,
        last_step=lines[-1] if lines else None, run={"run_dir": str(run.run_dir), "run_fingerprint": run.fingerprint},
        timings=timings, environment=environment(), judge=extras.get("judge"), signal=extras.get("signal"),
        trajectory=trajectory(lines),
    )


def _cached(run: RunClaim, results_dir: str | Path) -> PolicyRunResult:
    """A finished run: its result, with its record (re)written under ``results_dir`` if missing there."""
    finished = run.finished or {}
    result = from_final(PolicyRunResult, finished, run.run_dir, POLICY_RUN)
    raw = finished.get("record_json")
    if not isinstance(raw, dict):
        raise RunError(f"{RUN_JSON} lacks its record", path=run.run_dir / RUN_JSON, hint="run it again")
    final = run.run_dir / RUN_JSON
    try:
        record = PolicyRecord.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        key = "record_json." + ".".join(str(x) for x in err.get("loc", ()))
        raise RunError(f"{RUN_JSON} holds an invalid record: {err.get('msg')}", path=final, key=key,
                       hint="the file was edited; delete the run folder and run it again") from None
    if record.id != policy_record_id(run.fingerprint, schema_version=record.schema_version):
        raise RunError(f"{RUN_JSON} holds the record of another run", path=final, key="record_json.id",
                       hint="the file was edited; delete the run folder and run it again")
    path = record_dir(results_dir, record.benchmark.name) / f"{record.id}{POLICY_SUFFIX}"
    if not path.is_file():
        path = write_record(record, results_dir=results_dir)
    result.record = str(path)
    result.cached = True
    return result


def _save_policy(model: Any, policy_path: str, folder: Path) -> None:
    """The model and the policy's original tokenizer, saved into ``folder``."""
    from transformers import AutoTokenizer

    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(policy_path).save_pretrained(folder)
