"""The word tokenizers: one for build statistics and Algorithm 1, one for lexical features.

Two conventions, each fixed by what was built with it (changing either changes benchmark bytes
or scorer outputs):

- :func:`words`: lower-cased ASCII ``[a-z0-9]+`` tokens. Every build statistic, shortcut probe
  and the core paper's Algorithm 1 (seeds/000, App. B) count these.
- :func:`lexical_words`: lower-cased Unicode ``\\w+`` tokens. Every lexical feature a scorer
  reads (overlap, BM25, LambdaMART's features) and the BM25 matching of contrast candidates.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9]+")
_LEXICAL = re.compile(r"\w+")


def _spaces_but(keep: str) -> bytes:
    """A ``bytes.translate`` table: the bytes of ``keep`` kept, every other byte a space."""
    kept = frozenset(keep.encode())
    return bytes(c if c in kept else 0x20 for c in range(256))


_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
#: for ASCII text: after ``lower``, a word character stays and anything else is a space, so the
#: words are what ``split`` then finds (three passes in C: about 40% less time a build's texts)
_WORD_TABLE = _spaces_but(_ALNUM)
_LEXICAL_TABLE = _spaces_but(_ALNUM + "_")  # \w on ASCII text


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens: ``"They're 2 cats."`` -> ``['they', 're', '2', 'cats']``."""
    if text.isascii():
        return text.lower().encode().translate(_WORD_TABLE).decode().split()
    return _WORD.findall(text.lower())


def lexical_words(text: str) -> list[str]:
    """Lower-cased ``\\w+`` tokens (Unicode-aware): ``"Café's"`` -> ``['café', 's']``."""
    if text.isascii():
        return text.lower().encode().translate(_LEXICAL_TABLE).decode().split()
    return _LEXICAL.findall(text.lower())
