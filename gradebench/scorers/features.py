"""Deterministic feature hashing of texts, and query-candidate interaction features.

Pure functions of the text (numpy/scipy only, no ``hash()``, no RNG): the same text gives the
same row on every machine, process and ``PYTHONHASHSEED``.

:func:`hash_texts` maps each text to a sparse row of ``dim`` columns:

* **word n-grams** (default uni- and bigrams) of lower-cased ``\\w+`` tokens. A word's 64-bit
  id is ``blake2b(word, digest_size=8, key=salt)``; a bigram's id combines its two word ids;
* **character n-grams** (default 3 to 5) of the lower-cased text with runs of whitespace
  collapsed to one space and one space added at each end (``" a cat "``), taken across word
  boundaries; their ids are a polynomial hash of the Unicode code points (mod 2**64);
* each id, salted per n-gram order, goes through the splitmix64 finaliser and lands in column
  ``id mod dim``.

Values: per group (words, characters), a column's count ``c`` becomes ``1 + ln(c)`` and the
group's row is L2-normalised, then scaled by ``sqrt(1/2)``; the two groups are added. So a row
whose text has both words and character n-grams has norm ~1 (exactly 1 without collisions
between the groups), and neither group drowns the other (a text has ~10x more character
n-grams than words). An empty text gives an empty row.

:func:`interaction` describes a (query, candidate) pair: the hashed words they share (binary,
L2-normalised) and the dense features :data:`DENSE_FEATURES`. :func:`list_features` computes all
of it for a :class:`~gradebench.benchmark.lists.Lists`, with empty rows at padding.

Speed: ~40,000 short candidates (e-SNLI-like, ~15 words) featurise in about a second on one core.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from gradebench.benchmark.lists import Lists
from gradebench.errors import InvalidArgumentError
from gradebench.words import lexical_words as words  # the one lexical tokenizer (lower-cased \w+)

_P = np.uint64(0x100000001B3)  # FNV-64 prime: the polynomial base of n-gram ids
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_HALF = math.sqrt(0.5)

#: names of the columns of :func:`interaction`'s dense features, in order
DENSE_FEATURES: tuple[str, ...] = (
    "overlap_candidate",  # |Q ∩ C| / |C| over distinct words (0 if C is empty)
    "overlap_query",  # |Q ∩ C| / |Q|
    "jaccard",  # |Q ∩ C| / |Q ∪ C|
    "bigram_overlap",  # |bigrams(Q) ∩ bigrams(C)| / |bigrams(C)|
    "log_words_candidate",  # ln(1 + words in C)
    "log_words_query",  # ln(1 + words in Q)
    "log_length_ratio",  # ln((1 + words in C) / (1 + words in Q))
    "contained",  # 1 if every word of C occurs in Q (C non-empty)
    "log_new_words",  # ln(1 + |C \ Q|)
)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser on a uint64 array (wrap-around arithmetic)."""
    h = h ^ (h >> _S30)
    h = h * _M1
    h = h ^ (h >> _S27)
    h = h * _M2
    return h ^ (h >> _S31)


def salt_id(salt: str, namespace: str) -> np.uint64:
    """A 64-bit salt for one n-gram namespace (``blake2b`` of ``salt/namespace``)."""
    digest = hashlib.blake2b(f"{salt}/{namespace}".encode(), digest_size=8).digest()
    return np.uint64(int.from_bytes(digest, "little"))


def _distinct(items: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The distinct items, first seen first, and each item's place among them (dicts built in C)."""
    place = {w: i for i, w in enumerate(dict.fromkeys(items))}
    return list(place), np.fromiter(map(place.__getitem__, items), dtype=np.int64, count=len(items))


def _word_ids(tokens: list[str], salt: str) -> np.ndarray:
    """uint64 id of each token (``blake2b`` keyed by ``salt``; each distinct word hashed once)."""
    vocab, idx = _distinct(tokens)
    key = salt.encode()[:64]
    ids = np.fromiter(
        (int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8, key=key).digest(), "little") for w in vocab),
        dtype=np.uint64, count=len(vocab),
    )
    return ids[idx]


def _check_dim(dim: int) -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or not 1 <= dim <= 2**30:
        raise InvalidArgumentError(f"hashing dim must be an integer in [1, 2**30], got {dim!r}", hint="e.g. 2**16")
    return int(dim)


def valid_ngram_range(value: tuple[int, int]) -> bool:
    """Whether ``value`` is ``(min, max)`` with ``1 <= min <= max <= 16``, or ``(0, 0)`` (none)."""
    try:
        lo, hi = value
    except (TypeError, ValueError):
        return False
    return isinstance(lo, int) and isinstance(hi, int) and (lo == hi == 0 or 1 <= lo <= hi <= 16)


def _check_range(name: str, value: tuple[int, int]) -> tuple[int, int]:
    if not valid_ngram_range(value):
        raise InvalidArgumentError(f"{name} must be (min, max) with 1 <= min <= max <= 16, or (0, 0) for none, "
                                   f"got {value!r}")
    return value[0], value[1]


def _group_matrix(rows: np.ndarray, cols: np.ndarray, n: int, dim: int) -> sp.csr_matrix:
    """Counts -> 1 + ln(count), each row L2-normalised then scaled by sqrt(1/2)."""
    m = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(n, dim), dtype=np.float32)
    m.sum_duplicates()
    m.data = 1.0 + np.log(m.data)
    per_row = np.diff(m.indptr)
    row_of = np.repeat(np.arange(n, dtype=np.int64), per_row)
    norms = np.sqrt(np.bincount(row_of, weights=np.square(m.data, dtype=np.float64), minlength=n))
    m.data = (m.data * (_HALF / np.where(norms > 0, norms, 1.0))[row_of]).astype(np.float32)
    return m


def word_ngram_entries(texts: Sequence[str], *, dim: int, ngrams: tuple[int, int] = (1, 2),
                       salt: str = "gradebench") -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)`` of every word n-gram occurrence (one entry per occurrence)."""
    lo, hi = _check_range("word_ngrams", ngrams)
    toks = [words(t) for t in texts]
    lens = np.fromiter((len(t) for t in toks), dtype=np.int64, count=len(toks))
    flat = [w for t in toks for w in t]
    if not flat or lo == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    base = _word_ids(flat, salt)
    owner = np.repeat(np.arange(len(toks), dtype=np.int64), lens)
    rows, cols = [], []
    for k in range(lo, hi + 1):
        m = len(flat) - k + 1
        if m <= 0:
            continue
        h = base[:m].copy()
        for j in range(1, k):
            h = h * _P + base[j:j + m]
        valid = owner[:m] == owner[k - 1:k - 1 + m]
        h = _mix(h[valid] ^ salt_id(salt, f"w{k}"))
        rows.append(owner[:m][valid])
        cols.append((h % np.uint64(dim)).astype(np.int64))
    return np.concatenate(rows), np.concatenate(cols)


def char_ngram_entries(texts: Sequence[str], *, dim: int, ngrams: tuple[int, int] = (3, 5),
                       salt: str = "gradebench") -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)`` of every character n-gram occurrence (see the module docstring)."""
    lo, hi = _check_range("char_ngrams", ngrams)
    norm = [" " + " ".join(t.lower().split()) + " " for t in texts]
    lens = np.fromiter((len(t) for t in norm), dtype=np.int64, count=len(norm))
    if lo == 0 or not len(norm):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cp = np.frombuffer("".join(norm).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    owner = np.repeat(np.arange(len(norm), dtype=np.int64), lens)
    end = np.repeat(np.cumsum(lens), lens)  # exclusive end of the text each position belongs to
    pos = np.arange(len(cp), dtype=np.int64)
    rows, cols = [], []
    for k in range(lo, hi + 1):
        m = len(cp) - k + 1
        if m <= 0:
            continue
        h = cp[:m].copy()
        for j in range(1, k):
            h = h * _P + cp[j:j + m]
        valid = pos[:m] + k <= end[:m]
        h = _mix(h[valid] ^ salt_id(salt, f"c{k}"))
        rows.append(owner[:m][valid])
        cols.append((h % np.uint64(dim)).astype(np.int64))
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(rows), np.concatenate(cols)


def hash_texts(
    texts: Sequence[str],
    *,
    dim: int,
    word_ngrams: tuple[int, int] = (1, 2),
    char_ngrams: tuple[int, int] = (3, 5),
    salt: str = "gradebench",
) -> sp.csr_matrix:
    """Hashed n-gram features of ``texts``: CSR ``[len(texts), dim]`` float32 (module docstring).

    ``(0, 0)`` turns a group off. Column indices are sorted within each row.

    Example:
        >>> x = hash_texts(["A cat  sleeps", "a CAT sleeps", ""], dim=2**16)
        >>> (x[0] != x[1]).nnz, x[2].nnz  # case and spacing are normalised away
        (0, 0)
    """
    dim = _check_dim(dim)
    texts = [str(t) for t in texts]
    # a text's row depends on the text alone: each distinct text is hashed once (a benchmark's
    # template candidates are a few texts repeated on every list), then the rows are repeated
    distinct, which = _distinct(texts)
    if len(distinct) == len(texts):
        return _hash_distinct(texts, dim, word_ngrams, char_ngrams, salt)
    out = _hash_distinct(distinct, dim, word_ngrams, char_ngrams, salt)[which]
    out.sort_indices()  # (they are; this sets the flag)
    return out


def _hash_distinct(texts: list[str], dim: int, word_ngrams: tuple[int, int], char_ngrams: tuple[int, int],
                   salt: str) -> sp.csr_matrix:
    """:func:`hash_texts` of ``texts``, each row from its own text."""
    n = len(texts)
    out = sp.csr_matrix((n, dim), dtype=np.float32)
    for entries in (word_ngram_entries(texts, dim=dim, ngrams=word_ngrams, salt=salt),
                    char_ngram_entries(texts, dim=dim, ngrams=char_ngrams, salt=salt)):
        if len(entries[0]):
            out = out + _group_matrix(entries[0], entries[1], n, dim)
    out = sp.csr_matrix(out, dtype=np.float32)
    out.sum_duplicates()
    out.sort_indices()
    return out


def interaction(
    queries: Sequence[str],
    candidates: Sequence[str],
    *,
    dim: int,
    salt: str = "gradebench",
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Features of aligned (query, candidate) pairs: ``(shared, dense)``.

    * ``shared``: CSR ``[n, dim]`` float32, the distinct words both texts contain, hashed as
      word unigrams (namespace ``shared``), each ``1 / sqrt(n_shared)``;
    * ``dense``: ``[n, len(DENSE_FEATURES)]`` float32 overlap ratios and length features.
    """
    dim = _check_dim(dim)
    if len(queries) != len(candidates):
        raise InvalidArgumentError(f"{len(queries)} queries but {len(candidates)} candidates")
    n = len(candidates)
    q_cache: dict[str, tuple[list[str], set[str], set[tuple[str, str]]]] = {}
    dense = np.zeros((n, len(DENSE_FEATURES)), dtype=np.float32)
    shared_words: list[str] = []
    shared_rows: list[int] = []
    shared_counts = np.zeros(n, dtype=np.int64)
    for i, (q, c) in enumerate(zip(queries, candidates)):
        q = str(q)
        if q not in q_cache:
            qt = words(q)
            q_cache[q] = (qt, set(qt), set(zip(qt, qt[1:])))
        qt, qs, qb = q_cache[q]
        ct = words(str(c))
        cs = set(ct)
        cb = set(zip(ct, ct[1:]))
        inter = sorted(qs & cs)
        n_i = len(inter)
        union = len(qs | cs)
        dense[i] = (
            n_i / len(cs) if cs else 0.0,
            n_i / len(qs) if qs else 0.0,
            n_i / union if union else 0.0,
            len(qb & cb) / len(cb) if cb else 0.0,
            math.log1p(len(ct)),
            math.log1p(len(qt)),
            math.log((1 + len(ct)) / (1 + len(qt))),
            1.0 if cs and cs <= qs else 0.0,
            math.log1p(len(cs - qs)),
        )
        shared_words += inter
        shared_rows += [i] * n_i
        shared_counts[i] = n_i
    if shared_words:
        h = _mix(_word_ids(shared_words, salt) ^ salt_id(salt, "shared"))
        cols = (h % np.uint64(dim)).astype(np.int64)
        rows = np.asarray(shared_rows, dtype=np.int64)
        vals = (1.0 / np.sqrt(shared_counts[rows])).astype(np.float32)
        shared = sp.csr_matrix((vals, (rows, cols)), shape=(n, dim), dtype=np.float32)
        shared.sum_duplicates()
    else:
        shared = sp.csr_matrix((n, dim), dtype=np.float32)
    return shared, dense


def expand_rows(m: sp.csr_matrix, positions: np.ndarray, n_rows: int) -> sp.csr_matrix:
    """Place row ``k`` of ``m`` at row ``positions[k]`` (increasing) of an ``n_rows``-row matrix; others empty."""
    counts = np.zeros(n_rows, dtype=np.int64)
    counts[positions] = np.diff(m.indptr)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    return sp.csr_matrix((m.data, m.indices, indptr), shape=(n_rows, m.shape[1]))


@dataclass(frozen=True)
class ListFeatures:
    """Features of a :class:`Lists`, laid out for batching by query rows.

    Attributes:
        list_size: ``L``; candidate rows are flat positions ``q * L + j``.
        mask: ``[n_queries, L]`` real candidates.
        candidate: CSR ``[n_queries * L, dim]`` hashed candidate texts (empty rows at padding).
        query: CSR ``[n_queries, dim]`` hashed query texts, or None.
        shared: CSR ``[n_queries * L, shared_dim]`` shared words, or None.
        dense: ``[n_queries, L, len(DENSE_FEATURES)]`` float32 (0 at padding), or None.
    """

    list_size: int
    mask: np.ndarray
    candidate: sp.csr_matrix
    query: sp.csr_matrix | None = None
    shared: sp.csr_matrix | None = None
    dense: np.ndarray | None = None


def list_features(
    lists: Lists,
    *,
    dim: int,
    shared_dim: int | None = None,
    with_query: bool = True,
    word_ngrams: tuple[int, int] = (1, 2),
    char_ngrams: tuple[int, int] = (3, 5),
    salt: str = "gradebench",
) -> ListFeatures:
    """Hash ``lists``' candidates (and, with ``with_query``, queries and interactions).

    ``with_query=False`` reads only candidate texts (the query-blind probe); ``shared_dim``
    None skips the interaction features.
    """
    n_q, width = lists.mask.shape
    rows, cols = lists.flat_index()
    cand_texts = lists.candidates[rows, cols].tolist()
    flat_pos = rows * width + cols
    kw = dict(word_ngrams=word_ngrams, char_ngrams=char_ngrams, salt=salt)
    cand = expand_rows(hash_texts(cand_texts, dim=dim, **kw), flat_pos, n_q * width)
    if not with_query:
        return ListFeatures(width, lists.mask, cand)
    query = hash_texts([str(q) for q in lists.queries], dim=dim, **kw)
    shared = dense = None
    if shared_dim is not None:
        s, d = interaction([str(q) for q in lists.queries[rows]], cand_texts, dim=shared_dim, salt=salt)
        shared = expand_rows(s, flat_pos, n_q * width)
        dense = np.zeros((n_q, width, len(DENSE_FEATURES)), dtype=np.float32)
        dense[rows, cols] = d
    return ListFeatures(width, lists.mask, cand, query, shared, dense)


#: namespaces of :func:`word_cross_features`: each word feature is hashed with its namespace's salt
WORD_CROSS_NAMESPACES: tuple[str, ...] = (
    "candidate_word",  # a distinct word of the candidate
    "candidate_bigram",  # a distinct word bigram of the candidate
    "query_word",  # a distinct word of the query (the same for every candidate of a list)
    "shared_word",  # a candidate word that the query also contains
    "new_word",  # a candidate word that the query does not contain
    "label_word",  # (the query's label, a candidate word)
    "label_bigram",  # (the query's label, a candidate bigram)
)


def word_cross_features(
    queries: Sequence[str],
    candidates: Sequence[str],
    labels: Sequence[str | None] | None = None,
    *,
    dim: int,
    salt: str = "gradebench",
) -> sp.csr_matrix:
    """Binary hashed word features of aligned (query, candidate[, label]) triples: CSR ``[n, dim]`` float32.

    Each row holds a 1 for every feature of :data:`WORD_CROSS_NAMESPACES` its pair has, over the
    distinct lower-cased ``\\w+`` words (:func:`words`) of each text. A word's id is
    ``blake2b(word, key=salt)``; a bigram's is ``id1 * P + id2`` and a label cross's ``id * P +
    id(label)`` (``P`` the FNV-64 prime); each id, xor-ed with its namespace's salt, goes through
    the splitmix64 finaliser and lands in column ``id mod dim``. A row whose label is None (or
    ``labels`` None) has no label features. Column indices are sorted within each row.

    Example:
        >>> x = word_cross_features(["a cat"], ["the cat sleeps"], ["neutral"], dim=2**16)
        >>> int(x.nnz)  # 3 words, 2 bigrams, 2 query words, 1 shared, 2 new, 3 + 2 label crosses
        15
    """
    dim = _check_dim(dim)
    if len(queries) != len(candidates) or (labels is not None and len(labels) != len(candidates)):
        raise InvalidArgumentError(
            f"{len(queries)} queries, {len(candidates)} candidates and "
            f"{'no' if labels is None else len(labels)} labels: they must be aligned"
        )
    n = len(candidates)
    q_words: dict[str, list[str]] = {}
    # flat entries: (row, word) per namespace group; bigrams as two word lists
    w_rows: list[int] = []
    w_toks: list[str] = []
    w_shared: list[bool] = []
    b_rows: list[int] = []
    b_first: list[str] = []
    b_second: list[str] = []
    q_rows: list[int] = []
    q_toks: list[str] = []
    row_label: list[str | None] = [None] * n if labels is None else [None if x is None else str(x) for x in labels]
    for i, (q, c) in enumerate(zip(queries, candidates)):
        q = str(q)
        qw = q_words.get(q)
        if qw is None:
            qw = q_words[q] = sorted(set(words(q)))
        qs = set(qw)
        ct = words(str(c))
        cw = sorted(set(ct))
        w_rows += [i] * len(cw)
        w_toks += cw
        w_shared += [w in qs for w in cw]
        bis = sorted(set(zip(ct, ct[1:])))
        b_rows += [i] * len(bis)
        b_first += [a for a, _ in bis]
        b_second += [b for _, b in bis]
        q_rows += [i] * len(qw)
        q_toks += qw
    label_names = sorted({x for x in row_label if x is not None})
    ids = _word_ids(w_toks + b_first + b_second + q_toks + label_names, salt)
    nw, nb, nq = len(w_toks), len(b_first), len(q_toks)
    wid, bid = ids[:nw], ids[nw:nw + nb] * _P + ids[nw + nb:nw + 2 * nb]
    qid, lid = ids[nw + 2 * nb:nw + 2 * nb + nq], ids[nw + 2 * nb + nq:]
    label_index = {name: k for k, name in enumerate(label_names)}
    # label id of each row (0 and a False flag where the row has no label)
    has_label = np.fromiter((x is not None for x in row_label), dtype=bool, count=n)
    row_lid = np.zeros(n, dtype=np.uint64)
    if label_names:
        row_lid[has_label] = lid[[label_index[x] for x in row_label if x is not None]]
    w_rows_a = np.asarray(w_rows, dtype=np.int64)
    b_rows_a = np.asarray(b_rows, dtype=np.int64)
    shared = np.asarray(w_shared, dtype=bool)
    w_lab, b_lab = has_label[w_rows_a], has_label[b_rows_a]
    parts = [
        ("candidate_word", w_rows_a, wid),
        ("candidate_bigram", b_rows_a, bid),
        ("query_word", np.asarray(q_rows, dtype=np.int64), qid),
        ("shared_word", w_rows_a[shared], wid[shared]),
        ("new_word", w_rows_a[~shared], wid[~shared]),
        ("label_word", w_rows_a[w_lab], wid[w_lab] * _P + row_lid[w_rows_a[w_lab]]),
        ("label_bigram", b_rows_a[b_lab], bid[b_lab] * _P + row_lid[b_rows_a[b_lab]]),
    ]
    rows = np.concatenate([r for _, r, _ in parts])
    cols = np.concatenate([(_mix(h ^ salt_id(salt, ns)) % np.uint64(dim)).astype(np.int64) for ns, _, h in parts])
    out = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(n, dim), dtype=np.float32)
    out.sum_duplicates()
    out.data[:] = 1.0
    out.sort_indices()
    return out
