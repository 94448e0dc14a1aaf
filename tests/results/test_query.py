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


# -- a read-only view of the records (issue 16.7) ---------------------------------------------------
@pytest.mark.parametrize("sql, needle", [
    ("COPY (SELECT * FROM results) TO 'stolen.csv'", "a COPY statement is not allowed"),
    ("ATTACH 'other.duckdb' AS other", "an ATTACH statement is not allowed"),
    ("UPDATE results SET split = 'x'", "an UPDATE statement is not allowed"),
    ("DELETE FROM results", "a DELETE statement is not allowed"),
    ("SELECT 1; SELECT 2", "holds 2"),
    ("SELECT 1; COPY (SELECT 1) TO 'second.csv'", "holds 2"),
    ("CREATE TABLE t AS SELECT 1", "CREATE statement is not allowed"),
    ("SET enable_external_access = true", "SET statement is not allowed"),
    ("PRAGMA version", "PRAGMA statement is not allowed"),
    ("INSTALL httpfs", "statement is not allowed"),
    ("EXPORT DATABASE 'dump'", "statement is not allowed"),
    ("SELECT * FROM read_csv('/etc/passwd')", "/etc/passwd"),
    ("SELECT * FROM read_text('/etc/hostname')", "/etc/hostname"),
    ("SELECT * FROM glob('/etc/*')", "/etc/"),
    ("SELECT * FROM read_parquet('https://example.com/x.parquet')", "example.com"),
])
def test_query_refuses_anything_but_reading_the_views(store, tmp_path, monkeypatch, sql, needle):
    out, _ = store
    monkeypatch.chdir(tmp_path)
    with pytest.raises(QueryError, match=needle) as e:
        run_query(sql, results_dir=out)
    assert "\n" not in e.value.one_line()
    assert list(tmp_path.iterdir()) == []  # nothing written, nothing attached


def test_query_cannot_read_a_file_beside_the_records(store):
    out, _ = store
    secret = out / "secret.txt"
    secret.write_text("password")
    try:
        with pytest.raises(QueryError, match="secret.txt"):
            run_query(f"SELECT content FROM read_text('{secret}')", results_dir=out)
    finally:
        secret.unlink()


@pytest.mark.parametrize("sql", [
    "WITH s AS (SELECT scorer FROM results) SELECT count(*) FROM s",
    "FROM results SELECT count(*)",
    "VALUES (1), (2)",
    "DESCRIBE results",
    "SHOW TABLES",
    "SELECT count(*) FROM records r JOIN predictions p ON p.record_id = r.id",
    "SELECT count(*) FROM candidates",
])
def test_read_only_queries_still_run(store, sql):
    out, _ = store
    assert run_query(sql, results_dir=out).rows


def test_query_cli_refusal_and_help(store, cli, tmp_path, monkeypatch):
    out, _ = store
    monkeypatch.chdir(tmp_path)
    code, stdout, err = cli("query", "COPY (SELECT 1) TO 'x.csv'", "--results-dir", out)
    assert code == 2 and stdout == ""
    assert err.startswith("gradebench: error: ") and err.count("\n") == 1 and "read-only" in err
    assert not (tmp_path / "x.csv").exists()
    code, stdout, _ = cli("query", "--help")
    assert code == 0 and "read-only" in stdout and "COPY" in stdout and "/etc/passwd" in stdout
