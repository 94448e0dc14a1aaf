"""Untrained baselines: ``random``, ``length``, ``overlap`` and ``bm25``.

They need no training and read only the core columns, so they run on any benchmark and anchor
every leaderboard: a trained scorer that does not beat ``overlap`` or ``bm25`` has learned no
more than lexical matching.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from gradebench.benchmark.lists import Lists
from gradebench.hashing import sha256_json
from gradebench.scorers import Scorer, ScorerConfig, register_scorer
from gradebench.scorers.text import bm25_matrix, candidate_overlap, jaccard, tokenize_all


@register_scorer("random")
class RandomScorer(Scorer):
    """Uniform [0, 1) scores drawn from sha256 of ``(seed, query_id, candidate_id)``.

    The draw depends only on the seed and the candidate's identity, so it is the same on every
    machine, in every process and whatever else is scored alongside.
    """

    kind = "baseline"
    summary = "uniform scores drawn from sha256(seed, query id, candidate id): the chance line"

    def score(self, lists: Lists) -> np.ndarray:
        out = np.zeros(lists.mask.shape)
        rows, cols = lists.flat_index()
        for r, c in zip(rows.tolist(), cols.tolist()):
            h = sha256_json(["random-scorer", self.seed, str(lists.query_ids[r]), str(lists.candidate_ids[r, c])])
            out[r, c] = int(h[:13], 16) / float(1 << 52)
        return out


class LengthConfig(ScorerConfig):
    prefer: Literal["longer", "shorter"] = "longer"


@register_scorer("length")
class LengthScorer(Scorer):
    """Score = number of word tokens of the candidate (negated with ``prefer=shorter``)."""

    kind = "baseline"
    summary = "number of words in the candidate (longer first by default)"
    Config = LengthConfig

    def score(self, lists: Lists) -> np.ndarray:
        out = np.zeros(lists.mask.shape)
        rows, cols = lists.flat_index()
        toks = tokenize_all(lists.candidates[rows, cols].tolist())
        out[rows, cols] = [len(t) for t in toks]
        return out if self.config.prefer == "longer" else -out


class OverlapConfig(ScorerConfig):
    measure: Literal["candidate", "jaccard"] = "candidate"


@register_scorer("overlap")
class OverlapScorer(Scorer):
    """Lexical overlap of candidate and query.

    ``measure="candidate"``: share of the candidate's distinct words found in the query;
    ``measure="jaccard"``: Jaccard index of the two word sets.
    """

    kind = "baseline"
    summary = "share of the candidate's distinct words that occur in the query"
    Config = OverlapConfig

    def score(self, lists: Lists) -> np.ndarray:
        fn = candidate_overlap if self.config.measure == "candidate" else jaccard
        out = np.zeros(lists.mask.shape)
        query_tokens = tokenize_all(lists.queries.tolist())
        rows, cols = lists.flat_index()
        cand_tokens = tokenize_all(lists.candidates[rows, cols].tolist())
        out[rows, cols] = [fn(query_tokens[r], c) for r, c in zip(rows.tolist(), cand_tokens)]
        return out


class BM25Config(ScorerConfig):
    k1: float = Field(1.5, ge=0)
    b: float = Field(0.75, ge=0, le=1)


@register_scorer("bm25")
class BM25Scorer(Scorer):
    """Okapi BM25 of each candidate for its query, corpus statistics from the scored candidates.

    The corpus is every candidate of the lists being scored (the benchmark split), so document
    frequencies reflect the benchmark's own vocabulary; see
    :func:`gradebench.scorers.text.bm25_matrix` for the formula.
    """

    kind = "baseline"
    summary = "Okapi BM25 (k1=1.5, b=0.75) of the candidate for its query, idf over the split's candidates"
    Config = BM25Config

    def score(self, lists: Lists) -> np.ndarray:
        rows, cols = lists.flat_index()
        values = bm25_matrix(
            tokenize_all(lists.queries.tolist()),
            tokenize_all(lists.candidates[rows, cols].tolist()),
            rows,
            k1=self.config.k1,
            b=self.config.b,
        )
        out = np.zeros(lists.mask.shape)
        out[rows, cols] = values
        return out
