"""Algorithm 1: each adjustment fires exactly when it should; ranges before adjustment; clip."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradebench.datasets.tiers.scoring import Adjuster, base_score, words
from gradebench.recipes import load_recipe

ADJ = Adjuster.from_spec(load_recipe("esnli").scoring.adjustments)
VOCAB = frozenset(words("A man plays a guitar on stage") + words("A musician performs"))
NONE = (False, False, False, False, False)


def flags(text, label="entailment", tier="fair", vocab=VOCAB):
    return ADJ.flags(words(text), label, tier, vocab)


def test_words_tokenizes_lowercase_alnum():
    assert words("They're 2 Cats, OK?") == ["they", "re", "2", "cats", "ok"]
    assert words("") == []


def test_no_adjustment_fires_on_neutral_text():
    assert flags("the sky was blue yesterday") == NONE


@pytest.mark.parametrize(
    ("text", "label", "fires"),
    [
        ("this is an entailment", "entailment", True),
        ("the premise entails it", "entailment", True),
        ("this is an entailment", "contradiction", False),  # only the TRUE label's words count
        ("a contradiction here", "contradiction", True),
        ("it is neutral", "neutral", True),
        ("entailmentish words", "entailment", False),  # whole words only
    ],
)
def test_label_match(text, label, fires):
    assert flags(text, label=label)[0] is fires


@pytest.mark.parametrize(("text", "fires"), [("yes because of it", True), ("therefore yes", True), ("yes", False)])
def test_reasoning_keyword(text, fires):
    assert flags(text)[1] is fires


def test_overlap_threshold_is_strict():
    vocab = frozenset(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"])
    assert ADJ.flags(["a", "b", "c"], "neutral", "fair", vocab)[2] is False  # 0.3 is not > 0.3
    assert ADJ.flags(["a", "b", "c", "d"], "neutral", "fair", vocab)[2] is True
    assert ADJ.flags(["a"], "neutral", "fair", frozenset())[2] is False  # empty query vocab


def test_short_penalty_only_for_gold_and_good():
    short = "a man plays"  # 3 words < 15
    long = " ".join(["word"] * 15)
    assert flags(short, tier="gold")[3] and flags(short, tier="good")[3]
    assert not flags(short, tier="fair")[3] and not flags(short, tier="nonsense")[3]
    assert not flags(long, tier="gold")[3]
    assert flags(" ".join(["word"] * 14), tier="gold")[3]


def test_gibberish_penalty_exempts_nonsense():
    assert flags("qwerty stuff", tier="gold")[4] and flags("qwerty stuff", tier="poor")[4]
    assert not flags("qwerty stuff", tier="nonsense")[4]
    assert not flags("normal stuff", tier="gold")[4]


def test_adjust_sums_and_clips():
    assert ADJ.adjust(0.5, NONE) == 0.5
    assert ADJ.adjust(0.5, (True, True, True, False, False)) == pytest.approx(0.60)
    assert ADJ.adjust(0.5, (False, False, False, True, True)) == pytest.approx(0.10)
    assert ADJ.adjust(0.99, (True, True, True, False, False)) == 1.0
    assert ADJ.adjust(0.05, (False, False, False, True, True)) == 0.0


def test_paper_worked_example():
    # Table 2: gold explanation for the guitar example, label entailment, tier gold, base 0.8
    text = "Playing guitar on stage is a form of musical performance."
    f = flags(text, tier="gold")
    # {a, guitar, on, stage} / 8 query words = 0.5 > 0.3 -> overlap; 10 words < 15 -> short
    assert f == (False, False, True, True, False)
    assert ADJ.score(0.8, words(text), "entailment", "gold", VOCAB) == pytest.approx(0.72)


@given(st.floats(0, 1, exclude_max=True), st.floats(0, 1), st.floats(0, 1))
def test_base_score_respects_range(u, a, b):
    lo, hi = min(a, b), max(a, b)
    s = base_score(u, lo, hi)
    assert lo <= s <= hi


@given(st.floats(-2, 3), st.tuples(*[st.booleans()] * 5))
def test_adjusted_score_always_clipped(base, f):
    assert 0.0 <= ADJ.adjust(base, f) <= 1.0


@pytest.mark.parametrize("shuffle", [True, False], ids=["shuffled", "in-tier-order"])
@pytest.mark.parametrize("recipe", ["esnli", "esnli-contrast-v2", "esnli-fixed", "mnli"])
def test_batch_rows_equal_the_scalar_algorithm(recipe, shuffle):
    """The batch path (numpy draws, adjustments, ids, order) gives, bit for bit, what the scalar
    definitions give row by row: sha256 of (namespace, "candidate", query id, tier, slot, text),
    base_score of its first 8 bytes, Adjuster.score on the text's own words, id = bytes 8-15,
    rows sorted by bytes 16-23 when the recipe shuffles; queries with different numbers of
    borrowed rows, and premises shared by several queries."""
    from gradebench.datasets.tiers.candidates import CandidateBuilder, Query
    from gradebench.datasets.records import NLIExample
    from gradebench.hashing import key_digest, uniform_from_digest

    from gradebench.recipes.loader import with_overrides

    r = with_overrides(load_recipe(recipe), {"shuffle_candidates": shuffle})
    cb = CandidateBuilder(r)
    labels = list(r.labels)
    queries = []
    for i in range(24):
        label = labels[i % len(labels)]
        ex = NLIExample(premise=f"A man {i // 3} plays a guitar on stage .", hypothesis=f"Someone performs {i} music",
                        label=label, explanations=(f"A man playing guitar is performing music {i}", "", ""),
                        source_id=f"id{i}", row=i, split="train")
        # 0, 1 or 2 borrowed rows a tier: the batch path collects a tier at a time and reorders
        borrowed = {t.name: tuple((f"borrowed text {i} {t.name} {k}", f"b{i}.{k}") for k in range((i + j) % 3))
                    for j, t in enumerate(r.tiers)
                    if t.candidates in ("sibling_explanation", "unrelated_explanation", "negation_flip")}
        queries.append(Query(ex, f"{i:016x}", "train", borrowed))
    batch = cb.candidate_columns(queries)
    start = 0
    for q, n in zip(queries, batch.counts):
        vocab = frozenset(words(q.example.premise.strip())) | frozenset(words(q.example.hypothesis.strip()))
        expected = []
        for tier in r.tiers:
            for slot, (text, _tid, _src, _origin) in enumerate(cb.texts(q, tier)):
                d = key_digest(r.seed_namespace, "candidate", q.query_id, tier.name, str(slot), text)
                lo, hi = tier.score_range
                mode = r.scoring.mode
                if mode == "grade":
                    score = tier.relevance / max(t.relevance for t in r.tiers)
                else:
                    score = base_score(uniform_from_digest(d), lo, hi)
                    if mode == "algorithm1" and r.scoring.adjustments is not None:
                        adj = Adjuster.from_spec(r.scoring.adjustments)
                        score = adj.score(score, words(text), q.example.label, tier.name, vocab)
                expected.append((d[16:24] if r.shuffle_candidates else b"", d[8:16].hex(), text, score, tier.name))
        if r.shuffle_candidates:
            expected.sort(key=lambda row: row[0])
        got = list(zip(batch.ids.to_pylist()[start:start + n], batch.texts[start:start + n],
                       batch.scores[start:start + n].tolist(), batch.tiers[start:start + n]))
        assert got == [row[1:] for row in expected]
        start += n
    assert start == len(batch.texts) > 0
