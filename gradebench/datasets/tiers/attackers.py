"""Lexical attackers of the adversarial filter: pairwise ridge rankers on word features (numpy/scipy).

They live at the data layer (the filter runs while a benchmark is built, before any scorer
exists) and are deliberately of one family, linear models on sparse lexical features, so that
the validity figures can judge the filtered benchmark with attackers of another family (the
LightGBM lexical ceilings, BM25) that the filter never saw.

An attacker reads a query's premise, hypothesis and label and one candidate text, through the
feature groups its recipe entry names (:data:`GROUPS`):

- ``overlap``: shares of the candidate's words found in the hypothesis / premise, of the
  hypothesis' words found in the candidate, shared hypothesis bigrams, words in neither;
- ``length``: word count (scaled) and its log;
- ``negation``: negation words in the candidate, and that count minus the hypothesis';
- ``words`` / ``bigrams``: hashed candidate words / word pairs;
- ``shared_words``: hashed words the candidate shares with the hypothesis, and with the premise;
- ``label_words``: hashed (query label, candidate word) crosses;
- ``label_overlap``: the ``overlap``, ``length`` and ``negation`` values crossed with the query
  label (hashed slots holding the values), so that a linear model can weigh word overlap
  differently per label, as a tree model does.

Hashing is crc32 (the same slot on every machine and run; never ``hash()``). A member is fitted
on the within-list pairs of its lists: for candidates i, j with grade g_i > g_j, the row
x_i - x_j with target 1, solved in closed form, ``(X'X + alpha I) w = X'1``.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np

from gradebench.words import words

GROUPS = ("overlap", "length", "negation", "words", "bigrams", "shared_words", "label_words", "label_overlap")
NEGATIONS = frozenset({
    "not", "no", "never", "nothing", "nobody", "none", "nor", "cannot", "isn", "aren", "doesn", "don", "didn",
    "wasn", "weren", "couldn", "wouldn", "shouldn", "hasn", "haven", "hadn", "won", "without",
})
_DENSE = {"overlap": 6, "length": 2, "negation": 2}


def _slot(bits: int, *parts: str) -> int:
    return zlib.crc32("\x1f".join(parts).encode("utf-8")) & ((1 << bits) - 1)


class Featurizer:
    """Sparse feature rows of (query, candidate) for one set of feature groups.

    Columns: the dense groups first (in :data:`GROUPS` order), then ``2**bits`` hashed slots.
    """

    def __init__(self, groups: Sequence[str], bits: int) -> None:
        self.groups = tuple(g for g in GROUPS if g in groups)
        self.bits = bits
        self.n_dense = sum(_DENSE.get(g, 0) for g in self.groups)
        self.dim = self.n_dense + (1 << bits if any(g not in _DENSE for g in self.groups) else 0)

    def row(self, premise: Sequence[str], hypothesis: Sequence[str], label: str, text: str) -> dict[int, float]:
        """The non-zero features of ``text`` for a query of word lists ``premise``, ``hypothesis``."""
        c = words(text)
        cs, hs, ps = set(c), set(hypothesis), set(premise)
        n = max(len(c), 1)
        out: dict[int, float] = {}
        col = 0
        hashed: list[int] = []
        crossed: dict[int, float] = {}
        dense: dict[str, tuple[float, ...]] = {}  # each dense group once, for itself and label_overlap

        def values(group: str) -> tuple[float, ...]:
            if group not in dense:
                dense[group] = _dense(group, c, cs, hs, ps, hypothesis, n)
            return dense[group]

        for g in self.groups:
            if g in _DENSE:
                vals = values(g)
            elif g == "label_overlap":
                for k, v in enumerate(v for d in _DENSE for v in values(d)):
                    if v:
                        j = self.n_dense + _slot(self.bits, "lo", label, str(k))
                        crossed[j] = crossed.get(j, 0.0) + float(v)
                continue
            else:
                if g == "words":
                    hashed.extend(_slot(self.bits, "w", w) for w in c)
                elif g == "bigrams":
                    hashed.extend(_slot(self.bits, "b", a, b) for a, b in zip(c, c[1:]))
                elif g == "shared_words":
                    hashed.extend(_slot(self.bits, "sh", w) for w in cs & hs)
                    hashed.extend(_slot(self.bits, "sp", w) for w in cs & ps)
                else:  # label_words
                    hashed.extend(_slot(self.bits, "l", label, w) for w in cs)
                continue
            for v in vals:
                if v:
                    out[col] = float(v)
                col += 1
        if hashed:
            scale = 1.0 / math.sqrt(len(hashed))
            for h in hashed:
                j = self.n_dense + h
                out[j] = out.get(j, 0.0) + scale
        for j, v in crossed.items():
            out[j] = out.get(j, 0.0) + v
        return out


def _dense(group: str, c: list[str], cs: set[str], hs: set[str], ps: set[str], hypothesis: Sequence[str],
           n: int) -> tuple[float, ...]:
    """The values of a dense feature group (:data:`_DENSE`) of candidate words ``c``."""
    if group == "overlap":
        h_bi = set(zip(hypothesis, hypothesis[1:]))
        return (sum(w in hs for w in c) / n, sum(w in ps for w in c) / n,
                len(cs & hs) / max(len(hs), 1), len(cs & ps) / max(len(ps), 1),
                sum(b in h_bi for b in zip(c, c[1:])) / max(len(h_bi), 1),
                sum(w not in hs and w not in ps for w in c) / n)
    if group == "length":
        return (len(c) / 10.0, math.log1p(len(c)))
    neg = sum(w in NEGATIONS for w in c)
    return (float(neg), float(neg - sum(w in NEGATIONS for w in hypothesis)))


def matrix(rows: Sequence[dict[int, float]], dim: int):
    """The rows as a CSR matrix of ``dim`` columns."""
    from scipy import sparse

    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    cols = np.fromiter((j for r in rows for j in sorted(r)), dtype=np.int64, count=int(indptr[-1]))
    vals = np.fromiter((r[j] for r in rows for j in sorted(r)), dtype=np.float64, count=int(indptr[-1]))
    return sparse.csr_matrix((vals, cols, indptr), shape=(len(rows), dim))


def pair_rows(grades: Sequence[np.ndarray], offsets: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(better, worse) row indices of every within-list pair with different grades.

    ``grades[l]`` are list l's candidate grades, its rows starting at ``offsets[l]``.
    """
    hi, lo = [], []
    for g, start in zip(grades, offsets):
        for i in range(len(g)):
            for j in range(len(g)):
                if g[i] > g[j]:
                    hi.append(start + i)
                    lo.append(start + j)
    return np.asarray(hi, dtype=np.int64), np.asarray(lo, dtype=np.int64)


def fit_pairwise(x, hi: np.ndarray, lo: np.ndarray, alpha: float) -> np.ndarray:
    """Ridge weights on the pair differences ``x[hi] - x[lo]`` with target 1 (closed form)."""
    d = x[hi] - x[lo]
    gram = (d.T @ d).toarray()
    gram[np.diag_indices_from(gram)] += alpha
    rhs = np.asarray(d.sum(axis=0)).ravel()
    return np.linalg.solve(gram, rhs)
