"""Fixtures of the reward tests: tiny trained runs on the demo benchmark and their exports.

``demo_benchmark`` and ``tiny_bert`` come from tests/conftest.py. The runs train for one epoch on the demo
benchmark (hashed-mlp in about a second; a tiny random BERT cross-encoder on 8 queries), once
per session.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: hashed-mlp small enough for sub-second epochs (as tests/training)
TINY_HASHED = {"dim": 2**10, "shared_dim": 2**8, "embed_dim": 8, "hidden": 16}
CE_OPTIONS = {"epochs": 1, "batch_queries": 4, "max_train_queries": 8, "max_validation_queries": 2, "lr": 1e-3}


@pytest.fixture(scope="session")
def hashed_run(demo_benchmark, tmp_path_factory) -> Path:
    from gradebench.experiments.train import train

    out = tmp_path_factory.mktemp("hashed") / "run"
    train(demo_benchmark, "hashed-mlp", loss="listnet", config=TINY_HASHED, options={"epochs": 1}, out=out)
    return out


@pytest.fixture(scope="session")
def hashed_reward(hashed_run, tmp_path_factory) -> Path:
    from gradebench.reward import export_reward

    out = tmp_path_factory.mktemp("hashed-reward") / "reward"
    export_reward(hashed_run, out=out, results_dir=tmp_path_factory.mktemp("no-results"))
    return out


def _ce_run(demo_benchmark, tiny_bert, out: Path, head: str) -> Path:
    from gradebench.experiments.train import train

    train(demo_benchmark, "cross-encoder", loss="listnet",
          config={"model": str(tiny_bert), "head": head, "max_length": 96, "device": "cpu", "batch_size": 16},
          options=CE_OPTIONS, out=out)
    return out


@pytest.fixture(scope="session")
def ce_run(demo_benchmark, tiny_bert, tmp_path_factory) -> Path:
    return _ce_run(demo_benchmark, tiny_bert, tmp_path_factory.mktemp("ce") / "run", "standard")


@pytest.fixture(scope="session")
def ce_paper_run(demo_benchmark, tiny_bert, tmp_path_factory) -> Path:
    return _ce_run(demo_benchmark, tiny_bert, tmp_path_factory.mktemp("ce-paper") / "run", "paper")
