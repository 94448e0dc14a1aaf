"""Evaluating trained runs: own benchmark, another benchmark (refused unless --zero-shot), CLI."""

from __future__ import annotations

import json
import shutil

import pytest

from gradebench.cli import main
from gradebench.errors import RunError
from gradebench.experiments.runs import load_run
from gradebench.experiments.train import train
from gradebench.experiments.evaluate import evaluate_scorer

CFG = {"min_child_samples": 5, "n_estimators": 20}


@pytest.fixture()
def run_and_other(demo_benchmark, tmp_path):
    out = tmp_path / "run"
    train(demo_benchmark, "lambdamart", config=CFG, out=out)
    other = tmp_path / "other"
    shutil.copytree(demo_benchmark, other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["fingerprint"] = "f" * 64
    manifest["recipe"]["name"] = "demo-copy"
    (other / "manifest.json").write_text(json.dumps(manifest))
    return out, other


def test_run_on_another_benchmark_needs_zero_shot(run_and_other, tmp_path):
    out, other = run_and_other
    scorer, info = load_run(out)
    with pytest.raises(RunError, match="trained on demo .* not on demo-copy"):
        evaluate_scorer(other, scorer, run=info, results_dir=tmp_path / "res")
    assert not (tmp_path / "res").exists()
    rec = evaluate_scorer(other, scorer, run=info, results_dir=tmp_path / "res", zero_shot=True, n_resamples=50)
    assert rec.run.benchmark_fingerprint != rec.benchmark.fingerprint
    own = evaluate_scorer(info.benchmark_path, scorer, run=info, results_dir=tmp_path / "res", n_resamples=50)
    assert own.id != rec.id


def test_cli_eval_run_other_benchmark(run_and_other, tmp_path, capsys):
    out, other = run_and_other
    res = tmp_path / "res"
    assert main(["eval", "--run", str(out), "--benchmark", str(other), "--results-dir", str(res)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--zero-shot" in err
    assert not res.exists()
    assert main(["eval", "--run", str(out), "--benchmark", str(other), "--zero-shot", "--resamples", "50",
                 "--results-dir", str(res), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["benchmark"]["name"] == "demo-copy" and rec["run"]["benchmark_fingerprint"] != "f" * 64
