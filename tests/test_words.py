"""The tokenizers' ASCII path (a byte table, then split) gives the regex's tokens on any text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from gradebench.words import lexical_words, words

# every ASCII character (controls and the separators ``str.split`` knows included), and some
# whose lower case leaves or enters ASCII (Kelvin sign, dotted capital I), so both paths run
TEXT = st.text(st.characters(max_codepoint=127) | st.sampled_from(["\u212a", "\u0130", "\u00e9", "\u03a3", "\u2028"]),
               max_size=40)


@settings(max_examples=500, deadline=None)
@given(TEXT)
def test_words_are_the_regex_tokens(text):
    assert words(text) == re.findall(r"[a-z0-9]+", text.lower())
    assert lexical_words(text) == re.findall(r"\w+", text.lower())


def test_examples():
    assert words("They're 2 Cats,\x1fOK_go?") == ["they", "re", "2", "cats", "ok", "go"]
    assert lexical_words("They're 2 Cats,\x1fOK_go?") == ["they", "re", "2", "cats", "ok_go"]
    assert words("\u212aelvin") == ["kelvin"] and lexical_words("Café's") == ["café", "s"]
    assert words("") == lexical_words("") == []
