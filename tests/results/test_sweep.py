"""Sweeps: the grid runs once; a second invocation skips every cell; file/line/key errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gradebench.errors import RecipeError
from gradebench.experiments.grid import load_experiment
from gradebench.experiments.store import list_records
from gradebench.experiments.sweep import sweep
from tests.conftest import REPO

EXPERIMENT = """\
name: tiny
benchmarks:
  - path: {bench}
scorers:
  - name: length
    config: {{prefer: shorter}}
  - name: random
  - name: lambdamart
    config: {{n_estimators: 5, min_child_samples: 5}}
losses: [listnet]
seeds: [0, 1]
split: test
n_resamples: 50
"""


def test_sweep_skips_existing_records(demo_bench, tmp_path):
    exp = tmp_path / "exp.yaml"
    exp.write_text(EXPERIMENT.format(bench=demo_bench))
    first = sweep(exp, results_dir=tmp_path / "res", runs_dir=tmp_path / "runs")
    assert (first.evaluated, first.skipped) == (6, 0)
    assert [(c.scorer, c.seed) for c in first.cells] == [
        (s, seed) for s in ("length", "random", "lambdamart") for seed in (0, 1)]
    assert all(c.loss is None for c in first.cells)  # none of these scorers takes a gradebench loss
    lm = [c for c in first.cells if c.scorer == "lambdamart"]
    assert all(Path(c.run_dir).parent == tmp_path / "runs" / "demo" / "lambdamart" for c in lm)
    assert len({c.run_dir for c in lm}) == 2  # one run per seed
    records = list_records(tmp_path / "res")
    assert len(records) == 6
    trained = [r for r in records if r.scorer.name == "lambdamart"]
    assert {r.system_seed for r in trained} == {0, 1} and all(r.run is not None for r in trained)
    mtimes = {p: p.stat().st_mtime_ns for p in (tmp_path / "res" / "demo").iterdir()}

    second = sweep(exp, results_dir=tmp_path / "res", runs_dir=tmp_path / "runs")
    assert (second.evaluated, second.skipped) == (0, 6)
    assert [c.record_id for c in second.cells] == [c.record_id for c in first.cells]
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "res" / "demo").iterdir()} == mtimes  # nothing rewritten

    # a new seed only runs the new cells
    exp.write_text(EXPERIMENT.format(bench=demo_bench).replace("seeds: [0, 1]", "seeds: [0, 1, 2]"))
    third = sweep(exp, results_dir=tmp_path / "res", runs_dir=tmp_path / "runs")
    assert (third.evaluated, third.skipped) == (3, 6)


@pytest.mark.parametrize("edit, line, key, needle", [
    (("seeds: [0, 1]", "seeds: [0, 1]\nsedes: [3]"), 12, "sedes", "unknown key 'sedes'"),
    (("  - name: random", "  - name: random\n    confg: {}"), 8, "scorers[1].confg", "unknown key 'confg'"),
    (("n_resamples: 50", "n_resamples: 0"), 13, "n_resamples", "greater than or equal to 1"),
    (("split: test", "split: test\ntrain: {seed: 3}"), 13, "train", "set by the grid"),
    (("split: test", "split: test\ntrain: {epoch: 3}"), 13, "train.epoch", "unknown key 'epoch'"),
    (("  - path: /nowhere", "  - path: /nowhere\n    recipe: demo"), 3, "benchmarks[0]", "exactly one of path"),
])
def test_experiment_errors_name_file_line_key(tmp_path, edit, line, key, needle):
    exp = tmp_path / "bad.yaml"
    exp.write_text(EXPERIMENT.format(bench="/nowhere").replace(*edit))
    with pytest.raises(RecipeError, match=needle) as e:
        load_experiment(exp)
    assert (e.value.path, e.value.line, e.value.key) == (str(exp), line, key)


@pytest.mark.parametrize("edit, line, dup", [
    (("seeds: [0, 1]", "seeds: [0, 1]\nseeds: [2]"), 12, "seeds"),
    (("  - name: random", "  - name: random\n    name: bm25"), 8, "name"),
    (("config: {n_estimators: 5, min_child_samples: 5}", "config: {n_estimators: 5, n_estimators: 50}"), 9,
     "n_estimators"),
])
def test_a_key_given_twice_is_an_error_as_in_recipes(tmp_path, edit, line, dup):
    """Issue 16.6: duplicate keys in an experiment YAML were accepted (the last one silently won)."""
    exp = tmp_path / "dup.yaml"
    exp.write_text(EXPERIMENT.format(bench="/nowhere").replace(*edit))
    with pytest.raises(RecipeError, match=f"duplicate key '{dup}'") as e:
        load_experiment(exp)
    assert (e.value.path, e.value.line) == (str(exp), line)


def test_experiment_files_that_are_not_mappings_or_yaml(tmp_path):
    exp = tmp_path / "e.yaml"
    exp.write_text("- a list\n")
    with pytest.raises(RecipeError, match="must be a YAML mapping"):
        load_experiment(exp)
    exp.write_text("name: [unclosed\n")
    with pytest.raises(RecipeError, match="invalid YAML"):
        load_experiment(exp)
    exp.write_bytes(b"name: \xff\n")
    with pytest.raises(RecipeError, match="not UTF-8"):
        load_experiment(exp)


def test_shipped_demo_experiment_is_valid():
    exp = load_experiment(REPO / "recipes" / "experiments" / "demo.yaml")
    assert exp.name == "demo" and exp.benchmarks[0].recipe == "demo" and len(exp.seeds) >= 2
    assert {s.name for s in exp.scorers} >= {"bm25", "query-blind", "lambdamart"}
    from gradebench.scorers import get_scorer_class

    for entry in exp.scorers:  # every scorer is registered and per-scorer losses fit it
        cls = get_scorer_class(entry.name)
        assert cls.uses_loss or not entry.losses, entry.name


@pytest.mark.parametrize("path", sorted((REPO / "recipes" / "experiments").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_experiment_is_valid(path):
    from gradebench.losses import get_loss
    from gradebench.scorers import get_scorer_class

    exp = load_experiment(path)
    assert exp.name == path.stem  # records and docs name experiments by file
    for entry in exp.scorers:
        cls = get_scorer_class(entry.name)
        assert cls.uses_loss or not entry.losses, entry.name
    for loss in exp.losses:
        get_loss(loss.name)


def test_losses_on_a_scorer_without_loss_is_an_error(demo_bench, tmp_path):
    exp = tmp_path / "e.yaml"
    exp.write_text(f"name: t\nbenchmarks: [{{path: {demo_bench}}}]\nscorers:\n  - name: bm25\n    losses: [mse]\n")
    with pytest.raises(RecipeError, match="does not train with a gradebench loss") as e:
        sweep(exp, results_dir=tmp_path / "r", runs_dir=tmp_path / "runs")
    assert e.value.key == "scorers[0].losses"
    assert not (tmp_path / "r").exists()


def test_sweep_continues_a_cell_killed_mid_training(demo_bench, tmp_path):
    exp = tmp_path / "exp.yaml"
    exp.write_text(EXPERIMENT.format(bench=demo_bench).replace("seeds: [0, 1]", "seeds: [0]"))
    first = sweep(exp, results_dir=tmp_path / "res", runs_dir=tmp_path / "runs")
    cell = next(c for c in first.cells if c.scorer == "lambdamart")
    # what a kill during training leaves: run-config.json but no run.json, and no record
    (Path(cell.run_dir) / "run.json").unlink()
    for f in (tmp_path / "res" / "demo").glob(f"{cell.record_id}*"):
        f.unlink()
    again = sweep(exp, results_dir=tmp_path / "res", runs_dir=tmp_path / "runs")
    assert (again.evaluated, again.skipped) == (1, 2)
    assert (Path(cell.run_dir) / "run.json").is_file()


# -- issue 16: a sweep killed in a cell's first epoch, two sweeps on one grid -----------------------------------
TRAINED = """\
name: trained
benchmarks:
  - path: {bench}
scorers:
  - name: length
  - name: hashed-mlp
    config: {{dim: 1024, shared_dim: 256, embed_dim: 8, hidden: 16}}
losses: [listnet]
seeds: [3]
split: test
n_resamples: 50
train: {{epochs: 2, batch_queries: 8, lr: 0.01, patience: 10}}
"""


def test_a_sweep_killed_in_a_cells_first_epoch_is_continued_by_running_it_again(demo_bench, tmp_path, monkeypatch):
    # issue 16: every re-run failed with "…/checkpoints: nothing to resume: no checkpoint-* folder"
    from tests.conftest import one_torch_thread
    from tests.harness._kill import digests, killed_at

    exp = tmp_path / "exp.yaml"
    exp.write_text(TRAINED.format(bench=demo_bench))
    res, runs = tmp_path / "res", tmp_path / "runs"
    with one_torch_thread():
        killed_at(monkeypatch, "train-step:2", [res, runs], lambda: sweep(exp, results_dir=res, runs_dir=runs))
        (run_dir,) = (runs / "demo" / "hashed-mlp").iterdir()
        assert (run_dir / "run-config.json").is_file() and not (run_dir / "run.json").exists()
        again = sweep(exp, results_dir=res, runs_dir=runs)
        straight = sweep(exp, results_dir=tmp_path / "res2", runs_dir=tmp_path / "runs2")
    assert [(c.scorer, c.status) for c in again.cells] == [("length", "skipped"), ("hashed-mlp", "evaluated")]
    cell, ref = again.cells[1], straight.cells[1]
    assert cell.record_id == ref.record_id and cell.value == ref.value
    assert digests(run_dir / "model") == digests(tmp_path / "runs2" / "demo" / "hashed-mlp" / run_dir.name / "model")
    (rec,) = [r for r in list_records(res) if r.id == cell.record_id]
    (ref_rec,) = [r for r in list_records(tmp_path / "res2") if r.id == ref.record_id]
    assert rec.metrics == ref_rec.metrics


def _trained_cell_run_dir(demo_bench, runs: Path) -> Path:
    """The run folder of TRAINED's hashed-mlp cell under ``runs``."""
    from gradebench.benchmark.lists import open_benchmark
    from gradebench.experiments.runs import run_fingerprint
    from gradebench.experiments.train import resolve_options
    from gradebench.scorers import get_scorer_class

    cls = get_scorer_class("hashed-mlp")
    opts = resolve_options(cls, "listnet", {"epochs": 2, "batch_queries": 8, "lr": 0.01, "patience": 10, "seed": 3})
    fp = run_fingerprint(benchmark_fingerprint=open_benchmark(demo_bench).fingerprint,
                         scorer=cls({"dim": 1024, "shared_dim": 256, "embed_dim": 8, "hidden": 16}, seed=3).describe(),
                         options=opts.model_dump(mode="json"))
    return runs / "demo" / "hashed-mlp" / fp[:16]


def test_a_second_sweep_leaves_a_cell_that_another_process_trains_alone(demo_bench, tmp_path):
    # issue 16: the second sweep took the first one's live run folder for an interrupted run and failed
    from gradebench.experiments.runs import LOCK_FILE, SCORER_RUN, claim
    from tests.conftest import one_torch_thread

    exp = tmp_path / "exp.yaml"
    exp.write_text(TRAINED.format(bench=demo_bench))
    res, runs = tmp_path / "res", tmp_path / "runs"
    run_dir = _trained_cell_run_dir(demo_bench, runs)
    with claim(run_dir, "the first sweep's", SCORER_RUN):  # the first sweep, training this cell right now
        second = sweep(exp, results_dir=res, runs_dir=runs)
        assert [(c.scorer, c.status) for c in second.cells] == [("length", "evaluated"), ("hashed-mlp", "in use")]
        busy = second.cells[1]
        assert busy.run_dir == str(run_dir) and f"in use by pid {os.getpid()}" in busy.note
        assert sorted(p.name for p in run_dir.iterdir()) == [LOCK_FILE]  # not touched
        assert second.to_dict()["in_use"] == 1 and not list((res / "demo").glob(f"{busy.record_id}*"))
    with one_torch_thread():
        third = sweep(exp, results_dir=res, runs_dir=runs)  # once it is free, the cell runs
    assert [c.status for c in third.cells] == ["skipped", "evaluated"] and third.cells[1].record_id == busy.record_id


def test_the_sweep_command_names_a_cell_in_use_and_exits_3(demo_bench, tmp_path, cli):
    """The API recorded "in use by pid N" but ``gradebench sweep`` printed "0 evaluated, 1 skipped"
    and exited 0, as if the grid were done."""
    from gradebench.experiments.runs import SCORER_RUN, claim

    exp = tmp_path / "exp.yaml"
    exp.write_text(TRAINED.format(bench=demo_bench))
    res, runs = tmp_path / "res", tmp_path / "runs"
    run_dir = _trained_cell_run_dir(demo_bench, runs)
    with claim(run_dir, "the first sweep's", SCORER_RUN):
        code, out, err = cli("sweep", exp, "--results-dir", res, "--runs-dir", runs)
        assert code == 3, (code, err)
        lines = err.splitlines()
        assert len(lines) == 1 and "Traceback" not in err, err
        assert "demo/hashed-mlp" in lines[0] and str(run_dir) in lines[0]
        assert f"in use by pid {os.getpid()}: run the same command again when it ends" in lines[0]
        assert "1 evaluated, 0 skipped, 1 in use" in " ".join(out.split())
        code, out, err = cli("sweep", exp, "--results-dir", res, "--runs-dir", runs, "--json")
        assert code == 3 and '"in_use": 1' in out and f"in use by pid {os.getpid()}" in err


def test_sweep_help_documents_the_exit_codes(cli):
    code, out, _ = cli("sweep", "--help")
    text = " ".join(out.replace("│", " ").split())
    assert code == 0 and "exit 3" in text and "in use" in text
