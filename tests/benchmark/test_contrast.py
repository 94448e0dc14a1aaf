"""esnli-contrast: balanced negation flips, BM25-matched distractors, grade order, real-data figures."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from gradebench.datasets import get_builder
from gradebench.datasets.tiers.contrast import (
    RULES,
    Bm25Index,
    apply_flip,
    balanced_flips,
    bm25_lend,
    flip_options,
    single_clause,
)
from gradebench.errors import RecipeError
from gradebench.recipes import load_recipe
from gradebench.scorers.text import bm25_matrix, tokenize_all
from gradebench.datasets.records import NLIExample
from gradebench.words import words
from tests.conftest import shared_data

NEGATIONS = {"not", "t", "cannot", "no", "never"}
#: pinned on the e-SNLI dev release, resplit 80/10/10 (see recipes/esnli-contrast.yaml)
FINGERPRINT = "5c629ab2d51c14b5"
FLIPPED = 1688


def _negations(text: str) -> int:
    return sum(w in NEGATIONS for w in words(text))


def _flips_of(text: str) -> set[str]:
    return {apply_flip(text, o) for o in flip_options(text)}


# -- flip rules --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a man is a person .", "a man is not a person ."),
        ("boys are not dogs .", "boys are dogs ."),
        ("the cat can not fly .", "the cat can fly ."),
        ("the cat ca n't fly .", "the cat can fly ."),
        ("The cat can't fly.", "The cat can fly."),
        ("a tent isn't a house .", "a tent is a house ."),
        ("a girl is not necessarily a sister .", "a girl is a sister ."),
        ("running does n't mean racing .", "running means racing ."),
        ("just because a dog runs does n't mean it is happy .", "a dog runs means it is happy ."),
        ("Just because a dog runs, doesn't mean it is happy.", "A dog runs means it is happy."),
        ("sitting implies resting .", "sitting does not imply resting ."),
        ("you do not have to be old to knit .", "you have to be old to knit ."),
    ],
)
def test_flip_rules_reverse_one_site(text, expected):
    assert expected in _flips_of(text)
    assert all(abs(_negations(f) - _negations(text)) == 1 for f in _flips_of(text))


def test_flip_rules_never_stack_or_split_negations():
    # "can't" is not a plain "can"; "does n't" inside "just because" goes with the construction
    assert not any("not't" in f or "can not'" in f for f in _flips_of("the cat can't fly ."))
    jb = _flips_of("just because a dog runs does n't mean it is happy .")
    assert "just because a dog runs means it is happy ." not in jb
    assert "the boy does not do not have to run ." not in _flips_of("the boy does not have to run .")
    assert "a man is not not a woman ." not in _flips_of("a man is not a woman .")
    assert _flips_of("two dogs play .") == set()


def test_single_clause():
    assert single_clause("a man is a person .")
    assert single_clause("Mr smith is a man.")
    assert not single_clause("a man is a person ;  a dog is an animal .")
    assert not single_clause("A man is a person. A dog is an animal.")


def test_only_one_site_texts_are_flipped():
    # two editable predicates: flipping one would leave the other claim standing
    items = [("a", "the boy ca n't sit and he ca n't run ."), ("b", "the boy can sit ."), ("c", "a cat can not fly .")]
    out = balanced_flips(items, "test")
    assert 0 not in out and out == {1: "the boy can not sit .", 2: "a cat can fly ."}


def _flip_items() -> list[tuple[str, str]]:
    texts = [
        "a man is a person .", "boys are not dogs .", "a cat is an animal .", "a tree is not a car .",
        "the cat can not fly .", "the dog can swim .", "running does n't mean racing .",
        "sitting means resting .", "a girl is a child .", "the sea is not dry .",
        "a man is a person ;  a dog is an animal .", "two dogs play .", "the bird can sing .",
        "a horse is not a cow .",
    ]
    return [(f"src:{i}", t) for i, t in enumerate(texts)]


def test_balanced_flips_are_balanced_and_single_clause():
    items = _flip_items()
    out = balanced_flips(items, "test")
    assert out and all(single_clause(items[k][1]) for k in out)
    # every rule adds exactly as many negations as it removes: the flipped texts carry as many
    # negations in total as their sources
    assert sum(_negations(out[k]) for k in out) == sum(_negations(items[k][1]) for k in out)
    for k, flipped in out.items():
        assert flipped in _flips_of(items[k][1])
    assert 10 not in out and 11 not in out  # two clauses; nothing to flip


def test_balanced_flips_are_content_seeded():
    items = _flip_items()
    out = balanced_flips(items, "test")
    assert balanced_flips(items, "test") == out
    shuffled = items[:]
    random.Random(3).shuffle(shuffled)
    again = balanced_flips(shuffled, "test")
    assert {shuffled[k][0]: v for k, v in again.items()} == {items[k][0]: v for k, v in out.items()}
    other = balanced_flips(items, "another-namespace")
    assert len(other) % 2 == 0 and len(out) % 2 == 0  # pairs of add/remove per rule
    assert len(RULES) > 20


# -- BM25 matching -----------------------------------------------------------------------------


def test_bm25_index_matches_the_bm25_scorer():
    docs = ["a man plays a red guitar .", "dogs run in the park .", "a man is a person .", "the guitar is red"]
    queries = ["premise: a man plays guitar hypothesis: a person plays music", "dogs in a park"]
    index = Bm25Index(docs)
    got = index.scores(queries)
    for qi in range(2):  # bm25_matrix takes its statistics from the candidates: the same documents
        want = bm25_matrix(tokenize_all(queries), tokenize_all(docs), np.full(len(docs), qi, dtype=np.int64))
        np.testing.assert_allclose(got[qi], want, rtol=1e-12)
    np.testing.assert_allclose(index.score_texts(queries[:1], docs[:1]), got[0, :1], rtol=1e-12)


def test_bm25_lend_respects_cap_eligibility_and_closeness():
    docs = ["red guitar", "a red guitar here", "green guitar", "blue sky", "red red guitar", "guitar"]
    index = Bm25Index(docs)
    eligible = np.array([True, True, True, False, True, True])
    asks = [(f"q{i}", "a red guitar", "a red guitar", eligible) for i in range(4)]
    out = bm25_lend(index, asks, count=2, cap=1, ns="t")
    lent = [d for found in out.values() for d in found]
    assert len(lent) == len(set(lent))  # cap 1: no document twice
    assert 3 not in lent  # never an ineligible one
    assert out == bm25_lend(index, list(reversed(asks)), count=2, cap=1, ns="t")
    # the first query served gets the two documents closest to the own text's BM25
    s = index.scores(["a red guitar"])[0]
    target = index.score_texts(["a red guitar"], ["a red guitar"])[0]
    best = sorted((abs(s[d] - target), d) for d in range(len(docs)) if eligible[d])[:2]
    assert any(set(found) == {d for _, d in best} for found in out.values())
    assert sum(len(f) for f in out.values()) == 5  # five eligible documents, each lent once


# -- the recipe on invented pairs ---------------------------------------------------------------

_SCENES = [
    ("A man plays a guitar on a stage .", [
        ("A person plays music .", "entailment", "a man is a person and a guitar makes music ."),
        ("A man plays a famous song .", "neutral", "the song is not necessarily famous ."),
        ("A man sleeps in bed .", "contradiction", "a man can not sleep and play guitar at once ."),
    ]),
    ("Two dogs run across a wet field .", [
        ("Animals are outside .", "entailment", "dogs are animals and a field is outside ."),
        ("The dogs are chasing a ball .", "neutral", "running does n't mean chasing a ball ."),
        ("The dogs sleep on a couch .", "contradiction", "dogs can not run and sleep at once ."),
    ]),
    ("A woman cooks soup in a kitchen .", [
        ("A woman makes food .", "entailment", "soup is food ."),
        ("A woman cooks for her family .", "neutral", "cooking does not imply a family ."),
        ("A woman swims in a lake .", "contradiction", "a kitchen is not a lake ."),
    ]),
    ("A boy rides a red bike down a hill .", [
        ("A child is on a bike .", "entailment", "a boy is a child ."),
        ("A boy races his friends .", "neutral", "riding a bike is not racing friends ."),
        ("A boy walks up a hill .", "contradiction", "the boy can not ride and walk at once ."),
    ]),
    ("Three girls sing in a choir .", [
        ("Girls are singing .", "entailment", "girls singing in a choir are singing ."),
        ("The girls sing in a church .", "neutral", "a choir is not necessarily in a church ."),
        ("The girls are silent .", "contradiction", "singing girls are not silent ."),
    ]),
    ("An old man reads a newspaper on a bench .", [
        ("A man is reading .", "entailment", "an old man reading is a man reading ."),
        ("A man reads the sports page .", "neutral", "a newspaper is not necessarily the sports page ."),
        ("A man is running a race .", "contradiction", "a man can not sit on a bench and run a race ."),
    ]),
]


def _examples(shuffle: int | None = None) -> dict[str, list[NLIExample]]:
    rows = [(p, h, lab, e) for p, hyps in _SCENES for h, lab, e in hyps]
    if shuffle is not None:
        random.Random(shuffle).shuffle(rows)
    return {"validation": [
        NLIExample(split="validation", row=i, source_id=f"pair:{p}|{h}", premise=p, hypothesis=h, label=lab,
                   explanations=(e, "", ""))
        for i, (p, h, lab, e) in enumerate(rows)
    ]}


def _lists(shuffle: int | None = None):
    recipe = load_recipe("esnli-contrast")
    builder = get_builder(recipe.source.family)(recipe)
    sel = builder.select(_examples(shuffle), limit=None)
    return sel, {g.query_id: g for g in builder.make_lists(sel.units)}


def test_recipe_grades_in_documented_order():
    recipe = load_recipe("esnli-contrast")
    assert [(t.name, t.relevance, t.candidates) for t in recipe.tiers] == [
        ("own", 3, "explanation"), ("sibling", 2, "sibling_explanation"),
        ("unrelated", 1, "unrelated_explanation"), ("flipped", 0, "negation_flip"),
    ]
    assert recipe.tiers[2].match == "bm25" and recipe.scoring.mode == "grade"


def test_lists_on_invented_pairs():
    sel, lists = _lists()
    assert len(lists) == 18 and not sel.skipped
    label_of = {(p, e): lab for p, hyps in _SCENES for _, lab, e in hyps}
    flipped_seen = 0
    for q in sel.units:
        g = lists[q.query_id]
        by_tier: dict[str, list[int]] = {}
        for k, t in enumerate(g.tiers):
            by_tier.setdefault(t, []).append(k)
        assert Counter(g.tiers)["own"] == 1 and Counter(g.tiers)["sibling"] == 2
        assert Counter(g.tiers)["unrelated"] == 1 and Counter(g.tiers)["flipped"] <= 1
        own = g.candidates[by_tier["own"][0]]
        assert own == q.example.explanations[0]
        # unrelated: another premise AND another label
        text = g.candidates[by_tier["unrelated"][0]]
        (premise, label), = [(p, lab) for (p, e), lab in label_of.items() if e == text]
        assert premise != q.example.premise and label != q.example.label
        for k in by_tier.get("flipped", []):
            flipped_seen += 1
            assert g.candidates[k] in _flips_of(own) and g.human[k] is False
            assert g.candidate_extra[2][k] == "edited"
        # scores are the grades (relevance / 3); relevance follows the tier
        for k, t in enumerate(g.tiers):
            assert g.relevance[k] == {"own": 3, "sibling": 2, "unrelated": 1, "flipped": 0}[t]
            assert g.scores[k] == pytest.approx(g.relevance[k] / 3)
    assert flipped_seen >= 2 and flipped_seen % 2 == 0


def test_lists_do_not_depend_on_row_order():
    _, a = _lists()
    _, b = _lists(shuffle=7)
    assert a.keys() == b.keys()
    for qid in a:
        assert a[qid].candidates == b[qid].candidates and a[qid].tiers == b[qid].tiers


def test_unrelated_each_lent_once():
    _, lists = _lists()
    lent = [g.candidates[k] for g in lists.values() for k, t in enumerate(g.tiers) if t == "unrelated"]
    assert len(lent) == len(set(lent)) == 18


def test_large_splits_lend_within_blocks(monkeypatch):
    import gradebench.datasets.tiers.select as select_module

    monkeypatch.setattr(select_module, "BM25_BLOCK", 9)  # 18 explanations -> two content-hashed blocks
    sel, a = _lists()
    _, b = _lists(shuffle=5)
    assert a.keys() == b.keys() and all(a[q].candidates == b[q].candidates for q in a)
    assert len(a) + sel.skipped["no_unrelated_explanation"] == 18 and len(a) >= 12
    labels = {e: (p, lab) for p, hyps in _SCENES for _, lab, e in hyps}
    for q in sel.units:
        g = a[q.query_id]
        for k, t in enumerate(g.tiers):
            if t == "unrelated":
                assert labels[g.candidates[k]] != (q.example.premise, q.example.label)
                assert labels[g.candidates[k]][0] != q.example.premise
                assert labels[g.candidates[k]][1] != q.example.label


def _with_tier(change: dict) -> dict:
    import yaml

    from gradebench.recipes import recipes_dir

    data = yaml.safe_load((recipes_dir() / "esnli-contrast.yaml").read_text())
    data["tiers"][3].update(change)
    return data


@pytest.mark.parametrize(
    ("tier", "message"),
    [
        ({"count": 2}, "a negation_flip tier has one candidate"),
        ({"match": "bm25"}, "match applies only to unrelated_explanation tiers"),
    ],
)
def test_bad_contrast_tiers_refused(tmp_path, tier, message):
    import yaml

    p = tmp_path / "r.yaml"
    p.write_text(yaml.safe_dump(_with_tier(tier), sort_keys=False))
    with pytest.raises(RecipeError, match=message):
        load_recipe(p)


def test_old_recipes_keep_their_dump():
    # no new recipe field: the resolved dumps (and so the fingerprints) of existing recipes stay
    dump = load_recipe("esnli-human").model_dump(mode="json")
    assert set(dump["tiers"][0]) == {
        "name", "relevance", "score_range", "candidates", "count", "explanation", "label", "templates",
        "match", "match_pool", "description",
    }


# -- real data ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    from gradebench.experiments.build import build

    src = shared_data("esnli", "eSNLI")
    return build("esnli-contrast", source=src, resplit=(80, 10, 10), out=tmp_path_factory.mktemp("contrast"),
                 progress=False)


@pytest.mark.integration
def test_real_counts(real):
    assert real.splits == {
        "test": {"queries": 789, "candidates": 3316},
        "train": {"queries": 6783, "candidates": 28480},
        "validation": {"queries": 860, "candidates": 3620},
    }
    assert real.skipped == {"no_sibling_explanation": 1410}
    assert real.fingerprint.startswith(FINGERPRINT)


@pytest.mark.integration
def test_real_tiers(real):
    import pyarrow.parquet as pq

    files = [f"{real.path}/{f}" for fs in real.files.values() for f in fs]
    t = pq.read_table(files, columns=["tier", "relevance", "origin"]).to_pylist()
    assert Counter(r["tier"] for r in t) == {"own": 8432, "sibling": 16864, "unrelated": 8432, "flipped": FLIPPED}
    assert {(r["tier"], r["relevance"], r["origin"]) for r in t} == {
        ("own", 3, "human"), ("sibling", 2, "human"), ("unrelated", 1, "human"), ("flipped", 0, "edited"),
    }


@pytest.mark.integration
def test_real_records(real):
    import pyarrow.parquet as pq

    rows = pq.read_table([f"{real.path}/{f}" for f in real.files["validation"]]).to_pylist()
    q = {(r["tier"], r["candidate_source_id"], r["candidate"]) for r in rows if r["query_id"] == "4d1d8c569aeac11b"}
    assert q == {
        ("own", "s1.dev:64", "a group is not a single boy"),
        ("flipped", "s1.dev:64", "a group is a single boy"),
        ("sibling", "s1.dev:65", "glancing at a strange trick does not infer the onlookers are impressed ."),
        ("sibling", "s1.dev:66", "people watch a person doing a strange trick ."),
        ("unrelated", "s1.dev:7137", "a group of officers does not imply that there are 10 ;  officers doing a "
                                     "demonstration does not imply that they are performing , or located outside ."),
    }


@pytest.mark.integration
def test_real_validity_targets(real):
    v = real.validity
    pa = {k: v[k]["pairwise_agreement"] for k in ("query_blind", "bm25", "lexical_ceiling_dense")}
    assert pa["query_blind"] <= 0.55  # a text-only probe is at chance
    assert pa["bm25"] <= 0.70 and pa["lexical_ceiling_dense"] <= 0.75  # esnli-human: 0.891 and 0.921
    assert pa["lexical_ceiling_dense"] >= 0.6  # own > sibling > unrelated still carries lexical signal
