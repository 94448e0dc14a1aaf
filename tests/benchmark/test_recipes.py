"""Recipes: shipped ones load; bad recipes fail with file, line, key and a hint."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gradebench.errors import RecipeError, UnknownNameError
from gradebench.recipes import load_recipe, recipe_names, recipes_dir

ESNLI_FAMILY = ["demo", "esnli", "esnli-fixed", "esnli-human"]


def test_shipped_recipes_listed_and_valid():
    from gradebench.datasets import builder_names, get_builder

    names = recipe_names()
    assert set(ESNLI_FAMILY) <= set(names)
    for name in names:
        r = load_recipe(name)
        assert r.name == name
        assert r.source.family in builder_names()
        tiers = get_builder(r.source.family)(r).tiers()
        if tiers is not None:
            assert [g for _, g in tiers] == sorted((g for _, g in tiers), reverse=True)


def test_esnli_matches_paper_ranges():
    r = load_recipe("esnli")
    assert {t.name: t.score_range for t in r.tiers} == {
        "gold": (0.70, 1.00), "good": (0.50, 0.85), "fair": (0.30, 0.70), "poor": (0.10, 0.50), "nonsense": (0.00, 0.30),
    }
    adj = r.scoring.adjustments
    assert (adj.label_match_bonus, adj.keyword_bonus, adj.overlap_bonus) == (0.05, 0.03, 0.02)
    assert (adj.short_penalty, adj.short_min_words, adj.gibberish_penalty) == (0.10, 15, 0.30)
    assert next(t for t in r.tiers if t.name == "poor").label == "wrong"


def test_fixed_ranges_do_not_overlap():
    tiers = load_recipe("esnli-fixed").tiers
    for hi_tier, lo_tier in zip(tiers, tiers[1:]):
        assert lo_tier.score_range[1] <= hi_tier.score_range[0]


def test_extends_inherits_templates():
    assert load_recipe("esnli-fixed").tiers[1].templates == load_recipe("esnli").tiers[1].templates
    assert load_recipe("demo").resplit == (80, 10, 10)


def _write(tmp_path: Path, data: dict, name="r.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def _esnli_dict() -> dict:
    return yaml.safe_load((recipes_dir() / "esnli.yaml").read_text())


def test_unknown_key_names_key_file_and_line(tmp_path):
    data = _esnli_dict()
    data["tiers"][2]["scroe_range"] = [0.1, 0.2]
    p = _write(tmp_path, data)
    with pytest.raises(RecipeError) as e:
        load_recipe(p)
    msg = str(e.value)
    assert "unknown key 'scroe_range'" in msg and "tiers[2].scroe_range" in msg
    assert f"{p}:" in msg and "hint:" in msg
    line = int(msg.split(f"{p}:")[1].split(",")[0])
    assert "scroe_range" in p.read_text().splitlines()[line - 1]

    assert "did you mean 'score_range'?" in msg  # a key of the tier, where the typo is (issue 31)


@pytest.mark.parametrize("place, typo, known", [
    ((), "shuffle_candidate", "shuffle_candidates"),  # a common key
    (("source",), "famly", "family"),  # a nested model
    ((), "query_templat", "query_template"),  # a key of the builder's section, at the same level
    (("scoring", "adjustments"), "short_tier", "short_tiers"),  # a model two levels down
])
def test_unknown_key_suggests_the_close_known_keys(tmp_path, place, typo, known):
    data = _esnli_dict()
    node = data
    for part in place:
        node = node[part]
    node[typo] = node.get(known, True)
    with pytest.raises(RecipeError, match=f"unknown key '{typo}'; did you mean '{known}'[ ?]"):
        load_recipe(_write(tmp_path, data))


def test_unknown_map_role_suggests_the_column_roles():
    from gradebench.recipes.loader import with_overrides

    with pytest.raises(RecipeError, match="unknown key 'premis'; did you mean 'premise'\\?"):
        with_overrides(load_recipe("nli-table"), {"columns.premis": "sentence1"})


def test_known_keys_follows_optional_dict_and_list_fields():
    from pydantic import BaseModel

    from gradebench.io.yamlio import known_keys

    class Inner(BaseModel):
        alpha: int = 0
        beta: int = 0

    class Outer(BaseModel):
        inner: Inner | None = None
        named: dict[str, Inner] = {}
        many: list[Inner] = []
        free: dict[str, int] = {}

    assert known_keys(Outer, ()) == ["free", "inner", "many", "named"]
    assert known_keys(Outer, ("inner",)) == known_keys(Outer, ("named", "x")) == ["alpha", "beta"]
    assert known_keys(Outer, ("many", 3)) == ["alpha", "beta"]
    assert known_keys(Outer, ("free", "x")) == known_keys(Outer, ("nope",)) == []


def test_min_greater_than_max(tmp_path):
    data = _esnli_dict()
    data["tiers"][0]["score_range"] = [0.9, 0.2]
    with pytest.raises(RecipeError, match=r"tiers\[0\]\.score_range.: score_range min 0.9 > max 0.2"):
        load_recipe(_write(tmp_path, data))


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (lambda d: d["tiers"][1]["templates"]["entailment"].append("bad {premis}"), "placeholder"),
        (lambda d: d["tiers"][1]["templates"].pop("neutral"), "keyed by every label"),
        (lambda d: d.__setitem__("version", 0), "version"),
        # the download files come from gradebench/datasets/esnli/source.yaml; a recipe stating its own is checked alike
        (lambda d: d["source"].__setitem__("files", [{"filename": "esnli_dev.csv", "split": "validation"}]),
         "no checksum"),
        (lambda d: d["scoring"]["adjustments"].__setitem__("short_tiers", ["gold", "shiny"]), "unknown tiers"),
        (lambda d: d["tiers"].reverse(), "best first"),
        (lambda d: d.pop("labels"), "missing required key 'labels'"),
        (lambda d: d.__setitem__("labels", ["entailment", "neutral", "contradiction", "neutral"]),
         "labels must be unique"),
        (lambda d: d["tiers"][0].__setitem__("score_range", [0.5, 1.5]), r"inside \[0, 1\]"),
    ],
)
def test_bad_recipes(tmp_path, mutate, pattern):
    data = _esnli_dict()
    mutate(data)
    with pytest.raises(RecipeError, match=pattern):
        load_recipe(_write(tmp_path, data))


def test_invalid_yaml_reports_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\ntiers: [\n  - a\n")
    with pytest.raises(RecipeError, match=r"bad.yaml:\d+: invalid YAML"):
        load_recipe(p)


def test_extends_unknown_tier(tmp_path):
    p = _write(tmp_path, {"extends": "esnli", "name": "x", "tiers": [{"name": "shiny", "relevance": 9}]})
    with pytest.raises(RecipeError, match="'shiny' is not in the base recipe"):
        load_recipe(p)


def test_unknown_recipe_name_suggests():
    with pytest.raises(UnknownNameError, match="did you mean 'esnli'"):
        load_recipe("esnl")


def test_missing_recipe_file(tmp_path):
    with pytest.raises(RecipeError, match="recipe file not found"):
        load_recipe(tmp_path / "nope.yaml")
