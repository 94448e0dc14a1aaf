"""Filled templates and their :func:`~gradebench.words.words`, without tokenizing the filled text.

A template such as ``'... because "{premise}" already states what "{hypothesis}" claims.'`` is
filled once per query, and Algorithm 1 and the build stats need the words of the result. The
words of a concatenation are the words of its parts, except that a word cut by a part
boundary (a part that ends in a word character followed by one that starts with one) is
joined back. ``str.lower`` maps characters one at a time, apart from the Greek final sigma,
whose two forms are both outside ``[a-z0-9]``, so lower-casing the parts one by one gives the
same ASCII words as lower-casing the whole. The literal parts are tokenized once per
template, the values once per query (:class:`Part`), so a filled template costs one string
join instead of a regex pass over the whole text; ``tests/benchmark/test_fill.py`` checks the
words against ``words(text)``.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from gradebench.words import words

#: the characters of :func:`words`' tokens (``[a-z0-9]``)
_WORD_CHARS = frozenset(string.ascii_lowercase + string.digits)


class Part(NamedTuple):
    """A piece of text with its words and whether it starts/ends inside a word (a named tuple: one
    is made per hypothesis of a build, and a tuple is made several times faster than a frozen
    dataclass)."""

    text: str
    words: tuple[str, ...]
    starts_in_word: bool
    ends_in_word: bool

    @classmethod
    def of(cls, text: str) -> Part:
        low = text.lower()
        return cls(text, tuple(words(text)), low[:1] in _WORD_CHARS, low[-1:] in _WORD_CHARS)


def join_words(parts: Sequence[Part]) -> list[str]:
    """``words("".join(p.text for p in parts))``, from the parts' own words."""
    out: list[str] = []
    glue = False  # the text so far ends inside a word
    for p in parts:
        if not p.text:
            continue
        ws = p.words
        if glue and p.starts_in_word and out and ws:
            out[-1] += ws[0]
            out.extend(ws[1:])
        else:
            out.extend(ws)
        glue = p.ends_in_word
    return out


class Template:
    """A ``str.format`` template split into literal :class:`Part` s and placeholder names."""

    __slots__ = ("text", "pieces", "fields", "quotes", "concat")

    def __init__(self, text: str) -> None:
        self.text = text
        pieces: list[Part | str] = []
        for literal, name, _spec, _conv in string.Formatter().parse(text):
            if literal:
                pieces.append(Part.of(literal))
            if name is not None:
                pieces.append(name)
        self.pieces = tuple(pieces)
        #: the placeholder names it uses
        self.fields = frozenset(p for p in pieces if isinstance(p, str))
        #: whether it quotes the premise or the hypothesis (its text then differs per query)
        self.quotes = "premise" in self.fields or "hypothesis" in self.fields
        #: whether the filled text's words are its pieces' words one after the other, whatever the
        #: values: every placeholder sits between the text's ends and literals that do not end or
        #: start inside a word, so no word can run across a boundary (:func:`join_words` glues none)
        self.concat = all(
            (i == 0 or (isinstance(pieces[i - 1], Part) and not pieces[i - 1].ends_in_word))
            and (i == len(pieces) - 1 or (isinstance(pieces[i + 1], Part) and not pieces[i + 1].starts_in_word))
            for i, p in enumerate(pieces) if isinstance(p, str)
        )

    def fill(self, values: Mapping[str, Part]) -> tuple[str, list[str]]:
        """The filled text (``text.format(**values' texts)``) and its words."""
        parts = [values[p] if isinstance(p, str) else p for p in self.pieces]
        return "".join(p.text for p in parts), join_words(parts)
