"""The nli-table builder: recipe keys (column mapping, label values), template gold, explanation gold."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from gradebench.datasets import get_builder
from gradebench.datasets.nli_table.builder import NLITableBuilder
from gradebench.errors import RecipeError
from gradebench.recipes.loader import load_recipe, recipe_from_dict, recipe_from_json
from tests.builders._util import run_builder
from tests.conftest import FIXTURES, REPO, shared_data

TABLE = FIXTURES / "nli_table"
FOLDER = TABLE / "folder"
MAP = {"premise": "sentence1", "hypothesis": "sentence2", "label": "gold", "id": "pair_id"}
LETTERS = {"e": "entailment", "n": "neutral", "c": "contradiction"}
EXPLANATION_GOLD = {
    "name": "gold", "relevance": 4, "score_range": [0.70, 1.00], "candidates": "explanation", "explanation": 1,
    "description": "the pair's human explanation",
}


def _data(columns: dict | None = None, **over) -> dict:
    data = yaml.safe_load((REPO / "recipes" / "nli-table.yaml").read_text())
    if columns:
        data["columns"] = {**data["columns"], **columns}  # what a CLI --map does
    data.update(over)
    return data


def _builder(columns: dict | None = None, **over) -> NLITableBuilder:
    return NLITableBuilder(recipe_from_dict(_data(columns, **over)))


def _explanation_gold(columns: dict, **over) -> NLITableBuilder:
    data = _data(columns, **over)
    data["tiers"] = [EXPLANATION_GOLD] + data["tiers"][1:]
    return NLITableBuilder(recipe_from_dict(data))


_lists = run_builder


# --------------------------------------------------------------------------- recipe


def test_recipe_defaults():
    r = load_recipe("nli-table")
    assert r.source.family == "nli-table" and r.source.default == "path"
    assert r.columns.model_dump() == {"premise": "premise", "hypothesis": "hypothesis", "label": "label",
                                      "explanation": None, "id": None, "split": None}
    assert r.label_values == {}
    assert all(t.candidates == "template" for t in r.tiers)
    b = get_builder("nli-table")(r)
    assert b.formats == ("nli-csv", "nli-tsv", "nli-jsonl", "nli-parquet")
    assert b.tiers() == [("gold", 4), ("good", 3), ("fair", 2), ("poor", 1), ("nonsense", 0)]
    assert b.redistributable() is False


def test_templates_match_the_mnli_recipe():
    assert load_recipe("nli-table").tiers == load_recipe("mnli").tiers


@pytest.mark.parametrize(
    ("columns", "over", "match"),
    [
        ({"hypothesis": "premise"}, {}, "column 'premise' is mapped to both premise and hypothesis"),
        ({"id": "label"}, {}, "column 'label' is mapped to both label and id"),
        ({"split": ""}, {}, "a column name is empty"),
        ({"premise": ""}, {}, "at least 1 character"),
        ({"explanation": ["a", "b", "c", "d"]}, {}, "explanation lists 1 to 3 columns, got 4"),
        ({"explanation": ["a", "a"]}, {}, "column 'a' is mapped to both explanation\\[1\\] and explanation\\[2\\]"),
        ({"sentence": "x"}, {}, "sentence"),
        ({}, {"label_values": {"0": "entail"}}, "label_values maps '0' to 'entail', which is neither one of labels"),
    ],
)
def test_bad_recipe_keys(columns, over, match):
    with pytest.raises(RecipeError, match=match):
        recipe_from_dict(_data(columns, **over))


def test_explanation_tier_needs_an_explanation_column():
    with pytest.raises(RecipeError, match="tier 'gold' takes human explanation 1 .* no explanation column is mapped"):
        _explanation_gold({})
    second = _data({"explanation": "why"})
    second["tiers"] = [{**EXPLANATION_GOLD, "explanation": 2}] + second["tiers"][1:]
    with pytest.raises(RecipeError, match="only 1 explanation column"):
        recipe_from_dict(second)


def test_extends_cannot_turn_gold_into_an_explanation_tier(tmp_path):
    """What the recipe comment says: copy the file instead of extending it."""
    p = tmp_path / "mine.yaml"
    p.write_text("extends: nli-table\nname: mine\ncolumns: {explanation: why}\n"
                 "tiers:\n  - {name: gold, candidates: explanation, explanation: 1}\n")
    with pytest.raises(RecipeError, match="tier 'gold' has templates but candidates is 'explanation'"):
        load_recipe(p)
    copied = yaml.safe_load((REPO / "recipes" / "nli-table.yaml").read_text())
    copied["tiers"][0] = EXPLANATION_GOLD
    copied["columns"]["explanation"] = "why"
    p.write_text(yaml.safe_dump(copied))
    assert load_recipe(p).tiers[0].candidates == "explanation"


# --------------------------------------------------------------------------- building


def test_template_gold_over_a_folder():
    sel, lists = _lists(_builder(MAP), FOLDER)
    assert sel.skipped == Counter({"empty_hypothesis": 1, "no_gold_label": 1, "unknown_label": 1})
    assert Counter(gl.split for gl in lists) == {"train": 5, "validation": 3, "test": 2}
    for gl in lists:
        assert sorted(gl.relevance) == [0, 1, 2, 3, 4]
        assert gl.human == [False] * 5
        premise, hypothesis = gl.query_extra[:2]
        gold = gl.candidates[gl.tiers.index("gold")]
        assert f'"{premise}"' in gold and f'"{hypothesis}"' in gold
    assert {gl.query_extra[3] for gl in lists} == {"t1", "t2", "t3", "t4", "t5", "d1", "d2", "d3", "x1", "x2"}


def test_explanation_gold_when_the_column_is_mapped():
    b = _explanation_gold({**MAP, "explanation": "why"})
    sel, lists = _lists(b, FOLDER)
    assert sel.skipped == Counter({"empty_hypothesis": 1, "no_gold_label": 1, "unknown_label": 1,
                                   "empty_explanation": 1})
    assert len(lists) == 9
    by_src = {gl.query_extra[3]: gl for gl in lists}
    t5 = by_src["t5"]
    i = t5.tiers.index("gold")
    assert t5.candidates[i] == 'A "closed" sign means the shop is not open.'
    assert t5.human[i] is True and t5.candidate_extra[2][i] == "human" and t5.candidate_extra[0][i] == "t5"
    assert sum(t5.human) == 1


def test_nested_jsonl_with_label_values_and_split_column():
    b = _builder({"premise": "example.premise", "hypothesis": "example.hypothesis", "label": "majority",
                  "id": "uid", "split": "split"}, label_values={"0": "entailment", "1": "neutral", "2": "contradiction"})
    sel, lists = _lists(b, TABLE / "nested.jsonl")
    assert sel.skipped == Counter({"unknown_label": 1})  # -1, HF's "no gold label", is not mapped
    assert {gl.query_extra[3]: (gl.split, gl.query_extra[2]) for gl in lists} == {
        "101": ("train", "entailment"), "102": ("validation", "contradiction"),
        "103": ("test", "neutral"), "104": ("validation", "entailment"),
    }
    no_gold = _builder(b.recipe.columns.model_dump(), label_values={**b.recipe.label_values, "-1": "-"})
    assert _lists(no_gold, TABLE / "nested.jsonl")[0].skipped == Counter({"no_gold_label": 1})


def test_parquet_source(tmp_path):
    pq.write_table(pa.table({
        "premise": ["A dog sleeps.", "A dog sleeps.", "A bird sings."],
        "hypothesis": ["An animal rests.", "The dog runs.", "A bird is quiet."],
        "label": pa.array([0, 2, 2], pa.int8()),
    }), tmp_path / "validation.parquet")
    b = _builder(label_values={"0": "entailment", "1": "neutral", "2": "contradiction"})
    sel, lists = _lists(b, tmp_path)
    assert len(lists) == 3 and sel.skipped == Counter()
    assert [gl.query_extra[3] for gl in lists] == ["validation.parquet:1", "validation.parquet:2", "validation.parquet:3"]
    assert all(gl.split == "validation" for gl in lists)
    assert b.locate(tmp_path)[0].role == "nli-parquet:validation.parquet:validation"


def test_deterministic_and_worker_safe():
    b = _builder(MAP)
    sel, lists = _lists(b, FOLDER)
    worker = get_builder("nli-table")(recipe_from_json(b.recipe.model_dump_json()))
    assert worker.recipe.columns == b.recipe.columns
    assert worker.make_lists(sel.units) == lists
    assert _lists(_builder(MAP), FOLDER)[1] == lists


def test_formats_restrict_the_files_read():
    data = _data(MAP)
    data["source"]["formats"] = ["nli-tsv"]
    b = NLITableBuilder(recipe_from_dict(data))
    _, lists = _lists(b, FOLDER)
    assert {gl.split for gl in lists} == {"validation"}


def test_card_section():
    b = _builder(MAP, label_values={"yes": "entailment"})
    text = "\n".join(b.card_section())
    assert "Source columns: premise = `sentence1`, hypothesis = `sentence2`, label = `gold`, id = `pair_id`." in text
    assert "`yes` -> entailment" in text


def test_tables_accept_the_lists():
    tables = pytest.importorskip("gradebench.benchmark.tables")
    sel, lists = _lists(_builder(MAP), FOLDER)
    out = tables.lists_to_tables(NLITableBuilder.columns, lists, [u.split for u in sel.units])
    assert out["train"][0].num_rows == 25


# --------------------------------------------------------------------------- real data


def test_real_chaosnli_mnli():
    src = shared_data("chaosnli", "chaosNLI_v1.0", "chaosNLI_mnli_m.jsonl")
    b = _builder({"premise": "example.premise", "hypothesis": "example.hypothesis", "label": "majority_label",
                  "id": "uid"}, label_values=LETTERS)
    sel, lists = _lists(b, src)
    assert sel.skipped == Counter()
    assert len(lists) == 1599 and sum(len(gl.candidates) for gl in lists) == 7995
    assert Counter(gl.query_extra[2] for gl in lists) == {"entailment": 741, "neutral": 583, "contradiction": 275}
    assert Counter(r for gl in lists for r in gl.relevance) == {g: 1599 for g in range(5)}
    assert all(gl.split == "test" for gl in lists)


def test_real_chaosnli_snli():
    src = shared_data("chaosnli", "chaosNLI_v1.0", "chaosNLI_snli.jsonl")
    b = _builder({"premise": "example.premise", "hypothesis": "example.hypothesis", "label": "old_label",
                  "id": "uid"}, label_values=LETTERS)
    sel, lists = _lists(b, src)
    assert sel.skipped == Counter()
    assert len(lists) == 1514
    assert Counter(gl.query_extra[2] for gl in lists) == {"entailment": 486, "neutral": 677, "contradiction": 351}
    assert lists[0].query_extra[3] == "2407214681.jpg#0r1n"


def test_build_end_to_end(tmp_path):
    engine = pytest.importorskip("gradebench.benchmark.engine")
    pq = pytest.importorskip("pyarrow.parquet")
    recipe = tmp_path / "my-table.yaml"
    recipe.write_text(
        "extends: nli-table\nname: my-table\n"
        "columns: {premise: sentence1, hypothesis: sentence2, label: gold, id: pair_id}\n"
    )
    result = engine.build(recipe, source=FOLDER, out=tmp_path / "out", progress=False, workers=2)
    root = Path(result.path)
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["skipped"] == {"empty_hypothesis": 1, "no_gold_label": 1, "unknown_label": 1}
    assert {s: v["queries"] for s, v in manifest["splits"].items()} == {"train": 5, "validation": 3, "test": 2}
    assert manifest["redistributable"] is False
    assert [i["role"] for i in manifest["inputs"]] == [
        "nli-tsv:pairs_dev.tsv:validation", "nli-jsonl:pairs_test.jsonl:test", "nli-csv:pairs_train.csv:train",
    ]
    table = pq.read_table(root / manifest["splits"]["train"]["files"][0])
    assert sorted(set(table.column("source_id").to_pylist())) == ["t1", "t2", "t3", "t4", "t5"]
    assert table.num_rows == 25
