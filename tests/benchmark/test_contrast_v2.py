"""esnli-contrast-v2 (issue 18): premise-grouped splits, same-label distractors, flips per label."""

from __future__ import annotations

from collections import Counter

import pytest

from gradebench.datasets import get_builder
from gradebench.datasets.records import NLIExample
from gradebench.datasets.tiers.candidates import premise_key
from gradebench.datasets.tiers.contrast import apply_flip, balanced_flips, flip_options
from gradebench.recipes import load_recipe
from tests.benchmark.test_contrast import _SCENES, _examples, _negations
from tests.conftest import shared_data

#: pinned on the e-SNLI dev release (the recipe's resplit 80/10/10, by premise)
FINGERPRINT = "5d4bc47091dd"
NEW_TIER_KEYS = {"borrow_label", "flip_balance", "flip_explanations", "own_from_flip", "keep_unflipped"}


#: a scene whose explanations give each label a plain and a negated `is` site, so flips balance per label
_EXTRA = ("A man sits on a green bench .", [
    ("A man sits .", "entailment", "a man on a bench is not standing ."),
    ("The man waits for a bus .", "neutral", "sitting is waiting for something ."),
    ("A man stands .", "contradiction", "the man is sitting ."),
])
SCENES = _SCENES + [_EXTRA]


def _v2_examples(shuffle: int | None = None) -> dict[str, list[NLIExample]]:
    import random

    rows = [(p, h, lab, e) for p, hyps in SCENES for h, lab, e in hyps]
    if shuffle is not None:
        random.Random(shuffle).shuffle(rows)
    return {"validation": [
        NLIExample(split="validation", row=i, source_id=f"pair:{p}|{h}", premise=p, hypothesis=h, label=lab,
                   explanations=(e, "", ""))
        for i, (p, h, lab, e) in enumerate(rows)
    ]}


def _lists(shuffle: int | None = None, recipe: str = "esnli-contrast-v2"):
    r = load_recipe(recipe)
    builder = get_builder(r.source.family)(r)
    sel = builder.select(_v2_examples(shuffle), limit=None)
    return sel, {g.query_id: g for g in builder.make_lists(sel.units)}


def test_v2_recipe_and_v1_dump():
    v2 = load_recipe("esnli-contrast-v2")
    assert (v2.version, v2.resplit_by, v2.resplit) == (2, "premise", (80, 10, 10))
    assert [(t.name, t.relevance) for t in v2.tiers] == [("own", 3), ("sibling", 2), ("unrelated", 1), ("flipped", 0)]
    assert v2.tiers[2].borrow_label == "same" and v2.tiers[3].own_from_flip
    # the keys added for v2 stay out of every other recipe's dump (their fingerprints do not move)
    v1 = load_recipe("esnli-contrast").model_dump(mode="json")
    assert "resplit_by" not in v1 and not any(NEW_TIER_KEYS & set(t) for t in v1["tiers"])
    dumped = v2.model_dump(mode="json")
    assert dumped["resplit_by"] == "premise" and dumped["tiers"][2]["borrow_label"] == "same"


def test_v2_lists_on_invented_pairs():
    sel, lists = _lists()
    label_of = {(p, e): lab for p, hyps in SCENES for _, lab, e in hyps}
    flipped = 0
    for q in sel.units:
        g = lists[q.query_id]
        by = {t: [g.candidates[k] for k, tt in enumerate(g.tiers) if tt == t] for t in set(g.tiers)}
        (unrelated,) = by["unrelated"]
        (premise, label), = [(p, lab) for (p, e), lab in label_of.items() if e == unrelated]
        assert premise != q.example.premise and label == q.example.label  # the SAME label
        assert all(label_of[(q.example.premise, s)] != q.example.label for s in by["sibling"])
        for text in by.get("flipped", []):
            flipped += 1
            (own,) = by["own"]
            assert text in {apply_flip(own, o) for o in flip_options(own)}  # own = the flip's source
    assert flipped >= 4 and flipped % 2 == 0  # per label: as many negations added as removed


def test_v2_lists_do_not_depend_on_row_order():
    _, a = _lists()
    _, b = _lists(shuffle=11)
    assert a.keys() == b.keys() and all(a[q].candidates == b[q].candidates for q in a)


def test_flips_balanced_within_each_group():
    texts = ["a man is a person .", "a cat is an animal .", "a tree is not a car .", "the sea is not dry .",
             "a dog is a pet .", "a boy is not a girl ."]
    items = [(f"s{i}", t) for i, t in enumerate(texts)]
    groups = ["entailment", "entailment", "entailment", "contradiction", "contradiction", "contradiction"]
    out = balanced_flips(items, "t", groups=groups)
    for g in set(groups):
        ks = [k for k in out if groups[k] == g]
        assert sum(_negations(out[k]) for k in ks) == sum(_negations(items[k][1]) for k in ks)
    assert out  # each group has a site in each direction


def test_regroup_by_premise_keeps_premises_whole():
    r = load_recipe("esnli-contrast-v2")
    builder = get_builder(r.source.family)(r)
    rows = _examples()["validation"]
    rows += [NLIExample(split="validation", row=100 + i, source_id=f"x{i}", premise=ex.premise.upper(),
                        hypothesis=ex.hypothesis, label=ex.label, explanations=ex.explanations)
             for i, ex in enumerate(rows[:3])]
    split_of = {premise_key(ex.premise): ("train" if i % 2 else "test") for i, ex in enumerate(rows)}
    out = builder.regroup({"validation": rows}, lambda key: split_of[key.removeprefix("premise:")])
    seen: dict[str, set[str]] = {}
    for split, exs in out.items():
        for ex in exs:
            seen.setdefault(premise_key(ex.premise), set()).add(split)
    assert all(len(s) == 1 for s in seen.values()) and sum(map(len, out.values())) == len(rows)
    v1 = load_recipe("esnli-contrast")
    assert get_builder(v1.source.family)(v1).regroup({"validation": rows}, lambda k: "train") is None


# -- real data ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    from gradebench.experiments.build import build

    return build("esnli-contrast-v2", source=shared_data("esnli", "eSNLI"), out=tmp_path_factory.mktemp("v2"),
                 progress=False)


@pytest.mark.integration
def test_real_v2_splits_never_share_a_source_pair(real):
    import pyarrow.parquet as pq

    assert real.fingerprint.startswith(FINGERPRINT)
    assert {s: v["queries"] for s, v in real.splits.items()} == {"test": 842, "train": 6789, "validation": 801}
    used: dict[str, set[str]] = {}
    premises: dict[str, set[str]] = {}
    for split, files in real.files.items():
        t = pq.read_table([f"{real.path}/{f}" for f in files], columns=["candidate_source_id", "premise"])
        used[split] = set(t.column("candidate_source_id").to_pylist())
        premises[split] = {premise_key(p) for p in t.column("premise").to_pylist()}
    # every candidate of a split is the text of a pair of that split, and no premise crosses splits
    assert not (used["test"] & used["train"]) and not (used["validation"] & used["train"])
    assert not (premises["test"] & premises["train"]) and not (premises["validation"] & premises["train"])
    tiers = Counter(pq.read_table([f"{real.path}/{f}" for fs in real.files.values() for f in fs],
                                  columns=["tier"]).column("tier").to_pylist())
    assert tiers["own"] == 8432 and tiers["flipped"] > 1900


@pytest.mark.integration
def test_real_v2_validity(real):
    v = real.validity
    pa = {k: v[k]["pairwise_agreement"] for k in ("query_blind", "label_aware", "lexical_ceiling_strong")}
    assert pa["query_blind"] <= 0.55 and pa["label_aware"] <= 0.60  # issue 18's probe targets hold
    assert pa["lexical_ceiling_strong"] <= 0.87  # v1: 0.89; issue 18's 0.80 is not reached (recipe comments)
