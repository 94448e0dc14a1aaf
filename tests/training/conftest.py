"""Fixtures of the training-engine tests: the demo benchmark and its lists."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def demo_benchmark(tmp_path_factory) -> Path:
    """Folder of the demo benchmark (38/5/5 queries x 5 candidates), built once."""
    from gradebench.experiments.build import build

    return Path(build("demo", out=tmp_path_factory.mktemp("demo_bench"), progress=False).path)


@pytest.fixture(scope="session")
def demo_lists(demo_benchmark) -> dict:
    """``{split: Lists}`` of the demo benchmark."""
    from gradebench.benchmark.lists import open_benchmark

    bench = open_benchmark(demo_benchmark)
    return {split: bench.lists(split) for split in bench.splits}
