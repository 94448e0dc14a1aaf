"""The ``worldtree`` builder: recipe keys, locate, role and rating grades, hard negatives, skips,
ids and order, the licence flag, an end-to-end build, and real-data counts.

Real-data tests pin ids, counts and fact texts (CC BY-SA 4.0), never question texts (AI2 Mercury
licence: "Do not distribute").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from gradebench.datasets import get_builder
from gradebench.datasets.base import GradedList
from gradebench.datasets.worldtree.builder import NegativeSampler, NegativeSpec, WorldTreeBuilder, WorldTreeRecords
from gradebench.datasets.worldtree.reader import Fact, build_tablestore
from gradebench.errors import InvalidArgumentError, RecipeError, SourceFormatError
from gradebench.hashing import key_digest, short_id
from gradebench.recipes.loader import load_recipe
from gradebench.words import words
from tests.builders._util import lists_and_skips, run_builder, variant_builder
from tests.conftest import FIXTURES, REPO, shared_data

FIX = FIXTURES / "worldtree"
RECIPE = REPO / "recipes" / "worldtree.yaml"
COLUMNS = ["question_id", "question", "choices", "answer", "answer_key", "topic", "grading", "relevant_facts",
           "fact_uid", "table", "role", "rating", "in_explanation", "origin", "deprecated"]


def _builder(tmp_path: Path | None = None, **keys) -> WorldTreeBuilder:
    """The builder of the shipped recipe, or of a recipe extending it (by path) with ``keys``."""
    return variant_builder(tmp_path, "worldtree", keys, name="worldtree-variant", extends=str(RECIPE))


def _run(b: WorldTreeBuilder, source: Path = FIX, limit: int | None = None) -> tuple[dict[str, GradedList], Counter]:
    lists, skipped = lists_and_skips(b, source, limit)
    return {gl.query_extra[0]: gl for gl in lists}, skipped


def _rows(gl: GradedList) -> dict[str, dict]:
    """fact uid -> its candidate fields."""
    names = ["fact_uid", "table", "role", "rating", "in_explanation", "origin", "deprecated"]
    out = {}
    for i, uid in enumerate(gl.candidate_extra[0]):
        row = {n: gl.candidate_extra[k][i] for k, n in enumerate(names)}
        row.update(text=gl.candidates[i], relevance=gl.relevance[i], score=gl.scores[i], id=gl.candidate_ids[i])
        out[uid] = row
    return out


def _negatives(gl: GradedList) -> set[str]:
    return {u for u, r in _rows(gl).items() if r["origin"] == "negative"}


# --------------------------------------------------------------------------- recipe and contract


def test_recipe_loads_and_documents_the_grades():
    r = load_recipe("worldtree")
    assert r.source.family == "worldtree" and r.source.formats == ["worldtree-tsv"] and r.source.default == "path"
    assert "Do not distribute" in r.source.license and "xie2020worldtree" in r.source.citation
    assert r.role_grades == {"CENTRAL": 3, "GROUNDING": 3, "LEXGLUE": 2, "BACKGROUND": 2, "ROLE": 1, "NEG": 1, "NE": 1}
    assert (r.negative_grade, r.rating_max, r.grade_by) == (0, 6, "auto")
    assert r.negatives == NegativeSpec(count=10, pool=50, tables="same", include_deprecated=False)
    assert r.query_template == "{question} [ANSWER] {answer}"
    assert get_builder("worldtree") is WorldTreeBuilder


def test_builder_contract():
    b = _builder()
    assert b.formats == ("worldtree-tsv",) and b.tiers() is None
    assert [c.name for c in b.columns] == COLUMNS
    assert b.stat_columns == ("relevant_facts",)


def test_not_redistributable_and_card_says_so():
    b = _builder()
    assert b.redistributable() is False
    card = "\n".join(b.card_section())
    assert "NOT redistributable" in card and "Do not distribute" in card and "Mercury" in card
    assert "| CENTRAL | 3 |" in card and "| NE | 1 |" in card and "| hard negative | 0" in card
    assert "10 per list" in card and "deprecated rows excluded" in card


@pytest.mark.parametrize(
    "keys, message",
    [
        ({"negative_grade": 1}, "negative_grade (1) must be below every role grade"),
        ({"negatives": {"count": 5, "pool": 4}}, "negatives.pool (4) must be at least negatives.count (5)"),
        ({"query_template": "{question} {label}"}, "placeholder {label} is not allowed"),
        ({"role_grades": {"CENTRAL": 0}}, "grades are whole numbers in 1..100"),
        ({"role_grades": {"CENTRAL": True}}, "role_grades.CENTRAL"),
        ({"role_grades": {"TWO WORDS": 2}}, "must be one word"),
        ({"grade_by": "votes"}, "grade_by"),
        ({"negatives": {"tables": "some"}}, "tables"),
        ({"rating_max": 0}, "rating_max"),
        ({"negativs": 3}, "unknown key 'negativs'"),
    ],
)
def test_bad_sections(tmp_path, keys, message):
    with pytest.raises(RecipeError) as e:
        _builder(tmp_path, **keys)
    assert message in str(e.value)


def test_empty_role_grades_rejected(tmp_path):
    p = tmp_path / "r.yaml"
    base = RECIPE.read_text(encoding="utf-8")
    start = base.index("role_grades:")
    end = base.index("negative_grade:")
    p.write_text(base[:start] + "role_grades: {}\n" + base[end:], encoding="utf-8")
    with pytest.raises(RecipeError, match="role_grades is empty"):
        load_recipe(p)


# --------------------------------------------------------------------------- locate and read


def test_locate_roles_and_splits():
    files = _builder().locate(FIX)
    assert [(Path(f.path).name, f.role, f.split) for f in files] == [
        ("CAUSE.tsv", "worldtree-tsv:table:CAUSE", ""),
        ("KINDOF.tsv", "worldtree-tsv:table:KINDOF", ""),
        ("PROPS.tsv", "worldtree-tsv:table:PROPS", ""),
        ("questions.train.tsv", "worldtree-tsv:questions:train", "train"),
        ("questions.dev.tsv", "worldtree-tsv:questions:validation", "validation"),
        ("wt-expert-ratings.dev.json", "worldtree-tsv:ratings:validation", "validation"),
        ("wt-expert-ratings.test.json", "worldtree-tsv:ratings:test", "test"),
    ]
    assert _builder().source_format(files) == "worldtree-tsv"


def test_locate_roles_do_not_depend_on_the_folder(tmp_path):
    shutil.copytree(FIX / "data", tmp_path / "elsewhere" / "data")
    a = [f.role for f in _builder().locate(FIX)]
    b = [f.role for f in _builder().locate(tmp_path / "elsewhere")]
    c = [f.role for f in _builder().locate(tmp_path / "elsewhere" / "data")]
    assert a == b == c


def test_locate_with_grade_by(tmp_path):
    roles = [f.role for f in _builder(tmp_path, grade_by="roles").locate(FIX)]
    assert not any(":ratings:" in r for r in roles)
    bare = tmp_path / "bare"
    shutil.copytree(FIX / "data", bare, ignore=shutil.ignore_patterns("*.json"))
    with pytest.raises(SourceFormatError, match="grade_by is 'ratings'"):
        _builder(tmp_path, grade_by="ratings").locate(bare)


def test_read_returns_records_with_the_tablestore():
    b = _builder()
    recs = b.read(b.locate(FIX))
    assert isinstance(recs, WorldTreeRecords)
    assert list(recs) == ["train", "validation", "test"] and len(recs) == 3
    assert {s: len(recs[s]) for s in recs} == {"train": 8, "validation": 4, "test": 3}
    assert recs.rated_splits == frozenset({"validation", "test"})
    assert len(recs.store.facts) == 21


def test_select_needs_the_records_of_read():
    b = _builder()
    recs = b.read(b.locate(FIX))
    with pytest.raises(InvalidArgumentError, match="WorldTreeRecords"):
        b.select(dict(recs), limit=None)


# --------------------------------------------------------------------------- grades and skips


def test_skips_auto():
    lists, skipped = _run(_builder())
    assert skipped == {
        "empty_explanation": 1,  # FX_TRAIN_3
        "unknown_role": 1,  # FX_TRAIN_4 (MAYBE)
        "fact_not_in_tablestore": 1,  # FX_TRAIN_5
        "answer_not_found": 1,  # FX_TRAIN_6 (key E, four options)
        "no_ratings": 1,  # FX_DEV_3: the dev split is rated, this question is not
        "no_rated_facts": 2,  # the test file's empty documents
        "duplicate_question": 1,  # FX_TEST_1 twice
    }
    assert list(lists) == ["FX_TRAIN_1", "FX_TRAIN_2", "FX_TRAIN_7", "FX_TRAIN_8", "FX_DEV_1", "FX_DEV_2", "FX_DEV_9"]
    assert [gl.split for gl in lists.values()] == ["train"] * 4 + ["validation"] * 3
    assert [gl.query_extra[6] for gl in lists.values()] == ["roles"] * 4 + ["ratings"] * 3


def test_role_grades_with_ne_and_neg():
    gl = _run(_builder())[0]["FX_TRAIN_1"]
    rows = _rows(gl)
    gold = {u: (r["role"], r["relevance"], r["score"]) for u, r in rows.items() if r["origin"] == "explanation"}
    assert gold == {
        "k001": ("CENTRAL", 3, 1.0),
        "p001": ("GROUNDING", 3, 1.0),
        "k002": ("LEXGLUE", 2, 2 / 3),
        "c003": ("NEG", 1, 1 / 3),
        "k006": ("NE", 1, 1 / 3),
    }
    assert all(rows[u]["in_explanation"] and rows[u]["rating"] is None for u in gold)
    for u in _negatives(gl):
        assert (rows[u]["role"], rows[u]["relevance"], rows[u]["score"], rows[u]["in_explanation"]) == (None, 0, 0.0, False)
    assert gl.query_extra == (
        "FX_TRAIN_1", "Which material is best for a cooking pot?", "(A) wool (B) copper (C) glass (D) paper",
        "copper", "B", "MAT_PROPERTIES", "roles", 5)
    assert gl.query == "Which material is best for a cooking pot? [ANSWER] copper"
    assert gl.human == [True] * len(gl.candidates)
    assert gl.vocab == frozenset(words("Which material is best for a cooking pot? copper"))
    assert gl.tiers is None


def test_negatives_exclude_deprecated_and_same_text():
    gl = _run(_builder())[0]["FX_TRAIN_1"]
    negs = _negatives(gl)
    assert len(negs) == 10
    assert "k004" not in negs  # deprecated row
    assert "p005" not in negs  # "Copper is a good conductor of heat" = gold p001's text
    assert not negs & {"k001", "p001", "k002", "c003", "k006"}
    assert all(not _rows(gl)[u]["deprecated"] for u in negs)
    assert len({t.casefold() for t in gl.candidates}) == len(gl.candidates)


def test_numeric_answer_key():
    gl = _run(_builder())[0]["FX_TRAIN_2"]
    assert gl.query == "What happens when water boils? [ANSWER] steam forms"
    assert gl.query_extra[2:5] == ("(1) it freezes (2) steam forms (3) it turns to wood (4) nothing", "steam forms", "2")
    rows = _rows(gl)
    assert (rows["x001"]["role"], rows["x001"]["relevance"], rows["x001"]["table"]) == ("ROLE", 1, "PROPS")
    assert rows["k003"]["role"] == "BACKGROUND"


def test_repeated_uid_keeps_its_best_role():
    rows = _rows(_run(_builder())[0]["FX_TRAIN_7"])
    assert (rows["c005"]["role"], rows["c005"]["relevance"]) == ("CENTRAL", 3)  # also listed as LEXGLUE
    assert rows["k005"]["text"] == "ice is a kind of solid"  # the first of the two k005 rows
    assert sum(r["origin"] == "explanation" for r in rows.values()) == 2


def test_five_options():
    gl = _run(_builder())[0]["FX_TRAIN_8"]
    assert gl.query_extra[3:5] == ("rain", "E")


def test_rating_grades():
    lists, _ = _run(_builder())
    rows = _rows(lists["FX_DEV_1"])
    rated = {u: (r["rating"], r["relevance"], r["score"], r["in_explanation"], r["role"], r["table"])
             for u, r in rows.items() if r["origin"] == "rated"}
    assert rated == {
        "c004": (6, 6, 1.0, True, "CENTRAL", "CAUSE"),  # the repeated c004 (rated 1) is ignored
        "p004": (4, 4, 4 / 6, True, "GROUNDING", "PROPS"),
        "c003": (0, 0, 0.0, False, None, "CAUSE"),
        "ext-0001": (2, 2, 2 / 6, False, None, None),  # not in the tablestore: its docText
    }
    assert rows["ext-0001"]["text"] == "waves carry energy across water"
    negs = _negatives(lists["FX_DEV_1"])
    assert negs and all(rows[u]["relevance"] == 0 and rows[u]["table"] in {"CAUSE", "PROPS"} for u in negs)
    assert lists["FX_DEV_1"].query_extra[7] == 3  # relevant facts: rated above 0


def test_ratings_only_question():
    gl = _run(_builder())[0]["FX_DEV_9"]
    assert gl.query_extra == ("FX_DEV_9", "Which material keeps hands warm?", None, "wool", None,
                              "MAT_PROPERTIES, ENERGY_HEAT", "ratings", 2)
    assert gl.query == "Which material keeps hands warm? [ANSWER] wool"
    rows = _rows(gl)
    assert (rows["p003"]["in_explanation"], rows["p001"]["in_explanation"]) == (True, False)


def test_rating_above_rating_max_is_an_error(tmp_path):
    b = _builder(tmp_path, rating_max=5)
    with pytest.raises(RecipeError, match="rated 6, above rating_max 5") as e:
        b.select(b.read(b.locate(FIX)), limit=None)
    assert e.value.key == "rating_max" and e.value.path.endswith("questions.dev.tsv") and e.value.line == 2


def test_grade_by_roles(tmp_path):
    lists, skipped = _run(_builder(tmp_path, grade_by="roles"))
    assert "test" not in {gl.split for gl in lists.values()}
    assert set(lists) == {"FX_TRAIN_1", "FX_TRAIN_2", "FX_TRAIN_7", "FX_TRAIN_8", "FX_DEV_1", "FX_DEV_2", "FX_DEV_3"}
    assert all(gl.query_extra[6] == "roles" for gl in lists.values())
    assert skipped == {"empty_explanation": 1, "unknown_role": 1, "fact_not_in_tablestore": 1, "answer_not_found": 1}


def test_grade_by_ratings(tmp_path):
    lists, skipped = _run(_builder(tmp_path, grade_by="ratings"))
    assert set(lists) == {"FX_DEV_1", "FX_DEV_2", "FX_DEV_9"}
    # every train question (but FX_TRAIN_6, whose key names no option) and FX_DEV_3 lack ratings
    assert skipped == {"no_ratings": 8, "answer_not_found": 1, "no_rated_facts": 2, "duplicate_question": 1}


def test_custom_role_grades_and_negative_grade(tmp_path):
    grades = {"CENTRAL": 5, "GROUNDING": 5, "LEXGLUE": 4, "BACKGROUND": 4, "ROLE": 3, "NEG": 3, "NE": 3}
    b = _builder(tmp_path, role_grades=grades, negative_grade=2)
    lists, skipped = _run(b)
    rows = _rows(lists["FX_TRAIN_1"])
    assert (rows["k001"]["relevance"], rows["k001"]["score"]) == (5, 1.0)
    assert (rows["k006"]["relevance"], rows["k006"]["score"]) == (3, 3 / 5)
    assert all(rows[u]["relevance"] == 2 and rows[u]["score"] == 2 / 5 for u in _negatives(lists["FX_TRAIN_1"]))
    assert lists["FX_TRAIN_1"].query_extra[7] == 5


def test_single_grade_and_too_few_candidates(tmp_path):
    lists, skipped = _run(_builder(tmp_path, negatives={"count": 0}))
    assert skipped["single_grade"] == 2  # FX_TRAIN_7 and _8: only CENTRAL/GROUNDING facts, no negatives
    assert skipped["too_few_candidates"] == 1  # FX_DEV_2: one rated fact
    assert all(not _negatives(gl) for gl in lists.values())


def test_ratings_only_records_graded_by_roles_have_no_explanation(tmp_path):
    files = _builder().locate(FIX)  # ratings files included
    b = _builder(tmp_path, grade_by="roles")
    skipped = b.select(b.read(files), limit=None).skipped
    assert skipped["no_explanation"] == 3  # FX_DEV_9, FX_TEST_1, FX_TEST_2 (and FX_TEST_1 again: duplicate)
    assert skipped["duplicate_question"] == 1


def test_empty_question_or_answer_text(tmp_path):
    shutil.copytree(FIX / "data", tmp_path / "data")
    path = tmp_path / "data" / "wt-expert-ratings.dev.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["rankingProblems"][2]["questionText"] = "  "  # FX_DEV_9
    data["rankingProblems"].append({**data["rankingProblems"][1], "qid": "FX_DEV_10", "answerText": ""})
    path.write_text(json.dumps(data), encoding="utf-8")
    _, skipped = _run(_builder(), tmp_path)
    assert skipped["empty_question"] == 1 and skipped["answer_not_found"] == 2


def test_output_does_not_depend_on_hash_seed():
    code = (
        "import json, sys\n"
        "from gradebench.datasets import get_builder\n"
        "from gradebench.recipes.loader import load_recipe\n"
        "from gradebench.hashing import sha256_json\n"
        "b = get_builder('worldtree')(load_recipe('worldtree'))\n"
        f"sel = b.select(b.read(b.locate({str(FIX)!r})), limit=None)\n"
        "ls = b.make_lists(sel.units)\n"
        "print(sha256_json([[l.query_id, l.candidate_ids, l.relevance, l.scores, list(l.query_extra),"
        " [list(c) for c in l.candidate_extra]] for l in ls]))\n"
    )
    out = {
        subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed},
                       capture_output=True, text=True, check=True, cwd=REPO).stdout
        for seed in ("1", "2")
    }
    assert len(out) == 1


def test_limit_reads_the_first_records_per_split():
    lists, skipped = _run(_builder(), limit=1)
    assert list(lists) == ["FX_TRAIN_1", "FX_DEV_1"]
    assert skipped == {"no_rated_facts": 1}


# --------------------------------------------------------------------------- negatives


def test_negatives_respect_count_and_tables(tmp_path):
    lists, _ = _run(_builder(tmp_path, negatives={"count": 2, "pool": 3}))
    for gl in lists.values():
        assert len(_negatives(gl)) == 2
    rows = _rows(lists["FX_DEV_2"])  # relevant fact k007 is in KINDOF only
    assert {rows[u]["table"] for u in _negatives(lists["FX_DEV_2"])} == {"KINDOF"}
    everywhere, _ = _run(_builder(tmp_path, negatives={"count": 30, "pool": 30, "tables": "all"}))
    assert {_rows(everywhere["FX_DEV_2"])[u]["table"] for u in _negatives(everywhere["FX_DEV_2"])} == {
        "KINDOF", "CAUSE", "PROPS"}


def test_include_deprecated(tmp_path):
    lists, _ = _run(_builder(tmp_path, negatives={"count": 30, "pool": 30, "include_deprecated": True}))
    assert "k004" in _negatives(lists["FX_TRAIN_1"])
    assert _rows(lists["FX_TRAIN_1"])["k004"]["deprecated"] is True


def _sampler(count: int, pool: int, tables: str = "same") -> NegativeSampler:
    rows = [
        Fact("a1", "A", "the red fox jumps", False, 2),
        Fact("a2", "A", "a red fox", False, 3),
        Fact("a3", "A", "the blue whale swims in the deep cold ocean far away", False, 4),
        Fact("a4", "A", "the red fox jumps over the lazy dog near the old farm house", False, 5),
        Fact("a5", "A", "A red fox", False, 6),
        Fact("b1", "B", "red fox", False, 2),
    ]
    return NegativeSampler(build_tablestore(rows), NegativeSpec(count=count, pool=pool, tables=tables), "ns")


def test_sampler_pool_is_the_closest_facts():
    s = _sampler(count=2, pool=2)
    # "red fox" in a2 (3 words) beats a1 (4 words) and a4 (13): overlap per sqrt(length)
    assert [f.uid for f in s.sample("q", {"red", "fox"}, {"A"}, set(), set())] == ["a2", "a1"]
    # a5 repeats a2's text (case-folded): it never joins the pool twice
    assert [f.uid for f in _sampler(3, 3).sample("q", {"red", "fox"}, {"A"}, set(), set())] == ["a2", "a1", "a4"]
    # excluded by uid and by text
    assert [f.uid for f in s.sample("q", {"red", "fox"}, {"A"}, {"a2"}, {"the red fox jumps"})] == ["a5", "a4"]
    # other tables only with tables: all
    assert "b1" in {f.uid for f in _sampler(2, 2, "all").sample("q", {"red", "fox"}, {"A"}, set(), set())}


def test_sampler_draw_is_content_seeded():
    s = _sampler(count=1, pool=3)
    pool = ["a2", "a1", "a4"]
    for qid in ("q1", "q2", "q3", "q4"):
        want = min(pool, key=lambda u: key_digest("ns", "negative", qid, u))
        assert [f.uid for f in s.sample(qid, {"red", "fox"}, {"A"}, set(), set())] == [want]


def test_sampler_fills_from_non_overlapping_facts():
    s = _sampler(count=5, pool=5)
    got = [f.uid for f in s.sample("q", {"whale"}, {"A"}, set(), set())]
    assert got[0] == "a3" and sorted(got) == ["a1", "a2", "a3", "a4"]  # a5 repeats a2's text
    assert _sampler(count=0, pool=1).sample("q", {"red"}, {"A"}, set(), set()) == []


# --------------------------------------------------------------------------- ids, order, determinism


def test_ids_and_shuffled_order():
    r = load_recipe("worldtree")
    for gl in _run(_builder())[0].values():
        assert gl.query_id == short_id("query", gl.query_extra[0], gl.query)
        assert gl.candidate_ids == [short_id("candidate", gl.query_id, u) for u in gl.candidate_extra[0]]
        digests = [key_digest(r.seed_namespace, "candidate", gl.query_id, c) for c in gl.candidate_ids]
        assert digests == sorted(digests)
        assert all(0.0 <= s <= 1.0 for s in gl.scores) and len(set(gl.relevance)) >= 2
    rel = _run(_builder())[0]["FX_TRAIN_1"].relevance
    assert rel != sorted(rel, reverse=True)


def test_unshuffled_order_is_explanation_then_negatives(tmp_path):
    gl = _run(_builder(tmp_path, shuffle_candidates=False))[0]["FX_TRAIN_1"]
    assert gl.candidate_extra[0][:5] == ["k001", "p001", "k002", "c003", "k006"]
    assert set(gl.candidate_extra[5][5:]) == {"negative"}


def test_deterministic_and_independent_of_other_questions():
    a, _ = _run(_builder())
    b, _ = _run(_builder())
    assert a == b
    alone, _ = _run(_builder(), limit=1)
    assert alone["FX_TRAIN_1"] == a["FX_TRAIN_1"]


def test_seed_namespace_changes_the_draw(tmp_path):
    a = _run(_builder(tmp_path, negatives={"count": 3, "pool": 8}))[0]
    b = _run(_builder(tmp_path, seed_namespace="other", negatives={"count": 3, "pool": 8}))[0]
    assert any(_negatives(a[q]) != _negatives(b[q]) for q in a)


# --------------------------------------------------------------------------- end to end


def test_build_end_to_end(tmp_path):
    from gradebench.experiments.build import build

    res = build(RECIPE, source=FIX, out=tmp_path / "out", progress=False, workers=1, validate=True)
    assert res.validation["success"] is True
    assert res.splits == {"train": {"queries": 4, "candidates": 52}, "validation": {"queries": 3, "candidates": 25}}
    assert res.skipped["duplicate_question"] == 1 and res.skipped["no_rated_facts"] == 2
    manifest = json.loads((Path(res.path) / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["redistributable"] is False
    assert manifest["builder"] == {"name": "worldtree", "version": 1}
    assert "NOT redistributable" in (Path(res.path) / "README.md").read_text(encoding="utf-8")
    table = pq.read_table(Path(res.path) / res.files["train"][0])
    assert table.column_names[-len(COLUMNS):] == COLUMNS
    assert table.num_rows == 52
    again = build(RECIPE, source=FIX, out=tmp_path / "out", progress=False, workers=1)
    assert again.cached and again.fingerprint == res.fingerprint


# --------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def real():
    return run_builder(_builder(), shared_data("worldtree"))


@pytest.mark.integration
def test_real_counts(real):
    sel, lists = real
    assert sel.skipped == {"no_rated_facts": 1664, "duplicate_question": 6, "empty_explanation": 1}
    assert Counter(gl.split for gl in lists) == {"train": 2206, "validation": 496}
    assert sum(len(gl.candidates) for gl in lists) == 42491
    assert Counter(g for gl in lists for g in gl.relevance) == {0: 26996, 1: 395, 2: 4029, 3: 11071}
    assert Counter(o for gl in lists for o in gl.candidate_extra[5]) == {"negative": 26996, "explanation": 15495}
    assert Counter(r for gl in lists for r in gl.candidate_extra[2] if r) == {
        "CENTRAL": 6851, "GROUNDING": 4220, "LEXGLUE": 3716, "BACKGROUND": 313, "ROLE": 282, "NEG": 76, "NE": 37}
    assert Counter(sum(o == "negative" for o in gl.candidate_extra[5]) for gl in lists) == {10: 2695, 6: 4, 9: 1, 8: 1, 5: 1}
    assert all(len(set(gl.relevance)) >= 2 and all(0 <= s <= 1 for s in gl.scores) for gl in lists)
    assert len({gl.query_id for gl in lists}) == len(lists)


@pytest.mark.integration
def test_real_pinned_lists(real):
    _, lists = real
    by = {gl.query_extra[0]: gl for gl in lists}
    first = lists[0]
    assert (first.query_extra[0], first.query_id, lists[-1].query_extra[0]) == (
        "NAEP_2005_4_S13+13", "4ac8575e0f91d157", "NYSEDREGENTS_2014_8_8")
    rows = _rows(first)
    assert {u for u, r in rows.items() if r["origin"] == "explanation"} == {
        "73fa-1e22-26a8-1a7c", "5be6-58b4-ec52-40b2", "e565-87e6-6f00-1598", "d257-69b5-a1b9-f7e7",
        "0da9-2984-f126-bcad", "825b-a440-75bd-3001", "e473-7297-61c1-56fa", "af26-8083-b908-7d3b",
        "dbe8-e776-f804-99a0", "395b-4954-311f-4749"}
    assert _negatives(first) == {
        "1d13-2365-305d-1e1b", "0285-a0b4-8c82-afce", "e044-428c-b438-7117", "b75d-4ff4-3225-6e84",
        "d19a-a5c4-d04a-440b", "b559-79c0-1ae8-96ef", "2c23-dc4d-c618-2570", "49f5-727d-92b5-03aa",
        "0b7b-cf23-e64f-4200", "c697-5766-b5be-4c74"}
    assert rows["73fa-1e22-26a8-1a7c"]["text"] == (
        "the Earth rotating on its axis causes the Sun to appear to move across the sky during the day")
    assert (rows["73fa-1e22-26a8-1a7c"]["role"], rows["73fa-1e22-26a8-1a7c"]["relevance"]) == ("CENTRAL", 3)
    # two explanation facts with the same text: one candidate
    dup = _rows(by["Mercury_7013090"])
    assert sum(r["origin"] == "explanation" for r in dup.values()) == 6
    assert "2986-02f4-97e5-ba79" in dup and "8424-e5dd-a2c7-77a3" not in dup
    # an explanation may use a deprecated row; negatives never do
    dep = _rows(by["Mercury_SC_416424"])["b4d1-4fcf-d14e-cb3b"]
    assert (dep["deprecated"], dep["table"], dep["origin"]) == (True, "COUPLEDRELATIONSHIP", "explanation")
    numeric = by["NYSEDREGENTS_2009_8_3"]
    assert numeric.query_extra[4] == "3" and numeric.query_extra[2].startswith("(1) ")


@pytest.mark.integration
def test_real_build_end_to_end(tmp_path):
    from gradebench.experiments.build import build

    res = build(RECIPE, source=shared_data("worldtree"), out=tmp_path, progress=False)
    assert res.splits == {"train": {"queries": 2206, "candidates": 34740}, "validation": {"queries": 496, "candidates": 7751}}
    manifest = json.loads((Path(res.path) / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["redistributable"] is False
    probes = res.stats["all"]["shortcut_probes"]
    assert 0.45 < probes["length"] < 0.55 and probes["human_authorship"] == 0.5
