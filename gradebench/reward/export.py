"""``export_reward()``: a trained run as a self-contained reward folder (see :mod:`.meta` for the layout).

The run is given as a folder, or picked with ``best=METRIC``: among the result records of a
benchmark (a name, or a benchmark folder for its fingerprint) on ``split`` whose record points
to a run trained on that benchmark, systems (as the leaderboard groups them: scorer + config +
loss + training options, seeds pooled) are ranked by the mean over seeds of ``METRIC``
(descending; ties by system label); the first system with a run folder that exists is chosen,
and within it the seed whose record has the best value (ties: smaller record id). Relative
``run_dir`` paths in records resolve against the working directory, as ``gradebench eval``
wrote them.

What is written, into a temp folder beside ``out`` that is renamed onto ``out`` when complete:

* ``cross-encoder`` with the standard head: the scorer's save at the root, which is a
  standard Hugging Face sequence-classification folder (``num_labels=1``) with its tokenizer.
  Before the rename, ``AutoModelForSequenceClassification`` + ``AutoTokenizer`` reload it and
  must reproduce the scorer's logits on calibration pairs (pair encoding, raw logit).
* every other scorer, and the cross-encoder's ``paper`` head (which
  ``AutoModelForSequenceClassification`` would load with a fresh, random classifier): the
  scorer's own save in ``scorer/``, loaded by :func:`gradebench.reward.load`; the metadata's
  ``notes`` say so.
* ``gradebench-reward.json``: schema version, gradebench version, scorer (name, version,
  kind, config; a ``device`` setting is reset to None, so the folder loads on any machine),
  loss, seed, run (folder, fingerprint, options, best epoch), benchmark (name, fingerprint,
  path), metrics (the run's best validation metrics from ``run.json`` and the values of every
  result record of this run in ``results_dir``), calibration (raw-score mean, std, min, max,
  quantiles on the validation split), the input convention and notes. It holds no timestamps:
  exporting the same run twice gives the same file.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gradebench._version import __version__
from gradebench.errors import InvalidArgumentError, UnknownNameError
from gradebench.hashing import sha256_json
from gradebench.paths import RESULTS_DIR, check_writable_dir, current_umask, publish_dir
from gradebench.registry import suggest
from gradebench.reward.loading import calibrate, load_scorer
from gradebench.reward.meta import (
    FORMAT_GRADEBENCH,
    FORMAT_HF,
    REWARD_FILE,
    REWARD_KIND,
    REWARD_SCHEMA_VERSION,
    SCORER_SUBDIR,
    RewardError,
)
from gradebench.scorers.base import ProgressFn

DEFAULT_RESULTS_DIR = RESULTS_DIR
#: calibration pairs re-scored through AutoModelForSequenceClassification before an HF export is kept
HF_CHECK_PAIRS = 16
HF_CHECK_ATOL = 1e-4


@dataclass
class ExportResult:
    """What ``export_reward`` returns and ``gradebench export-reward --json`` prints."""

    out: str
    cached: bool
    format: str
    model_dir: str
    run_dir: str
    run_fingerprint: str
    scorer: str
    loss: str | None
    benchmark: str
    benchmark_fingerprint: str
    calibration: dict[str, Any]
    selected_by: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_metadata(cls, out: Path, meta: dict[str, Any], *, cached: bool) -> ExportResult:
        return cls(
            out=str(out), cached=cached, format=meta["format"], model_dir=meta["model_dir"],
            run_dir=meta["run"]["run_dir"], run_fingerprint=meta["run"]["run_fingerprint"],
            scorer=meta["scorer"]["name"], loss=meta["loss"]["name"], benchmark=meta["benchmark"]["name"],
            benchmark_fingerprint=meta["benchmark"]["fingerprint"], calibration=meta["calibration"],
            selected_by=meta.get("selected_by"), notes=list(meta.get("notes", [])),
        )


# -- picking the run ------------------------------------------------------------------------------
def select_best_run(metric: str, benchmark: str | Path, *, results_dir: str | Path = DEFAULT_RESULTS_DIR,
                    split: str = "test") -> dict[str, Any]:
    """The run to export by ``metric`` among a benchmark's records (see the module docstring).

    Returns:
        ``{"run_dir", "metric", "split", "results_dir", "system", "system_value", "n_seeds",
        "record_id", "record_value"}``.

    Raises:
        RewardError: no records of that benchmark, an ambiguous name, or no record pointing to
            an existing run trained on it.
        UnknownNameError: ``metric`` is not a metric of the records.
    """
    from gradebench.benchmark.lists import open_benchmark
    from gradebench.experiments.leaderboard import system_key, system_label
    from gradebench.experiments.store import list_records

    records = list_records(results_dir, split=split)
    if Path(benchmark).is_dir():
        fp = open_benchmark(benchmark).fingerprint
        records = [r for r in records if r.benchmark.fingerprint == fp]
        what = f"benchmark {Path(benchmark)} ({fp[:12]})"
    else:
        records = [r for r in records if r.benchmark.name == str(benchmark)]
        fps = sorted({r.benchmark.fingerprint for r in records})
        if len(fps) > 1:
            raise RewardError(f"records of {len(fps)} builds of benchmark {benchmark!r} are in {results_dir}",
                              hint="give the benchmark folder instead of its name: --benchmark DIR "
                                   f"(fingerprints {', '.join(f[:12] for f in fps)})")
        what = f"benchmark {benchmark!r}"
    if not records:
        raise RewardError(f"no {split} result records of {what}", path=results_dir,
                          hint="evaluate runs first (gradebench eval --run RUN_DIR) or pass --results-dir")
    known = sorted({m for r in records for m in r.metrics})
    if metric not in known:
        raise UnknownNameError(f"unknown metric {metric!r}" + suggest(metric, known, cutoff=0.5),
                               hint=f"metrics of the records: {', '.join(known)}")
    trained = [r for r in records if r.run is not None and r.run.benchmark_fingerprint == r.benchmark.fingerprint]
    if not trained:
        raise RewardError(f"no record of {what} comes from a run trained on it", path=results_dir,
                          hint="train and evaluate a scorer on it (gradebench train, then gradebench eval --run)")
    systems: dict[str, list[Any]] = {}
    for r in sorted(trained, key=lambda r: r.id):
        systems.setdefault(sha256_json(system_key(r)), []).append(r)
    ranked = []
    for sid, recs in systems.items():
        per_seed: dict[int, Any] = {}
        for r in recs:  # one record per seed, the smallest id (as the leaderboard)
            per_seed.setdefault(r.system_seed, r)
        vals = [v for v in (r.value(metric) for r in per_seed.values()) if v is not None]
        mean = float(np.mean(vals)) if vals else None
        ranked.append(((1, 0.0) if mean is None else (0, -mean), system_label(recs[0]), sid, mean,
                       list(per_seed.values())))
    ranked.sort(key=lambda t: (t[0], t[1], t[2]))
    for _, label, _, mean, recs in ranked:
        usable = [r for r in recs if r.value(metric) is not None and (Path(r.run.run_dir) / "run.json").is_file()]
        if not usable:
            continue
        best = min(usable, key=lambda r: (-float(r.value(metric)), r.id))
        return {"run_dir": best.run.run_dir, "metric": metric, "split": split, "results_dir": str(results_dir),
                "system": label, "system_value": mean, "n_seeds": len(recs), "record_id": best.id,
                "record_value": best.value(metric)}
    raise RewardError(f"no record of {what} points to a run folder that exists here", path=results_dir,
                      hint="run from the folder the records' relative run_dir paths start from, "
                           "or give the run folder directly")


def _run_records(results_dir: str | Path, run_fingerprint: str) -> list[dict[str, Any]]:
    """Metric values of every result record of this run (any benchmark, any split)."""
    from gradebench.experiments.store import list_records

    out = []
    for r in list_records(results_dir):
        if r.run is not None and r.run.run_fingerprint == run_fingerprint:
            out.append({"id": r.id, "benchmark": r.benchmark.name, "benchmark_fingerprint": r.benchmark.fingerprint,
                        "split": r.split, "metrics": {k: m.value for k, m in r.metrics.items()}})
    return out


# -- writing ------------------------------------------------------------------------------------
def _existing(out: Path, run_fingerprint: str, calibration_split: str | None) -> dict[str, Any] | None:
    """The metadata of an identical export already in ``out``; None when ``out`` is absent or empty."""
    if out.exists() and not out.is_dir():
        raise RewardError("--out is a file, not a folder", path=out, hint="choose another --out")
    if not out.is_dir() or not any(out.iterdir()):
        return None
    from gradebench.reward.meta import read_metadata

    try:
        meta = read_metadata(out)
    except RewardError:
        meta = None
    if (meta is not None and meta.get("run", {}).get("run_fingerprint") == run_fingerprint
            and calibration_split in (None, meta["calibration"].get("split"))):
        return meta
    raise RewardError("--out is a non-empty folder that holds no export of this run", path=out,
                      hint="choose a new or empty folder (or delete that one)")


def _check_hf_export(directory: Path, scorer: Any, calibration_pairs: tuple[list[str], list[str]]) -> None:
    """Reload ``directory`` with AutoModelForSequenceClassification and compare with the scorer's logits.

    Both sides read the exported files on the CPU in fp32 (the scorer may run under autocast on
    a GPU, which would blur the comparison).
    """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from gradebench.scorers._ce_model import quiet_loading

    queries, cands = calibration_pairs
    config = {**scorer.config.model_dump(mode="json"), "device": "cpu", "precision": "fp32"}
    scorer = load_scorer(directory, scorer.name, scorer.version, config, seed=scorer.seed)
    with quiet_loading():
        model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
        tok = AutoTokenizer.from_pretrained(directory)
    if model.config.num_labels != 1:
        raise RewardError(f"the exported model has num_labels={model.config.num_labels}, not 1", path=directory,
                          hint="this is a bug in the cross-encoder export; report it")
    with torch.inference_mode():
        batch = tok(queries, cands, padding=True, truncation="longest_first",
                    max_length=scorer.config.max_length, return_tensors="pt")
        theirs = model(**batch).logits[:, 0].double().numpy()
    ours = scorer.score_pairs(queries, cands)
    if not np.allclose(theirs, ours, atol=HF_CHECK_ATOL, rtol=1e-4):
        raise RewardError("AutoModelForSequenceClassification does not reproduce the scorer's logits "
                          f"(max difference {float(np.abs(theirs - ours).max()):.2e})", path=directory,
                          hint="this is a bug in the cross-encoder export; report it")


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")
    os.chmod(path, 0o666 & ~current_umask())


def export_reward(
    run: str | Path | None = None,
    *,
    out: str | Path,
    best: str | None = None,
    benchmark: str | Path | None = None,
    results_dir: str | Path = DEFAULT_RESULTS_DIR,
    split: str = "test",
    calibration_split: str | None = None,
    device: str | None = None,
    progress: ProgressFn | None = None,
) -> ExportResult:
    """Export a trained run (a folder, or the best by ``best`` on ``benchmark``) into the reward folder ``out``.

    Args:
        run: a finished run folder (``gradebench train --out``); or None with ``best``.
        out: the reward folder to write (must be absent or empty; an identical export there is
            returned with ``cached=True``).
        best: pick the run by this leaderboard metric (e.g. ``ndcg@5``); needs ``benchmark``.
        benchmark: with ``best``: a benchmark name or folder whose records to rank.
        results_dir: root of the result records (for ``best`` and for the metadata's metrics).
        split: records of this split rank the runs (``best``).
        calibration_split: split of the run's benchmark to calibrate on (default: validation, else train).
        device: where a model-backed scorer runs while calibrating (default: its own choice).
        progress: optional ``progress(done, total, message)``.

    Raises:
        InvalidArgumentError: both or neither of ``run`` and ``best``; ``benchmark`` without ``best``.
        RewardError: the run's scorer cannot be exported (untrained), an incomplete run, a
            benchmark that no longer matches, a non-empty ``out``.
        RunError: no such run folder, or an unfinished one.
    """
    from gradebench.experiments.runs import MODEL_DIR, read_run_info
    from gradebench.scorers import get_scorer_class

    if (run is None) == (best is None):
        raise InvalidArgumentError("give a run folder or --best METRIC (one of them)",
                                   hint="e.g. gradebench export-reward runs/x --out reward/ , or "
                                        "--best ndcg@5 --benchmark esnli-human --out reward/")
    if best is not None and benchmark is None:
        raise InvalidArgumentError("--best needs --benchmark NAME_OR_DIR", hint="e.g. --best ndcg@5 --benchmark demo")
    if best is None and benchmark is not None:
        raise InvalidArgumentError("--benchmark goes with --best", hint="drop --benchmark, or pick the run with --best")
    if not isinstance(out, (str, Path)):
        raise InvalidArgumentError(f"out must be a path, got {type(out).__name__}")
    out = Path(out)
    check_writable_dir(out, what="--out")
    step = _stepper(progress, 4)
    selected = None
    if best is not None:
        step(f"picking the best run by {best}")
        selected = select_best_run(best, benchmark, results_dir=results_dir, split=split)
        run = selected["run_dir"]
    run_dir = Path(run)
    info = read_run_info(run_dir)
    cls = get_scorer_class(info.scorer)
    if not cls.trainable:
        raise RewardError(f"scorer {info.scorer!r} is untrained and has no model to export", path=run_dir,
                          hint="export a run of a trainable scorer (see `gradebench scorers`)")
    if not (run_dir / MODEL_DIR).is_dir():
        raise RewardError("the run has no model/ folder (incomplete run)", path=run_dir, hint="train the run again")
    cached = _existing(out, info.run_fingerprint, calibration_split)
    if cached is not None:
        return ExportResult.from_metadata(out, cached, cached=True)

    step(f"loading {info.scorer}")
    scorer = load_scorer(run_dir / MODEL_DIR, info.scorer, info.scorer_version, info.config, seed=info.seed,
                         device=device)
    step("calibrating on the run's benchmark")
    calibration = calibrate(scorer, info.benchmark_path, fingerprint=info.benchmark_fingerprint,
                            split=calibration_split)
    notes: list[str] = []
    hf = info.scorer == "cross-encoder" and getattr(scorer.config, "head", None) == "standard"
    if info.scorer == "cross-encoder" and not hf:
        notes.append(f"cross-encoder head={scorer.config.head!r} does not load with "
                     "AutoModelForSequenceClassification (it would attach a fresh, random classifier); exported "
                     "through the gradebench path: load it with gradebench.reward.load(DIR) "
                     f"(or sentence_transformers.CrossEncoder(DIR/{SCORER_SUBDIR}))")
    describe = scorer.describe()
    meta = {
        "schema_version": REWARD_SCHEMA_VERSION, "kind": REWARD_KIND, "gradebench_version": __version__,
        "format": FORMAT_HF if hf else FORMAT_GRADEBENCH, "model_dir": "." if hf else SCORER_SUBDIR,
        "scorer": {"name": info.scorer, "version": info.scorer_version, "kind": describe.get("kind", cls.kind),
                   "config": portable_config(cls, info.config)},
        "loss": {"name": info.loss, "params": info.loss_params}, "seed": info.seed,
        "run": {"run_dir": str(run_dir), "run_fingerprint": info.run_fingerprint, "options": info.options,
                "best_epoch": info.best_epoch, "trained_with": info.gradebench_version},
        "benchmark": {"name": info.benchmark, "fingerprint": info.benchmark_fingerprint,
                      "path": info.benchmark_path},
        "metrics": {"validation": info.best_metrics, "records": _run_records(results_dir, info.run_fingerprint)},
        "calibration": calibration,
        "input": {"query": "the benchmark's query text (premise/hypothesis/label for NLI benchmarks)",
                  "candidate": "the completion's text", "output": "raw score, higher is better"},
        "selected_by": selected, "notes": notes,
    }
    if hf:
        meta["input"]["hf"] = (f"tokenizer(query, candidate, truncation='longest_first', "
                               f"max_length={scorer.config.max_length}); reward = logits[:, 0] (no activation)")

    step(f"writing {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.incomplete-", dir=out.parent))
    try:
        if hf:
            scorer.save(tmp)
            lists = _calibration_pairs(info.benchmark_path, calibration["split"])
            _check_hf_export(tmp, scorer, lists)
        else:
            (tmp / SCORER_SUBDIR).mkdir()
            scorer.save(tmp / SCORER_SUBDIR)
        _write_json(tmp / REWARD_FILE, meta)
        if out.is_dir():
            out.rmdir()  # empty (checked above): never replace a folder with content
        publish_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if progress is not None:
        progress(4, 4, "done")
    return ExportResult.from_metadata(out, meta, cached=False)


def portable_config(cls: type, config: dict[str, Any]) -> dict[str, Any]:
    """The run's scorer config without the device it trained on (a reward runs where it is loaded:
    ``load(DIR, device=...)``, default the scorer's own choice)."""
    if "device" in cls.Config.model_fields:
        return {**config, "device": None}
    return dict(config)


def _calibration_pairs(benchmark: str, split: str) -> tuple[list[str], list[str]]:
    from gradebench.benchmark.lists import open_benchmark

    q, c = open_benchmark(benchmark).lists(split).pairs()
    return q[:HF_CHECK_PAIRS], c[:HF_CHECK_PAIRS]


def _stepper(progress: ProgressFn | None, total: int):
    done = [0]

    def step(message: str) -> None:
        if progress is not None:
            progress(done[0], total, message)
        done[0] += 1

    return step
