"""Tokenisation and lexical statistics shared by the untrained scorers and LambdaMART features.

One convention everywhere: lower-cased ``\\w+`` word tokens (Unicode-aware), no stemming, no
stop-word list, so every figure can be recomputed by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from gradebench.words import lexical_words as words  # the one tokenizer of lexical features


def tokenize_all(texts: Iterable[str]) -> list[list[str]]:
    return [words(t) for t in texts]


def candidate_overlap(query: Sequence[str], candidate: Sequence[str]) -> float:
    """Share of the candidate's distinct words that occur in the query (0 for an empty candidate)."""
    c = set(candidate)
    if not c:
        return 0.0
    return len(c & set(query)) / len(c)


def jaccard(query: Sequence[str], candidate: Sequence[str]) -> float:
    """|Q ∩ C| / |Q ∪ C| over distinct words (0 when both are empty)."""
    q, c = set(query), set(candidate)
    union = q | c
    return len(q & c) / len(union) if union else 0.0


def bigrams(tokens: Sequence[str]) -> set[tuple[str, str]]:
    return set(zip(tokens, tokens[1:]))


def bm25_matrix(
    query_tokens: Sequence[Sequence[str]],
    candidate_tokens: Sequence[Sequence[str]],
    candidate_query: np.ndarray,
    *,
    k1: float = 1.5,
    b: float = 0.75,
    idf_floor: float = 0.0,
) -> np.ndarray:
    """Okapi BM25 of each candidate for its own query, with statistics from the candidate corpus.

    ``score(q, d) = sum_{t in set(q)} idf(t) * tf(t,d) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl))``
    with ``idf(t) = ln((N - df(t) + 0.5) / (df(t) + 0.5) + 1)``, ``N`` the number of candidates and
    ``df`` counted over them: Lucene's BM25 (since Lucene 8, which drops Robertson's constant
    ``k1 + 1`` numerator factor; rankings are unchanged) and bm25s' ``method="lucene"``. Each query
    term counts once. ``idf_floor`` clips idf from below.

    Args:
        query_tokens: tokens of each query, ``[n_queries]``.
        candidate_tokens: tokens of each candidate (the corpus), ``[n_candidates]``.
        candidate_query: ``[n_candidates]`` index of each candidate's query.

    Returns:
        ``[n_candidates]`` float64 scores.
    """
    from scipy import sparse

    vocab: dict[str, int] = {}
    indptr = [0]
    indices: list[int] = []
    for toks in candidate_tokens:
        for t in toks:
            indices.append(vocab.setdefault(t, len(vocab)))
        indptr.append(len(indices))
    n = len(candidate_tokens)
    tf = sparse.csr_matrix(
        (np.ones(len(indices), dtype=np.float64), np.asarray(indices, dtype=np.int64), np.asarray(indptr)),
        shape=(n, max(len(vocab), 1)),
    )
    tf.sum_duplicates()
    lengths = np.diff(np.asarray(indptr)).astype(np.float64)
    avgdl = float(lengths.mean()) if n and lengths.mean() > 0 else 1.0
    df = np.bincount(tf.indices, minlength=tf.shape[1]).astype(np.float64)
    idf = np.maximum(np.log((n - df + 0.5) / (df + 0.5) + 1.0), idf_floor)
    rows = np.repeat(np.arange(n), np.diff(tf.indptr))
    denom = tf.data + k1 * (1.0 - b + b * lengths[rows] / avgdl)
    weights = sparse.csr_matrix((idf[tf.indices] * tf.data / denom, tf.indices, tf.indptr), shape=tf.shape)
    q_rows: list[int] = []
    q_cols: list[int] = []
    for qi, toks in enumerate(query_tokens):
        for t in set(toks):
            j = vocab.get(t)
            if j is not None:
                q_rows.append(qi)
                q_cols.append(j)
    qmat = sparse.csr_matrix(
        (np.ones(len(q_rows)), (np.asarray(q_rows, dtype=np.int64), np.asarray(q_cols, dtype=np.int64))),
        shape=(len(query_tokens), tf.shape[1]),
    )
    per_candidate_query = qmat[np.asarray(candidate_query, dtype=np.int64)]
    return np.asarray(weights.multiply(per_candidate_query).sum(axis=1)).ravel()
