"""Shared test set-up: offline Hugging Face, caches inside each test's temp dir, real-data paths, the
demo benchmark (and its lists, and a tiny BERT on its texts) built once per session, and small helpers."""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import subprocess
import sys
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


@contextlib.contextmanager
def one_torch_thread():
    """Run torch on one intra-op thread, then restore the previous count.

    For tests on tiny tensors: kernels that always dispatch to the thread pool (softmax,
    log-softmax) spend their time waking threads, which on a busy 2-core machine makes them
    several times (up to 10-30x) slower.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def modules_loaded_by(code: str, *packages: str) -> tuple[list[str], str]:
    """Run ``code`` in a fresh interpreter (repo as cwd; it must exit 0) and return the modules it
    left in ``sys.modules`` that are, or sit under, one of ``packages`` (``"torch"``,
    ``"gradebench.datasets"``), with what ``code`` printed."""
    probe = (
        f"{code}\n"
        "import sys as _sys\n"
        f"_p = {packages!r}\n"
        "print('\\n' + repr(sorted(m for m in _sys.modules if any(m == p or m.startswith(p + '.') for p in _p))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    printed, _, loaded = done.stdout.rstrip("\n").rpartition("\n")
    return ast.literal_eval(loaded), printed


def run_cli(capsys, *args: object) -> tuple[int, str, str]:
    """Run ``gradebench.cli.main`` in-process on ``args`` (each passed through ``str``):
    ``(exit_code, stdout, stderr)``."""
    from gradebench.cli import main

    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def printed_command(command: str, cwd: Path) -> tuple[list[str], dict[str, str]]:
    """``(argv, env)`` that run ``command`` as :func:`run_printed` does (for ``subprocess.Popen``)."""
    bin_dir = cwd / ".printed-bin"
    bin_dir.mkdir(exist_ok=True)
    shim, text = bin_dir / "gradebench", f'#!/bin/sh\nexec "{sys.executable}" -m gradebench "$@"\n'
    if not shim.is_file() or shim.read_text() != text:  # never rewritten while a command runs it
        shim.write_text(text)
        shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(REPO)}
    return ["bash", "-euo", "pipefail", "-c", command], env


def run_printed(command: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run ``command`` -- a command line exactly as gradebench or the README printed it (``\\``
    continuations, ``&&`` included) -- through ``bash`` in ``cwd``, with ``gradebench`` on the PATH
    running this checkout (``python -m gradebench``)."""
    argv, env = printed_command(command, cwd)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


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


@pytest.fixture(scope="session")
def demo_lists(demo_benchmark) -> dict:
    """``{split: Lists}`` of the demo benchmark."""
    from gradebench.benchmark.lists import open_benchmark

    bench = open_benchmark(demo_benchmark)
    return {split: bench.lists(split) for split in bench.splits}


@pytest.fixture(scope="session")
def demo_reader_run(tmp_path_factory, demo_benchmark) -> Path:
    """A tiny hashed-mlp run (a reader) on the demo benchmark: two epochs, seconds."""
    from gradebench.experiments.train import train

    out = tmp_path_factory.mktemp("reader") / "run"
    train(demo_benchmark, "hashed-mlp", config={"hidden": 16, "embed_dim": 8}, options={"epochs": 2}, out=out)
    return out


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory, demo_benchmark) -> Path:
    """Folder of a tiny random BERT encoder with a WordPiece tokenizer counted from the demo texts
    (see :mod:`tests.tiny_models`)."""
    from tests.tiny_models import build_tiny_bert, demo_texts

    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"), demo_texts(demo_benchmark))
