"""Plain-Python definitions of every metric, one list at a time, for cross-checking.

Written straight from the definitions, with no shared code with ``gradebench.metrics``:
ties ``"stable"``/``"trec"`` sort by (score desc, index asc/desc); ``"average"`` averages
the metric over every ordering of the items that is consistent with the scores
(brute force, so keep lists short: at most ~7 items).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

Order = list[int]


def orders(s: Sequence[float], ties: str) -> list[Order]:
    """All rankings the policy considers (one, or every tie ordering for "average")."""
    idx = range(len(s))
    if ties == "stable":
        return [sorted(idx, key=lambda i: (-s[i], i))]
    if ties == "trec":
        return [sorted(idx, key=lambda i: (-s[i], -i))]
    out = []
    for perm in itertools.permutations(idx):
        if all(s[perm[r]] >= s[perm[r + 1]] for r in range(len(perm) - 1)):
            out.append(list(perm))
    return out


def expected(metric: Callable[[Order], float], s: Sequence[float], ties: str) -> float:
    """Mean of ``metric(order)`` over the orders of the tie policy."""
    values = [metric(o) for o in orders(s, ties)]
    return sum(values) / len(values)


def gain(v: float, kind: str) -> float:
    return 2.0**v - 1.0 if kind == "exp2" else float(v)


def dcg_of(order: Order, y: Sequence[float], k: int | None, kind: str) -> float:
    top = order if k is None else order[:k]
    return sum(gain(y[i], kind) / math.log2(r + 2) for r, i in enumerate(top))


def dcg(s, y, k=None, gain="exp2", ties="average"):
    if len(s) == 0:
        return math.nan
    return expected(lambda o: dcg_of(o, y, k, gain), s, ties)


def ndcg(s, y, k=None, gain="exp2", ties="average", no_relevant="zero"):
    if len(s) == 0:
        return math.nan
    ideal = dcg_of(sorted(range(len(y)), key=lambda i: -y[i]), y, k, gain)
    if ideal == 0:
        return 0.0 if no_relevant == "zero" else math.nan
    return expected(lambda o: dcg_of(o, y, k, gain), s, ties) / ideal


def _ap(order, rel, k):
    hits, total = 0, 0.0
    for r, i in enumerate(order):
        if k is not None and r >= k:
            break
        if rel[i]:
            hits += 1
            total += hits / (r + 1)
    return total / sum(rel)


def _rr(order, rel, k):
    for r, i in enumerate(order):
        if k is not None and r >= k:
            break
        if rel[i]:
            return 1.0 / (r + 1)
    return 0.0


def _binary(fn, s, y, k, threshold, ties, no_relevant):
    if len(s) == 0:
        return math.nan
    rel = [v >= threshold for v in y]
    if not any(rel):
        return 0.0 if no_relevant == "zero" else math.nan
    return expected(lambda o: fn(o, rel, k), s, ties)


def average_precision(s, y, k=None, threshold=1.0, ties="average", no_relevant="zero"):
    return _binary(_ap, s, y, k, threshold, ties, no_relevant)


def reciprocal_rank(s, y, k=None, threshold=1.0, ties="average", no_relevant="zero"):
    return _binary(_rr, s, y, k, threshold, ties, no_relevant)


def precision(s, y, k=None, threshold=1.0, ties="average"):
    if len(s) == 0:
        return math.nan
    den = len(s) if k is None else k
    return expected(lambda o: sum(y[i] >= threshold for i in o[:den]) / den, s, ties)


def recall(s, y, k=None, threshold=1.0, ties="average", no_relevant="zero"):
    def fn(o, rel, k):
        top = o if k is None else o[:k]
        return sum(rel[i] for i in top) / sum(rel)

    return _binary(fn, s, y, k, threshold, ties, no_relevant)


def kendall(s, y):
    from scipy.stats import kendalltau

    if len(s) < 2 or len(set(s)) == 1 or len(set(y)) == 1:
        return math.nan
    return float(kendalltau(s, y).statistic)


def spearman(s, y):
    from scipy.stats import spearmanr

    if len(s) < 2 or len(set(s)) == 1 or len(set(y)) == 1:
        return math.nan
    return float(spearmanr(s, y).statistic)


def pairwise_agreement(s, y, ties="average"):
    def fn(o):
        pos = {i: r for r, i in enumerate(o)}
        agree = pairs = 0
        for i, j in itertools.combinations(range(len(s)), 2):
            if y[i] == y[j]:
                continue
            pairs += 1
            hi, lo = (i, j) if y[i] > y[j] else (j, i)
            agree += pos[hi] < pos[lo]
        return agree / pairs

    if len(set(y)) < 2:
        return math.nan
    return expected(fn, s, ties)


def top1_accuracy(s, y, ties="average"):
    if len(s) == 0:
        return math.nan
    return expected(lambda o: float(y[o[0]] == max(y)), s, ties)


def rank_class_accuracy(s, y, ties="average"):
    if len(s) == 0:
        return math.nan
    target = sorted(y, reverse=True)
    return expected(lambda o: sum(y[i] == t for i, t in zip(o, target)) / len(y), s, ties)


def query_separation_ratio(s, y):
    if len(set(y)) < 2:
        return math.nan
    return float(np.std(s) / np.std(y))


def relevance(s, y, k, threshold=1.0, ties="average"):
    if len(s) == 0:
        return math.nan
    return expected(lambda o: sum(y[i] >= threshold for i in o[:k]) / min(k, len(s)), s, ties)


def completeness(s, y, gold, k, ties="average"):
    if len(s) == 0 or not any(gold):
        return math.nan
    return expected(lambda o: sum(gold[i] for i in o[:k]) / sum(gold), s, ties)


def f1ex(s, y, gold, k, threshold=1.0, ties="average"):
    r = relevance(s, y, k, threshold, ties)
    c = completeness(s, y, gold, k, ties)
    if math.isnan(r) or math.isnan(c):
        return math.nan
    return 0.0 if r + c == 0 else 2 * r * c / (r + c)


def compb(s, y, gold, k, important=None, important_threshold=2.0, ties="average"):
    if important is None:
        important = [g and v >= important_threshold for g, v in zip(gold, y)]
    if len(s) == 0 or not any(important):
        return math.nan
    need = {i for i, v in enumerate(important) if v}
    return expected(lambda o: float(need <= set(o[:k])), s, ties)
