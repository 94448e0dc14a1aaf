"""Sweeps with ``list_sizes:``: trained cells once per K (the training option ``list_size``), each its
own run and record, every record computed on the full test lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gradebench.errors import RecipeError
from gradebench.experiments.grid import load_experiment
from gradebench.experiments.store import list_records
from gradebench.experiments.sweep import sweep

GRID = """\
name: list-size
benchmarks:
  - path: {bench}
scorers:
  - name: length
  - name: hashed-mlp
    config: {{dim: 1024, shared_dim: 256, embed_dim: 8, hidden: 16}}
losses: [ranknet]
list_sizes: [2, 3, null]
seeds: [3]
split: test
n_resamples: 50
train: {{epochs: 1, batch_queries: 8, lr: 0.01}}
"""


def test_each_list_size_is_its_own_run_and_record(demo_bench, tmp_path, cli):
    from gradebench.benchmark.lists import open_benchmark
    from gradebench.experiments.runs import read_run_info
    from tests.conftest import one_torch_thread

    exp = tmp_path / "exp.yaml"
    exp.write_text(GRID.format(bench=demo_bench))
    res, runs = tmp_path / "res", tmp_path / "runs"
    with one_torch_thread():
        result = sweep(exp, results_dir=res, runs_dir=runs)
    # an untrained scorer has no list-size axis: one cell per seed
    assert [(c.scorer, c.list_size) for c in result.cells] == [
        ("length", None), ("hashed-mlp", 2), ("hashed-mlp", 3), ("hashed-mlp", None)]
    trained = result.cells[1:]
    assert len({c.run_dir for c in trained}) == 3 and len({c.record_id for c in trained}) == 3
    records = {r.id: r for r in list_records(res)}
    test = open_benchmark(demo_bench).lists("test")
    for cell in trained:
        rec = records[cell.record_id]
        assert rec.run.options["list_size"] == cell.list_size
        assert rec.run.run_dir == cell.run_dir
        assert rec.benchmark.n_candidates == test.n_candidates  # evaluated on the full test lists
        info = read_run_info(cell.run_dir)
        assert info.options["list_size"] == cell.list_size
        assert info.n_train_queries == 38  # every training list stays, cut to K candidates
    assert records[result.cells[0].record_id].benchmark.n_candidates == test.n_candidates

    # null is the run on the full lists: the run a grid without list_sizes: trains
    exp.write_text(GRID.format(bench=demo_bench).replace("list_sizes: [2, 3, null]\n", ""))
    plain = sweep(exp, results_dir=res, runs_dir=runs)
    assert [c.status for c in plain.cells] == ["skipped", "skipped"]
    assert plain.cells[1].run_dir == trained[2].run_dir and plain.cells[1].record_id == trained[2].record_id

    exp.write_text(GRID.format(bench=demo_bench))
    code, out, err = cli("sweep", exp, "--results-dir", res, "--runs-dir", runs, "--json")
    assert code == 0, err
    assert [c["list_size"] for c in json.loads(out)["cells"]] == [None, 2, 3, None]
    code, out, err = cli("sweep", exp, "--results-dir", res, "--runs-dir", runs)
    rows = [line.split() for line in out.splitlines()]
    assert code == 0 and "0 evaluated, 4 skipped" in " ".join(out.split())
    assert [r[3] for r in rows if r[:2] == ["demo", "hashed-mlp"]] == ["2", "3", "full"]  # the K column


def test_the_subsample_of_a_list_size_run_is_its_seeds(demo_bench):
    """The K candidates kept per training list depend only on the seed and the candidates' ids: the
    same cell trains on the same lists wherever it runs; another seed draws others (every list keeps
    one of its best and one of its worst candidates: at K=2 that is all it keeps)."""
    from gradebench.benchmark.lists import open_benchmark

    train = open_benchmark(demo_bench).lists("train")
    a, b, other = (train.subsample(3, seed=s) for s in (3, 3, 4))
    assert (a.candidate_ids == b.candidate_ids).all() and (a.mask.sum(1) == 3).all()
    assert not (a.candidate_ids == other.candidate_ids).all()


def test_a_list_size_enters_the_run_fingerprint(demo_bench, tmp_path):
    from gradebench.experiments.sweep import _plan

    exp = tmp_path / "exp.yaml"
    exp.write_text(GRID.format(bench=demo_bench).replace("[2, 3, null]", "[2, 3, 5, 8, null]"))
    plan = [c for c in _plan(load_experiment(exp), exp, tmp_path / "runs") if c.opts is not None]
    assert [c.opts.list_size for c in plan] == [2, 3, 5, 8, None]
    assert len({c.run_dir for c in plan}) == 5  # 5 and 8 keep the whole 5-candidate lists, but are their own runs


@pytest.mark.parametrize("value, key, needle", [
    ("[1, 3]", "list_sizes[0]", "greater than or equal to 2"),
    ("[0]", "list_sizes[0]", "greater than or equal to 2"),
    ("[2, '3']", "list_sizes[1]", "valid integer"),
    ("[2, 2.5]", "list_sizes[1]", "valid integer"),
    ("[2, 3.0]", "list_sizes[1]", "valid integer"),
    ("[2, true]", "list_sizes[1]", "valid integer"),
    ("[2, 3, 2]", "list_sizes", "list_sizes: 2 is listed twice"),
    ("[null, 2, null]", "list_sizes", "list_sizes: null is listed twice"),
    ("[]", "list_sizes", "at least 1 item"),
    ("5", "list_sizes", "valid list"),
])
def test_bad_list_sizes_are_one_line_errors(tmp_path, value, key, needle):
    exp = tmp_path / "bad.yaml"
    exp.write_text(GRID.format(bench="/nowhere").replace("[2, 3, null]", value))
    with pytest.raises(RecipeError, match=needle) as e:
        load_experiment(exp)
    assert (e.value.path, e.value.line, e.value.key) == (str(exp), 9, key)
    assert "\n" not in str(e.value) and "null: the full lists" in str(e.value)  # the hint


def test_list_sizes_and_a_list_size_in_train_conflict(tmp_path):
    exp = tmp_path / "bad.yaml"
    exp.write_text(GRID.format(bench="/nowhere").replace("epochs: 1", "epochs: 1, list_size: 4"))
    with pytest.raises(RecipeError, match="train: list_size conflicts with list_sizes:") as e:
        load_experiment(exp)
    assert (e.value.line, e.value.key) == (13, "train") and "\n" not in str(e.value)
    exp.write_text(GRID.format(bench="/nowhere").replace("list_sizes: [2, 3, null]\n", "")
                   .replace("epochs: 1", "epochs: 1, list_size: 4"))
    assert load_experiment(exp).cell_list_sizes() == [4]  # one fixed K, as before list_sizes: existed
    exp.write_text(GRID.format(bench="/nowhere").replace("epochs: 1", "epochs: 1, list_sizes: [4]"))
    with pytest.raises(RecipeError, match="unknown key 'list_sizes'") as e:
        load_experiment(exp)
    assert e.value.key == "train.list_sizes"
