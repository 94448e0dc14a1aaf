"""The ``best-of-n`` builder (recipe best-of-n): RewardBench 2 lists, text and chat, --map, skips."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import gradebench
from gradebench.cli.build_cmds import parse_map
from gradebench.datasets import get_builder
from gradebench.datasets.base import GradedList
from gradebench.datasets.best_of_n.builder import BestOfNBuilder
from gradebench.errors import SourceFormatError
from gradebench.hashing import short_id
from gradebench.recipes.loader import load_recipe, with_overrides
from tests.conftest import FIXTURES

FIX = FIXTURES / "best_of_n"


def _builder(tmp_path: Path | None = None, maps: list[str] | None = None, **keys) -> BestOfNBuilder:
    r = load_recipe("best-of-n")
    if keys:
        assert tmp_path is not None
        p = tmp_path / "variant.yaml"
        p.write_text(json.dumps({"extends": "best-of-n", "name": "bon-variant", **keys}), encoding="utf-8")
        r = load_recipe(p)
    if maps:
        r = with_overrides(r, parse_map(maps))
    return get_builder("best-of-n")(r)


def _lists(b: BestOfNBuilder, source: Path) -> tuple[list[GradedList], Counter]:
    sel = b.select(b.read(b.locate(source)), limit=None)
    return b.make_lists(sel.units), sel.skipped


def _graded(lst: GradedList) -> dict[str, int]:
    return dict(zip(lst.candidates, lst.relevance))


def test_recipe_and_builder_metadata(tmp_path):
    r = load_recipe("best-of-n")
    assert r.source.family == "best-of-n" and r.source.formats == ["best-of-n-csv", "best-of-n-jsonl",
                                                                   "best-of-n-parquet"]
    b = get_builder("best-of-n")(r)
    assert b.tiers() is None and b.redistributable() is False
    assert [c.name for c in b.columns] == ["subset", "source_id", "prompt_messages", "preference", "position",
                                           "candidate_messages"]
    rb2 = _builder(tmp_path, source={"variant": "rewardbench-2"}).recipe.source
    assert rb2.license_terms.hub == ["odc-by", "other"] and rb2.license_terms.redistributable
    assert "malik2025rewardbench2" in rb2.citation


def test_rewardbench_2_layout():
    """rb2/rb2_test.parquet was written by pyarrow from rb2.jsonl (pa.Table.from_pylist)."""
    rows = [json.loads(line) for line in (FIX / "rb2.jsonl").read_text(encoding="utf-8").splitlines()]
    assert pq.read_table(FIX / "rb2" / "rb2_test.parquet").to_pylist() == rows
    lists, skipped = _lists(_builder(), FIX / "rb2.jsonl")
    assert skipped == Counter({"empty_response": 1, "duplicate_response": 1, "chosen_equals_rejected": 1,
                               "no_chosen": 1, "empty_prompt": 1})
    assert [gl.query_extra[:2] for gl in lists] == [("Factuality", "f-0"), ("Factuality", "f-1"), ("Math", "m-0"),
                                                    ("Ties", "t-0"), ("Safety", "s-0"), ("Precise IF", "p-0")]
    gold = lists[0]
    assert gold.query == "What is the chemical symbol for gold?"
    assert _graded(gold) == {"The chemical symbol for gold is Au.": 1, "It is Ag.": 0, "Gold's symbol is Gd.": 0,
                             "The symbol is Go.": 0}
    assert gold.scores == [float(x) for x in gold.relevance]
    positions = dict(zip(gold.candidates, zip(gold.candidate_extra[0], gold.candidate_extra[1])))
    assert positions["The symbol is Go."] == ("rejected", 2) and positions["It is Ag."] == ("rejected", 0)
    ties = lists[3]
    assert _graded(ties) == {"2": 1, "3": 1, "5": 1, "4": 0, "9": 0}  # several chosen: all graded 1
    assert len(lists[4].candidates) == 3  # the empty rejected response is dropped, the list kept
    assert sorted(lists[5].candidates) == ["Blue.", "It is blue.", "The sky is blue."]  # a repeat dropped


def test_folder_of_csv_and_parquet():
    b = _builder()
    assert [f.role for f in b.locate(FIX / "rb2")] == ["best-of-n-parquet:rb2_test.parquet:test",
                                                      "best-of-n-csv:rb2_train.csv:train"]
    lists, _ = _lists(b, FIX / "rb2")
    train = [gl for gl in lists if gl.split == "train"]
    assert len(train) == 4 and len(lists) == 10
    assert _graded(train[0]) == {"9": 1, "8": 0, "81": 0, "18": 0}  # JSON lists inside CSV fields
    assert _graded(train[2]) == {"Oui.": 1, "Si.": 0, "Ja.": 0}  # a plain field is a list of one
    assert train[3].query_extra[0] is None  # an empty subset field
    assert train[0].query_extra[1] == "rb2_train.csv:2"


def test_chat_responses_and_implicit_prompt():
    lists, skipped = _lists(_builder(), FIX / "chat.jsonl")
    assert skipped == Counter()
    japan, arithmetic = lists
    assert japan.query == "system: Answer briefly.\n\nuser: Capital of Japan?"
    assert _graded(japan) == {"Tokyo.": 1, "Kyoto.": 0, "Osaka.": 0}
    assert all(json.loads(m)[0]["role"] == "assistant" for m in japan.candidate_extra[2])
    assert arithmetic.query == "2+2?" and _graded(arithmetic) == {"4": 1, "5": 0, "22": 0}
    assert json.loads(arithmetic.query_extra[2]) == [{"role": "user", "content": "2+2?"}]


def test_implicit_prompt_mismatch_and_plain_text(tmp_path):
    p = tmp_path / "mixed.jsonl"
    conv = lambda q, a: [{"role": "user", "content": q}, {"role": "assistant", "content": a}]  # noqa: E731
    p.write_text(json.dumps({"chosen": [conv("Q", "good")], "rejected": [conv("Other Q", "bad")]}) + "\n",
                 encoding="utf-8")
    assert _lists(_builder(), p)[1] == Counter({"prompt_mismatch": 1})
    p.write_text(json.dumps({"chosen": ["a"], "rejected": ["b"]}) + "\n", encoding="utf-8")
    with pytest.raises(SourceFormatError, match="has no prompt column .* plain text") as e:
        _lists(_builder(), p)
    assert e.value.line == 1


def test_map_and_missing_columns(tmp_path):
    p = tmp_path / "mine.jsonl"
    p.write_text(json.dumps({"q": "Pick one.", "correct": ["A"], "incorrect": ["B", "C"], "category": "x"}) + "\n",
                 encoding="utf-8")
    lists, _ = _lists(_builder(maps=["prompt=q,chosen=correct,rejected=incorrect,subset=category"]), p)
    assert _graded(lists[0]) == {"A": 1, "B": 0, "C": 0} and lists[0].query_extra[0] == "x"
    with pytest.raises(SourceFormatError, match="has no column 'chosen' \\(mapped as chosen\\)") as e:
        _lists(_builder(), p)
    assert e.value.line == 1 and e.value.path == str(p)
    with pytest.raises(SourceFormatError, match="holds an integer, expected a list"):
        p.write_text(json.dumps({"prompt": "x", "chosen": 3, "rejected": ["b"]}) + "\n", encoding="utf-8")
        _lists(_builder(), p)


def test_ids_come_from_content_whatever_the_order():
    lists, _ = _lists(_builder(), FIX / "rb2.jsonl")
    gold = lists[0]
    keys = sorted((c, "") for c in gold.candidates)
    want = short_id("query", "Factuality", gold.query, "", *(part for k in keys for part in k))
    assert gold.query_id == want
    assert sorted(gold.candidate_ids) == sorted(short_id("candidate", want, c, "") for c in gold.candidates)


def test_build_end_to_end_with_validity_figures(tmp_path):
    src = tmp_path / "bon.jsonl"
    rows = [{"prompt": f"What is {k} times 3?", "chosen": [f"{k} times 3 is {3 * k}."],
             "rejected": [f"{k} times 3 is {3 * k + 1}.", f"It is {k + 3}.", "I do not know."],
             "subset": ["Math", "Factuality", "Focus"][k % 3]} for k in range(60)]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    r = gradebench.build("best-of-n", source=src, out=tmp_path / "out", progress=False)
    assert r.splits == {"test": {"queries": 60, "candidates": 240}} and r.validation["success"]
    table = pq.read_table([str(Path(r.path) / f) for fs in r.files.values() for f in fs])
    rows_out = table.to_pylist()
    assert Counter(row["subset"] for row in rows_out) == {"Math": 80, "Factuality": 80, "Focus": 80}
    assert Counter((row["preference"], row["relevance"]) for row in rows_out) == {("chosen", 1): 60,
                                                                                 ("rejected", 0): 180}
    assert r.stats["all"]["list_sizes"] == {"4": 60}
    assert set(r.stats["all"]["shortcut_probes"]) >= {"length", "query_overlap"}
    assert {"query_blind", "bm25", "lexical_ceiling_dense", "lexical_ceiling_strong"} <= set(r.validity)
    assert "Best-of-N lists" in (Path(r.path) / "README.md").read_text()
