"""The ``ratings`` builder (recipes multi-ratings, multi-ratings-flat): UltraFeedback and HelpSteer layouts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

import gradebench
from gradebench.cli.build_cmds import parse_map
from gradebench.datasets import get_builder
from gradebench.datasets.base import GradedList
from gradebench.datasets.ratings.builder import RatingsBuilder
from gradebench.errors import RecipeError, SourceFormatError
from gradebench.hashing import short_id
from gradebench.recipes.loader import load_recipe, with_overrides
from tests.conftest import FIXTURES, REPO

FIX = FIXTURES / "ratings"
UF = FIX / "ultrafeedback"
HS = FIX / "helpsteer"


def _builder(recipe: str = "multi-ratings", tmp_path: Path | None = None, maps: list[str] | None = None,
             **keys) -> RatingsBuilder:
    r = load_recipe(recipe)
    if keys:
        assert tmp_path is not None
        p = tmp_path / "variant.yaml"
        p.write_text(json.dumps({"extends": recipe, "name": "ratings-variant", **keys}), encoding="utf-8")
        r = load_recipe(p)
    if maps:
        r = with_overrides(r, parse_map(maps))
    return get_builder("ratings")(r)


def _lists(b: RatingsBuilder, source: Path) -> tuple[list[GradedList], Counter]:
    sel = b.select(b.read(b.locate(source)), limit=None)
    return b.make_lists(sel.units), sel.skipped


def _graded(lst: GradedList) -> dict[str, tuple[int, float, float]]:
    """candidate -> (relevance, score, grade)."""
    return {c: (r, round(s, 6), g) for c, r, s, g in zip(lst.candidates, lst.relevance, lst.scores,
                                                         lst.candidate_extra[0])}


# --------------------------------------------------------------------------- recipes


def test_recipes_and_builder_metadata(tmp_path):
    uf, hs = load_recipe("multi-ratings"), load_recipe("multi-ratings-flat")
    assert (uf.layout, uf.columns.completions, uf.rating_range, uf.weights()) == (
        "nested", "completions", (1.0, 5.0),
        {"helpfulness": 1.0, "honesty": 1.0, "instruction_following": 1.0, "truthfulness": 1.0})
    assert (hs.layout, hs.columns.completions, hs.rating_range, hs.weights()) == (
        "flat", None, (0.0, 4.0), {"helpfulness": 1.0})
    b = get_builder("ratings")(uf)
    assert b.tiers() is None and b.redistributable() is False
    assert [c.name for c in b.columns] == ["subset", "prompt_messages", "grade", "ratings", "model", "source_id",
                                           "candidate_messages"]
    for variant, hub in (("ultrafeedback", ["mit"]), ("helpsteer", ["cc-by-4.0"]), ("helpsteer2", ["cc-by-4.0"])):
        terms = _builder("multi-ratings", tmp_path, source={"variant": variant}).recipe.source.license_terms
        assert terms.hub == hub and terms.redistributable


@pytest.mark.parametrize(("recipe", "keys", "match"), [
    ("multi-ratings", {"layout": "flat"}, "layout 'flat' needs it null"),
    ("multi-ratings-flat", {"layout": "nested"}, "layout 'nested' needs columns.completions"),
    ("multi-ratings", {"grade": "fluency"}, "grade names aspect 'fluency', which is not one of columns.aspects"),
    ("multi-ratings", {"grade": [{"helpfulness": 0}]}, "weight of 'helpfulness' is 0.0; weights must be positive"),
    ("multi-ratings", {"grade": [{"helpfulness": -1}, "honesty"]}, "weights must be positive"),
    ("multi-ratings", {"grade": []}, "grade lists no aspect"),
    ("multi-ratings", {"grade": ["honesty", {"honesty": 2}]}, "grade lists aspect 'honesty' twice"),
    ("multi-ratings", {"grade": [{"honesty": 2, "helpfulness": 1}]}, "must be one aspect name or one"),
    ("multi-ratings", {"grade": {"honesty": 2}}, "grade"),
    ("multi-ratings", {"rating_range": [5, 1]}, "low < high"),
    ("multi-ratings-flat", {"columns": {"aspects": {"helpfulness": "score", "correctness": "score"}}},
     "column 'score' is mapped to several aspects"),
    ("multi-ratings-flat", {"columns": {"aspects": {"helpfulness": ""}}}, "must not be empty"),
])
def test_bad_recipe_keys(tmp_path, recipe, keys, match):
    with pytest.raises(RecipeError, match=match):
        _builder(recipe, tmp_path, **keys)


# --------------------------------------------------------------------------- UltraFeedback layout


def test_ultrafeedback_layout_mean_of_four_aspects():
    lists, skipped = _lists(_builder(), UF / "uf_train.jsonl")
    assert skipped == Counter({"single_grade": 2, "conflicting_duplicate": 2, "empty_response": 1,
                               "missing_rating": 1, "empty_prompt": 1, "duplicate_response": 1})
    assert [gl.query_extra[0] for gl in lists] == ["evol_instruct", "sharegpt", "flan_v2_niv2", "truthful_qa"]
    photo = lists[0]
    assert photo.query == "Explain photosynthesis in one sentence."
    assert _graded(photo) == {
        "Plants use sunlight, water and carbon dioxide to make glucose and oxygen.": (3, 1.0, 5.0),
        "It is the process by which plants turn light into chemical energy.": (2, 0.875, 4.5),
        "Plants eat sun.": (1, 0.375, 2.5),
        "Photosynthesis is how animals breathe.": (0, 0.1875, 1.75),
    }
    ratings = dict(zip(photo.candidates, photo.candidate_extra[1]))["Plants eat sun."]
    assert ratings == [{"aspect": "helpfulness", "rating": 2.0}, {"aspect": "honesty", "rating": 3.0},
                       {"aspect": "instruction_following", "rating": 2.0}, {"aspect": "truthfulness", "rating": 3.0}]
    models = dict(zip(photo.candidates, photo.candidate_extra[2]))
    assert models["Plants eat sun."] == "falcon-40b-instruct"
    ids = dict(zip(photo.candidates, photo.candidate_extra[3]))
    assert ids["Plants eat sun."] == "uf_train.jsonl:1#3"
    # equal grades share a rank: two one-liners both rated 5 on every aspect
    assert Counter(photo_r for photo_r, _, _ in _graded(lists[1]).values()) == {2: 2, 1: 1, 0: 1}
    # the N/A helpfulness rating drops that response only
    assert set(_graded(lists[3])) == {"Nothing in particular; it does not cause arthritis.", "You will get arthritis."}


def test_one_aspect_or_another_weighting(tmp_path):
    lists, _ = _lists(_builder("multi-ratings", tmp_path, grade="helpfulness"), UF / "uf_train.jsonl")
    photo = _graded(lists[0])
    assert photo["Plants eat sun."] == (1, 0.25, 2.0) and photo["Photosynthesis is how animals breathe."][2] == 1.0
    # the N/A helpfulness now matters for nothing but helpfulness: with honesty alone the response is kept
    lists, _ = _lists(_builder("multi-ratings", tmp_path, grade=["honesty"]), UF / "uf_train.jsonl")
    knuckles = next(gl for gl in lists if "knuckles" in gl.query)
    assert "Your fingers will fall off." in knuckles.candidates
    lists, _ = _lists(_builder("multi-ratings", tmp_path, grade=[{"helpfulness": 3}, "truthfulness"]),
                      UF / "uf_train.jsonl")
    assert _graded(lists[0])["Plants eat sun."][2] == 2.25  # (3 * 2 + 1 * 3) / 4


def test_formats_csv_and_parquet():
    b = _builder()
    assert [f.role for f in b.locate(UF)] == ["ratings-parquet:uf_test.parquet:test",
                                             "ratings-jsonl:uf_train.jsonl:train",
                                             "ratings-csv:uf_validation.csv:validation"]
    lists, _ = _lists(b, UF)
    assert Counter(gl.split for gl in lists) == {"train": 4, "validation": 1, "test": 2}
    val = next(gl for gl in lists if gl.split == "validation")
    assert _graded(val) == {"32 degrees Fahrenheit.": (1, 1.0, 5.0), "0 degrees Fahrenheit.": (0, 0.25, 2.0)}
    test = [gl for gl in lists if gl.split == "test"]
    assert _graded(test[1]) == {"366 days.": (1, 1.0, 5.0), "365 days.": (0, 0.1875, 1.75)}
    assert dict(zip(test[1].candidates, test[1].candidate_extra[3]))["365 days."] == "uf_test.parquet:2#1"


def test_map_an_aspect_path_and_a_missing_key(tmp_path):
    rows = [json.loads(line) for line in (UF / "uf_train.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in rows:
        for c in row["completions"]:
            c["annotations"]["helpful"] = c["annotations"].pop("helpfulness")
    p = tmp_path / "uf.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(SourceFormatError, match="completion 1 of column 'completions' has no key "
                                                "'annotations.helpfulness' \\(mapped as aspects.helpfulness\\)") as e:
        _lists(_builder(), p)
    assert e.value.line == 1 and e.value.path == str(p)
    mapped, _ = _lists(_builder(maps=["aspects.helpfulness=annotations.helpful"]), p)
    original, _ = _lists(_builder(), UF / "uf_train.jsonl")
    assert [gl.candidates for gl in mapped] == [gl.candidates for gl in original]


@pytest.mark.parametrize(("rating", "match"), [
    ("7", "aspect 'helpfulness' is 7, outside rating_range \\[1, 5\\]"),
    ("good", "aspect 'helpfulness' is 'good', expected a number"),
    (True, "aspect 'helpfulness' is a boolean"),
])
def test_bad_ratings_name_the_line(tmp_path, rating, match):
    row = json.loads((UF / "uf_train.jsonl").read_text(encoding="utf-8").splitlines()[0])
    row["completions"][1]["annotations"]["helpfulness"]["Rating"] = rating
    p = tmp_path / "uf.jsonl"
    p.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(SourceFormatError, match=match) as e:
        _lists(_builder(), p)
    assert e.value.line == 1 and "completion 2" in e.value.message


def test_rating_key_and_list_of_one(tmp_path):
    row = {"instruction": "Q", "source": "s", "completions": [
        {"response": "good", "annotations": {"helpfulness": [{"score": 5}]}},
        {"response": "bad", "annotations": {"helpfulness": 2}},
    ]}
    p = tmp_path / "uf.jsonl"
    p.write_text(json.dumps(row) + "\n", encoding="utf-8")
    # a copy of the recipe reading one aspect (extends cannot drop aspects: mappings merge key by key)
    data = yaml.safe_load((REPO / "recipes" / "multi-ratings.yaml").read_text(encoding="utf-8"))
    data.update(name="one-aspect", grade="helpfulness", rating_key="score")
    data["columns"]["aspects"] = {"helpfulness": "annotations.helpfulness"}
    recipe = tmp_path / "one-aspect.yaml"
    recipe.write_text(yaml.safe_dump(data), encoding="utf-8")
    lists, _ = _lists(get_builder("ratings")(load_recipe(recipe)), p)
    assert _graded(lists[0]) == {"good": (1, 1.0, 5.0), "bad": (0, 0.25, 2.0)}
    recipe.write_text(yaml.safe_dump({**data, "rating_key": "Rating"}), encoding="utf-8")
    with pytest.raises(SourceFormatError, match="without the key 'Rating' \\(its keys: score\\)"):
        _lists(get_builder("ratings")(load_recipe(recipe)), p)


# --------------------------------------------------------------------------- HelpSteer layout


def test_helpsteer_rows_grouped_by_prompt():
    b = _builder("multi-ratings-flat")
    lists, skipped = _lists(b, HS)
    assert skipped == Counter({"single_grade": 3, "empty_response": 1})
    assert [(gl.split, gl.query) for gl in lists] == [
        ("train", "What is the tallest mountain on Earth?"),
        ("train", "Summarize the plot of Romeo and Juliet in one sentence."),
        ("validation", "Translate 'thank you' into German."),
        ("test", "Is a tomato a fruit?"),
    ]
    everest = _graded(lists[0])
    assert everest["K2."] == (0, 0.0, 0.0) and everest["Everest."] == (1, 0.5, 2.0)
    assert everest["Mount Everest, at about 8,849 metres above sea level."] == (2, 1.0, 4.0)
    ratings = dict(zip(lists[0].candidates, lists[0].candidate_extra[1]))["Everest."]
    assert [(x["aspect"], x["rating"]) for x in ratings] == [("helpfulness", 2.0), ("correctness", 3.0),
                                                             ("coherence", 4.0), ("complexity", 0.0),
                                                             ("verbosity", 0.0)]
    ids = dict(zip(lists[0].candidates, lists[0].candidate_extra[3]))
    assert ids["K2."] == "helpsteer_train.jsonl:2"
    assert all(gl.query_extra == (None, None) for gl in lists)  # no subset column, plain text


def test_helpsteer_weighted_grade(tmp_path):
    b = _builder("multi-ratings-flat", tmp_path, grade=["helpfulness", "correctness"])
    lists, skipped = _lists(b, HS / "helpsteer_train.jsonl")
    haiku = next(gl for gl in lists if "haiku" in gl.query)  # helpfulness ties 3-3, correctness breaks it
    assert _graded(haiku) == {"Crisp leaves drift and fall / the maple blushes crimson / cold wind hums goodbye":
                              (1, 0.875, 3.5), "Autumn is a season that comes after summer.": (0, 0.625, 2.5)}


def test_helpsteer_missing_aspect_column_and_parquet_row_errors(tmp_path):
    p = tmp_path / "hs.parquet"
    pq.write_table(pa.table({"prompt": ["q", "q"], "response": ["a", "b"], "helpfulness": [1, 9],
                             "correctness": [1, 1], "coherence": [1, 1], "complexity": [1, 1],
                             "verbosity": [1, 1]}), p)
    with pytest.raises(SourceFormatError, match="is 9, outside rating_range \\[0, 4\\] \\(row 2\\)") as e:
        _lists(_builder("multi-ratings-flat"), p)
    assert e.value.path == str(p)
    pq.write_table(pa.table({"prompt": ["q"], "response": ["a"], "helpfulness": [1]}), p)
    with pytest.raises(SourceFormatError, match="has no column 'correctness' \\(mapped as aspect:correctness\\)"):
        _lists(_builder("multi-ratings-flat"), p)


def test_chat_prompt_and_responses(tmp_path):
    user = [{"role": "user", "content": "Say hi."}]
    rows = [{"prompt": user, "response": user + [{"role": "assistant", "content": "Hi!"}], "helpfulness": 4,
             "correctness": 4, "coherence": 4, "complexity": 0, "verbosity": 0},
            {"prompt": user, "response": [{"role": "assistant", "content": "Go away."}], "helpfulness": 0,
             "correctness": 2, "coherence": 4, "complexity": 0, "verbosity": 0},
            {"prompt": user, "response": [{"role": "user", "content": "Say hi."}, {"role": "user", "content": "?"}],
             "helpfulness": 1, "correctness": 1, "coherence": 1, "complexity": 0, "verbosity": 0}]
    p = tmp_path / "hs.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    lists, skipped = _lists(_builder("multi-ratings-flat"), p)
    assert skipped == Counter({"prompt_mismatch": 1})
    (gl,) = lists
    assert gl.query == "Say hi." and json.loads(gl.query_extra[1]) == user
    assert _graded(gl) == {"Hi!": (1, 1.0, 4.0), "Go away.": (0, 0.0, 0.0)}


def test_ids_come_from_content(tmp_path):
    lists, _ = _lists(_builder("multi-ratings-flat"), HS / "helpsteer_train.jsonl")
    everest = lists[0]
    want = short_id("query", "", everest.query, "")
    assert everest.query_id == want
    assert set(everest.candidate_ids) == {short_id("candidate", want, c, "") for c in everest.candidates}
    # the rows of a prompt in another order, and split over two files: the same list
    rows = (HS / "helpsteer_train.jsonl").read_text(encoding="utf-8").splitlines()[:4]
    (tmp_path / "a.jsonl").write_text(rows[3] + "\n" + rows[0] + "\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(rows[2] + "\n" + rows[1] + "\n", encoding="utf-8")
    again, _ = _lists(_builder("multi-ratings-flat"), tmp_path)
    assert again[0].query_id == want and sorted(again[0].candidate_ids) == sorted(everest.candidate_ids)


# --------------------------------------------------------------------------- end to end


def test_build_end_to_end_with_validity_figures(tmp_path):
    rows = []
    for k in range(60):
        for j, (text, h) in enumerate([(f"The answer to question {k} is {k}.", 4),
                                       (f"Question {k} is hard; maybe {k + 1}.", 2),
                                       ("I cannot answer that.", 0)]):
            rows.append({"prompt": f"Question {k}: what number is {k}?", "response": text, "helpfulness": h,
                         "correctness": h, "coherence": 4, "complexity": 1, "verbosity": j,
                         "subset": ["a", "b"][k % 2]})
    src = tmp_path / "hs.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    r = gradebench.build("multi-ratings-flat", source=src, out=tmp_path / "out", progress=False)
    assert r.splits == {"test": {"queries": 60, "candidates": 180}} and r.validation["success"]
    table = pq.read_table([str(Path(r.path) / f) for fs in r.files.values() for f in fs])
    out = table.to_pylist()
    assert Counter(row["subset"] for row in out) == {"a": 90, "b": 90}
    assert Counter((row["grade"], row["relevance"]) for row in out) == {(4.0, 2): 60, (2.0, 1): 60, (0.0, 0): 60}
    assert table.schema.field("ratings").type == pa.list_(pa.struct([pa.field("aspect", pa.string(), False),
                                                                      pa.field("rating", pa.float64())]))
    assert set(r.stats["all"]["shortcut_probes"]) >= {"length", "query_overlap"}
    assert {"query_blind", "bm25", "lexical_ceiling_dense", "lexical_ceiling_strong"} <= set(r.validity)
    assert "Multi-response ratings" in (Path(r.path) / "README.md").read_text()


def test_one_prompt_in_two_splits_and_limit(tmp_path):
    rows = (HS / "helpsteer_train.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "hs_train.jsonl").write_text("\n".join(rows[:4]) + "\n", encoding="utf-8")
    (tmp_path / "hs_test.jsonl").write_text("\n".join(rows[:2]) + "\n", encoding="utf-8")
    lists, skipped = _lists(_builder("multi-ratings-flat"), tmp_path)
    assert [gl.split for gl in lists] == ["train"] and skipped == Counter({"duplicate_prompt": 1})
    b = _builder("multi-ratings-flat")
    sel = b.select(b.read(b.locate(tmp_path)), limit=2)  # two rows of the train file: a list of two
    assert [len(u.candidates) for u in sel.units] == [2]
