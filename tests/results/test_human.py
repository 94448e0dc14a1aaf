"""The human ceiling (gradebench human): split-half votes through every system's metrics, its
record's verification, its row on the leaderboard and the board's validity verdict."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gradebench.benchmark.lists import open_benchmark
from gradebench.experiments.build import build
from gradebench.experiments.human import _chaos_halves, _halves, evaluate_human, js_divergence, split_half
from gradebench.experiments.verify import read_verified
from gradebench.training.evaluation import evaluate_lists
from tests.conftest import shared_data


@pytest.fixture(scope="module")
def chaos(tmp_path_factory) -> Path:
    src = shared_data("chaosnli", "chaosNLI_v1.0")
    return Path(build("chaosnli-snli", source=src, out=tmp_path_factory.mktemp("c"), limit=120, progress=False,
                      workers=1, validity=False).path)


@pytest.fixture(scope="module")
def winowhy(tmp_path_factory) -> Path:
    src = shared_data("winowhy")
    return Path(build("winowhy", source=src, out=tmp_path_factory.mktemp("w"), limit=30, progress=False,
                      workers=1, validity=False).path)


def test_chaos_halves_keep_the_votes_and_depend_on_content():
    counts = [30, 55, 15]
    a, b = _chaos_halves(counts, 100, 50, "fp", "q1", ["e", "n", "c"])
    assert sum(a) == 50 and sum(b) == 50 and [x + y for x, y in zip(a, b)] == counts
    assert _chaos_halves(counts, 100, 50, "fp", "q1", ["e", "n", "c"]) == (a, b)  # deterministic
    others = {tuple(_chaos_halves(counts, 100, 50, "fp", f"q{i}", ["e", "n", "c"])[0]) for i in range(30)}
    assert len(others) > 3  # the split follows the content, it is not one fixed cut
    # a hypergeometric draw: over many items the scoring half holds half of each label's votes
    means = np.mean([_chaos_halves(counts, 100, 50, "fp", f"q{i}", ["e", "n", "c"])[0] for i in range(400)], axis=0)
    assert np.allclose(means, np.array(counts) / 2, atol=1.0)


def test_winowhy_halves():
    for yes in range(6):
        a, b = _halves(5, yes, 2, "fp", "q", f"c{yes}")
        assert a + b == yes and 0 <= a <= 2 and 0 <= b <= 3


def test_js_divergence_closed_form():
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.0, 0.5, 0.5])
    m = (p + q) / 2
    want = 0.5 * sum(x * np.log2(x / y) for x, y in zip(p, m) if x) + 0.5 * sum(
        x * np.log2(x / y) for x, y in zip(q, m) if x)
    assert js_divergence(p, q) == pytest.approx(want) == pytest.approx(0.5)


def test_chaos_split_is_the_benchmark_rule_on_each_half(chaos):
    bench = open_benchmark(chaos)
    lists = bench.lists("test", columns=("votes",))
    scores, grades, human, jsd = split_half(bench, lists)
    votes = lists.extra["votes"]
    for q in range(lists.n_queries):
        cols = np.flatnonzero(lists.mask[q])
        a = np.rint(scores[q, cols] * 50).astype(int)
        assert a.sum() == 50 and np.all(a <= votes[q, cols].astype(int))
        b = votes[q, cols].astype(int) - a
        ranks = {v: i for i, v in enumerate(sorted(set(b.tolist())))}
        assert grades[q, cols].tolist() == [ranks[v] for v in b.tolist()]  # relevance: rank of the half
    assert human["score_half"] == human["grade_half"] == 50 and np.all((jsd >= 0) & (jsd <= 1))


def test_human_record_verifies_and_uses_the_system_metrics(chaos, tmp_path):
    rec = evaluate_human(chaos, results_dir=tmp_path, n_resamples=200)
    again = read_verified(rec.path)  # the checks every record passes
    assert again.id == rec.id and again.scorer.name == "human" and again.labels == "other-half"
    bench = open_benchmark(chaos)
    lists = bench.lists("test", columns=("votes",))
    scores, grades, _, jsd = split_half(bench, lists)
    from gradebench.experiments import suite as S

    result = evaluate_lists(scores, replace(lists, relevance=grades), S.suite(tiers=False))
    for name in ("ndcg@5", "pairwise_agreement", "kendall"):
        assert rec.metrics[name].value == pytest.approx(float(np.nanmean(result.per_query[name])))
        assert rec.metrics[name].ci_low <= rec.metrics[name].value <= rec.metrics[name].ci_high
    assert rec.human.jsd.value == pytest.approx(float(jsd.mean()))
    assert rec.human.jsd.ci_low <= rec.human.jsd.value <= rec.human.jsd.ci_high
    # not the full grades: scoring by half the votes does not reproduce them exactly
    assert rec.metrics["ndcg@5"].value < 1.0


def test_edited_human_record_is_refused(chaos, tmp_path):
    from gradebench.errors import RecordError

    rec = evaluate_human(chaos, results_dir=tmp_path, n_resamples=50)
    data = json.loads(rec.path.read_text())
    data["metrics"]["ndcg@5"]["value"] = 0.5
    rec.path.write_text(json.dumps(data))
    with pytest.raises(RecordError):
        read_verified(rec.path)


def test_winowhy_ceiling(winowhy, tmp_path):
    bench = open_benchmark(winowhy)
    lists = bench.lists("test")
    scores, grades, human, jsd = split_half(bench, lists)
    assert jsd is None and (human["score_half"], human["grade_half"]) == (2, 3)
    whole = scores * 2 + grades
    assert np.array_equal(whole[lists.mask], lists.relevance[lists.mask])  # the halves add up to the 5 votes
    rec = evaluate_human(winowhy, results_dir=tmp_path, n_resamples=50)
    assert read_verified(rec.path).human.item == "candidate"


def test_cli_json_equals_api_and_refuses_a_benchmark_without_votes(chaos, demo_benchmark, tmp_path, cli):
    code, out, err = cli("human", chaos, "--results-dir", tmp_path / "r", "--json", "--resamples", "50")
    assert code == 0, err
    printed = json.loads(out)
    api = evaluate_human(chaos, results_dir=tmp_path / "api", n_resamples=50).to_dict()
    drop = ("created_at", "timings", "environment")
    assert {k: v for k, v in printed.items() if k not in drop} == {k: v for k, v in api.items() if k not in drop}
    code, out, err = cli("human", demo_benchmark, "--results-dir", tmp_path / "x")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "no split-half human ceiling" in err
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").rglob("*.json"))


def test_leaderboard_ceiling_row_and_verdict(chaos, tmp_path):
    from gradebench.experiments.evaluate import evaluate_scorer
    from gradebench.experiments.leaderboard import leaderboard
    from gradebench.experiments.render import markdown
    from gradebench.scorers import make_scorer

    for name in ("bm25", "random"):
        evaluate_scorer(chaos, make_scorer(name), results_dir=tmp_path, n_resamples=100)
    evaluate_human(chaos, results_dir=tmp_path, n_resamples=100)
    board = leaderboard(tmp_path).boards[0]
    human = [r for r in board.rows if r.human]
    assert len(human) == 1 and human[0].rank == 0 and not human[0].is_best
    assert board.rows[0].scorer != "human"  # the ceiling is outside the ranking
    v = board.validity["verdict"]
    assert v["best_shortcut"]["scorer"] == "bm25" and v["best_reader"] is None
    assert v["line"] == "no verdict: no reader evaluated"
    assert v["headroom"] == pytest.approx(human[0].metrics["ndcg@5"]["value"] - board.rows[0].metrics["ndcg@5"]["value"])
    md = markdown(leaderboard(tmp_path))
    assert "| - | human (split-half: 50 vs 50 annotators) |" in md and "Verdict (ndcg@5): no verdict" in md


def test_verdict_margin_is_the_paired_mean_over_queries():
    """On the committed esnli-human records: the margin is the mean per-query difference of the best
    reader and the best shortcut (seed-averaged), its CI holds it, and the line follows the CI."""
    from gradebench.experiments.leaderboard import leaderboard
    from gradebench.experiments.store import read_per_query_arrays
    from gradebench.experiments.verify import verified_records

    root = Path(__file__).resolve().parents[2] / "leaderboard" / "results"
    board = leaderboard(root, benchmark="esnli-human").boards[0]
    v = board.validity["verdict"]
    rows = {r.system: r for r in board.rows}
    reader, shortcut = rows[v["best_reader"]["system"]], rows[v["best_shortcut"]["system"]]
    assert reader.kind in ("neural", "external") and shortcut.scorer in ("lambdamart", "lexical-gbdt", "query-blind",
                                                                         "bm25", "overlap", "length", "label-aware")
    recs = {r.id: r for r in verified_records(root, benchmark="esnli-human", split="test")}

    def per_query(row):
        tables = [dict(zip(*read_per_query_arrays(recs[i])["ndcg@5"])) for i in row.record_ids]
        return {q: np.nanmean([t[q] for t in tables]) for q in tables[0]}

    a, b = per_query(reader), per_query(shortcut)
    want = np.nanmean([a[q] - b[q] for q in a if q in b])
    m = v["margin"]
    assert m["value"] == pytest.approx(want) and m["ci_low"] <= m["value"] <= m["ci_high"]
    assert v["line"].startswith("readers beat") == (m["ci_low"] > 0)


def test_every_committed_verdict_line_follows_its_margin():
    """Each board's line is the one its figures call for: readers ahead (CI above 0), solved by a
    shortcut (CI below 0, or the shortcut saturated), or not shown (a CI around 0 below saturation)."""
    from gradebench.experiments.leaderboard import SATURATED, leaderboard

    seen = set()
    for board in leaderboard(Path(__file__).resolve().parents[2] / "leaderboard" / "results").boards:
        v = (board.validity or {}).get("verdict")
        if not v or not v.get("margin"):
            continue
        m, shortcut, line = v["margin"], v["best_shortcut"]["value"], v["line"]
        if m["ci_low"] > 0:
            kind = "readers beat the best shortcut"
        elif m["ci_high"] < 0 or shortcut >= SATURATED:
            kind = "solved by a shortcut"
        else:
            kind = "not shown to need reading"
        assert line.startswith(kind), (board.benchmark, line, m, shortcut)
        seen.add(kind)
    assert len(seen) == 3  # the committed records hold every case
