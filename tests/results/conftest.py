"""Shared fixtures: the demo benchmark (built once per session) and tiny test scorers.

The scorers are not registered (their ``name`` is a class attribute), so they never collide
with the built-in registry; ``QueryBlindFake`` borrows the probe's name ``query-blind``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gradebench.benchmark.lists import Lists
from gradebench.scorers.base import Scorer


class Oracle(Scorer):
    """score = relevance: the perfect ranking."""

    name = "test-oracle"

    def score(self, lists: Lists) -> np.ndarray:
        return lists.relevance.copy()


class OracleTwin(Oracle):
    """Same scores as :class:`Oracle` under another name (two identical systems)."""

    name = "test-oracle-twin"


class Noisy(Scorer):
    """relevance + N(0, 1.5^2) noise drawn from the scorer's seed."""

    name = "test-noisy"

    def score(self, lists: Lists) -> np.ndarray:
        return lists.relevance + np.random.default_rng(self.seed).normal(0.0, 1.5, lists.mask.shape)


class Shuffle(Scorer):
    """Uniform noise from the scorer's seed: a random ranking."""

    name = "test-random"

    def score(self, lists: Lists) -> np.ndarray:
        return np.random.default_rng(self.seed).random(lists.mask.shape)


class QueryBlindFake(Scorer):
    """Stands in for the query-blind probe: -candidate length (reads no query)."""

    name = "query-blind"

    def score(self, lists: Lists) -> np.ndarray:
        return -np.vectorize(len, otypes=[float])(lists.candidates)


@pytest.fixture(scope="session")
def demo_bench(demo_benchmark) -> Path:
    """The session's demo benchmark (``demo_benchmark`` of tests/conftest.py)."""
    return demo_benchmark


def fake_run(bench_fingerprint: str, *, seed: int = 7, loss: str = "listnet", epochs: int = 3):
    """A RunInfo as `load_run` returns it (for records of trained scorers)."""
    from gradebench.experiments.runs import RunInfo
    from gradebench.hashing import sha256_json

    options = {"loss": loss, "loss_params": {}, "epochs": epochs, "seed": seed}
    return RunInfo(
        run_dir="/runs/x", scorer="test-noisy", scorer_version=1, config={}, loss=loss, loss_params={},
        options=options, seed=seed, benchmark="demo", benchmark_fingerprint=bench_fingerprint,
        benchmark_path="/b", run_fingerprint=sha256_json(["run", bench_fingerprint, options]), best_epoch=2,
        best_metrics={"epoch": 2, "eval_ndcg@5": 0.9}, history=[{"epoch": 1, "train_loss": 1.0, "eval_ndcg@5": 0.8}],
        timings={"fit_s": 1.5, "total_s": 2.0},
    )
