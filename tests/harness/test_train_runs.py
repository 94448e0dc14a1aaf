"""train() and run folders: caching, refusal of foreign folders, continuing interrupted runs, load_run errors."""

from __future__ import annotations

import json

import pytest

from gradebench.cli import main
from gradebench.errors import InvalidArgumentError, RunError, UnknownNameError
from gradebench.experiments.runs import RUN_CONFIG, RUN_JSON, load_run, read_run_info
from gradebench.experiments.train import train
from gradebench.benchmark.lists import open_benchmark

CFG = {"min_child_samples": 5, "n_estimators": 20}


def test_train_writes_a_complete_run_and_caches(demo_benchmark, tmp_path):
    out = tmp_path / "run"
    r = train(demo_benchmark, "lambdamart", config=CFG, out=out)
    assert not r.cached and (out / RUN_JSON).is_file() and (out / "model").is_dir()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp leftovers
    info = read_run_info(out)
    assert info.benchmark == "demo" and info.run_fingerprint == r.run_fingerprint
    assert info.n_train_queries == 38 and info.n_validation_queries > 0
    again = train(demo_benchmark, "lambdamart", config=CFG, out=out)
    assert again.cached and again.run_fingerprint == r.run_fingerprint
    scorer, _ = load_run(out)
    test = open_benchmark(demo_benchmark).lists("test")
    assert scorer.score(test).shape == test.mask.shape


def test_fingerprint_depends_on_config_seed_and_options(demo_benchmark, tmp_path):
    fps = {
        train(demo_benchmark, "lambdamart", config=CFG, out=tmp_path / "a").run_fingerprint,
        train(demo_benchmark, "lambdamart", config={**CFG, "n_estimators": 21}, out=tmp_path / "b").run_fingerprint,
        train(demo_benchmark, "lambdamart", config=CFG, options={"seed": 7}, out=tmp_path / "c").run_fingerprint,
        train(demo_benchmark, "lambdamart", config=CFG, options={"list_size": 3}, out=tmp_path / "d").run_fingerprint,
    }
    assert len(fps) == 4


def test_refuses_foreign_and_interrupted_folders(demo_benchmark, tmp_path):
    out = tmp_path / "run"
    train(demo_benchmark, "lambdamart", config=CFG, out=out)
    with pytest.raises(RunError, match="another finished run"):
        train(demo_benchmark, "lambdamart", config={**CFG, "n_estimators": 5}, out=out)
    (out / RUN_JSON).unlink()  # now it looks interrupted
    with pytest.raises(RunError, match="another configuration"):
        train(demo_benchmark, "lambdamart", config={**CFG, "n_estimators": 5}, out=out, resume=True)
    with pytest.raises(RunError, match="another configuration"):
        train(demo_benchmark, "lambdamart", config={**CFG, "n_estimators": 5}, out=out)
    again = train(demo_benchmark, "lambdamart", config=CFG, out=out)  # the same command continues it
    assert not again.cached and (out / RUN_JSON).is_file()
    (out / RUN_JSON).unlink()
    assert not train(demo_benchmark, "lambdamart", config=CFG, out=out, resume=True).cached  # --resume too
    with pytest.raises(RunError, match="nothing to resume"):
        train(demo_benchmark, "lambdamart", config=CFG, out=tmp_path / "fresh", resume=True)
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("mine")
    with pytest.raises(RunError, match="non-empty folder"):
        train(demo_benchmark, "lambdamart", config=CFG, out=junk)
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(RunError, match="is a file"):
        train(demo_benchmark, "lambdamart", config=CFG, out=afile)


def test_bad_names_and_options(demo_benchmark, tmp_path):
    with pytest.raises(UnknownNameError, match="unknown scorer"):
        train(demo_benchmark, "lambdamar", out=tmp_path / "x")
    with pytest.raises(InvalidArgumentError, match="not trainable"):
        train(demo_benchmark, "bm25", out=tmp_path / "x")
    with pytest.raises(InvalidArgumentError, match="does not train with a gradebench loss"):
        train(demo_benchmark, "lambdamart", loss="listnet", out=tmp_path / "x")
    with pytest.raises(InvalidArgumentError) as e:
        train(demo_benchmark, "lambdamart", options={"epochs": 0}, out=tmp_path / "x")
    assert e.value.key == "epochs"
    assert not (tmp_path / "x").exists()


def test_load_run_errors(demo_benchmark, tmp_path):
    out = tmp_path / "run"
    train(demo_benchmark, "lambdamart", config=CFG, out=out)
    model = out / "model" / "lambdamart.txt"
    model.write_text("garbage")
    with pytest.raises(RunError, match="cannot load"):
        load_run(out)
    raw = json.loads((out / RUN_JSON).read_text())
    (out / RUN_JSON).write_text(json.dumps({**raw, "schema_version": 99}))
    with pytest.raises(RunError, match="v99"):
        load_run(out)
    (out / RUN_JSON).write_text("{not json")
    with pytest.raises(RunError, match="not valid JSON"):
        load_run(out)
    (out / RUN_JSON).unlink()
    with pytest.raises(RunError, match="did not finish"):
        load_run(out)
    assert (out / RUN_CONFIG).is_file()
    with pytest.raises(RunError, match="no such run folder"):
        load_run(tmp_path / "missing")


def test_cli_train_json_equals_api(demo_benchmark, tmp_path, capsys):
    out = tmp_path / "run"
    api = train(demo_benchmark, "lambdamart", config=CFG, out=out).to_dict()
    assert main(["train", "--benchmark", str(demo_benchmark), "--scorer", "lambdamart", "--set",
                 "min_child_samples=5", "--set", "n_estimators=20", "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == {**api, "cached": True}


def test_cli_bad_set_and_unknown_scorer(demo_benchmark, tmp_path, capsys):
    assert main(["train", "--benchmark", str(demo_benchmark), "--scorer", "lambdamart", "--set", "oops",
                 "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "key=value" in err
    assert main(["train", "--benchmark", str(demo_benchmark), "--scorer", "hashed_mlp",
                 "--out", str(tmp_path / "r")]) == 2
    assert "unknown scorer 'hashed_mlp'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_scorers_and_losses_listing(capsys):
    assert main(["scorers", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"bm25", "lambdamart"} <= {r["name"] for r in rows}
    assert main(["losses", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 12


def test_unwritable_out_fails_before_training(demo_benchmark, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["train", "--benchmark", str(demo_benchmark), "--scorer", "lambdamart",
                 "--out", str(blocker / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(blocker) in err
    assert main(["eval", "--benchmark", str(demo_benchmark), "--scorer", "bm25",
                 "--results-dir", "/proc/gradebench-results"]) == 2
    assert "/proc" in capsys.readouterr().err
