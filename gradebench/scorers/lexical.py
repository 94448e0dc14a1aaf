"""Handcrafted lexical features of (query, candidate) pairs: the classical LTR feature set.

Cheap surface features only (no learned representation), so a ranker trained on them is the
"lexical ceiling" of a benchmark: what matching words, lengths and cue words alone achieve.
"""

from __future__ import annotations

import numpy as np

from gradebench.benchmark.lists import Lists
from gradebench.scorers.text import bigrams, bm25_matrix, tokenize_all

NEGATIONS = frozenset({"no", "not", "never", "nobody", "nothing", "none", "nor", "cannot", "t", "neither", "without"})
REASONING = frozenset({"because", "since", "so", "therefore", "thus", "implies", "means", "if", "as"})
LABEL_WORDS = frozenset({"entail", "entails", "entailment", "contradict", "contradicts", "contradiction",
                         "neutral", "true", "false", "follows", "unrelated"})

FEATURE_NAMES: tuple[str, ...] = (
    "cand_words", "query_words", "length_ratio", "overlap_cand", "overlap_query", "jaccard",
    "shared_words", "shared_bigrams", "bm25", "negations", "reasoning_words", "label_words",
    "mean_word_len", "novel_words",
)


def lexical_features(lists: Lists) -> np.ndarray:
    """``[n_candidates, len(FEATURE_NAMES)]`` float64 features, candidates in row-major order."""
    rows, cols = lists.flat_index()
    q_tok = tokenize_all(lists.queries.tolist())
    c_tok = tokenize_all(lists.candidates[rows, cols].tolist())
    bm25 = bm25_matrix(q_tok, c_tok, rows)
    q_sets = [set(t) for t in q_tok]
    q_bis = [bigrams(t) for t in q_tok]
    feats = []
    for i, (r, toks) in enumerate(zip(rows.tolist(), c_tok)):
        cs, qs = set(toks), q_sets[r]
        shared = len(cs & qs)
        n_c, n_q = len(toks), len(q_tok[r])
        feats.append((
            n_c,
            n_q,
            n_c / max(n_q, 1),
            shared / len(cs) if cs else 0.0,
            shared / len(qs) if qs else 0.0,
            shared / len(cs | qs) if cs | qs else 0.0,
            shared,
            len(bigrams(toks) & q_bis[r]),
            bm25[i],
            sum(t in NEGATIONS for t in toks),
            sum(t in REASONING for t in toks),
            sum(t in LABEL_WORDS for t in toks),
            sum(map(len, toks)) / n_c if toks else 0.0,  # the mean word length (integers: exact sum)
            len(cs - qs),
        ))
    if not feats:
        return np.zeros((0, len(FEATURE_NAMES)))
    return np.array(feats, dtype=np.float64)
