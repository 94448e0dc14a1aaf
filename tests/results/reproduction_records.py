"""Tiny synthetic records for the reproduction-report tests, written by the real evaluator.

A :class:`MemBench` is a :class:`~gradebench.benchmark.lists.Benchmark` whose lists live in
memory, so ``evaluate_scorer`` computes and writes a complete record (metrics with CIs, bias
controls, both Parquet tables) for fixed predictions, under any benchmark name: the report
reads exactly what a sweep would have written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gradebench._version import DATA_FORMAT_VERSION
from gradebench.benchmark.lists import Benchmark, Lists
from gradebench.experiments.evaluate import evaluate_scorer
from gradebench.experiments.runs import RunInfo
from gradebench.hashing import sha256_json
from gradebench.scorers.base import Scorer

PAPER_TIERS = ("gold", "good", "fair", "poor", "nonsense")


@dataclass(frozen=True)
class MemBench(Benchmark):
    """A benchmark whose test split is the given lists (nothing on disk but an optional manifest)."""

    data: Lists | None = None

    def lists(self, split: str, *, columns: Any = ()) -> Lists:
        return self.data


class Fixed(Scorer):
    """Returns the scores it was given; its record name is ``record_name``."""

    name = "fixed"
    kind = "neural"

    def __init__(self, scores: np.ndarray, record_name: str, *, seed: int = 42) -> None:
        super().__init__(None, seed=seed)
        self._scores = np.asarray(scores, dtype=np.float64)
        self._record_name = record_name

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "name": self._record_name}

    def score(self, lists: Lists) -> np.ndarray:
        return self._scores.copy()


def fingerprint(name: str) -> str:
    return sha256_json(["test-benchmark", name])


def make_bench(root: Path, name: str, relevance: np.ndarray, *, tiers: tuple[str, ...] | None = None,
               score: np.ndarray | None = None, train_grades: dict[int, int] | None = None) -> MemBench:
    """A benchmark ``name`` of ``relevance`` lists (``tiers``: tier names by grade, best first);
    ``train_grades`` writes a manifest whose train split has these candidates per grade."""
    rel = np.asarray(relevance, dtype=np.float64)
    n, width = rel.shape
    fp = fingerprint(name)
    qids = np.array([f"{name[:3]}{i:04d}" for i in range(n)], dtype=object)
    queries = np.array([f"query {i} about topic {i % 7}" for i in range(n)], dtype=object)
    cids = np.array([[f"{name[:3]}{i:04d}-{j}" for j in range(width)] for i in range(n)], dtype=object)
    texts = np.array([[f"candidate {j} of query {i} says {'x ' * (j + 1)}" for j in range(width)] for i in range(n)],
                     dtype=object)
    top = rel.max() if rel.max() > 0 else 1.0
    extra = {}
    if tiers is not None:
        grades = sorted({float(g) for g in rel.ravel()}, reverse=True)
        names = dict(zip(grades, tiers))
        extra["tier"] = np.vectorize(lambda g: names[float(g)], otypes=[object])(rel)
    lists = Lists(benchmark=name, fingerprint=fp, split="test", query_ids=qids, queries=queries, candidate_ids=cids,
                  candidates=texts, relevance=rel, score=rel / top if score is None else np.asarray(score, float),
                  mask=np.ones_like(rel, dtype=bool), extra=extra)
    path = root / "benchmarks" / name
    path.mkdir(parents=True, exist_ok=True)
    if train_grades is not None:
        manifest = {"data_format_version": DATA_FORMAT_VERSION, "fingerprint": fp, "recipe": {"name": name},
                    "splits": {}, "skipped": {}, "file_digests": {},
                    "stats": {"train": {"grades": {str(g): {"candidates": c} for g, c in train_grades.items()}}}}
        (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return MemBench(path=path, name=name, fingerprint=fp, manifest={}, files={"test": []}, data=lists)


def run_info(trained_on: MemBench, loss: str, seed: int, **options: Any) -> RunInfo:
    opts = {"loss": loss, "loss_params": {}, "epochs": 3, "seed": seed, "list_size": None,
            "max_train_queries": None, **options}
    return RunInfo(run_dir=f"gradebench-out/runs/{trained_on.name}/hashed-mlp/{loss}{seed}", scorer="hashed-mlp",
                   scorer_version=1, config={}, loss=loss, loss_params={}, options=opts, seed=seed,
                   benchmark=trained_on.name, benchmark_fingerprint=trained_on.fingerprint,
                   benchmark_path=str(trained_on.path), run_fingerprint=sha256_json(["run", trained_on.name, opts]),
                   best_epoch=1, best_metrics={"epoch": 1}, timings={"fit_s": 1.0})


def write(results: Path, bench: MemBench, scores: np.ndarray, *, scorer: str = "hashed-mlp", loss: str | None = None,
          seed: int = 42, trained_on: MemBench | None = None, **options: Any):
    """Evaluate fixed ``scores`` on ``bench`` as ``scorer`` (+ ``loss``: a run trained on ``trained_on``,
    default ``bench``) and write the record into ``results``."""
    run = None if loss is None else run_info(trained_on or bench, loss, seed, **options)
    return evaluate_scorer(bench, Fixed(scores, scorer, seed=seed), split="test", seed=0, n_resamples=50, run=run,
                           results_dir=results, zero_shot=trained_on is not None and trained_on is not bench)


def ranked(relevance: np.ndarray, good: np.ndarray, *, scale: float = 1.0) -> np.ndarray:
    """Scores ordering each list like its grades where ``good[i]``, in reverse elsewhere (ties broken by position)."""
    rel = np.asarray(relevance, dtype=np.float64)
    jitter = -1e-3 * np.arange(rel.shape[1])[None, :]
    return scale * np.where(np.asarray(good)[:, None], rel, -rel) + jitter


def good_share(n: int, share: float) -> np.ndarray:
    """The first ``round(share * n)`` of ``n`` queries are good."""
    return np.arange(n) < round(share * n)
