"""The δ-NLI builders (``dnli``: five tiers; ``dnli-natural``: human updates ranked by type) on
hand-written fixtures, recipe validation, and (marked integration) the real data with pinned counts."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from gradebench.datasets import get_builder
from gradebench.datasets.base import GradedList
from gradebench.datasets.dnli.builder import DNLIBuilder, DNLINaturalBuilder
from gradebench.errors import RecipeError
from gradebench.recipes.loader import load_recipe
from gradebench.words import words
from tests.builders._util import lists_and_skips, recipe_builder
from tests.conftest import FIXTURES, shared_data
from tests.input_files import write_jsonl

DNLI = FIXTURES / "dnli"


_builder = recipe_builder


def _lists(recipe: str | Path, source: Path, limit: int | None = None):
    return lists_and_skips(recipe_builder(recipe), source, limit)


def _variant(tmp_path: Path, base: str, body: str) -> Path:
    p = tmp_path / f"{base}-variant.yaml"
    p.write_text(f"extends: {base}\nname: {base}-variant\n{body}", encoding="utf-8")
    return p


def _by_query(lists: list[GradedList]) -> dict[str, GradedList]:
    return {gl.query: gl for gl in lists}


def _snli(premise: str, hypothesis: str, update: str, kind: str, **over) -> dict:
    row = {
        "DataSource": "SNLI", "AssignmentIdAnon": 1, "WorkerIdAnon": 2, "Premise": premise, "Hypothesis": hypothesis,
        "SNLIPairId": "9.jpg#0r1n", "Update": update, "UpdateType": kind, "UpdateTypeImpossible": False,
        "UpdateTypeImpossibleReason": "{}",
    }
    row.update(over)
    return row


# --------------------------------------------------------------------------- recipes


def test_recipes_load_with_their_builders():
    r = load_recipe("dnli")
    assert get_builder("dnli") is DNLIBuilder and r.source.family == "dnli"
    assert r.labels == ["strengthener", "weakener"]
    assert r.subsets == ["atomic", "snli", "social"]
    assert [t.name for t in r.tiers] == ["gold", "good", "fair", "poor", "nonsense"]
    assert r.source.default == "path" and r.source.formats == ["dnli-jsonl"]
    n = load_recipe("dnli-natural")
    assert get_builder("dnli-natural") is DNLINaturalBuilder and n.source.family == "dnli-natural"
    assert (n.prefer, n.subsets) == ("strengthener", ["atomic", "snli", "social"])
    assert DNLINaturalBuilder(n).tiers() is None
    assert DNLIBuilder(r).tiers() == [("gold", 4), ("good", 3), ("fair", 2), ("poor", 1), ("nonsense", 0)]


@pytest.mark.parametrize(
    ("base", "body", "key"),
    [
        ("dnli", "subsets: [snli, snli]\n", "subsets"),
        ("dnli", "subsets: []\n", "subsets"),
        ("dnli", "subsets: [mnli]\n", "subsets"),
        ("dnli-natural", "subsets: [atomic, atomic]\n", "subsets"),
        ("dnli-natural", "prefer: neutral\n", "prefer"),
        ("dnli-natural", 'query_template: "premise: {premise} {update}"\n', "query_template"),
        ("dnli-natural", 'query_template: "{premise!r}"\n', "query_template"),
        ("dnli-natural", "tiers: []\n", "tiers"),
    ],
)
def test_bad_recipe_keys(tmp_path, base, body, key):
    with pytest.raises(RecipeError) as e:
        load_recipe(_variant(tmp_path, base, body))
    assert e.value.key is not None and e.value.key.startswith(key)


def test_columns_match_list_extras():
    for recipe in ("dnli", "dnli-natural"):
        b = _builder(recipe)
        lists, _ = _lists(recipe, DNLI)
        n_query = sum(c.level == "query" for c in b.columns)
        n_cand = sum(c.level == "candidate" for c in b.columns)
        for gl in lists:
            assert len(gl.query_extra) == n_query
            assert len(gl.candidate_extra) == n_cand
            assert all(len(col) == len(gl.candidates) for col in gl.candidate_extra)


# --------------------------------------------------------------------------- dnli (five tiers)


def test_dnli_fixture_counts_and_skips():
    lists, skipped = _lists("dnli", DNLI)
    assert len(lists) == 16
    assert Counter(gl.split for gl in lists) == {"validation": 14, "test": 2}
    assert skipped == {"impossible_update": 5, "duplicate_update": 1}
    assert len({gl.query_id for gl in lists}) == 16
    assert all(len(gl.candidates) == 5 for gl in lists)


def test_dnli_gold_is_the_human_update():
    lists, _ = _lists("dnli", DNLI)
    [gl] = [gl for gl in lists if gl.query_extra[3] == "snli/dev.jsonl:2"]
    assert gl.query == "premise: A dog runs across a snowy field. hypothesis: The dog is playing. update: weakener"
    tiers = dict(zip(gl.tiers, gl.candidates))
    assert tiers["gold"] == "The dog is fleeing from a wolf."
    assert gl.human == [t == "gold" for t in gl.tiers]
    assert dict(zip(gl.tiers, gl.relevance)) == {"gold": 4, "good": 3, "fair": 2, "poor": 1, "nonsense": 0}
    premise, hypothesis, label, source_id, row = gl.query_extra
    assert (premise, hypothesis, label, source_id, row) == (
        "A dog runs across a snowy field.", "The dog is playing.", "weakener", "snli/dev.jsonl:2", 1
    )
    csrc, template_id, origin = gl.candidate_extra
    by_tier = {t: (s, tid, o) for t, s, tid, o in zip(gl.tiers, csrc, template_id, origin)}
    assert by_tier["gold"] == ("snli/dev.jsonl:2", None, "human")
    assert by_tier["good"][1].startswith("good/weakener/")
    assert by_tier["poor"][1].startswith("poor/strengthener/")  # claims the WRONG update type
    assert "The dog is playing." in tiers["good"]
    assert all(0.0 <= s <= 1.0 for s in gl.scores)
    assert gl.vocab == frozenset(words("A dog runs across a snowy field. The dog is playing."))


def test_dnli_poor_always_claims_the_other_type():
    lists, _ = _lists("dnli", DNLI)
    for gl in lists:
        label = gl.query_extra[2]
        other = "weakener" if label == "strengthener" else "strengthener"
        tid = gl.candidate_extra[1][gl.tiers.index("poor")]
        assert tid.startswith(f"poor/{other}/")
        assert gl.query.endswith(f"update: {label}")


def test_dnli_same_pair_same_type_gives_several_queries():
    lists, _ = _lists("dnli", DNLI)
    q = "premise: A dog runs across a snowy field. hypothesis: The dog is playing. update: strengthener"
    same = [gl for gl in lists if gl.query == q]
    golds = sorted(gl.candidates[gl.tiers.index("gold")] for gl in same)
    # the duplicate "tail is wagging" row is skipped
    assert golds == ["The dog is chasing a ball its owner threw.", "The dog's tail is wagging."]


def test_dnli_social_uses_the_situation_as_premise():
    lists, _ = _lists("dnli", DNLI / "defeasible-social")
    assert len(lists) == 3
    assert lists[0].query == (
        "premise: asking my sister to help pay for our father's funeral "
        "hypothesis: You should help your family with funeral expenses. update: strengthener"
    )


def test_dnli_subsets_and_limit(tmp_path):
    only_snli = _variant(tmp_path, "dnli", "subsets: [snli]\n")
    lists, skipped = _lists(only_snli, DNLI)
    assert {gl.query_extra[3].split("/")[0] for gl in lists} == {"snli"}
    assert len(lists) == 8 and skipped == {"impossible_update": 1, "duplicate_update": 1}
    lists, skipped = _lists("dnli", DNLI, limit=4)  # the first 4 rows of each split (atomic first)
    assert Counter(gl.split for gl in lists) == {"validation": 3, "test": 2}
    assert skipped == {"impossible_update": 1}


def test_dnli_unknown_update_type_and_empty_update(tmp_path):
    rows = [
        _snli("A cat sleeps.", "The cat is tired.", "It ran all day.", "strengthener"),
        _snli("A cat sleeps.", "The cat is tired.", "It just woke up.", "neutralizer"),
        _snli("A cat sleeps.", "The cat is tired.", "", "weakener"),
    ]
    lists, skipped = _lists("dnli", write_jsonl(tmp_path / "defeasible-snli" / "dev.jsonl", rows))
    assert len(lists) == 1
    assert skipped == {"unknown_label": 1, "empty_explanation": 1}


def test_dnli_is_deterministic():
    a, _ = _lists("dnli", DNLI)
    b, _ = _lists("dnli", DNLI)
    assert a == b


# --------------------------------------------------------------------------- dnli-natural


def test_natural_fixture_counts_and_skips():
    lists, skipped = _lists("dnli-natural", DNLI)
    assert Counter(gl.split for gl in lists) == {"validation": 4, "test": 1}
    assert sum(len(gl.candidates) for gl in lists) == 12
    assert skipped == {
        "impossible_update": 5,
        "duplicate_update": 1,
        "pair_no_weakener": 3,
        "pair_no_update": 1,
    }
    assert [gl.query_extra[2] for gl in lists] == ["atomic", "atomic", "snli", "social", "snli"]


def test_natural_list_contents():
    lists, _ = _lists("dnli-natural", DNLI)
    gl = _by_query(lists)[
        "premise: A dog runs across a snowy field. hypothesis: The dog is playing. update: strengthener"
    ]
    graded = dict(zip(gl.candidates, gl.relevance))
    assert graded == {
        "The dog is chasing a ball its owner threw.": 1,
        "The dog's tail is wagging.": 1,
        "The dog is fleeing from a wolf.": 0,
        "The dog is running to get help.": 0,
    }
    assert gl.scores == [float(g) for g in gl.relevance]
    assert gl.human == [True] * 4
    assert gl.tiers is None
    assert len(set(gl.candidate_ids)) == 4 and all(len(c) == 16 for c in gl.candidate_ids)
    assert gl.query_extra == ("A dog runs across a snowy field.", "The dog is playing.", "snli", "1000001.jpg#0r1n")
    types, source_ids, workers = gl.candidate_extra
    assert dict(zip(gl.candidates, types))["The dog is running to get help."] == "weakener"
    assert dict(zip(gl.candidates, source_ids)) == {
        "The dog is chasing a ball its owner threw.": "snli/dev.jsonl:1",
        "The dog is fleeing from a wolf.": "snli/dev.jsonl:2",
        "The dog's tail is wagging.": "snli/dev.jsonl:3",
        "The dog is running to get help.": "snli/dev.jsonl:4",
    }
    assert dict(zip(gl.candidates, workers))["The dog's tail is wagging."] == 12
    assert gl.vocab == frozenset(words("A dog runs across a snowy field. The dog is playing."))


def test_natural_prefer_weakener_flips_grades(tmp_path):
    strong, _ = _lists("dnli-natural", DNLI)
    weak, _ = _lists(_variant(tmp_path, "dnli-natural", "prefer: weakener\n"), DNLI)
    assert [gl.query_id for gl in weak] == [gl.query_id for gl in strong]
    for s, w in zip(strong, weak):
        assert dict(zip(w.candidates, w.relevance)) == {c: 1 - g for c, g in zip(s.candidates, s.relevance)}
        assert w.query.endswith("update: weakener")


def test_natural_candidate_order(tmp_path):
    """Shuffled by content digest (not by grade, not by file order); file order when shuffle is off."""
    rows = [_snli("A cat sleeps.", "The cat is tired.", f"Update number {i}.", k)
            for i, k in enumerate(["strengthener", "weakener"] * 4)]
    fwd, _ = _lists("dnli-natural", write_jsonl(tmp_path / "a" / "defeasible-snli" / "dev.jsonl", rows))
    rev, _ = _lists("dnli-natural", write_jsonl(tmp_path / "b" / "defeasible-snli" / "dev.jsonl", rows[::-1]))
    assert fwd[0].candidates == rev[0].candidates
    assert fwd[0].candidates != [r["Update"] for r in rows]
    plain = _variant(tmp_path, "dnli-natural", "shuffle_candidates: false\n")
    lists, _ = _lists(plain, tmp_path / "a")
    assert lists[0].candidates == [r["Update"] for r in rows]


def test_natural_grouping_and_row_skips(tmp_path):
    p, h = "A cat sleeps.", "The cat is tired."
    dev = [
        _snli(p, h, "It ran all day.", "strengthener"),
        _snli(" A cat  sleeps.", "The cat is  tired. ", "It is a kitten.", "weakener"),  # same pair, spacing
        _snli(p, h, "It  ran all day.", "strengthener"),  # duplicate after whitespace normalisation
        _snli(p, h, "It is old.", "strengthener"),
        _snli(p, h, "It is old.", "weakener"),  # the same text as both types: every copy dropped
        _snli(p, h, "It is stuffed.", "neutralizer"),
        _snli(p, h, "", "weakener"),  # possible but empty
        _snli(p, "", "It yawns.", "strengthener"),
        _snli("", h, "It yawns.", "strengthener"),
    ]
    test = [_snli(p, h, "It purrs.", "strengthener"), _snli(p, h, "It hisses.", "weakener")]
    write_jsonl(tmp_path / "defeasible-snli" / "dev.jsonl", dev)
    write_jsonl(tmp_path / "defeasible-snli" / "test.jsonl", test)
    lists, skipped = _lists("dnli-natural", tmp_path)
    assert len(lists) == 1 and lists[0].split == "validation"
    assert sorted(lists[0].candidates) == ["It is a kitten.", "It ran all day."]
    assert skipped == {
        "duplicate_update": 1,
        "conflicting_update": 2,
        "unknown_update_type": 1,
        "empty_update": 1,
        "empty_hypothesis": 1,
        "empty_premise": 1,
        "pair_no_update": 2,  # the pairs with an empty hypothesis / premise
        "duplicate_query": 1,  # the same pair again in test
    }


def test_natural_limit_counts_rows_per_split():
    lists, skipped = _lists("dnli-natural", DNLI, limit=2)
    # validation: the first two atomic rows (one pair); test: the two snli test rows
    assert [(gl.split, len(gl.candidates)) for gl in lists] == [("validation", 2), ("test", 2)]
    assert skipped == {}


def test_natural_card_says_no_authorship_shortcut():
    text = "\n".join(_builder("dnli-natural").card_section())
    assert "no authorship shortcut" in text
    assert "Known flaw" in "\n".join(_builder("dnli").card_section())


# --------------------------------------------------------------------------- end to end (engine)


@pytest.mark.parametrize(("recipe", "queries", "candidates"), [("dnli", 16, 80), ("dnli-natural", 5, 12)])
def test_build_end_to_end(tmp_path, recipe, queries, candidates):
    from gradebench.experiments.build import build

    src = tmp_path / "src"
    shutil.copytree(DNLI, src)
    res = build(recipe, source=src, out=tmp_path / "out", progress=False)
    assert sum(s["queries"] for s in res.splits.values()) == queries
    assert sum(s["candidates"] for s in res.splits.values()) == candidates
    table = pq.read_table(Path(res.path) / res.files["validation"][0])
    names = [c.name for c in _builder(recipe).columns]
    assert table.schema.names[-len(names):] == names
    again = build(recipe, source=DNLI, out=tmp_path / "out", progress=False)
    assert again.fingerprint == res.fingerprint and again.cached  # roles ignore where the files lie


# --------------------------------------------------------------------------- real data


@pytest.mark.integration
def test_real_dnli_counts():
    lists, skipped = _lists("dnli", shared_data("dnli"))
    assert len(lists) == 11595
    assert Counter(gl.split for gl in lists) == {"validation": 5624, "test": 5971}
    assert skipped == {"impossible_update": 1224, "duplicate_update": 5}
    assert Counter(gl.query_extra[2] for gl in lists) == {"strengthener": 5852, "weakener": 5743}
    assert all(len(gl.candidates) == 5 and sum(gl.human) == 1 for gl in lists)


@pytest.mark.integration
def test_real_natural_counts_and_pinned_list():
    lists, skipped = _lists("dnli-natural", shared_data("dnli"))
    assert len(lists) == 4343
    assert Counter(gl.split for gl in lists) == {"validation": 2094, "test": 2249}
    assert Counter(gl.query_extra[2] for gl in lists) == {"atomic": 3947, "snli": 396}
    assert sum(len(gl.candidates) for gl in lists) == 11508
    assert skipped == {
        "impossible_update": 1224,
        "duplicate_update": 5,
        "pair_no_update": 451,
        "pair_no_weakener": 83,
        "pair_no_strengthener": 3,
    }
    assert Counter(g for gl in lists for g in gl.relevance) == {1: 5768, 0: 5740}
    assert Counter(len(gl.candidates) for gl in lists) == {
        2: 3953, 10: 284, 8: 48, 9: 19, 6: 14, 4: 12, 7: 6, 5: 6, 3: 1
    }
    first = lists[0]
    assert first.query == (
        "premise: PersonX is best friends hypothesis: Before, PersonX needed meet someone update: strengthener"
    )
    assert dict(zip(first.candidates, first.relevance)) == {
        "PersonX has recently moved far from anyone PersonX knows.": 1,
        "PersonX has been best friends since grade school.": 0,
    }
    [snli] = [gl for gl in lists if gl.query_extra[3] == "4530729176.jpg#3r1e"]
    assert snli.split == "validation"
    assert dict(zip(snli.candidates, snli.relevance)) == {
        "The man is wearing pajamas and is chuckling.": 0,
        "The man is serious and is surrounded by workers.": 1,
    }
    [big] = [gl for gl in lists if gl.query_extra[3] == "4530729176.jpg#3r1n"]
    assert big.query_extra[1] == "An old man is working at his home workshop."
    assert sorted(big.relevance) == [0] * 5 + [1] * 5
    assert sorted(big.candidate_extra[1]) == sorted(f"snli/dev.jsonl:{n}" for n in range(1119, 1129))
