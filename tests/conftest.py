"""Shared test set-up: offline Hugging Face, caches inside each test's temp dir, real-data paths."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO / ".." / "shared" / "data").resolve()
FIXTURES = Path(__file__).resolve().parent / "fixtures"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _isolated_caches(tmp_path_factory, monkeypatch):
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(cache / "hf"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(cache / "hf" / "datasets"))
    monkeypatch.setenv("GRADEBENCH_CACHE", str(cache / "gradebench"))
    yield


def shared_data(*parts: str) -> Path:
    """Path to real data under ../shared/data; skips the test if it is absent."""
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"real data not available: {p}")
    return p


def run_cli(capsys, *args: object) -> tuple[int, str, str]:
    """Run ``gradebench.cli.main`` in-process on ``args`` (each passed through ``str``):
    ``(exit_code, stdout, stderr)``."""
    from gradebench.cli import main

    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cli(capsys):
    """``cli(*args) -> (exit_code, stdout, stderr)``: :func:`run_cli` with this test's ``capsys``."""
    return functools.partial(run_cli, capsys)


@pytest.fixture(scope="session")
def demo_benchmark(tmp_path_factory) -> Path:
    """The embedded demo benchmark (38 train / 5 validation / 5 test queries x 5 candidates)."""
    from gradebench.experiments.build import build

    out = tmp_path_factory.mktemp("demo-bench")
    return Path(build("demo", out=out, progress=False).path)
