"""Contrast candidates for the tiered NLI builders: balanced negation flips and BM25-matched distractors.

Both are found once per source split, during selection, because each is balanced over the
whole split rather than chosen query by query:

* :func:`balanced_flips` turns a human explanation into a *minimal edit that reverses its
  claim*: one negation added or removed at its one editable site (``is`` <-> ``is not``, ``can`` <->
  ``can not``, ``means`` <-> ``does n't mean``, ...). Every rewrite rule is used exactly as
  often in one direction as in the other, so across the split the flipped
  texts carry as many negations, and the same phrases, as the texts they come from: the
  edit itself is no cue to a reader who ignores the query.
* :class:`Bm25Index` / :func:`bm25_lend` pick, for each query, the explanations of other
  pairs whose Okapi BM25 against the query is closest to the query's own explanation's,
  and lend each explanation to at most ``cap`` queries, so a lexical ranker cannot tell
  them from the own explanation and a text-only probe cannot tell them by which texts they are.

Every choice is a function of the split's content and the seed namespace
(:mod:`gradebench.hashing`); no ``hash()``, no global RNG.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gradebench.hashing import key_digest
from gradebench.words import lexical_words as bm25_words

# -- negation flips ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FlipRule:
    """One rewrite between a negated phrase and its plain counterpart (both natural English)."""

    name: str
    negated: re.Pattern[str]
    plain: re.Pattern[str]
    to_plain: Callable[[re.Match[str]], str]
    to_negated: Callable[[re.Match[str]], str]


def _rules() -> tuple[FlipRule, ...]:
    """The rewrite rules; one per negated surface form, so each form is balanced on its own."""
    i = re.IGNORECASE
    not_neg = r"(?!'|\s+(?:not|n't|necessarily)\b)"  # a plain site is not already negated
    out: list[FlipRule] = []

    def add(name: str, negated: str, plain: str, to_plain, to_negated) -> None:
        out.append(FlipRule(name, re.compile(negated, i), re.compile(plain, i), to_plain, to_negated))

    clause_start = r"(?:^|(?<=; )|(?<=\. ))"
    for neg in ("does n't", "doesn't", "does not"):
        add(
            f"just because ... {neg} mean",
            clause_start + rf"just because (?P<x>[^;.]*?) ?,? {neg} mean\b",
            clause_start + r"(?P<x>[^;.,]*?) means\b",
            lambda m: f"{_lower_first(m['x'])} means",
            lambda m, n=neg: f"just because {_lower_first(m['x'])} {n} mean",
        )
    for neg in ("does n't", "doesn't", "does not", "does not necessarily"):
        add(f"{neg} mean", rf"\b{neg} mean\b", r"\bmeans\b", lambda m: "means", lambda m, n=neg: f"{n} mean")
    for neg in ("does not", "does not necessarily"):
        add(f"{neg} imply", rf"\b{neg} imply\b", r"\bimplies\b", lambda m: "implies", lambda m, n=neg: f"{n} imply")
    add("does not have to", r"\bdoes not have to\b", r"\bhas to\b", lambda m: "has to", lambda m: "does not have to")
    add("do not have to", r"\bdo not have to\b", r"(?<!not )(?<!n't )(?<!\bdoes )\bhave to\b", lambda m: "have to",
        lambda m: "do not have to")
    for neg in ("can not", "cannot", "ca n't", "can't"):
        add(neg, rf"\b{neg}(?=\s|$|[^\w'])", r"\bcan\b" + not_neg, lambda m: "can", lambda m, n=neg: n)
    for verb in ("is", "are", "was", "were"):
        for tail in ("not", "n't", "not necessarily"):
            stop = "" if "necessarily" in tail else r"(?! necessarily\b)"
            add(f"{verb} {tail}", rf"\b{verb} {tail}(?=\s|$|[^\w']){stop}", rf"\b{verb}\b" + not_neg,
                lambda m, v=verb: v, lambda m, v=verb, t=tail: f"{v} {t}")
        add(f"{verb}n't", rf"\b{verb}n't\b", rf"\b{verb}\b" + not_neg, lambda m, v=verb: v,
            lambda m, v=verb: f"{v}n't")
    for verb in ("would", "could", "must", "should", "will"):
        add(f"{verb} not", rf"\b{verb} not\b(?! necessarily\b)", rf"\b{verb}\b" + not_neg,
            lambda m, v=verb: v, lambda m, v=verb: f"{v} not")
    return tuple(out)


def _lower_first(text: str) -> str:
    """``"A man"`` -> ``"a man"`` (sentence-initial capital only; ``"I"`` and acronyms kept)."""
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


RULES: tuple[FlipRule, ...] = _rules()

#: clause boundaries: the preprocessed release joins sentences with " ; ", the CSVs with ". "
_CLAUSE_BREAK = re.compile(r"[;.!?]\s+\S")


def single_clause(text: str) -> bool:
    """Whether ``text`` is one clause (no ``;`` and no sentence break inside it)."""
    return not _CLAUSE_BREAK.search(text.strip())


@dataclass(frozen=True)
class FlipOption:
    """One possible edit: rule ``rule`` applied at ``[start, end)`` in ``direction`` (-1 removes a negation)."""

    rule: int
    direction: int
    start: int
    end: int
    replacement: str


def flip_options(text: str) -> list[FlipOption]:
    """Every single-site edit of ``text`` the rules allow, in both directions.

    A negated site inside a longer negated match of an earlier rule is left to that rule
    (``just because X does n't mean Y`` loses the whole construction, never ``n't`` alone).
    """
    out: list[FlipOption] = []
    negated_spans: list[tuple[int, int]] = []
    for r, rule in enumerate(RULES):
        for m in rule.negated.finditer(text):
            if any(s <= m.start() and m.end() <= e for s, e in negated_spans):
                continue
            negated_spans.append((m.start(), m.end()))
            out.append(FlipOption(r, -1, m.start(), m.end(), _recase(m.group(0), rule.to_plain(m))))
        for m in rule.plain.finditer(text):
            out.append(FlipOption(r, +1, m.start(), m.end(), _recase(m.group(0), rule.to_negated(m))))
    return out


def _recase(original: str, replacement: str) -> str:
    """Keep a sentence-initial capital: ``"Is not"`` -> ``"Is"``, ``"Means"`` -> ``"Does not mean"``."""
    if original[:1].isupper() and replacement[:1].islower():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def apply_flip(text: str, option: FlipOption) -> str:
    return text[: option.start] + option.replacement + text[option.end:]


def flippable(text: str) -> bool:
    """Whether ``text`` is one clause with exactly one site the rules can edit."""
    return bool(text) and single_clause(text) and len({o.start for o in flip_options(text)}) == 1


def balanced_flips(
    items: Sequence[tuple[str, str]], ns: str, groups: Sequence[str] | None = None
) -> dict[int, str]:
    """Flip ``(key, text)`` items at one site each so that every rule is used as often both ways.

    Only one-clause texts (:func:`single_clause`) with exactly one editable site are flipped
    (so the edit reverses the whole claim, with no second claim left standing), and only by
    rules that some item can apply in each direction. Items are visited in a content-seeded order
    (``key_digest(ns, "flip-order", key, text)``, ties by position); each takes the edit that
    most reduces its rule's imbalance (negations added minus removed), ties broken by a
    content-seeded digest of the site. Finally the surplus of every unbalanced rule is
    dropped (the flips visited last), so every rule adds exactly as many negations as it
    removes and the flipped texts, taken together, carry the same phrases as their sources.
    With ``groups`` (one name per item, e.g. its label) every rule is balanced within each
    group instead: a rule counts per (group, rule).
    Returns ``{position in items: flipped text}``.
    """
    group = (lambda k: groups[k]) if groups is not None else (lambda k: "")
    options: dict[int, list[FlipOption]] = {}
    directions: dict[tuple[str, int], set[int]] = {}
    for k, (_, text) in enumerate(items):
        if text and single_clause(text):
            found = flip_options(text)
            if len({o.start for o in found}) == 1:
                options[k] = found
                for o in found:
                    directions.setdefault((group(k), o.rule), set()).add(o.direction)
    net: dict[tuple[str, int], int] = {}
    chosen: dict[tuple[str, int], list[tuple[int, int]]] = {}  # rule -> [(item, direction)] in visiting order
    out: dict[int, str] = {}
    for k in sorted(options, key=lambda k: (key_digest(ns, "flip-order", *items[k]), k)):
        key, text = items[k]
        g = group(k)
        usable = [o for o in options[k] if len(directions[(g, o.rule)]) == 2]
        if not usable:
            continue

        def cost(o: FlipOption, key: str = key, g: str = g) -> tuple[int, int, bytes]:
            now = net.get((g, o.rule), 0)
            after = abs(now + o.direction)
            return (after - abs(now), after, key_digest(ns, "flip-site", key, str(o.rule), str(o.start)))

        best = min(usable, key=cost)
        net[(g, best.rule)] = net.get((g, best.rule), 0) + best.direction
        chosen.setdefault((g, best.rule), []).append((k, best.direction))
        out[k] = apply_flip(text, best)
    for rule, picks in chosen.items():
        surplus = net[rule]
        for k, direction in reversed(picks):
            if surplus == 0:
                break
            if direction * surplus > 0:
                del out[k]
                surplus -= direction
    return out


# -- BM25-matched distractors ------------------------------------------------------------------


class Bm25Index:
    """Okapi BM25 (k1=1.5, b=0.75, Lucene idf) over a fixed document set, for many queries at once.

    The same formula as :func:`gradebench.scorers.text.bm25_matrix`, with the statistics
    (document frequencies, mean length) of the indexed documents; each query term counts once.
    """

    def __init__(self, docs: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.vocab: dict[str, int] = {}
        tokens = [bm25_words(d) for d in docs]
        for toks in tokens:
            for t in toks:
                self.vocab.setdefault(t, len(self.vocab))
        tf = self._counts(tokens)
        self.n = len(docs)
        lengths = np.asarray([len(t) for t in tokens], dtype=np.float64)
        self.avgdl = float(lengths.mean()) if self.n and lengths.mean() > 0 else 1.0
        df = np.bincount(tf.indices, minlength=max(len(self.vocab), 1)).astype(np.float64)
        self.idf = np.log((self.n - df + 0.5) / (df + 0.5) + 1.0)
        self.doc_weights = self._weights(tf, lengths).T.tocsr()  # [vocab, docs]

    def _counts(self, tokens: Sequence[Sequence[str]]):
        from scipy import sparse

        indptr, indices = [0], []
        for toks in tokens:
            indices.extend(self.vocab[t] for t in toks if t in self.vocab)
            indptr.append(len(indices))
        m = sparse.csr_matrix(
            (np.ones(len(indices)), np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
            shape=(len(tokens), max(len(self.vocab), 1)),
        )
        m.sum_duplicates()
        return m

    def _weights(self, tf, lengths: np.ndarray):
        from scipy import sparse

        rows = np.repeat(np.arange(tf.shape[0]), np.diff(tf.indptr))
        denom = tf.data + self.k1 * (1.0 - self.b + self.b * lengths[rows] / self.avgdl)
        return sparse.csr_matrix((self.idf[tf.indices] * tf.data / denom, tf.indices, tf.indptr), shape=tf.shape)

    def _query_matrix(self, queries: Sequence[str]):
        from scipy import sparse

        rows, cols = [], []
        for qi, q in enumerate(queries):
            for j in sorted({self.vocab[t] for t in bm25_words(q) if t in self.vocab}):
                rows.append(qi)
                cols.append(j)
        return sparse.csr_matrix(
            (np.ones(len(rows)), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
            shape=(len(queries), max(len(self.vocab), 1)),
        )

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """``[len(queries), n_docs]`` BM25 of every indexed document for each query."""
        if not queries:
            return np.zeros((0, self.n))
        return (self._query_matrix(queries) @ self.doc_weights).toarray()

    def score_texts(self, queries: Sequence[str], texts: Sequence[str]) -> np.ndarray:
        """BM25 of ``texts[i]`` for ``queries[i]`` with the index's statistics (unseen words score 0)."""
        tokens = [bm25_words(t) for t in texts]
        tf = self._counts(tokens)
        w = self._weights(tf, np.asarray([len(t) for t in tokens], dtype=np.float64))
        q = self._query_matrix(queries)
        return np.asarray(w.multiply(q).sum(axis=1)).ravel()


def bm25_lend(
    index: Bm25Index,
    queries: Sequence[tuple[str, str, str, np.ndarray]],
    *,
    count: int,
    cap: int,
    ns: str,
    doc_keys: Sequence[tuple[str, ...]] | None = None,
    chunk: int = 256,
) -> dict[str, tuple[int, ...]]:
    """Lend documents to queries by closeness of BM25 to a target, each document at most ``cap`` times.

    ``queries`` are ``(query_id, query_text, own_text, eligible)`` with ``eligible`` a boolean
    mask over the indexed documents. A query's target is the BM25 of ``own_text``; its
    documents are the ``count`` eligible ones whose BM25 is closest to the target (gaps
    rounded to 1e-9, ties by ``key_digest(ns, "bm25-tie", *doc_keys[d])``, or by index without
    ``doc_keys``) among those lent fewer than ``cap`` times so far. Queries are served in a
    content-seeded order (``key_digest(ns, "bm25-order", query_id)``), so with content keys
    the result does not depend on the order of the documents or the queries.
    Returns ``{query_id: document indices}`` (fewer than ``count`` when too few are eligible).
    """
    order = sorted(range(len(queries)), key=lambda k: key_digest(ns, "bm25-order", queries[k][0]))
    if doc_keys is None:
        tie = np.arange(index.n)
    else:
        ranks = sorted(range(index.n), key=lambda d: (key_digest(ns, "bm25-tie", *doc_keys[d]), d))
        tie = np.empty(index.n, dtype=np.int64)
        tie[ranks] = np.arange(index.n)
    window = max(64, 4 * count * cap)
    ranked: dict[int, np.ndarray] = {}
    for lo in range(0, len(queries), chunk):
        part = queries[lo: lo + chunk]
        s = index.scores([q[1] for q in part])
        target = index.score_texts([q[1] for q in part], [q[2] for q in part])
        for j, q in enumerate(part):
            ranked[lo + j] = _closest(s[j], target[j], q[3], tie, window)
    used = np.zeros(index.n, dtype=np.int64)
    out: dict[str, tuple[int, ...]] = {}
    for k in order:
        picked = _pick(ranked.pop(k), used, count, cap)
        if len(picked) < count and len(picked) < int(queries[k][3].sum()):
            qid, text, own, eligible = queries[k]  # the window ran out: rank every eligible document
            target = index.score_texts([text], [own])[0]
            picked = _pick(_closest(index.scores([text])[0], target, eligible, tie, None), used, count, cap)
        for d in picked:
            used[d] += 1
        out[queries[k][0]] = tuple(picked)
    return out


def _closest(
    scores: np.ndarray, target: float, eligible: np.ndarray, tie: np.ndarray, window: int | None
) -> np.ndarray:
    """Eligible document indices by |score - target| (rounded to 1e-9), ties by ``tie``; the first ``window``."""
    idx = np.flatnonzero(eligible)
    gap = np.round(np.abs(scores[idx] - target), 9)
    if window is not None and len(idx) > window:
        cut = np.partition(gap, window - 1)[window - 1]
        keep = gap <= cut
        idx, gap = idx[keep], gap[keep]
    ranked = idx[np.lexsort((tie[idx], gap))]
    return ranked if window is None else ranked[: max(window, 0)]


def _pick(ranked: np.ndarray, used: np.ndarray, count: int, cap: int) -> list[int]:
    """The first ``count`` of ``ranked`` lent fewer than ``cap`` times."""
    picked: list[int] = []
    for d in ranked:
        if used[d] < cap:
            picked.append(int(d))
            if len(picked) == count:
                break
    return picked
