"""The ``winowhy`` builder: recipe keys, locate, natural grades, skips, ids, real-data counts."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from gradebench.datasets import get_builder
from gradebench.datasets.base import GradedList
from gradebench.datasets.winowhy.builder import WinoWhyBuilder, answer_index, grade, twin_ids
from gradebench.errors import RecipeError, SourceFormatError, SourceNotFoundError
from gradebench.hashing import key_digest
from gradebench.recipes.loader import load_recipe
from tests.builders._util import lists_and_skips, recipe_builder, run_builder, variant_builder
from tests.conftest import FIXTURES, shared_data

FIX = FIXTURES / "winowhy"


def _builder(tmp_path: Path | None = None, **keys) -> WinoWhyBuilder:
    """The builder of recipes/winowhy.yaml, or of a recipe extending it with ``keys``."""
    return variant_builder(tmp_path, "winowhy", keys, name="winowhy-variant")


def _lists(b: WinoWhyBuilder, source: Path = FIX, limit: int | None = None) -> tuple[list[GradedList], Counter]:
    return lists_and_skips(b, source, limit)


def _by_text(lst: GradedList) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {}
    src, idx, label = lst.candidate_extra
    for k, text in enumerate(lst.candidates):
        out.setdefault(text, []).append((lst.relevance[k], lst.scores[k], src[k], idx[k], label[k], lst.human[k]))
    return out


# --------------------------------------------------------------------------- recipe


def test_recipe_loads_with_defaults():
    r = load_recipe("winowhy")
    assert r.source.family == "winowhy" and r.source.formats == ["winowhy-json"]
    assert r.reason_sources == ("human", "reverse", "gpt")
    assert "{marked_sentence}" in r.query_template
    assert r.resplit is None and r.shuffle_candidates
    assert "MIT" in r.source.license
    assert [f.filename for f in r.source.files] == ["winowhy.json", "cat_ref.json"]


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"query_template": "{sentence} {premise}"}, "placeholder {premise} is not allowed"),
        ({"query_template": "{sentence!r}"}, "placeholder {sentence} is not allowed"),
        ({"query_template": "pronoun: {pronoun} answer: {answer}"}, "must contain {sentence} or {marked_sentence}"),
        ({"reason_sources": ["human", "human"]}, "lists a source twice"),
        ({"reason_sources": ["robot"]}, "reason_sources"),
        ({"reason_sources": []}, "reason_sources"),
        ({"tiers": []}, "unknown key 'tiers'"),
    ],
)
def test_bad_recipe_keys(tmp_path, keys, message):
    with pytest.raises(RecipeError) as e:
        _builder(tmp_path, **keys)
    assert message in e.value.one_line()


def test_builder_metadata():
    b = _builder()
    assert b.tiers() is None and b.redistributable()
    assert b.summary and b.card_section()
    names = [c.name for c in b.columns]
    assert len(names) == len(set(names))
    assert {"wsc_id", "sentence", "correct_answer", "reason_source", "twin_wsc_id"} <= set(names)


# --------------------------------------------------------------------------- locate


def test_locate_folder_and_file_give_the_same_roles(tmp_path):
    b = _builder()
    from_folder = b.locate(FIX)
    from_file = b.locate(FIX / "winowhy.json")
    assert [(f.role, f.split) for f in from_folder] == [("winowhy-json:reasons", "test"),
                                                        ("winowhy-json:categories", "test")]
    assert from_file == from_folder  # the file brings its sibling cat_ref.json
    moved = tmp_path / "elsewhere" / "deep"
    shutil.copytree(FIX, moved)
    assert [f.role for f in b.locate(moved)] == [f.role for f in from_folder]  # roles ignore the folder
    assert b.source_format(from_folder) == "winowhy-json"


def test_locate_without_categories(tmp_path):
    shutil.copy(FIX / "winowhy.json", tmp_path / "winowhy.json")
    files = _builder().locate(tmp_path)
    assert [f.role for f in files] == ["winowhy-json:reasons"]
    lists, _ = _lists(_builder(), tmp_path)
    assert all(lst.query_extra[8] is None for lst in lists)


def test_locate_other_json_name(tmp_path):
    p = tmp_path / "winowhy_copy.json"
    shutil.copy(FIX / "winowhy.json", p)
    assert [Path(f.path).name for f in _builder().locate(p)] == ["winowhy_copy.json"]


def test_locate_errors(tmp_path):
    b = _builder()
    with pytest.raises(SourceNotFoundError):
        b.locate(tmp_path / "missing")
    with pytest.raises(SourceFormatError, match="no winowhy.json in this folder"):
        b.locate(tmp_path)
    (tmp_path / "dataset.csv").write_text("sentence,wnli_sent1,wnli_sent2,label,wsc_num,fold_num\n")
    with pytest.raises(SourceFormatError, match="binary-classification CSV") as e:
        b.locate(tmp_path / "dataset.csv")
    assert "winowhy.json" in e.value.hint
    with pytest.raises(SourceFormatError, match="only the category index"):
        b.locate(FIX / "cat_ref.json")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(SourceFormatError, match="not a WinoWhy JSON"):
        b.locate(tmp_path / "notes.txt")


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    ("value", "index"),
    [("A", 0), ("B", 1), ("A.", 0), ("B.", 1), (" b. ", 1), ("C", 2), ("", None), ("AB", None), ("1", None),
     ("The dog", None), (".", None)],
)
def test_answer_index(value, index):
    assert answer_index(value) == index


@pytest.mark.parametrize(
    ("p", "g"),
    [(0.0, 0), (0.2, 1), (0.4, 2), (0.6, 3), (0.8, 4), (1.0, 5), (0.6000000001, 3), (0.1 + 0.2 + 0.3, 3),
     (0.5, None), (0.3, None), (1.2, None), (-0.2, None)],
)
def test_grade(p, g):
    assert grade(p) == g


# --------------------------------------------------------------------------- lists


def test_fixture_lists():
    lists, skipped = _lists(_builder())
    assert skipped == Counter()
    assert [len(lst.candidates) for lst in lists] == [7, 7, 4]
    assert {lst.split for lst in lists} == {"test"}
    assert lists[0].query == (
        "sentence: The dog chased the cat up the tree because *it* was hungry. pronoun: it answer: The dog"
    )
    assert lists[2].query.endswith("nobody heard *her*. pronoun: her answer: The teacher")
    for lst in lists:
        assert lst.tiers is None
        n = len(lst.candidates)
        assert len(lst.candidate_ids) == len(lst.scores) == len(lst.relevance) == len(lst.human) == n
        assert all(0.0 <= s <= 1.0 for s in lst.scores)
        assert all(isinstance(g, int) for g in lst.relevance) and len(set(lst.relevance)) >= 2
        assert all(s == g / 5 for s, g in zip(lst.scores, lst.relevance))
        assert len(set(lst.candidate_ids)) == n


def test_extra_columns_match_declaration():
    b = _builder()
    lists, _ = _lists(b)
    n_query = sum(c.level == "query" for c in b.columns)
    n_cand = sum(c.level == "candidate" for c in b.columns)
    for lst in lists:
        assert len(lst.query_extra) == n_query and len(lst.candidate_extra) == n_cand
        assert all(len(col) == len(lst.candidates) for col in lst.candidate_extra)
    q0, q1, q2 = (lst.query_extra for lst in lists)
    assert q0 == (0, "The dog chased the cat up the tree because it was hungry.", "it", "The dog", "The cat", "A",
                  "Invented for the gradebench tests", 1, "Property,Temporal")
    assert q1[3:8] == ("The cat", "The dog", "B", "Invented for the gradebench tests", 0)  # "B." normalised
    assert q2[0] == 2 and q2[5] == "B" and q2[7] is None and q2[8] == "Object,Temporal"


def test_grades_sources_and_authorship():
    lists, _ = _lists(_builder())
    c0 = _by_text(lists[0])
    assert c0["dogs chase what they want to eat"] == [(5, 1.0, "human", 0, "Valid", True)]
    assert c0["it had not eaten since the morning."] == [(3, 0.6, "gpt", 3, "Undecided", False)]
    assert c0["cats climb trees to escape dogs"] == [(0, 0.0, "reverse", 6, "Invalid", True)]  # a person wrote it
    # the same text graded in its twin's list, where it is a human reason
    c1 = _by_text(lists[1])
    assert sorted(c1["cats climb trees to escape dogs"]) == [(3, 0.6, "human", 2, "Undecided", True),
                                                             (4, 0.8, "human", 1, "Valid", True)]
    assert c1["dogs chase what they want to eat"] == [(2, 0.4, "reverse", 4, "Undecided", True)]


def test_duplicate_texts_are_separate_candidates():
    lst = _lists(_builder())[0][1]
    dup = [cid for cid, t in zip(lst.candidate_ids, lst.candidates) if t == "cats climb trees to escape dogs"]
    assert len(dup) == 2 and dup[0] != dup[1]


def test_twin_ids():
    b = _builder()
    qs = b.read(b.locate(FIX))["test"]
    assert twin_ids(qs) == {0: 1, 1: 0}


def test_ids_are_content_derived_and_stable(tmp_path):
    first, _ = _lists(_builder())
    again, _ = _lists(_builder())
    assert [lst.query_id for lst in first] == [lst.query_id for lst in again]
    assert [lst.candidate_ids for lst in first] == [lst.candidate_ids for lst in again]
    assert all(len(lst.query_id) == 16 and int(lst.query_id, 16) >= 0 for lst in first)
    data = json.loads((FIX / "winowhy.json").read_text())
    data[0]["reasons"][0][0] = "dogs chase what they like to eat"
    (tmp_path / "winowhy.json").write_text(json.dumps(data))
    changed, _ = _lists(_builder(), tmp_path)
    assert changed[0].query_id == first[0].query_id
    assert len(set(changed[0].candidate_ids) ^ set(first[0].candidate_ids)) == 2  # only the edited reason's id
    assert changed[1].candidate_ids == first[1].candidate_ids
    # the query template changes the text a scorer sees, not the ids
    other, _ = _lists(_builder(tmp_path, query_template="{sentence} Who is {pronoun}? {answer}"))
    assert [lst.query_id for lst in other] == [lst.query_id for lst in first]
    assert other[0].query == "The dog chased the cat up the tree because it was hungry. Who is it? The dog"


def test_candidate_order_is_a_content_digest_not_the_grade(tmp_path):
    b = _builder()
    for lst in _lists(b)[0]:
        keys = [key_digest(b.recipe.seed_namespace, "candidate", lst.query_id, c) for c in lst.candidate_ids]
        assert keys == sorted(keys)
    plain, _ = _lists(_builder(tmp_path, shuffle_candidates=False))
    assert plain[0].candidate_extra[1] == list(range(7))  # file order
    assert sorted(plain[0].candidate_ids) == sorted(_lists(b)[0][0].candidate_ids)


def test_reason_sources_filter(tmp_path):
    lists, skipped = _lists(_builder(tmp_path, reason_sources=["human", "reverse"]))
    assert skipped == Counter()  # recipe choices are not skips
    assert [len(lst.candidates) for lst in lists] == [5, 6, 2]
    assert all(all(lst.human) for lst in lists)
    assert {s for lst in lists for s in lst.candidate_extra[0]} == {"human", "reverse"}


def test_limit():
    lists, _ = _lists(_builder(), limit=2)
    assert [lst.query_extra[0] for lst in lists] == [0, 1]
    assert lists[0].query_extra[7] == 1  # twins come from every record, not just the first `limit`


def _skip_run(tmp_path, mutate) -> tuple[list[GradedList], Counter]:
    data = json.loads((FIX / "winowhy.json").read_text())
    mutate(data)
    (tmp_path / "winowhy.json").write_text(json.dumps(data))
    return _lists(_builder(), tmp_path)


def test_skip_unknown_correct_answer(tmp_path):
    lists, skipped = _skip_run(tmp_path, lambda d: d[2].__setitem__("correctAnswer", "C"))
    assert len(lists) == 2
    assert skipped == {"unknown_correct_answer": 1}


def test_skip_empty_correct_answer(tmp_path):
    lists, skipped = _skip_run(tmp_path, lambda d: d[2]["answers"].__setitem__(1, "  "))
    assert len(lists) == 2 and skipped == {"empty_correct_answer": 1}


def test_three_answers_have_no_single_other(tmp_path):
    lists, _ = _skip_run(tmp_path, lambda d: d[2]["answers"].append("The janitor"))
    assert lists[2].query_extra[3:5] == ("The teacher", None)


def test_skip_bad_reasons(tmp_path):
    def mutate(d):
        d[0]["reasons"][0][1] = "robot"
        d[0]["reasons"][1][0] = "   "
        d[0]["reasons"][2][2] = 0.5
        d[0]["reasons"][3][2] = 1.4

    lists, skipped = _skip_run(tmp_path, mutate)
    assert len(lists[0].candidates) == 3
    assert skipped == {
        "unknown_reason_source": 1,
        "empty_reason": 1,
        "off_grid_plausibility": 2,
    }


def test_skip_single_grade_list(tmp_path):
    def mutate(d):
        for r in d[2]["reasons"]:
            r[2] = 0.4

    lists, skipped = _skip_run(tmp_path, mutate)
    assert len(lists) == 2 and skipped == {"single_grade": 1}


def test_skip_too_few_reasons(tmp_path):
    lists, skipped = _skip_run(tmp_path, lambda d: d[2].__setitem__("reasons", d[2]["reasons"][:1]))
    assert len(lists) == 2 and skipped == {"too_few_reasons": 1}
    lists, skipped = _skip_run(tmp_path, lambda d: d[2].__setitem__("reasons", []))
    assert skipped == {"too_few_reasons": 1}


def test_units_are_picklable():
    import pickle

    sel, _ = run_builder(_builder(), FIX)
    assert pickle.loads(pickle.dumps(sel.units)) == sel.units
    assert all(u.query_id and u.split == "test" for u in sel.units)


# --------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def real() -> list[GradedList]:
    sel, lists = run_builder(recipe_builder("winowhy"), shared_data("winowhy", "winowhy.json").parent)
    assert sel.skipped == Counter()
    return lists


def test_real_counts(real):
    assert len(real) == 273 and len({lst.query_id for lst in real}) == 273
    assert sum(len(lst.candidates) for lst in real) == 4095
    assert len({c for lst in real for c in lst.candidate_ids}) == 4095
    assert Counter(g for lst in real for g in lst.relevance) == {0: 792, 1: 803, 2: 610, 3: 620, 4: 743, 5: 527}
    assert all(len(set(lst.relevance)) >= 2 for lst in real)
    assert Counter(lst.query_extra[5] for lst in real) == {"A": 137, "B": 136}


def test_real_authorship_shortcut(real):
    by: dict[str, list[int]] = {}
    for lst in real:
        for src, g in zip(lst.candidate_extra[0], lst.relevance):
            by.setdefault(src, []).append(g)
    means = {s: round(sum(v) / len(v) / 5, 4) for s, v in by.items()}
    assert means == {"human": 0.7776, "reverse": 0.3764, "gpt": 0.2365}
    assert sum(h for lst in real for h in lst.human) == 2730


def test_real_twins(real):
    twin = {lst.query_extra[0]: lst.query_extra[7] for lst in real}
    assert None not in twin.values()
    assert sum(twin[twin[i]] == i for i in twin) == 272  # one question of a WSC triple points on
    assert Counter(t - i for i, t in twin.items()) == {1: 136, -1: 136, -2: 1}


def test_real_records(real):
    first = real[0]
    assert first.query == ("sentence: The city councilmen refused the demonstrators a permit because *they* feared "
                           "violence. pronoun: they answer: The city councilmen")
    assert first.query_extra[4:9] == ("The demonstrators", "A", "(Winograd1972)", 1, "Property,Quantity,Others")
    c = _by_text(first)
    assert c["they are under the command of Mayor James B. Gray."] == [(1, 0.2, "gpt", 8, "Invalid", False)]
    assert c["The demonstraters refused."] == [(0, 0.0, "reverse", 10, "Invalid", True)]
    third = real[2]
    assert third.query_extra[3] == "the trophy" and third.query_extra[5] == "A"  # correctAnswer "A."
    last = real[-1]
    assert last.query_extra[0] == 272 and last.query_extra[6] == "LeoraMorgenstern"


# --------------------------------------------------------------------------- end to end (engine)


def _build(**kw):
    from gradebench.experiments.build import build

    return build("winowhy", progress=False, workers=1, **kw)


def test_engine_builds_fixture(tmp_path):
    import pyarrow.parquet as pq

    result = _build(source=FIX, out=tmp_path / "a")
    folder = Path(result.path)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["splits"]["test"]["queries"] == 3 and manifest["splits"]["test"]["candidates"] == 18
    assert manifest["skipped"] == {}
    assert [i["role"] for i in manifest["inputs"]] == ["winowhy-json:reasons", "winowhy-json:categories"]
    table = pq.read_table(folder / manifest["splits"]["test"]["files"][0])
    names = [c.name for c in get_builder("winowhy").columns]
    assert table.column_names[-len(names):] == names
    rows = table.to_pylist()
    row = next(r for r in rows if r["candidate"] == "dogs chase what they want to eat" and r["wsc_id"] == 1)
    assert (row["relevance"], row["score"], row["reason_source"], row["tier"]) == (2, 0.4, "reverse", None)
    assert row["twin_wsc_id"] == 0 and row["correct_option"] == "B" and row["categories"] == "Object"
    again = _build(source=FIX, out=tmp_path / "b")
    assert Path(again.path).name == folder.name  # same fingerprint
    for name in manifest["splits"]["test"]["files"]:
        assert (folder / name).read_bytes() == (Path(again.path) / name).read_bytes()


def test_engine_builds_real_data(tmp_path):
    src = shared_data("winowhy", "winowhy.json").parent
    manifest = json.loads((Path(_build(source=src, out=tmp_path).path) / "manifest.json").read_text())
    assert manifest["splits"]["test"] == {**manifest["splits"]["test"], "queries": 273, "candidates": 4095}
    assert set(manifest["splits"]) == {"test"} and manifest["skipped"] == {}
    probes = manifest["stats"]["all"]["shortcut_probes"]
    assert probes["human_authorship"] == pytest.approx(0.6604, abs=1e-4)
    carved = json.loads((Path(_build(source=src, out=tmp_path, resplit=(80, 10, 10)).path) / "manifest.json")
                        .read_text())
    assert sum(s["queries"] for s in carved["splits"].values()) == 273
    assert set(carved["splits"]) == {"train", "validation", "test"}
