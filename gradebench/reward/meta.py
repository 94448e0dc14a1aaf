"""The reward folder's metadata file (``gradebench-reward.json``) and its score calibration.

Layout of a reward folder written by :func:`gradebench.reward.export_reward`::

    gradebench-reward.json   schema version, provenance, metrics, calibration (written last, atomically)
    <model files>            format "hf-sequence-classification": a standard Hugging Face
                             sequence-classification folder with num_labels=1 at the root
                             (cross-encoder with the standard head), model_dir "."
    scorer/                  format "gradebench-scorer": the scorer's own Scorer.save output
                             (every other scorer, and the cross-encoder's paper head)

The calibration is a summary of the scorer's raw scores on one split of its training benchmark
(the validation split by default), so rewards can be standardised: ``(raw - mean) / std``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from gradebench.errors import RewardError

REWARD_FILE = "gradebench-reward.json"
REWARD_SCHEMA_VERSION = 1
REWARD_KIND = "gradebench.reward"
FORMAT_HF = "hf-sequence-classification"
FORMAT_GRADEBENCH = "gradebench-scorer"
SCORER_SUBDIR = "scorer"
#: quantiles stored in the calibration (linear interpolation, numpy's default)
QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)


def calibration_stats(values: Any) -> dict[str, Any]:
    """Mean, population std, min, max and :data:`QUANTILES` of raw scores (a 1-D array).

    Example:
        >>> c = calibration_stats([0.0, 1.0, 2.0, 3.0])
        >>> c["mean"], round(c["std"], 6), c["quantiles"]["0.5"]
        (1.5, 1.118034, 1.5)
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0 or not np.isfinite(v).all():
        raise RewardError("cannot calibrate on no scores or non-finite scores",
                          hint="check the model and the calibration split")
    qs = np.quantile(v, QUANTILES)
    return {
        "n": int(v.size), "mean": float(v.mean()), "std": float(v.std()), "min": float(v.min()),
        "max": float(v.max()), "quantiles": {f"{q:g}": float(x) for q, x in zip(QUANTILES, qs)},
    }


def standardize(raw: Any, calibration: dict[str, Any]) -> np.ndarray:
    """``(raw - mean) / std`` with the calibration's mean and std.

    Raises:
        RewardError: the calibration's std is 0 (a constant scorer cannot be standardised).
    """
    std = float(calibration["std"])
    if not std > 0:
        raise RewardError("the calibration std is 0: the scorer gave one score to every calibration candidate",
                          hint="use normalize=False, or export a scorer that separates candidates")
    return (np.asarray(raw, dtype=np.float64) - float(calibration["mean"])) / std


def is_reward_dir(path: str | Path) -> bool:
    return (Path(path) / REWARD_FILE).is_file()


def read_metadata(directory: str | Path) -> dict[str, Any]:
    """The validated ``gradebench-reward.json`` of a reward folder.

    Raises:
        RewardError: no such file, invalid JSON, another schema version, or missing fields.
    """
    d = Path(directory)
    path = d / REWARD_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RewardError(f"not a reward folder (no {REWARD_FILE})", path=d,
                          hint="give a folder written by `gradebench export-reward`, or a run folder") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise RewardError(f"{REWARD_FILE} is not valid JSON ({e})", path=path,
                          hint="export the reward again") from None
    if not isinstance(raw, dict) or raw.get("kind") != REWARD_KIND:
        raise RewardError(f"{REWARD_FILE} is not a gradebench reward description", path=path,
                          hint="export the reward again")
    if raw.get("schema_version") != REWARD_SCHEMA_VERSION:
        raise RewardError(
            f"reward folder schema v{raw.get('schema_version')} is not supported (this gradebench reads "
            f"v{REWARD_SCHEMA_VERSION}; written by gradebench {raw.get('gradebench_version')})", path=path,
            hint="export the run again with this gradebench version (gradebench export-reward RUN_DIR --out DIR)")
    missing = [k for k in ("format", "model_dir", "scorer", "seed", "benchmark", "calibration") if k not in raw]
    if missing:
        raise RewardError(f"{REWARD_FILE} lacks {', '.join(missing)}", path=path, hint="export the reward again")
    if raw["format"] not in (FORMAT_HF, FORMAT_GRADEBENCH):
        raise RewardError(f"unknown reward format {raw['format']!r}", path=path, hint="export the reward again")
    model_dir = d / raw["model_dir"]
    if not model_dir.is_dir() or Path(raw["model_dir"]).is_absolute() or ".." in Path(raw["model_dir"]).parts:
        raise RewardError(f"the reward's model folder {raw['model_dir']!r} is missing", path=d,
                          hint="the folder is incomplete; export the reward again")
    return raw
