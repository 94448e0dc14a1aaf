"""Policy records: the result of one policy-optimisation run, beside the scorer records.

A policy run (``gradebench lipo | grpo | ppo``) writes one JSON record
``<results_dir>/<benchmark>/<id>.policy.json`` (``kind: "gradebench.policy"``,
``schema_version`` 2; version 1 records, which lack ``judge`` and ``signal``, still load): a ``policy`` record of :mod:`gradebench.experiments.store`, which
writes, reads and lists it beside the evaluation records (``kind="policy"``). The name does not
match the evaluation records' ``<id>.json``, so a lister of those never opens it.

The ``id`` is the sha256 of canonical JSON of the schema version, the kind and the run
fingerprint (which covers the method, policy weights, benchmark, reward, loss, options and
seed). ``metrics`` holds the mean of each logged column over the last ``window`` steps
(``reward_mean``, ``reward_std``, ``kl``, ``above_reference``, ``loss`` and the method's extras).

Version 2 adds two optional sections (null when the run had no judge / no groups):

* ``judge``: a held-out judge's scores of the policy's completions on held-out prompts before
  and after training (:mod:`gradebench.rl.judging`): which judge, split, queries, samples,
  the per-grade anchors, and ``before``/``after`` figures (``judge_mean``,
  ``judge_above_reference``, ``judge_above_best``, ``reward_mean``, ...);
* ``signal``: the run's advantage signal-to-noise ratio, judge agreement and group reward
  spread pooled over every step (:mod:`gradebench.rl.signal`);
* ``trajectory``: the logged curves in deciles of the run and the step at which the reward
  reached 90% of its gain (:func:`gradebench.rl.steplog.trajectory`);

and names the reward's scorer and loss (``reward.scorer``, ``reward.loss``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from gradebench._moved import moved_names
from gradebench.experiments.record import BenchmarkName, Environment, LossRef, Split
from gradebench.hashing import sha256_json

POLICY_SCHEMA_VERSION = 2
#: the record versions this gradebench reads
POLICY_SCHEMA_VERSIONS = (1, 2)
POLICY_KIND = "gradebench.policy"
POLICY_SUFFIX = ".policy.json"
Method = Literal["lipo", "grpo", "ppo"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=(), json_schema_serialization_defaults_required=True)


class PolicyBenchmarkRef(_Model):
    name: BenchmarkName
    fingerprint: str
    path: str
    split: Split = Field(description="the split whose queries (and, for LiPO, lists) trained the policy")
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
    scorer: str | None = Field(None, description="the exported scorer's name (v2; null: a callable)")
    loss: str | None = Field(None, description="the loss it was trained with (v2; null: none, or a callable)")


class PolicyRunRef(_Model):
    run_dir: str
    run_fingerprint: str


class JudgeRef(_Model):
    """A held-out judge's view of the policy before and after training (:mod:`gradebench.rl.judging`)."""

    source: str = Field(description="the judge's reward folder (never the optimised reward)")
    fingerprint: str | None
    scorer: str | None = Field(description="the judge's scorer (and loss), e.g. 'lambdamart'")
    split: str = Field(description="the split of the held-out prompts")
    n_queries: int = Field(ge=1)
    samples: int = Field(ge=1, description="completions sampled per prompt (the run's seed, temperature, length)")
    anchors: dict[str, Any] = Field(description="judge's and reward's mean score of the held-out candidates per grade")
    before: dict[str, Any] = Field(description="figures of the initial policy's completions")
    after: dict[str, Any] = Field(description="figures of the trained policy's completions")


class SignalRef(_Model):
    """The run's reward signal pooled over its steps (:mod:`gradebench.rl.signal`)."""

    definition: str
    advantage_scale: str
    advantage_snr: float | None = Field(description="mean / std of judge-signed advantage differences (null: no judge)")
    judge_agreement: float | None = Field(description="share of judged pairs the reward orders as the judge")
    n_pairs: int = Field(ge=0)
    group_reward_std: float | None = Field(description="mean within-group std of the rewards")


class PolicyRecord(_Model):
    """One policy-optimisation run's result (``to_dict()`` is the JSON written)."""

    schema_version: Literal[1, 2] = POLICY_SCHEMA_VERSION
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
    judge: JudgeRef | None = Field(None, description="held-out judge before/after training (v2; null: no judge)")
    signal: SignalRef | None = Field(None, description="advantage signal of the run (v2; null: not a GRPO run)")
    trajectory: dict[str, Any] | None = Field(None, description=(
        "the run's curves in deciles of its steps and its convergence step (v2; gradebench.rl.steplog.trajectory)"))

    _path: Path | None = PrivateAttr(default=None)

    @property
    def path(self) -> Path | None:
        return self._path

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def policy_record_id(run_fingerprint: str, *, schema_version: int = POLICY_SCHEMA_VERSION) -> str:
    """The content id of a policy record (see the module docstring); ``schema_version`` that of an older record."""
    return sha256_json({"schema_version": schema_version, "kind": POLICY_KIND,
                        "run_fingerprint": run_fingerprint})


def policy_schema_json() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a policy record, generated from :class:`PolicyRecord`."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://gradebench.dev/schemas/policy-v{POLICY_SCHEMA_VERSION}.json",
            **PolicyRecord.model_json_schema(mode="serialization")}


#: names that moved to the store answer old imports from here (``gradebench._moved.MOVED_NAMES``)
__getattr__ = moved_names(__name__, globals())
