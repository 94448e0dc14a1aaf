"""Run folders: what ``gradebench train`` writes and how it is read back.

Layout of ``RUN_DIR``::

    run-config.json   written first: benchmark, scorer, loss, options, run fingerprint
    checkpoints/      the trainer's checkpoints (for --resume), if the scorer has any
    history.jsonl     one line per epoch (loss, validation metrics, separation)
    model/            the trained scorer (Scorer.save), written to a temp folder then renamed
    run.json          written last, atomically: the run is complete iff this file exists

A run's fingerprint is sha256 over everything that determines its weights: the benchmark
fingerprint, the scorer's name, version and resolved config, the training options (loss,
seed, list size...) and the gradebench version.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gradebench._version import __version__
from gradebench.errors import GradebenchError, RunError
from gradebench.hashing import sha256_json

RUN_JSON = "run.json"
RUN_CONFIG = "run-config.json"
MODEL_DIR = "model"
RUN_SCHEMA_VERSION = 1


@dataclass
class RunInfo:
    """A finished training run (``run.json``)."""

    run_dir: str
    scorer: str
    scorer_version: int
    config: dict[str, Any]
    loss: str | None
    loss_params: dict[str, Any]
    options: dict[str, Any]
    seed: int
    benchmark: str
    benchmark_fingerprint: str
    benchmark_path: str
    run_fingerprint: str
    best_epoch: int | None
    best_metrics: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    n_train_queries: int = 0
    n_validation_queries: int = 0
    gradebench_version: str = __version__
    schema_version: int = RUN_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_fingerprint(*, benchmark_fingerprint: str, scorer: dict[str, Any], options: dict[str, Any]) -> str:
    """sha256 over everything that determines a run's weights."""
    return sha256_json({
        "benchmark_fingerprint": benchmark_fingerprint,
        "scorer": scorer,
        "options": options,
        "gradebench_version": __version__,
    })


def read_json(path: Path, *, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunError(f"{what} not found", path=path, hint="give a folder written by `gradebench train`") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise RunError(f"{what} is not valid JSON ({e})", path=path, hint="train the run again") from None
    if not isinstance(obj, dict):
        raise RunError(f"{what} is not a JSON object", path=path, hint="train the run again")
    return obj


def read_run_info(run_dir: str | Path) -> RunInfo:
    """The :class:`RunInfo` of a finished run folder."""
    d = Path(run_dir)
    if not d.is_dir():
        raise RunError("no such run folder", path=d, hint="give the --out folder of `gradebench train`")
    if not (d / RUN_JSON).is_file():
        hint = ("the run did not finish: continue it with `gradebench train ... --resume`"
                if (d / RUN_CONFIG).is_file() else "give the --out folder of `gradebench train`")
        raise RunError("not a finished run (no run.json)", path=d, hint=hint)
    raw = read_json(d / RUN_JSON, what="run.json")
    if raw.get("schema_version") != RUN_SCHEMA_VERSION:
        raise RunError(f"run format v{raw.get('schema_version')} is not supported (this gradebench reads "
                       f"v{RUN_SCHEMA_VERSION})", path=d / RUN_JSON, hint="train the run again with this version")
    try:
        info = RunInfo(**{k: v for k, v in raw.items() if k in RunInfo.__dataclass_fields__})
    except TypeError as e:
        raise RunError(f"run.json lacks fields ({e})", path=d / RUN_JSON, hint="train the run again") from None
    info.run_dir = str(d)
    return info


def load_run(run_dir: str | Path) -> tuple[Any, RunInfo]:
    """A finished run as ``(scorer, RunInfo)``: the scorer is loaded from ``RUN_DIR/model``.

    Raises:
        RunError: missing/unfinished/corrupt run, or a checkpoint the scorer cannot load.
        UnknownNameError: the run's scorer is not registered here.
    """
    from gradebench.scorers import get_scorer_class

    info = read_run_info(run_dir)
    cls = get_scorer_class(info.scorer)
    if cls.version != info.scorer_version:
        raise RunError(
            f"the run was trained with {info.scorer} v{info.scorer_version}, this gradebench has v{cls.version}",
            path=run_dir, hint="train the run again",
        )
    model = Path(run_dir) / MODEL_DIR
    if cls.trainable and not model.is_dir():
        raise RunError("the run has no model/ folder", path=run_dir, hint="train the run again")
    try:
        scorer = cls.load(model, info.config, seed=info.seed)
    except GradebenchError:
        raise
    except Exception as e:  # noqa: BLE001 - corrupt checkpoints raise anything
        raise RunError(f"cannot load the trained {info.scorer} ({type(e).__name__}: {e})", path=model,
                       hint="the checkpoint is corrupt; train the run again") from None
    return scorer, info
