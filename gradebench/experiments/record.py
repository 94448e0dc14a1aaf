"""Result records: a versioned JSON file plus two Parquet files per evaluation.

One evaluation of one scorer on one split of one benchmark writes, under
``<results_dir>/<benchmark>/``:

* ``<id>.predictions.parquet`` -- one row per candidate: ``record_id``, ``query_id``,
  ``candidate_id``, ``split``, ``prediction``, ``relevance``, ``score`` and ``tier`` (when the
  benchmark has tiers), in the benchmark's list order;
* ``<id>.queries.parquet`` -- per-query metric values in long form: ``record_id``,
  ``query_id``, ``metric``, ``value`` (null = the query is excluded for that metric), then the
  record's per-query report figures (``metric`` = ``figure:<set>.<column>``,
  :mod:`gradebench.experiments.figures`);
* ``<id>.json`` -- the :class:`EvalRecord` (``schema_version`` 1, ``kind: "gradebench.result"``:
  an ``evaluation`` record of :mod:`gradebench.experiments.store`), written last.

:mod:`gradebench.experiments.store` writes, reads and lists the files: each is written to a temp
file in the same folder and renamed onto its name (``os.replace``), the Parquet files first and
the JSON last, so a reader that lists ``*.json`` never sees a record without its predictions,
and any number of processes can write into one results folder at once: each record has its own
files and a rename is atomic. Two processes writing the same ``id`` write the same predictions
and metrics; the last rename wins.

The record ``id`` is the sha256 of canonical JSON (sorted keys) of everything that
determines the numbers in it: the benchmark fingerprint, split, scorer name,
version and resolved config (for an external model, its ``identity``: the sha256 of its
files, adapter, resolved options, dtype and device type; see :class:`ModelProvenance`), loss
and its parameters, run fingerprint (trained scorers), the system seed, the bootstrap seed and
resample count, and the metric-suite version. Fields added since (``bias``, ``invariance``,
``scorer.model``) are optional, so records written before them still load.
``schemas/result-v1.json`` is generated from :class:`EvalRecord` (see :func:`render_schema_json`).

A committed results folder is *packed* (:mod:`gradebench.experiments.pack`): the per-query tables of
a benchmark folder become one ``per_query.parquet`` and the predictions stay local, so a record's
``files`` name tables that may not be there; the readers of :mod:`gradebench.experiments.store`
find the values in the pack.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator

from gradebench._moved import moved_names
from gradebench.errors import RecordError  # noqa: F401 - imported from here by older callers
from gradebench.hashing import sha256_json
from gradebench.names import NAME_PATTERN
from gradebench.paths import write_text_atomic

RESULT_SCHEMA_VERSION = 1
#: bump when the metric suite or the way CIs/separation figures are computed changes
SUITE_VERSION = 1
RECORD_SUFFIX = ".json"
PREDICTIONS_SUFFIX = ".predictions.parquet"
PER_QUERY_SUFFIX = ".queries.parquet"
SCHEMA_ID = "https://gradebench.dev/schemas/result-v1.json"
#: a benchmark split (what a record's ``split`` may be)
Split = Literal["train", "validation", "test"]
#: a benchmark name as a record holds it: it names the record's folder, so it is checked like a recipe name
BenchmarkName = Annotated[str, Field(
    pattern=NAME_PATTERN, max_length=128,
    description="the benchmark's name (its records' folder): lower-case letters, digits, '-' and '_'")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=(), json_schema_serialization_defaults_required=True)


class MetricValue(_Model):
    """One metric: its value with a bootstrap CI over queries.

    ``value`` is the mean over non-excluded queries (``level="query"``) or the corpus-level
    value (``level="corpus"``); null when undefined. ``ci_low``/``ci_high`` are null when
    there are fewer than two usable queries or a resample has no defined value.
    """

    level: Literal["query", "corpus"]
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int = Field(ge=0, description="queries used")
    n_excluded: int = Field(ge=0, description="queries whose value is undefined (NaN)")


class TierInfo(_Model):
    name: str
    grade: float
    n: int = Field(ge=0)


class BenchmarkRef(_Model):
    name: BenchmarkName
    fingerprint: str
    path: str
    split: Split
    n_queries: int = Field(ge=0)
    n_candidates: int = Field(ge=0)
    tiers: list[TierInfo] | None = Field(
        description="tiers present in the split, best grade first; null without a tier column")


class ModelProvenance(_Model):
    """Where an external model (a model adapter, ``gradebench eval --model``) came from and how it ran.

    ``identity`` is what the record id uses for the model (in place of the scorer's config): the
    sha256 of the files' ``digest``, the adapter, its resolved ``options``, ``dtype``, ``device``
    type, ``backend`` and the scoring config without where the model lies, so the same weights at
    another path give the same id and other weights at the same path do not.
    """

    id: str = Field(description="the model as given: a local path or a Hugging Face Hub id")
    name: str = Field(description="the name shown on the leaderboard")
    source: Literal["local", "hub"]
    path: str = Field(description="the folder the files were read from (a Hub snapshot for Hub ids)")
    revision: str | None = Field(description="the Hub commit of the snapshot (null for local folders)")
    adapter: str
    backend: str
    identity: str = Field(pattern=r"^[0-9a-f]{64}$")
    digest: str = Field(description="sha256 over canonical JSON of {file: sha256} of every file the loaders read")
    weights_sha256: str | None
    tokenizer_sha256: str | None
    files: dict[str, str] = Field(description="relative path -> sha256 of weights, tokenizer, config (and code) files")
    options: dict[str, Any] = Field(description="the adapter's resolved options (what auto and None became)")
    dtype: str
    device: str = Field(description="device type: cpu, cuda, mps")
    batch_size: int = Field(ge=1)
    processes: int = Field(ge=1, description="processes the scoring was sharded over (the scores do not depend on it)")
    order_seed: int = Field(description="seed of the candidate order inside batches (drawn from sha256 of content)")
    trust_remote_code: bool
    libraries: dict[str, str]


class ScorerRef(_Model):
    name: str
    version: int
    kind: str
    config: dict[str, Any]
    #: where a model-backed scorer's weights came from (the cross-encoder's resolved model folder)
    model_path: str | None = None
    #: provenance of an external model (model adapters only)
    model: ModelProvenance | None = None
    #: how inference batches were made where that is not the config's ``batch_size`` (on CUDA:
    #: ``{"batching": "tokens", "max_batch_tokens": N}``)
    inference: dict[str, Any] | None = None


class LossRef(_Model):
    name: str | None
    params: dict[str, Any]


class RunRef(_Model):
    """The training run a trained scorer comes from (its ``RunInfo``)."""

    run_dir: str
    run_fingerprint: str
    benchmark: str = Field(description="the benchmark the run trained on (may differ from the evaluated one)")
    benchmark_fingerprint: str
    seed: int
    options: dict[str, Any]
    best_epoch: int | None
    best_metrics: dict[str, Any]
    timings: dict[str, Any]


class BootstrapInfo(_Model):
    n_resamples: int = Field(ge=1)
    seed: int = Field(ge=0)
    confidence: float = Field(gt=0, lt=1)
    method: Literal["percentile", "bca"]
    unit: Literal["query"] = "query"
    corpus_method: str


class GradeGroup(_Model):
    """Predicted scores of the candidates of one grade (and tier)."""

    grade: float
    tier: str | None
    n: int = Field(ge=0)
    mean: float
    std: float
    centered_mean: float = Field(description="mean of prediction minus its list's mean prediction")
    centered_std: float


class GradeGap(_Model):
    low_grade: float
    high_grade: float
    gap: float = Field(description="mean prediction at high_grade minus at low_grade")
    centered_gap: float


class Separation(_Model):
    """How far apart the predicted scores of adjacent grades are (Figure 1 of the paper, in numbers)."""

    by_grade: list[GradeGroup]
    adjacent_gaps: list[GradeGap]
    mean_gap: float | None
    mean_centered_gap: float | None
    min_centered_gap: float | None
    prediction_std: float


class Timings(_Model):
    #: loading the scorer's model onto its device before scoring (records written before it: null)
    load_s: float | None = None
    scoring_s: float
    candidates_per_s: float | None
    metrics_s: float
    bootstrap_s: float
    total_s: float
    train: dict[str, Any] | None


class Environment(_Model):
    gradebench_version: str
    #: the working directory's commit in records written before cwd_commit (so it named the
    #: user's project when run there, not gradebench); new records write null
    git_commit: str | None = Field(None, description="deprecated, null in new records: see cwd_commit")
    gradebench_commit: str | None = Field(None, description="commit of the gradebench checkout that ran")
    gradebench_dirty: bool | None = Field(None, description="that checkout had uncommitted changes")
    cwd_commit: str | None = Field(None, description="commit of the working directory's repository")
    python: str
    platform: str
    machine: str
    cpu_count: int | None
    numpy: str
    torch: str | None
    torch_device: str | None
    torch_threads: int | None = Field(None, description="torch's intra-op threads (null: torch not used)")


class InvarianceCheck(_Model):
    """``--check-invariance``: a sample of queries re-scored one candidate per batch."""

    batch_size: Literal[1] = 1
    n_queries: int = Field(ge=0)
    n_candidates: int = Field(ge=0)
    max_abs_diff: float = Field(ge=0, description="largest |score at batch size 1 - score in the run|")
    tolerance: float = Field(gt=0)
    passed: bool


class PairAgreement(_Model):
    agreement: float | None = Field(description="share of the pairs ordered as their grades (score ties count 1/2)")
    n_pairs: int = Field(ge=0)


class LengthPairs(_Model):
    """Pairwise agreement on the pairs (different grades, one list) whose better candidate is shorter / longer."""

    better_shorter: PairAgreement
    better_longer: PairAgreement
    n_same_length: int = Field(ge=0, description="pairs of equal length (in neither group)")
    gap: float | None = Field(description="agreement when the better is longer minus when it is shorter "
                              "(a model that prefers long candidates shows a positive gap)")


class BaselineFigure(_Model):
    scorer: str
    config: dict[str, Any]
    value: float | None


class BiasFigures(_Model):
    n_queries: int = Field(ge=0)
    system: float | None = Field(description="the system's value of the bias metric on these queries")
    length_pairs: LengthPairs
    baselines: dict[str, BaselineFigure] = Field(description="length, overlap and bm25 on the same queries")
    warnings: list[str]


class BiasGroup(BiasFigures):
    name: str


class BiasControls(BiasFigures):
    """Bias controls of every record: length-split agreement and the surface baselines beside the system."""

    metric: str
    margin: float = Field(description="a baseline within this of the system (or above it) is warned about")
    group_column: str | None = Field(description="the benchmark's subset/category column, when it has one")
    groups: list[BiasGroup]


class HumanAgreement(_Model):
    """How a ``human`` record (the human ceiling, :mod:`gradebench.experiments.human`) was made:
    the annotators of each item split into two halves, the candidates scored by one half's votes
    and graded by the other's, so its metrics are one half of the crowd predicting the other."""

    method: Literal["split-half"] = "split-half"
    item: Literal["query", "candidate"] = Field(
        description="what the votes are of: the query (one vote per annotator among its candidates, ChaosNLI) "
                    "or each candidate (a yes/no vote per annotator, WinoWhy)")
    votes_per_item: int = Field(ge=2, description="annotators per item")
    score_half: int = Field(ge=1, description="annotators whose votes score the candidates")
    grade_half: int = Field(ge=1, description="annotators whose votes grade them (the record's relevance)")
    grades: str = Field(description="how the grading half's votes become grades (the benchmark's own rule)")
    split_seed: str = Field(description="how each item's split is drawn (content seeds, no global RNG)")
    measures: str = Field(description="what the figure is, and what it is not")
    jsd: MetricValue | None = Field(
        None, description="mean Jensen-Shannon divergence (base 2) between the halves' label distributions per "
                          "query, with its bootstrap CI (query-level votes only)")


class RecordFiles(_Model):
    """The record's two tables, by file name in the record's folder (``<id>`` + a suffix, nothing else),
    and their digests (:mod:`gradebench.experiments.verify`; null in records written before them).

    ``per_query_sha256`` is the digest of the record's per-query rows (query ids, metric and figure
    values), the same whether they are read from the loose table or from the folder's pack;
    ``predictions_sha256`` is the sha256 of the predictions file's bytes, set when the file was there
    to hash (a packed folder may keep it out of git)."""

    predictions: str = Field(pattern=r"^[0-9a-f]{64}\.predictions\.parquet$")
    per_query: str = Field(pattern=r"^[0-9a-f]{64}\.queries\.parquet$")
    per_query_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$",
                                         description="digest of the per-query rows (gradebench.experiments.verify)")
    predictions_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$",
                                           description="sha256 of the predictions file")


class EvalRecord(_Model):
    """One evaluation: provenance, metric values with CIs, score separation and timings.

    ``to_dict()`` is the JSON that is written (and what ``gradebench eval --json`` prints).
    """

    schema_version: Literal[1] = RESULT_SCHEMA_VERSION
    kind: Literal["gradebench.result"] = "gradebench.result"
    id: str = Field(pattern=r"^[0-9a-f]{64}$")
    created_at: str
    benchmark: BenchmarkRef
    split: Split
    labels: Literal["relevance", "other-half"] = Field(
        "relevance", description="the label column the metrics compare predictions with ('other-half': a human "
                                 "record's grades from the half of the annotators that did not score, see human)")
    scorer: ScorerRef
    loss: LossRef
    run: RunRef | None
    seed: int = Field(ge=0, description="seed of the bootstrap (and of the scorer when not from a run)")
    system_seed: int = Field(description="seed that determines the scorer's outputs: the run's seed, else the scorer's")
    suite_version: int
    metrics: dict[str, MetricValue]
    bootstrap: BootstrapInfo
    separation: Separation
    timings: Timings
    environment: Environment
    files: RecordFiles
    #: bias controls (length-split agreement, surface baselines); null in records written before they existed
    bias: BiasControls | None = None
    #: the batch-size-1 invariance check of a model adapter (``--check-invariance``), else null
    invariance: InvarianceCheck | None = None
    #: a human-ceiling record's split (:mod:`gradebench.experiments.human`), else null
    human: HumanAgreement | None = None

    _path: Path | None = PrivateAttr(default=None)

    @field_validator("files")
    @classmethod
    def _files_of_this_record(cls, files: RecordFiles, info: ValidationInfo) -> RecordFiles:
        """The tables are this record's own (``<id>.predictions.parquet``, ``<id>.queries.parquet``), so a
        record never points a reader at another record's file or outside its folder."""
        rid = info.data.get("id")
        own = file_names(rid) if rid is not None else None
        if own is not None and (files.predictions, files.per_query) != (own.predictions, own.per_query):
            raise ValueError(f"files must be the record's own tables ({rid[:12]}...{PREDICTIONS_SUFFIX}, "
                             f"{rid[:12]}...{PER_QUERY_SUFFIX}), not {files.predictions!r}, {files.per_query!r}")
        return files

    @property
    def path(self) -> Path | None:
        """The record's JSON file, once written or read."""
        return self._path

    @property
    def predictions_path(self) -> Path | None:
        return None if self._path is None else self._path.parent / self.files.predictions

    @property
    def per_query_path(self) -> Path | None:
        return None if self._path is None else self._path.parent / self.files.per_query

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def value(self, metric: str) -> float | None:
        m = self.metrics.get(metric)
        return None if m is None else m.value


def record_id(
    *,
    benchmark_fingerprint: str,
    split: str,
    scorer: dict[str, Any],
    loss: str | None,
    loss_params: dict[str, Any],
    run_fingerprint: str | None,
    system_seed: int,
    seed: int,
    n_resamples: int,
) -> str:
    """The content id of a record (see the module docstring).

    An external model's scorer (``scorer["model"]`` set) is identified by its model's
    ``identity`` in place of its config (see :class:`ModelProvenance`).
    """
    model = scorer.get("model")
    ident = ({"name": scorer["name"], "version": scorer["version"], "config": scorer["config"]} if not model else
             {"name": scorer["name"], "version": scorer["version"], "model_identity": model["identity"]})
    return sha256_json({
        "schema_version": RESULT_SCHEMA_VERSION,
        "suite_version": SUITE_VERSION,
        "benchmark_fingerprint": benchmark_fingerprint,
        "split": split,
        "scorer": ident,
        "loss": {"name": loss, "params": loss_params},
        "run_fingerprint": run_fingerprint,
        "system_seed": system_seed,
        "seed": seed,
        "n_resamples": n_resamples,
    })


def json_float(x: Any) -> float | None:
    """A finite float, or None for NaN/inf/None (JSON has no NaN)."""
    if x is None:
        return None
    f = float(x)
    return f if math.isfinite(f) else None


# -- files ---------------------------------------------------------------------------------
def file_names(rid: str) -> RecordFiles:
    return RecordFiles(predictions=rid + PREDICTIONS_SUFFIX, per_query=rid + PER_QUERY_SUFFIX)


#: names that moved to the store answer old imports from here (``gradebench._moved.MOVED_NAMES``)
__getattr__ = moved_names("gradebench.experiments.record", globals())  # also when run as __main__


# -- schema --------------------------------------------------------------------------------
def schema_json() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a record, generated from :class:`EvalRecord`."""
    schema = EvalRecord.model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
    }


def schema_file(root: str | Path) -> Path:
    return Path(root) / f"result-v{RESULT_SCHEMA_VERSION}.json"


def render_schema_json() -> str:
    return json.dumps(schema_json(), indent=2, sort_keys=True) + "\n"


def write_schema(root: str | Path) -> Path:
    """Regenerate ``schemas/result-v1.json`` (``python -m gradebench.experiments.record schemas``)."""
    path = schema_file(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, render_schema_json())
    return path


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(write_schema(sys.argv[1] if len(sys.argv) > 1 else "schemas"))
