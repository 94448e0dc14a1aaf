"""Records are checked before they are believed (gradebench.experiments.verify, issue 28 item 2): a record
hand-edited out of its range, a CI that does not hold its value, counts that do not match its tables, and
tables swapped in from another record are named in one line and left out (or refused, exit 2, when the
user named the record); the digests are the same for a record's loose table and its rows of the pack."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

from gradebench.errors import RecordError, RecordWarning
from gradebench.experiments.evaluate import evaluate_scorer
from gradebench.experiments.leaderboard import leaderboard
from gradebench.experiments.pack import pack_results
from gradebench.experiments.query import run_query
from gradebench.experiments.store import read_record
from gradebench.experiments.tables import json_text, record_values
from gradebench.experiments.verify import (
    check_record,
    existing_record,
    find_verified,
    rows_digest,
    verified_records,
)
from tests.results.conftest import Noisy, Oracle


@pytest.fixture()
def two(demo_bench, tmp_path):
    """Two records on the demo's test split: the oracle and a noisy scorer (ranked below it)."""
    res = tmp_path / "res"
    oracle = evaluate_scorer(demo_bench, Oracle(), split="test", results_dir=res, n_resamples=50)
    noisy = evaluate_scorer(demo_bench, Noisy(seed=3), split="test", results_dir=res, n_resamples=50)
    return res, oracle, noisy


def _edit(record, change) -> None:
    doc = json.loads(record.path.read_text())
    change(doc)
    record.path.write_text(json_text(doc))


def _warned(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in caught if issubclass(w.category, RecordWarning)]


def test_written_records_carry_digests_and_pass(two):
    res, oracle, noisy = two
    for r in (oracle, noisy):
        back = read_record(r.path)
        assert back.files.per_query_sha256 == rows_digest(record_values(back))
        assert back.files.predictions_sha256 is not None
        check_record(back, predictions=True)
    records, lines = _warned(lambda: verified_records(res, predictions=True))
    assert len(records) == 2 and lines == []


def test_hand_edited_metric_out_of_range_is_left_out_of_the_leaderboard(two, cli):
    res, oracle, noisy = two
    _edit(noisy, lambda d: d["metrics"]["ndcg@5"].update(value=1.5))
    board, lines = _warned(lambda: leaderboard(res, split="test"))
    assert [r.record_ids for r in board.boards[0].rows] == [[oracle.id]]
    assert len(lines) == 1 and noisy.path.name in lines[0] and "ndcg@5 value = 1.5 is outside" in lines[0]
    code, out, err = cli("leaderboard", "--results-dir", res, "--format", "md")
    assert code == 0 and "1.500" not in out
    assert err.count("\n") == 1 and err.startswith("gradebench: warning: ") and noisy.path.name in err
    assert "left out" in err


@pytest.mark.parametrize("change, needle", [
    (lambda d: d["metrics"]["map"].update(ci_low=d["metrics"]["map"]["value"] * 0.5,
                                          ci_high=d["metrics"]["map"]["value"] * 0.9), "lies outside its CI"),
    (lambda d: d["metrics"]["mrr"].update(ci_low=0.9, ci_high=0.2), "is reversed"),
    (lambda d: d["benchmark"].update(n_queries=d["benchmark"]["n_queries"] + 1), "excluded queries, the benchmark"),
    (lambda d: d["metrics"]["spearman"].update(n=d["metrics"]["spearman"]["n"] - 1,
                                               n_excluded=d["metrics"]["spearman"]["n_excluded"] + 1),
     "defined per-query values, the record says n"),
    (lambda d: d["metrics"]["kendall"].update(value=d["metrics"]["kendall"]["value"] - 0.001), "is not the mean"),
    (lambda d: d["metrics"]["kendall"].update(value=-1.2), "outside the metric's range [-1, 1]"),
    (lambda d: d["metrics"]["separation_ratio"].update(value=-0.5), "outside the metric's range [0, inf]"),
    (lambda d: d.pop("split"), "invalid result record"),
])
def test_figures_that_do_not_hold_are_named_and_left_out(two, change, needle):
    res, oracle, noisy = two
    _edit(noisy, change)
    records, lines = _warned(lambda: verified_records(res))
    assert [r.id for r in records] == [oracle.id]
    assert len(lines) == 1 and needle in lines[0] and noisy.path.name in lines[0], lines


def test_swapped_per_query_table_is_caught_loose_and_packed(two):
    res, oracle, noisy = two
    shutil.copyfile(oracle.per_query_path, noisy.per_query_path)
    _, lines = _warned(lambda: verified_records(res))
    assert len(lines) == 1 and "per-query rows are not the record's" in lines[0]
    with pytest.raises(RecordError, match="per-query rows are not its own"):  # packing refuses to bless it
        pack_results(res)


def test_digests_are_the_same_loose_and_packed(two):
    res, oracle, noisy = two
    before = {p.name: p.read_text() for p in res.rglob("*.json")}
    pack_results(res)
    assert {p.name: p.read_text() for p in res.rglob("*.json")} == before  # the digests hold for the pack
    records, lines = _warned(lambda: verified_records(res, predictions=True))
    assert len(records) == 2 and lines == []
    pack_results(res)
    assert {p.name: p.read_text() for p in res.rglob("*.json")} == before


def test_pack_adds_digests_to_old_records_idempotently(two):
    res, oracle, noisy = two
    for r in (oracle, noisy):
        _edit(r, lambda d: [d["files"].pop(k) for k in ("per_query_sha256", "predictions_sha256")])
    assert read_record(noisy.path).files.per_query_sha256 is None
    pack_results(res)
    after = {p.name: p.read_bytes() for p in res.rglob("*.json")}
    assert read_record(noisy.path).files.per_query_sha256 == rows_digest(record_values(read_record(noisy.path)))
    assert read_record(noisy.path).files.predictions_sha256 is not None
    pack_results(res)
    assert {p.name: p.read_bytes() for p in res.rglob("*.json")} == after


@pytest.mark.parametrize("legacy", [False, True], ids=["digest", "no-digest"])
def test_swapped_predictions_are_refused_by_plot_and_left_out_of_query(two, cli, tmp_path, legacy):
    res, oracle, noisy = two
    if legacy:  # a record written before digests: the file's own record id gives it away
        _edit(noisy, lambda d: d["files"].update(predictions_sha256=None))
    shutil.copyfile(oracle.predictions_path, noisy.predictions_path)
    code, out, err = cli("plot", "--record", noisy.id, "--out", tmp_path / "p.png", "--results-dir", res)
    assert code == 2 and err.count("\n") == 1 and noisy.path.name in err and "predictions file" in err
    assert "internal error" not in err and not (tmp_path / "p.png").exists()
    with pytest.raises(RecordError, match="predictions file"):
        find_verified(noisy.path, results_dir=res, predictions=True)
    got, lines = _warned(lambda: run_query("select count(*) as n, count(distinct record_id) as r from predictions",
                                           results_dir=res))
    assert got.rows == [[oracle.benchmark.n_candidates, 1]]
    assert len(lines) == 1 and noisy.path.name in lines[0]
    code, out, err = cli("query", "select id from results", "--results-dir", res, "--format", "csv")
    assert code == 0 and out.split() == ["id", oracle.id]
    assert err.count("\n") == 1 and err.startswith("gradebench: warning: ") and noisy.path.name in err


def test_absent_predictions_are_not_a_failure(two):
    res, oracle, noisy = two
    noisy.predictions_path.unlink()
    records, lines = _warned(lambda: verified_records(res, predictions=True))
    assert len(records) == 2 and lines == []


def test_sweep_evaluates_a_failing_record_again(two):
    res, oracle, noisy = two
    assert existing_record(noisy.path).id == noisy.id
    _edit(noisy, lambda d: d["metrics"]["ndcg@5"].update(value=1.5))
    got, lines = _warned(lambda: existing_record(noisy.path))
    assert got is None and len(lines) == 1 and "evaluating it again" in lines[0]
    assert existing_record(res / "nope.json") is None


def test_every_metric_family_declares_a_range():
    from gradebench.metrics import METRICS

    for name in METRICS.names():
        lo, hi = METRICS.get(name).value_range
        assert lo < hi and (lo, hi) != (float("-inf"), float("inf")), name
