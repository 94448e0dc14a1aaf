"""SQL views over the records: results, metrics, per_query, predictions, candidates."""

from __future__ import annotations

import csv
import io
import json

import pytest

from gradebench.errors import GradebenchError
from gradebench.experiments import query as Q
from gradebench.experiments import suite as S
from gradebench.experiments.evaluate import evaluate_scorer
from gradebench.experiments.query import QueryError, query, run_query
from gradebench.experiments.record import RecordError
from tests.results.conftest import Oracle, Shuffle


@pytest.fixture(scope="module")
def store(demo_bench, tmp_path_factory):
    out = tmp_path_factory.mktemp("sql")
    recs = [evaluate_scorer(demo_bench, s, split="test", results_dir=out, n_resamples=100)
            for s in (Oracle(), Shuffle(seed=1))]
    return out, recs


def test_results_view_flattens_every_metric(store):
    out, recs = store
    res = run_query('select * from results order by scorer', results_dir=out)
    assert len(res.rows) == 2
    for name in S.suite_names(tiers=True):  # views.sql covers the whole suite
        assert {name, f"{name}_low", f"{name}_high"} <= set(res.columns), name
    rows = {r["scorer"]: r for r in res.to_dict()["rows"]}
    for rec in recs:
        row = rows[rec.scorer.name]
        assert row["id"] == rec.id and row["n_queries"] == 5 and row["split"] == "test"
        for name, m in rec.metrics.items():
            assert row[name] == pytest.approx(m.value) and row[f"{name}_low"] == pytest.approx(m.ci_low)


def test_long_views(store):
    out, recs = store
    m = run_query("select metric, value from metrics where id = '%s' order by metric" % recs[0].id, results_dir=out)
    assert dict(m.rows) == pytest.approx({k: v.value for k, v in recs[0].metrics.items()})
    pq = run_query("select metric, avg(value) from per_query where record_id = '%s' group by metric" % recs[1].id,
                   results_dir=out)
    assert dict(pq.rows) == pytest.approx({k: recs[1].metrics[k].value for k in S.per_query_names()})
    n = run_query("select scorer, count(*) from predictions group by scorer order by scorer", results_dir=out)
    assert n.rows == [["test-oracle", 25], ["test-random", 25]]


def test_join_predictions_with_candidate_tiers(store):
    out, _ = store
    sql = Q.__doc__.split("::", 1)[1].split("(``gradebench", 1)[0]  # the docstring's example runs
    res = run_query(sql, results_dir=out)
    rows = res.to_dict()["rows"]
    oracle = [r for r in rows if r["scorer"] == "test-oracle"]
    assert len(oracle) == 10 and all(r["swapped"] == 0.0 for r in oracle)  # 5 tiers: 10 ordered pairs
    assert {(r["better"], r["worse"]) for r in oracle} >= {("gold", "good"), ("poor", "nonsense")}
    assert all(r["pairs"] == 5 for r in oracle)
    j = run_query("select count(*), count(distinct c.benchmark), min(c.tier = p.tier) from predictions p "
                  "join candidates c using (benchmark_fingerprint, query_id, candidate_id)", results_dir=out)
    assert j.rows == [[50, 1, True]]
    splits = run_query("select split, count(*) from candidates group by split order by split", results_dir=out)
    assert splits.rows == [["test", 25], ["train", 190], ["validation", 25]]


def test_formats(store):
    out, _ = store
    sql = 'select scorer, "ndcg@5" from results order by scorer'
    as_json = json.loads(query(sql, results_dir=out, fmt="json"))
    assert as_json == run_query(sql, results_dir=out).to_dict()
    assert as_json["columns"] == ["scorer", "ndcg@5"] and as_json["rows"][0]["ndcg@5"] == pytest.approx(1.0)
    rows = list(csv.reader(io.StringIO(query(sql, results_dir=out, fmt="csv"))))
    assert rows[0] == ["scorer", "ndcg@5"] and rows[1][0] == "test-oracle" and float(rows[1][1]) == 1.0
    table = query(sql, results_dir=out)
    assert table.splitlines()[0].split() == ["scorer", "ndcg@5"] and table.rstrip().endswith("(2 rows)")
    with pytest.raises(GradebenchError, match="unknown format"):
        query(sql, results_dir=out, fmt="xml")


@pytest.mark.parametrize("sql, needle", [
    ("selec * from results", "syntax error"),
    ("select nope from results", "nope"),
    ("select * from no_such_view", "no_such_view"),
])
def test_invalid_sql_is_one_line_error(store, sql, needle):
    out, _ = store
    with pytest.raises(QueryError, match=needle) as e:
        run_query(sql, results_dir=out)
    assert "\n" not in e.value.one_line() and "views: results" in e.value.one_line()


def test_no_records(tmp_path):
    with pytest.raises(RecordError, match="no result records"):
        run_query("select 1", results_dir=tmp_path)


def test_missing_benchmark_leaves_candidates_empty(demo_bench, tmp_path):
    import shutil

    copy = tmp_path / "bench"
    shutil.copytree(demo_bench, copy)
    evaluate_scorer(copy, Oracle(), results_dir=tmp_path / "res", n_resamples=20)
    shutil.rmtree(copy)
    assert run_query("select count(*) from candidates", results_dir=tmp_path / "res").rows == [[0]]
    assert run_query("select count(*) from predictions", results_dir=tmp_path / "res").rows == [[25]]


def test_views_sql_is_found():
    path = Q.views_sql_path()
    assert path.name == "views.sql" and "${RECORD_FILES}" in path.read_text()
