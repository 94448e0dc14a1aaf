"""Issue 16 (6, part): a killed record write leaves temp files; the next write to that store removes them,
but never a live writer's."""

from __future__ import annotations

from gradebench.experiments.evaluate import evaluate_scorer
from gradebench.experiments.store import list_records
from gradebench.locks import locked_temp_beside
from gradebench.scorers import make_scorer
from tests.harness._kill import killed_at


def _eval(bench, scorer, res):
    return evaluate_scorer(bench, make_scorer(scorer), seed=0, n_resamples=20, results_dir=res)


def test_the_next_write_removes_what_a_killed_eval_left(demo_benchmark, tmp_path, monkeypatch):
    res = tmp_path / "res"
    folder = res / "demo"
    killed_at(monkeypatch, "record-writing:1", [res], lambda: _eval(demo_benchmark, "bm25", res))
    (left,) = folder.glob(".*.tmp")  # issue 16: `.<id>.predictions.parquet.<rnd>.tmp`, removed by nothing
    assert ".predictions.parquet." in left.name and list_records(res) == []
    with locked_temp_beside(folder / "other.json") as live:  # another process writing into the store right now
        live.write_text("half written")
        rec = _eval(demo_benchmark, "length", res)
        assert not left.exists() and live.exists()
    assert [r.id for r in list_records(res)] == [rec.id]
    killed_at(monkeypatch, "record-writing:3", [res], lambda: _eval(demo_benchmark, "bm25", res))  # the JSON
    (left,) = folder.glob(".*.tmp")  # the killed JSON's; the other writer's, unlocked once it ended, went first
    assert left.name.endswith(".tmp") and ".json." in left.name and not live.exists()
    again = _eval(demo_benchmark, "bm25", res)
    assert not list(folder.glob(".*.tmp"))
    assert sorted(r.id for r in list_records(res)) == sorted([rec.id, again.id])
