"""Bias controls on every record: length-split agreement in closed form, baselines, warnings, subsets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gradebench.benchmark.lists import lists_from_table
from gradebench.experiments.bias import MARGIN, bias_controls, length_pairs


def _lists(rows: list[tuple[str, str, str, float]], subsets: dict[str, str] | None = None):
    """``rows``: (query_id, candidate_id, candidate text, grade); every query's text is 'the cat sat'."""
    df = pd.DataFrame([{"query_id": q, "query": "the cat sat", "candidate_id": c, "candidate": t, "relevance": g,
                        "score": g / 3.0, "split": "test"} for q, c, t, g in rows])
    if subsets is not None:
        df["subset"] = [subsets[q] for q in df["query_id"]]
    return lists_from_table(df, benchmark="t", split="test")


ROWS = [
    # q1: the better candidates are the longer ones
    ("q1", "a", "one two three four", 2.0), ("q1", "b", "one two", 1.0), ("q1", "c", "one", 0.0),
    # q2: the better candidate is the shorter one; one pair of equal length
    ("q2", "a", "one", 2.0), ("q2", "b", "one two three", 1.0), ("q2", "c", "uno dos tres", 0.0),
]


def test_length_pairs_in_closed_form():
    lists = _lists(ROWS)
    # pairs (better, worse): q1 a>b, a>c, b>c (better longer x3); q2 a>b, a>c (better shorter x2), b>c (same length)
    longer_first = np.vectorize(lambda t: float(len(t.split())) if t else 0.0)(lists.candidates)
    out = length_pairs(lists, longer_first)
    assert out["better_longer"] == {"agreement": 1.0, "n_pairs": 3}
    assert out["better_shorter"] == {"agreement": 0.0, "n_pairs": 2}
    assert out["n_same_length"] == 1 and out["gap"] == 1.0
    flat = length_pairs(lists, np.zeros(lists.mask.shape))  # every pair a tie: 1/2 credit
    assert flat["better_longer"]["agreement"] == 0.5 and flat["better_shorter"]["agreement"] == 0.5
    assert flat["gap"] == 0.0


def test_baselines_sit_beside_the_system_and_warn_within_the_margin():
    lists = _lists(ROWS)
    out = bias_controls(lists, lists.relevance.copy(), system="oracle")
    assert out["metric"] == "pairwise_agreement" and out["margin"] == MARGIN and out["system"] == 1.0
    assert set(out["baselines"]) == {"length", "overlap", "bm25"}
    # longer first: q1 agrees on its 3 pairs (1), q2 on none of its 2 and ties its equal-length pair (1/6);
    # shorter first: 0 and 5/6. The better direction is reported.
    assert out["baselines"]["length"] == {"scorer": "length", "config": {"prefer": "longer"},
                                          "value": pytest.approx(7 / 12)}
    assert out["warnings"] == [] and out["group_column"] is None and out["groups"] == []
    # a system that ranks by length alone is warned about, in one line
    by_length = np.vectorize(lambda t: float(len(t.split())))(lists.candidates)
    warned = bias_controls(lists, by_length, system="mine")
    assert warned["system"] == pytest.approx(7 / 12)
    lines = [w for w in warned["warnings"] if w.startswith("length baseline")]
    assert lines == ["length baseline pairwise_agreement 0.583 is within 0.02 of the system's 0.583: "
                     "candidate length alone does about as well"]


def test_a_baseline_is_not_compared_with_itself():
    lists = _lists(ROWS)
    from gradebench.scorers import make_scorer

    bm25 = make_scorer("bm25").score(lists)
    assert not any(w.startswith("bm25 ") for w in bias_controls(lists, bm25, system="bm25")["warnings"])
    assert any(w.startswith("bm25 ") for w in bias_controls(lists, bm25, system="other")["warnings"])


def test_figures_per_subset_when_the_benchmark_has_one():
    rows = ROWS + [("q3", "a", "cat sat", 1.0), ("q3", "b", "dog", 0.0)]
    lists = _lists(rows, subsets={"q1": "chat", "q2": "chat", "q3": "safety"})
    out = bias_controls(lists, lists.relevance.copy(), system="oracle")
    assert out["group_column"] == "subset"
    assert [(g["name"], g["n_queries"]) for g in out["groups"]] == [("chat", 2), ("safety", 1)]
    chat = out["groups"][0]
    alone = bias_controls(_lists(ROWS), _lists(ROWS).relevance.copy(), system="oracle")
    assert chat["length_pairs"] == alone["length_pairs"] and chat["system"] == alone["system"]
    safety = out["groups"][1]
    assert safety["length_pairs"]["better_longer"] == {"agreement": 1.0, "n_pairs": 1}
    assert safety["baselines"]["overlap"]["value"] == 1.0  # "cat sat" shares words with the query, "dog" none
    assert any(w.startswith("[subset=safety] overlap baseline") for w in safety["warnings"])


@pytest.mark.parametrize("empty", [None, ""])
def test_an_empty_subset_column_is_no_grouping(empty):
    """A preference file without subsets gives a ``subset`` column of nulls: no per-subset figures and
    no ``[subset=]`` warnings (issue 31)."""
    lists = _lists(ROWS, subsets={"q1": empty, "q2": empty})
    by_length = np.vectorize(lambda t: float(len(t.split())))(lists.candidates)
    out = bias_controls(lists, by_length, system="mine")
    assert out["group_column"] is None and out["groups"] == []
    assert out["warnings"] and not any("[subset" in w for w in out["warnings"])


def test_an_importer_subset_column_reaches_the_record_per_subset(cli, chat_reward, tmp_path):
    """RewardBench layout -> ``build preference-pairs`` (subset kept) -> ``eval --model`` (a chat reward model):
    the record's bias controls come per subset, each with its own baselines, system figure and warnings."""
    import glob
    import json

    from tests.conftest import REPO

    code, out, err = cli("build", "preference-pairs", "--source", REPO / "tests/fixtures/preferences/rewardbench.jsonl",
                         "--out", tmp_path / "out", "--json")
    assert code == 0, err
    bench = json.loads(out)["path"]
    code, out, err = cli("eval", "--benchmark", bench, "--model", chat_reward, "--resamples", 20,
                         "--results-dir", tmp_path / "res", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["scorer"]["model"]["adapter"] == "chat-reward"
    bias = record["bias"]
    assert bias["group_column"] == "subset"
    groups = {g["name"]: g for g in bias["groups"]}
    # 6 rows, one skipped (empty rejected response): one pair per query
    assert [(g["name"], g["n_queries"]) for g in bias["groups"]] == [
        ("alpacaeval-easy", 2), ("hep-python", 1), ("math-prm", 1), ("refusals-dangerous", 1)]
    # the baselines depend on the data alone
    assert {name: {b: v["value"] for b, v in g["baselines"].items()} for name, g in groups.items()} == {
        "alpacaeval-easy": {"bm25": 1.0, "length": 1.0, "overlap": 1.0},
        "hep-python": {"bm25": 0.5, "length": 0.5, "overlap": 0.5},
        "math-prm": {"bm25": 0.0, "length": 0.5, "overlap": 0.0},
        "refusals-dangerous": {"bm25": 1.0, "length": 1.0, "overlap": 1.0},
    }
    assert groups["alpacaeval-easy"]["length_pairs"]["better_longer"] == {"agreement": 1.0, "n_pairs": 2}
    # each subset's system figure is the model's agreement on that subset's pairs (ties: 1/2)
    table = pd.read_parquet(glob.glob(f"{bench}/data/test-*.parquet")[0], columns=["query_id", "candidate_id",
                                                                                       "subset"])
    preds = pd.read_parquet(tmp_path / "res" / "preference-pairs" / f"{record['id']}.predictions.parquet")
    merged = preds.merge(table, on=["query_id", "candidate_id"])
    for name, g in groups.items():
        agree = []
        for _, q in merged[merged["subset"] == name].groupby("query_id"):
            chosen = q.loc[q["relevance"] == 1, "prediction"].item()
            rejected = q.loc[q["relevance"] == 0, "prediction"].item()
            agree.append(1.0 if chosen > rejected else 0.5 if chosen == rejected else 0.0)
        assert g["system"] == pytest.approx(np.mean(agree)), name
        # a warning for each baseline within the margin of (or above) the subset's system, named by subset
        near = sorted(b for b, v in g["baselines"].items() if v["value"] >= g["system"] - MARGIN)
        assert sorted(w.split(" baseline")[0].removeprefix(f"[subset={name}] ") for w in g["warnings"]) == near
        assert all(w.startswith(f"[subset={name}] ") for w in g["warnings"])
    assert len(groups["alpacaeval-easy"]["warnings"]) == 3  # baselines at 1.0 are warned about whatever the model does
