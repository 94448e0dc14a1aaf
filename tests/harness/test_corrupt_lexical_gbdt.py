"""A truncated or edited ``lexical-gbdt`` model is one line naming the file, never a dead process.

The same defect as LambdaMART's (issue 16.5, ``test_corrupt_lambdamart``): the scorer handed its
model file straight to LightGBM, whose C++ parser aborts the process on a truncated model. The
reproductions run in a subprocess, so that the old behaviour fails the test instead of killing
pytest.
"""

from __future__ import annotations

import hashlib
import shutil

import pytest

from gradebench.errors import RunError
from gradebench.experiments.runs import load_run
from gradebench.experiments.train import train
from tests.cli.conftest import assert_one_line_error, run_module
from tests.harness.test_corrupt_lambdamart import _cuts, assert_reward_load_raises_in_a_live_host

pytest.importorskip("lightgbm")

CFG = {"min_child_samples": 5, "dim": 2**12, "n_estimators": 20}
MODEL = "lexical_gbdt.txt"


@pytest.fixture(scope="module")
def gbdt_run(demo_benchmark, tmp_path_factory):
    out = tmp_path_factory.mktemp("gbdt") / "run"
    train(demo_benchmark, "lexical-gbdt", config=CFG, out=out)
    return out


def _copy(run, tmp_path, *, digest: bool = True):
    out = tmp_path / "run"
    shutil.copytree(run, out)
    if not digest:  # a run saved before digests were recorded
        (out / "model" / (MODEL + ".sha256")).unlink(missing_ok=True)
    return out


def _truncate(path, at: str = "mid-tree") -> None:
    text = path.read_text()
    path.write_text(text[: _cuts(text)[at]])


def test_save_records_the_digest_of_the_model(gbdt_run):
    model = gbdt_run / "model" / MODEL
    line = (gbdt_run / "model" / (MODEL + ".sha256")).read_text()
    assert line == f"{hashlib.sha256(model.read_bytes()).hexdigest()}  {MODEL}\n"  # sha256sum -c format


@pytest.mark.parametrize("digest", [True, False])
def test_eval_of_a_truncated_model_is_one_line(gbdt_run, tmp_path, digest):
    """``eval --run`` of a truncated lexical-gbdt model exited 134/139 (LightGBM's parser)."""
    run = _copy(gbdt_run, tmp_path, digest=digest)
    _truncate(run / "model" / MODEL)
    results = tmp_path / "results"
    done = run_module("eval", "--run", str(run), "--results-dir", str(results))
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert_one_line_error(done.stderr, str(run / "model" / MODEL), "cannot load the lexical-gbdt model")
    assert "LambdaMART" not in done.stderr
    assert ("sha256" in done.stderr) == digest  # the digest catches it first; else the structure does
    assert not results.exists() or not any(results.rglob("*.json"))


def test_reward_load_of_a_truncated_export_raises_in_the_host(gbdt_run, tmp_path):
    """``gradebench.reward.load`` of a truncated lexical-gbdt export took the host interpreter down."""
    from gradebench.reward import export_reward

    reward = tmp_path / "reward"
    export_reward(gbdt_run, out=reward, results_dir=tmp_path / "no-results")
    model = reward / "scorer" / MODEL
    _truncate(model)
    (reward / "scorer" / (MODEL + ".sha256")).unlink(missing_ok=True)  # the structural check alone must hold too
    assert "lexical-gbdt model" in assert_reward_load_raises_in_a_live_host(reward, model)


def test_an_old_run_without_a_digest_still_loads(gbdt_run, demo_benchmark, tmp_path):
    import numpy as np

    from gradebench.benchmark.lists import open_benchmark

    run = _copy(gbdt_run, tmp_path, digest=False)
    scorer, _ = load_run(run)
    genuine, _ = load_run(gbdt_run)
    test = open_benchmark(demo_benchmark).lists("test", columns=("tier", "label"))
    np.testing.assert_array_equal(scorer.score(test), genuine.score(test))


def test_the_digest_catches_an_edit_the_structure_allows(gbdt_run, tmp_path):
    run = _copy(gbdt_run, tmp_path)
    path = run / "model" / MODEL
    text = path.read_text()
    start = text.index("leaf_value=") + len("leaf_value=")
    digit = next(i for i in range(start, len(text)) if text[i] in "123456789")
    path.write_text(text[:digit] + ("1" if text[digit] != "1" else "2") + text[digit + 1:])
    with pytest.raises(RunError, match="cannot load the lexical-gbdt model: its sha256") as e:
        load_run(run)
    assert e.value.path == str(path)
