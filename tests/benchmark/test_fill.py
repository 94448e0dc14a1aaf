"""Filled templates get the words of their parts, joined at the boundaries: always ``words(text)``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gradebench.datasets.tiers.fill import Part, Template, join_words
from gradebench.words import words

# characters that stress the rules: word characters, separators, case changes that leave ASCII
# (Kelvin sign, dotted capital I), the Greek final sigma, and quotes
ALPHABET = st.sampled_from(list("aZ9 _.\"'-") + ["\u212a", "\u0130", "\u03a3", "\u00e9", "\t"])
TEXT = st.text(ALPHABET, max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT, max_size=6))
def test_joined_parts_have_the_words_of_the_whole(pieces):
    assert join_words([Part.of(p) for p in pieces]) == words("".join(pieces))


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT, TEXT, TEXT)
def test_filled_template_equals_format(a, b, premise, hypothesis):
    text = f'{a}"{{premise}}"{b}{{hypothesis}}{{label}}{{{{x}}}}'
    values = {"premise": Part.of(premise), "hypothesis": Part.of(hypothesis), "label": Part.of("neutral")}
    t = Template(text)
    filled, got = t.fill(values)
    assert filled == text.format(premise=premise, hypothesis=hypothesis, label="neutral")
    assert got == words(filled)
    assert t.fields == {"premise", "hypothesis", "label"}
