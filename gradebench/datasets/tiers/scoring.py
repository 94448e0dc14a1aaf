"""Algorithm 1 of the core paper (seeds/000, App. B): the heuristic score of a candidate.

    s ~ U(min_tier, max_tier)                      (content-seeded, see :func:`base_score`)
    s += label_match_bonus   if a word for the TRUE label y appears in e
    s += keyword_bonus       if a reasoning keyword appears in e
    s += overlap_bonus       if |W(e) ∩ (W(p) ∪ W(h))| / |W(p) ∪ W(h)| > overlap_threshold
    s -= short_penalty       if tier ∈ short_tiers and |words(e)| < short_min_words
    s -= gibberish_penalty   if tier ∉ gibberish_exempt_tiers and a gibberish word appears in e
    return clip(s, 0, 1)

``W(x)`` is the set of lower-cased alphanumeric word tokens of ``x`` (:func:`words`);
``|words(e)|`` counts tokens with repetition. All functions here are pure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gradebench.datasets.tiers.spec import AdjustmentsSpec
from gradebench.words import words

__all__ = ["Adjuster", "base_score", "words"]


@dataclass(frozen=True)
class Adjuster:
    """Algorithm 1's adjustments compiled for fast repeated use (sets instead of lists)."""

    label_words: dict[str, frozenset[str]]
    keywords: frozenset[str]
    gibberish: frozenset[str]
    short_tiers: frozenset[str]
    exempt_tiers: frozenset[str]
    label_match_bonus: float
    keyword_bonus: float
    overlap_bonus: float
    overlap_threshold: float
    short_penalty: float
    short_min_words: int
    gibberish_penalty: float

    @classmethod
    def from_spec(cls, spec: AdjustmentsSpec) -> Adjuster:
        return cls(
            label_words={k: frozenset(v) for k, v in spec.label_words.items()},
            keywords=frozenset(spec.reasoning_keywords),
            gibberish=frozenset(spec.gibberish_words),
            short_tiers=frozenset(spec.short_tiers),
            exempt_tiers=frozenset(spec.gibberish_exempt_tiers),
            label_match_bonus=spec.label_match_bonus,
            keyword_bonus=spec.keyword_bonus,
            overlap_bonus=spec.overlap_bonus,
            overlap_threshold=spec.overlap_threshold,
            short_penalty=spec.short_penalty,
            short_min_words=spec.short_min_words,
            gibberish_penalty=spec.gibberish_penalty,
        )

    def flags(
        self, cand_words: list[str], label: str, tier: str, query_vocab: frozenset[str] | set[str]
    ) -> tuple[bool, bool, bool, bool, bool]:
        """Which adjustments fire: (label_match, keyword, overlap, short, gibberish)."""
        vocab = frozenset(cand_words)
        overlap = len(vocab & query_vocab) / len(query_vocab) if query_vocab else 0.0
        return self.flags_of(vocab, len(cand_words), overlap, label, tier)

    def flags_of(
        self, word_set: frozenset[str] | set[str], n_words: int, overlap: float, label: str, tier: str
    ) -> tuple[bool, bool, bool, bool, bool]:
        """:meth:`flags` from a candidate's word set, word count and query overlap, already measured."""
        label_match = not word_set.isdisjoint(self.label_words.get(label, ()))
        keyword = not word_set.isdisjoint(self.keywords)
        short = tier in self.short_tiers and n_words < self.short_min_words
        gibberish = tier not in self.exempt_tiers and not word_set.isdisjoint(self.gibberish)
        return label_match, keyword, overlap > self.overlap_threshold, short, gibberish

    def flag_bits(self, word_set: frozenset[str] | set[str], n_words: int, label_words: frozenset[str] | tuple,
                  tier: str) -> int:
        """:meth:`flags_of`'s query-independent flags as bits (label word 1, keyword 2, short 4,
        gibberish 8), from the true label's words ``label_words``: what :meth:`adjust_all` reads."""
        mask, shorter = self.tier_rule(tier)
        return self.word_bits(word_set, label_words) & mask | (4 if n_words < shorter else 0)

    def word_bits(self, word_set: frozenset[str] | set[str], label_words: frozenset[str] | tuple) -> int:
        """:meth:`flag_bits` but the two that depend on the tier: label word 1, keyword 2, and
        gibberish 8 as if the tier were not exempt (:meth:`tier_rule` says what to keep)."""
        return ((0 if word_set.isdisjoint(label_words) else 1) | (0 if word_set.isdisjoint(self.keywords) else 2)
                | (0 if word_set.isdisjoint(self.gibberish) else 8))

    def tier_rule(self, tier: str) -> tuple[int, float]:
        """What :meth:`flag_bits` makes of :meth:`word_bits` in ``tier``: ``(mask, shorter)``, the
        bits kept (gibberish dropped where the tier is exempt) and the word count a candidate is
        short below (-inf where the tier has no short penalty), so that ``flag_bits(...) ==
        word_bits(...) & mask | (4 if n_words < shorter else 0)``. The word bits of a union of two
        word sets are the two sets' bits or-ed (a set meets another where either part does)."""
        mask = ~8 if tier in self.exempt_tiers else ~0
        return mask, (self.short_min_words if tier in self.short_tiers else float("-inf"))

    def adjust_all(self, base: np.ndarray, bits: np.ndarray, overlap: np.ndarray) -> np.ndarray:
        """:meth:`adjust` of many candidates at once, bit for bit: the same additions in the same
        order (adding 0.0 changes nothing), then the clip. ``bits`` from :meth:`flag_bits`,
        ``overlap`` each candidate's query overlap."""
        s = base + np.where(bits & 1 != 0, self.label_match_bonus, 0.0)
        s = s + np.where(bits & 2 != 0, self.keyword_bonus, 0.0)
        s = s + np.where(overlap > self.overlap_threshold, self.overlap_bonus, 0.0)
        s = s - np.where(bits & 4 != 0, self.short_penalty, 0.0)
        s = s - np.where(bits & 8 != 0, self.gibberish_penalty, 0.0)
        return np.minimum(1.0, np.maximum(0.0, s))

    def adjust(self, base: float, flags: tuple[bool, bool, bool, bool, bool]) -> float:
        """Apply the fired adjustments to ``base`` and clip to [0, 1]."""
        label_match, keyword, overlap, short, gibberish = flags
        s = base
        if label_match:
            s += self.label_match_bonus
        if keyword:
            s += self.keyword_bonus
        if overlap:
            s += self.overlap_bonus
        if short:
            s -= self.short_penalty
        if gibberish:
            s -= self.gibberish_penalty
        return min(1.0, max(0.0, s))

    def score(
        self, base: float, cand_words: list[str], label: str, tier: str, query_vocab: frozenset[str] | set[str]
    ) -> float:
        """Algorithm 1 from a base draw: adjustments then clip."""
        return self.adjust(base, self.flags(cand_words, label, tier, query_vocab))


def base_score(u: float, lo: float, hi: float) -> float:
    """Map a uniform draw ``u`` in [0, 1) onto the tier range: ``lo + u * (hi - lo)`` (also element
    by element, on numpy arrays)."""
    return lo + u * (hi - lo)
