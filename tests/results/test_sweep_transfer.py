"""Sweeps with ``transfer:``: every cell is also evaluated zero-shot on other benchmarks; a cell is
done when all its records exist, and a re-run writes only the missing ones."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gradebench.errors import RecipeError
from gradebench.experiments.grid import load_experiment
from gradebench.experiments.store import list_records
from gradebench.experiments.sweep import sweep

GRID = """\
name: transfer
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
train: {{epochs: 1, batch_queries: 8, lr: 0.01}}
transfer:
  - path: {other}
"""


def _copy(bench: Path, dest: Path, name: str, *, drop_split: str | None = None) -> Path:
    """A copy of ``bench`` that opens as another benchmark (its own name and fingerprint)."""
    shutil.copytree(bench, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    manifest["fingerprint"] = f"{sum(map(ord, name)):x}".rjust(64, "e")
    manifest["recipe"]["name"] = name
    if drop_split is not None:
        for file in manifest["splits"].pop(drop_split)["files"]:
            del manifest["file_digests"][file]
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return dest


@pytest.fixture(scope="module")
def other(demo_benchmark, tmp_path_factory) -> Path:
    return _copy(demo_benchmark, tmp_path_factory.mktemp("other") / "b", "demo-copy")


def _mtimes(*folders: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for f in folders for p in f.rglob("*") if p.is_file()}


def test_every_cell_is_evaluated_on_the_transfer_benchmarks(demo_bench, other, tmp_path, cli):
    from tests.conftest import one_torch_thread

    exp = tmp_path / "exp.yaml"
    exp.write_text(GRID.format(bench=demo_bench, other=other))
    res, runs = tmp_path / "res", tmp_path / "runs"
    with one_torch_thread():
        first = sweep(exp, results_dir=res, runs_dir=runs)
    assert [(c.benchmark, c.scorer, c.transfer, c.trained_on, c.status) for c in first.cells] == [
        ("demo", "length", False, None, "evaluated"),
        ("demo-copy", "length", True, None, "evaluated"),  # an untrained scorer: evaluated directly
        ("demo", "hashed-mlp", False, None, "evaluated"),
        ("demo-copy", "hashed-mlp", True, "demo", "evaluated"),  # the demo run, zero-shot
    ]
    assert (first.evaluated, first.skipped) == (4, 0)
    assert first.transfer == {"records": 2, "evaluated": 2, "skipped": 0, "in_use": 0}
    own, zero_shot = first.cells[2], first.cells[3]
    assert own.run_dir == zero_shot.run_dir and len(list((runs / "demo" / "hashed-mlp").iterdir())) == 1
    records = {r.id: r for r in list_records(res)}
    assert len(records) == 4 and len(list_records(res, benchmark="demo-copy")) == 2
    rec = records[zero_shot.record_id]
    assert Path(zero_shot.record_path).parent == res / "demo-copy"
    assert (rec.benchmark.name, rec.run.benchmark, rec.run.run_fingerprint) == (
        "demo-copy", "demo", records[own.record_id].run.run_fingerprint)
    assert rec.benchmark.fingerprint == zero_shot.benchmark_fingerprint != own.benchmark_fingerprint

    before = _mtimes(res)
    code, out, err = cli("sweep", exp, "--results-dir", res, "--runs-dir", runs, "--json")
    assert code == 0, err
    again = json.loads(out)
    assert (again["evaluated"], again["skipped"]) == (0, 4)
    assert again["transfer"] == {"records": 2, "evaluated": 0, "skipped": 2, "in_use": 0}
    assert [c["record_id"] for c in again["cells"]] == [c.record_id for c in first.cells]
    assert _mtimes(res) == before  # nothing rewritten
    code, out, err = cli("sweep", exp, "--results-dir", res, "--runs-dir", runs)
    text = " ".join(out.split())
    assert code == 0 and "0 evaluated, 4 skipped (2 of them transfer records: 0 evaluated, 2 skipped)" in text
    rows = [line.split()[:2] for line in out.splitlines()]
    assert rows.count(["→", "demo-copy"]) == 2  # each under its cell's own record


def test_a_cell_missing_some_records_writes_only_those(demo_bench, other, tmp_path):
    """The run folder gone, the own record there: the run is trained again (same fingerprint, same
    folder, same weights) and only the transfer record is written."""
    from tests.conftest import one_torch_thread
    from tests.harness._kill import digests

    exp = tmp_path / "exp.yaml"
    exp.write_text(GRID.format(bench=demo_bench, other=other))
    res, runs = tmp_path / "res", tmp_path / "runs"
    with one_torch_thread():
        first = sweep(exp, results_dir=res, runs_dir=runs)
        own, zero_shot = first.cells[2], first.cells[3]
        model = digests(Path(own.run_dir) / "model")
        metrics = {r.id: r.metrics for r in list_records(res)}
        shutil.rmtree(own.run_dir)
        for f in (res / "demo-copy").glob(f"{zero_shot.record_id}*"):
            f.unlink()
        kept = _mtimes(res)
        again = sweep(exp, results_dir=res, runs_dir=runs)
        assert [c.status for c in again.cells] == ["skipped", "skipped", "skipped", "evaluated"]
        assert digests(Path(own.run_dir) / "model") == model  # retrained into the same folder, identically
        assert {p: t for p, t in _mtimes(res).items() if p in kept} == kept  # the other records untouched
        assert {r.id: r.metrics for r in list_records(res)} == metrics

        # the run there and the own record gone: the run is reused, only the own record is written
        run_json = (Path(own.run_dir) / "run.json").stat().st_mtime_ns
        for f in (res / "demo").glob(f"{own.record_id}*"):
            f.unlink()
        third = sweep(exp, results_dir=res, runs_dir=runs)
    assert [c.status for c in third.cells] == ["skipped", "skipped", "evaluated", "skipped"]
    assert (Path(own.run_dir) / "run.json").stat().st_mtime_ns == run_json
    assert {r.id: r.metrics for r in list_records(res)} == metrics


def test_a_sweep_killed_between_a_cells_records_is_continued(demo_bench, other, tmp_path, monkeypatch):
    from tests.conftest import one_torch_thread
    from tests.harness._kill import killed_at

    exp = tmp_path / "exp.yaml"
    exp.write_text(GRID.format(bench=demo_bench, other=other).replace("  - name: length\n", ""))
    res, runs = tmp_path / "res", tmp_path / "runs"
    with one_torch_thread():
        # writes 1-3: the own record's two tables and its JSON; 4: the transfer record's first table
        killed_at(monkeypatch, "record-writing:4", [res, runs], lambda: sweep(exp, results_dir=res, runs_dir=runs))
        assert len(list_records(res)) == 1 and not list_records(res, benchmark="demo-copy")
        (run_dir,) = (runs / "demo" / "hashed-mlp").iterdir()
        run_json = (run_dir / "run.json").stat().st_mtime_ns
        again = sweep(exp, results_dir=res, runs_dir=runs)
    assert [(c.benchmark, c.status) for c in again.cells] == [("demo", "skipped"), ("demo-copy", "evaluated")]
    assert (run_dir / "run.json").stat().st_mtime_ns == run_json  # the finished run is reused
    assert len(list_records(res)) == 2


def test_a_cell_in_use_leaves_its_transfer_records_too(demo_bench, other, tmp_path, cli):
    from gradebench.experiments.runs import SCORER_RUN, claim
    from gradebench.experiments.sweep import _plan

    exp = tmp_path / "exp.yaml"
    exp.write_text(GRID.format(bench=demo_bench, other=other))
    res, runs = tmp_path / "res", tmp_path / "runs"
    run_dir = _plan(load_experiment(exp), exp, runs)[1].run_dir
    with claim(run_dir, "the first sweep's", SCORER_RUN):
        code, out, err = cli("sweep", exp, "--results-dir", res, "--runs-dir", runs, "--json")
    assert code == 3
    result = json.loads(out)
    assert [c["status"] for c in result["cells"]] == ["evaluated", "evaluated", "in use", "in use"]
    assert result["in_use"] == 2 and result["transfer"]["in_use"] == 1
    lines = err.splitlines()
    assert len(lines) == 1 and f"demo/hashed-mlp seed 3 ({run_dir}) is in use by pid {os.getpid()}" in lines[0]


def test_untrained_transfer_records_are_planned_once(demo_bench, other, tmp_path):
    """An untrained scorer's record on a transfer benchmark is the same for every cell (its id does
    not depend on where the cell comes from): it is planned once, and not at all when it is a cell's
    own record (here: demo, both a grid and a transfer benchmark)."""
    third = _copy(demo_bench, tmp_path / "third", "demo-third")
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"name: t\nbenchmarks: [{{path: {demo_bench}}}, {{path: {third}}}]\nscorers: [{{name: length}}]\n"
                   f"n_resamples: 20\ntransfer: [{{path: {other}}}, {{path: {demo_bench}}}]\n")
    result = sweep(exp, results_dir=tmp_path / "res", runs_dir=tmp_path / "runs")
    assert [(c.benchmark, c.transfer, c.status) for c in result.cells] == [
        ("demo", False, "evaluated"), ("demo-copy", True, "evaluated"), ("demo-third", False, "evaluated")]
    assert len(list_records(tmp_path / "res")) == 3


def test_a_transfer_benchmark_without_the_split_fails_before_any_work(demo_bench, tmp_path):
    no_test = _copy(demo_bench, tmp_path / "no-test", "demo-no-test", drop_split="test")
    exp = tmp_path / "exp.yaml"
    exp.write_text(GRID.format(bench=demo_bench, other=no_test))
    with pytest.raises(RecipeError, match="demo-no-test .* has no split 'test'") as e:
        sweep(exp, results_dir=tmp_path / "res", runs_dir=tmp_path / "runs")
    assert e.value.key == "transfer[0]" and "\n" not in str(e.value)
    assert not (tmp_path / "res").exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("block, line, key, needle", [
    ("transfer:\n  - path: /a\n  - path: /a\n", 13, "transfer", "transfer: /a is listed twice"),
    ("transfer:\n  - pth: /a\n", 14, "transfer[0].pth", "unknown key 'pth'"),
    ("transfer:\n  - {path: /a, recipe: demo}\n", 14, "transfer[0]", "exactly one of path"),
    ("transfer: /a\n", 13, "transfer", "valid list"),
])
def test_bad_transfer_entries_are_one_line_errors(tmp_path, block, line, key, needle):
    exp = tmp_path / "bad.yaml"
    exp.write_text(GRID.format(bench="/nowhere", other="/a").split("transfer:")[0] + block)
    with pytest.raises(RecipeError, match=needle) as e:
        load_experiment(exp)
    assert (e.value.line, e.value.key) == (line, key) and "\n" not in str(e.value)
