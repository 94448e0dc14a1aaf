"""Policy records: the result of one policy-optimisation run, beside the scorer records.

A policy run (``gradebench lipo | grpo | ppo``) writes one JSON record
``<results_dir>/<benchmark>/<id>.policy.json`` (``kind: "gradebench.policy"``,
``schema_version`` 1), atomically (temp file, then rename). The name does not match the
scorer records' ``<id>.json``, so :func:`gradebench.experiments.store.record_files` and the
leaderboard never mistake one for an :class:`~gradebench.experiments.record.EvalRecord`;
:func:`list_policy_records` lists them.

The ``id`` is the sha256 of canonical JSON of the schema version, the kind and the run
fingerprint (which covers the method, policy weights, benchmark, reward, loss, options and
seed). ``metrics`` holds the mean of each logged column over the last ``window`` steps
(``reward_mean``, ``reward_std``, ``kl``, ``above_reference``, ``loss`` and the method's extras).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from gradebench.experiments.record import Environment, LossRef, RecordError
from gradebench.hashing import sha256_json
from gradebench.paths import write_text_atomic

POLICY_SCHEMA_VERSION = 1
POLICY_KIND = "gradebench.policy"
POLICY_SUFFIX = ".policy.json"
Method = Literal["lipo", "grpo", "ppo"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=(), json_schema_serialization_defaults_required=True)


class PolicyBenchmarkRef(_Model):
    name: str
    fingerprint: str
    path: str
    split: str = Field(description="the split whose queries (and, for LiPO, lists) trained the policy")
    n_queries: int = Field(ge=0)
    reference: str = Field(description="what above_reference compares with: 'fair tier', 'median grade' or 'mixed'")


class PolicyRef(_Model):
    path: str = Field(description="the initial policy's folder")
    fingerprint: str = Field(description="sha256 over the initial policy folder's files")
    model_type: str
    context: int = Field(ge=1)
    output_path: str = Field(description="the trained policy's folder (RUN_DIR/policy)")


class RewardRef(_Model):
    source: str = Field(description="the reward folder/run given, or the callable's name")
    fingerprint: str | None
    normalize: bool | None = Field(description="rewards standardised with the export's calibration (null: a callable)")


class PolicyRunRef(_Model):
    run_dir: str
    run_fingerprint: str


class PolicyRecord(_Model):
    """One policy-optimisation run's result (``to_dict()`` is the JSON written)."""

    schema_version: Literal[1] = POLICY_SCHEMA_VERSION
    kind: Literal["gradebench.policy"] = POLICY_KIND
    id: str = Field(pattern=r"^[0-9a-f]{64}$")
    created_at: str
    method: Method
    benchmark: PolicyBenchmarkRef
    policy: PolicyRef
    reward: RewardRef | None = Field(description="null for LiPO, which learns from the benchmark's grades")
    loss: LossRef | None = Field(description="LiPO's ranking loss; null for GRPO/PPO")
    options: dict[str, Any]
    seed: int
    n_steps: int = Field(ge=0)
    window: int = Field(ge=1, description="metrics are means over the last `window` logged steps")
    metrics: dict[str, float | None]
    first_step: dict[str, Any] | None
    last_step: dict[str, Any] | None
    run: PolicyRunRef
    timings: dict[str, float]
    environment: Environment

    _path: Path | None = PrivateAttr(default=None)

    @property
    def path(self) -> Path | None:
        return self._path

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def policy_record_id(run_fingerprint: str) -> str:
    """The content id of a policy record (see the module docstring)."""
    return sha256_json({"schema_version": POLICY_SCHEMA_VERSION, "kind": POLICY_KIND,
                        "run_fingerprint": run_fingerprint})


def write_policy_record(record: PolicyRecord, results_dir: str | Path) -> Path:
    """Write ``<results_dir>/<benchmark>/<id>.policy.json`` atomically; returns its path."""
    folder = Path(results_dir) / record.benchmark.name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{record.id}{POLICY_SUFFIX}"
    write_text_atomic(path, json.dumps(record.to_dict(), indent=2, sort_keys=True, allow_nan=False) + "\n")
    record._path = path
    return path


def read_policy_record(path: str | Path) -> PolicyRecord:
    """Read and validate one policy record.

    Raises:
        RecordError: no such file, invalid JSON, another schema version or kind, or invalid content.
    """
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordError("no such policy record", path=p, hint="run `gradebench lipo|grpo|ppo` first") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise RecordError(f"policy record is not valid JSON ({e})", path=p, hint="delete it and run again") from None
    if not isinstance(raw, dict) or raw.get("kind") != POLICY_KIND:
        raise RecordError("not a policy record", path=p, hint="give a <id>.policy.json file")
    if raw.get("schema_version") != POLICY_SCHEMA_VERSION:
        raise RecordError(f"policy record schema v{raw.get('schema_version')} is not supported (this gradebench "
                          f"reads v{POLICY_SCHEMA_VERSION})", path=p, hint="run the policy again with this version")
    try:
        record = PolicyRecord.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(x) for x in err.get("loc", ())) or None
        raise RecordError(f"invalid policy record: {err.get('msg')}", path=p, key=key,
                          hint="delete it and run again") from None
    record._path = p
    return record


def list_policy_records(results_dir: str | Path, *, benchmark: str | None = None) -> list[PolicyRecord]:
    """Every policy record under ``results_dir`` (one benchmark's, if given), sorted by benchmark then id."""
    root = Path(results_dir)
    if not root.is_dir():
        return []
    folders = [root / benchmark] if benchmark is not None else sorted(p for p in root.iterdir() if p.is_dir())
    records = [read_policy_record(f) for folder in folders if folder.is_dir()
               for f in sorted(folder.glob(f"*{POLICY_SUFFIX}")) if not f.name.startswith(".")]
    return sorted(records, key=lambda r: (r.benchmark.name, r.id))


def policy_schema_json() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a policy record, generated from :class:`PolicyRecord`."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://gradebench.dev/schemas/policy-v{POLICY_SCHEMA_VERSION}.json",
            **PolicyRecord.model_json_schema(mode="serialization")}
