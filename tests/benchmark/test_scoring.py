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
