"""Leaderboard: ranking, seeds, paired tests with Holm, the query-blind probe, renderings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gradebench.errors import InvalidArgumentError, UnknownNameError
from gradebench.experiments.evaluate import evaluate_scorer
from gradebench.experiments.leaderboard import leaderboard
from gradebench.stats import bootstrap_ci
from tests.results.conftest import Noisy, Oracle, OracleTwin, QueryBlindFake, Shuffle


@pytest.fixture(scope="module")
def store(demo_bench, tmp_path_factory):
    """Records on the train split (38 queries: enough for significance)."""
    out = tmp_path_factory.mktemp("lb")
    for scorer in (Oracle(), OracleTwin(), Shuffle(seed=1), Shuffle(seed=2), Noisy(seed=5), QueryBlindFake()):
        evaluate_scorer(demo_bench, scorer, split="train", results_dir=out, n_resamples=300)
    evaluate_scorer(demo_bench, Oracle(), split="test", results_dir=out, n_resamples=300)
    return out


def _rows(lb):
    assert len(lb.boards) == 1
    return {r.scorer: r for r in lb.boards[0].rows}


def test_perfect_scorer_tops_and_random_is_worse(store):
    lb = leaderboard(store, split="train")
    board = lb.boards[0]
    rows = _rows(lb)
    assert board.rows[0].scorer in ("test-oracle", "test-oracle-twin") and board.rows[0].is_best
    assert board.rows[0].metrics["ndcg@5"]["value"] == pytest.approx(1.0)
    # two identical systems: the best and its twin are both "not different from best"
    assert rows["test-oracle"].tied_with_best is True and rows["test-oracle-twin"].tied_with_best is True
    assert rows["test-oracle-twin"].p_value == pytest.approx(1.0)
    # a random ranking is significantly worse after Holm
    rnd = rows["test-random"]
    assert rnd.tied_with_best is False and rnd.p_adjusted <= lb.alpha
    assert rnd.p_value <= rnd.p_adjusted
    assert [r.rank for r in board.rows] == list(range(1, len(board.rows) + 1))
    values = [r.metrics["ndcg@5"]["value"] for r in board.rows]
    assert values == sorted(values, reverse=True)


def test_seeds_are_averaged(store, demo_bench):
    from gradebench.benchmark.lists import open_benchmark
    from gradebench.metrics import NDCG, evaluate

    rnd = _rows(leaderboard(store, split="train"))["test-random"]
    assert rnd.n_seeds == 2 and rnd.seeds == [1, 2]
    lists = open_benchmark(demo_bench).lists("train")
    per_seed = [evaluate(Shuffle(seed=s).score(lists), lists.relevance, [NDCG(k=5)], mask=lists.mask)
                for s in (1, 2)]
    m = rnd.metrics["ndcg@5"]
    assert m["value"] == pytest.approx(np.mean([r.means["ndcg@5"] for r in per_seed]))
    assert m["seed_std"] == pytest.approx(np.std([r.means["ndcg@5"] for r in per_seed], ddof=1))
    averaged = (per_seed[0].per_query["ndcg@5"] + per_seed[1].per_query["ndcg@5"]) / 2
    ci = bootstrap_ci(averaged, n_resamples=300, seed=0)
    assert (m["ci_low"], m["ci_high"]) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert m["ci_low"] <= m["value"] <= m["ci_high"]


def test_probe_is_the_validity_figure(store):
    lb = leaderboard(store, split="train")
    v = lb.boards[0].validity
    probe = _rows(lb)["query-blind"]
    assert probe.probe and v["evaluated"] and v["value"] == probe.metrics["ndcg@5"]["value"]
    assert v["gap_to_best"] == pytest.approx(1.0 - v["value"])
    assert v["probe_tied_with_best"] is False
    assert "query-blind probe ndcg@5" in lb.to_markdown()
    only = leaderboard(store, split="test")
    assert only.boards[0].validity["evaluated"] is False
    assert "no query-blind probe evaluated" in only.to_markdown()


def test_output_is_deterministic_and_renders(store):
    a, b = leaderboard(store, split="train"), leaderboard(store, split="train")
    assert a.to_dict() == b.to_dict()
    json.dumps(a.to_dict(), allow_nan=False)
    from gradebench.experiments.leaderboard_html import html_of

    md, html = a.to_markdown(), html_of(a, store, split="train")
    assert md.count("\n| ") == len(a.boards[0].rows) + 1  # header + one line per system
    assert "| 1 | test-oracle" in md and "best" in md and " < |" in md
    assert html.count("<tr data-rank") == len(a.boards[0].rows) and '<table class="sortable board"' in html
    by_kendall = leaderboard(store, split="train", sort_by="kendall")
    assert by_kendall.boards[0].rows[-1].metrics["kendall"]["value"] == min(
        r.metrics["kendall"]["value"] for r in by_kendall.boards[0].rows)
    corpus = leaderboard(store, split="train", sort_by="separation_ratio")  # no per-query test
    assert all(r.tied_with_best is None for r in corpus.boards[0].rows)


def test_errors_and_empty(store, tmp_path):
    with pytest.raises(UnknownNameError, match="did you mean 'ndcg@5'"):
        leaderboard(store, split="train", sort_by="ndcg5")
    with pytest.raises(InvalidArgumentError, match="alpha"):
        leaderboard(store, alpha=1.5)
    empty = leaderboard(tmp_path)
    assert empty.boards == [] and "No result records" in empty.to_markdown()
    assert leaderboard(store, benchmark="nope", split="train").boards == []


def test_a_results_folder_that_does_not_exist_is_an_error(tmp_path, capsys):
    """Issue 16.6: ``leaderboard --results-dir /nonexistent`` exited 0 with an empty board."""
    from gradebench.errors import RecordError
    from tests.cli.conftest import assert_one_line_error
    from tests.conftest import run_cli

    missing = tmp_path / "no-such-results"
    with pytest.raises(RecordError, match="no such results folder") as e:
        leaderboard(missing)
    assert e.value.path == str(missing)
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(RecordError, match="is a file"):
        leaderboard(tmp_path / "a-file")
    for fmt in ("text", "json"):
        code, out, err = run_cli(capsys, "leaderboard", "--results-dir", missing, "--format", fmt)
        assert code == 2 and out == ""
        assert_one_line_error(err, str(missing), "no such results folder", "--results-dir")
    assert not missing.exists()


def test_training_options_and_transfer_make_distinct_systems(demo_bench, tmp_path):
    from dataclasses import replace

    from gradebench.benchmark.lists import open_benchmark
    from tests.results.conftest import fake_run

    fp = open_benchmark(demo_bench).fingerprint
    small = fake_run(fp, seed=1)
    small = replace(small, options={**small.options, "list_size": 3}, run_fingerprint="a" * 64)
    big = fake_run(fp, seed=1)
    other = replace(fake_run("e" * 64, seed=1), benchmark="esnli", run_fingerprint="b" * 64)
    for run in (small, big, other):
        evaluate_scorer(demo_bench, Noisy(seed=1), run=run, split="train", results_dir=tmp_path, n_resamples=50,
                        zero_shot=run is other)
    labels = sorted(r.system for r in leaderboard(tmp_path, split="train").boards[0].rows)
    assert labels == ["test-noisy + listnet {epochs=3,list_size=3}", "test-noisy + listnet {epochs=3}",
                      "test-noisy + listnet {epochs=3} (trained on esnli)"]


def test_an_option_a_record_predates_counts_at_its_default(demo_bench, tmp_path):
    """Records written before a training option existed join the rows of the same system trained
    today (the option at its default), instead of a second row with the same label."""
    from dataclasses import replace

    from gradebench.benchmark.lists import open_benchmark
    from tests.results.conftest import fake_run

    fp = open_benchmark(demo_bench).fingerprint
    old = fake_run(fp, seed=1)  # options without max_validation_queries
    new = fake_run(fp, seed=2)
    new = replace(new, options={**new.options, "max_validation_queries": None}, run_fingerprint="c" * 64)
    changed = replace(fake_run(fp, seed=3), run_fingerprint="d" * 64)
    changed = replace(changed, options={**changed.options, "max_validation_queries": 5})
    for run in (old, new, changed):
        evaluate_scorer(demo_bench, Noisy(seed=1), run=run, split="train", results_dir=tmp_path, n_resamples=50)
    rows = {r.system: r for r in leaderboard(tmp_path, split="train").boards[0].rows}
    assert sorted(rows) == ["test-noisy + listnet {epochs=3,max_validation_queries=5}",
                            "test-noisy + listnet {epochs=3}"]
    assert rows["test-noisy + listnet {epochs=3}"].seeds == [1, 2]


def test_text_rendering(store):
    """What `gradebench leaderboard` prints (the rich tables it printed before are gone: they did not fit
    80 columns)."""
    from gradebench.experiments.render import text

    board = leaderboard(store, split="train")
    for width in (250, 80, None):
        out = text(board, width=width)
        assert "test-oracle" in out and "query-blind probe" in out and "Holm" in out
    wide = text(board, wide=True)
    assert all(m in wide.splitlines()[1] for m in ("ndcg@5", "kendall", "separation_ratio", "vs best", "system"))
