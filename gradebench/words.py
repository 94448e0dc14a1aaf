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


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens: ``"They're 2 cats."`` -> ``['they', 're', '2', 'cats']``."""
    return _WORD.findall(text.lower())


def lexical_words(text: str) -> list[str]:
    """Lower-cased ``\\w+`` tokens (Unicode-aware): ``"Café's"`` -> ``['café', 's']``."""
    return _LEXICAL.findall(text.lower())
