"""Benchmark statistics written to the manifest (compare with the paper's Tables 11-12).

Query-level (tier order = ``relevance``, higher is better; lists are one query's candidates):

- ``ambiguity``: share of queries with at least one tier-order violation, i.e. a pair with
  ``relevance_i > relevance_j`` and ``score_i < score_j``.
- ``score_range_mean``: mean over queries of ``max(score) - min(score)``.
- ``tier_ndcg@3`` / ``tier_ndcg@5``: NDCG of the ranking by ``score`` against the grades
  (gain ``2^rel - 1``), i.e. how well the scores agree with the tier order.
- ``tier_spearman``: mean per-query Spearman rho between ``score`` and ``relevance``.

Per tier: count, score mean/min/max, mean candidate length in words, mean vocabulary
overlap with the query (``|W(e) ∩ (W(p) ∪ W(h))| / |W(p) ∪ W(h)|``), share human-written.

``shortcut_probes``: how well a scorer that sees ONE surface feature (length in words,
overlap with the query, human authorship) would order the candidates: its pairwise
agreement with the grades (ties count 1/2; 0.5 = no signal, 1.0 = the feature alone
solves the benchmark). This is how the paper's authorship shortcut shows up; the authorship
probe is reported only where the builder knows who wrote every candidate.

Every benchmark also gets ``grades`` (candidates per relevance value), ``list_sizes``
(queries per list size) and the mean of each of the builder's ``stat_columns`` (e.g.
annotator entropy). Per-tier stats exist only where the builder has tiers.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradebench.datasets.base import Builder


@dataclass
class RowFeatures:
    """Per-candidate numbers kept for statistics (rows of a query are contiguous)."""

    counts: np.ndarray  # [n_queries] candidates per query
    score: np.ndarray  # [n_rows] float64
    relevance: np.ndarray  # [n_rows] int16
    tier: np.ndarray  # [n_rows] int32: the row's tier in ``tier_names``, -1 for none
    n_words: np.ndarray  # [n_rows] int32
    overlap: np.ndarray  # [n_rows] float64
    human: np.ndarray  # [n_rows] int8: 1 human-written, 0 not, -1 unknown
    query_values: dict[str, np.ndarray]  # stat column -> [n_queries] float64
    #: per-query figures (:func:`query_figures`), computed where the rows were made (a build
    #: worker) so that the building process only averages them; None: computed when needed
    figures: dict[str, np.ndarray] | None = None
    #: the tiers ``tier`` numbers (codes, not a column of names: a build worker sends its rows'
    #: features to the building process, where 2.5M names cost 0.2 s to unpickle and compare)
    tier_names: tuple[str, ...] = ()

    @property
    def n_queries(self) -> int:
        return int(self.counts.shape[0])

    @classmethod
    def from_rows(cls, counts, scores, relevance, tiers, human, n_words, overlap, query_values=None) -> RowFeatures:
        codes, names = tier_codes(tiers)
        return cls(
            counts=np.asarray(counts, dtype=np.int64),
            score=np.asarray(scores, dtype=np.float64),
            relevance=np.asarray(relevance, dtype=np.int16),
            tier=codes,
            tier_names=names,
            n_words=np.asarray(n_words, dtype=np.int32),
            overlap=np.asarray(overlap, dtype=np.float64),
            human=np.asarray(human, dtype=np.int8),
            query_values=dict(query_values or {}),
        )

    @classmethod
    def concat(cls, parts: Sequence[RowFeatures]) -> RowFeatures:
        arrays = {
            f: np.concatenate([getattr(p, f) for p in parts])
            for f in cls.__dataclass_fields__
            if f not in ("query_values", "figures", "tier", "tier_names")
        }
        tier_names = tuple(dict.fromkeys(n for p in parts for n in p.tier_names))
        arrays["tier"] = np.concatenate(  # each part's codes into the union's (a code -1 stays -1)
            [np.asarray([tier_names.index(n) for n in p.tier_names] + [-1], dtype=np.int32)[p.tier] for p in parts]
        ) if parts else np.zeros(0, dtype=np.int32)
        names = parts[0].query_values.keys() if parts else ()
        values = {n: np.concatenate([p.query_values[n] for p in parts]) for n in names}
        figures = None
        if parts and all(p.figures is not None for p in parts):
            # a figure some part lacks (the authorship probe where a part has unknown authors) is
            # left out: the whole has unknown authors too, so its stats do not report it
            keys = [k for k in parts[0].figures if all(k in p.figures for p in parts)]
            figures = {k: np.concatenate([p.figures[k] for p in parts]) for k in keys}
        return cls(**arrays, query_values=values, figures=figures, tier_names=tier_names)

    def dense(self, values: np.ndarray, fill: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Scatter per-row values into ``[n_queries, max_list]`` plus the validity mask."""
        n, width = self.n_queries, int(self.counts.max(initial=0))
        starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]])
        pos = np.arange(values.shape[0]) - np.repeat(starts, self.counts)
        qi = np.repeat(np.arange(n), self.counts)
        out = np.full((n, width), fill, dtype=np.float64)
        mask = np.zeros((n, width), dtype=bool)
        out[qi, pos] = values
        mask[qi, pos] = True
        return out, mask


_CHUNK = 1 << 16  # queries per block of [n, L, L] pair arrays (bounds memory)


def _blocks(n: int):
    for start in range(0, n, _CHUNK):
        yield slice(start, min(n, start + _CHUNK))


def _violations(score: np.ndarray, grade: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per query: is there a pair with a higher grade but a lower score?"""
    out = []
    for b in _blocks(grade.shape[0]):
        g, s, m = grade[b], score[b], mask[b]
        bad = (g[:, :, None] > g[:, None, :]) & (s[:, :, None] < s[:, None, :]) & m[:, :, None] & m[:, None, :]
        out.append(bad.any(axis=(1, 2)))
    return np.concatenate(out) if out else np.zeros(0, dtype=bool)


def _round(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)


def _known_authors(f: RowFeatures) -> bool:
    return bool(f.human.size) and bool((f.human >= 0).all())


#: the shortcut probes: name -> the row feature a probe ranks by
_PROBES = {"length": "n_words", "query_overlap": "overlap", "human_authorship": "human"}


def query_figures(f: RowFeatures) -> dict[str, np.ndarray]:
    """Per query: a tier-order violation, the score range, NDCG@3/@5 and Spearman of the scores,
    and each shortcut probe's pairwise agreement (NaN: undefined for that query).

    Each query's figures depend on its rows alone, so a build computes them batch by batch in
    its workers and the stats average the concatenation (:func:`query_stats`,
    :func:`shortcut_probes`); the batches are fixed by the input, so the stats do not depend on
    the workers. NDCG's sums run over a length the whole block sets (its widest tie group), so a
    query's NDCG computed in another block may differ in its last bit (1 ulp); the other figures
    are exact. The authorship probe is there only when every row's author is known.
    """
    from gradebench.metrics import NDCG, PairwiseAgreement, SpearmanRho, evaluate

    score, mask = f.dense(f.score)
    grade, _ = f.dense(f.relevance.astype(np.float64))
    res = evaluate(score, grade, [NDCG(k=3), NDCG(k=5), SpearmanRho()], mask=mask)
    ndcg3, ndcg5, spearman = res.per_query.values()
    out = {
        "violated": _violations(score, grade, mask),
        "score_range": np.where(mask, score, -np.inf).max(axis=1) - np.where(mask, score, np.inf).min(axis=1),
        "tier_ndcg@3": ndcg3,
        "tier_ndcg@5": ndcg5,
        "tier_spearman": spearman,
    }
    for name, column in _PROBES.items():
        if name == "human_authorship" and not _known_authors(f):
            continue
        feature = f.dense(getattr(f, column).astype(np.float64))[0]
        out[f"probe:{name}"] = next(iter(evaluate(feature, grade, [PairwiseAgreement()], mask=mask).per_query.values()))
    return out


def _figures(f: RowFeatures) -> dict[str, np.ndarray]:
    if f.figures is None:
        f.figures = query_figures(f)
    return f.figures


def _mean(values: np.ndarray) -> float:
    """The mean over the defined (non-NaN) values, as :func:`gradebench.metrics.evaluate` averages."""
    ok = ~np.isnan(values)
    return float(values[ok].mean()) if ok.any() else float("nan")


def query_stats(f: RowFeatures) -> dict[str, float | None]:
    q = _figures(f)
    return {
        "queries": f.n_queries,
        "ambiguity": _round(q["violated"].mean()),
        "score_range_mean": _round(q["score_range"].mean()),
        "tier_ndcg@3": _round(_mean(q["tier_ndcg@3"])),
        "tier_ndcg@5": _round(_mean(q["tier_ndcg@5"])),
        "tier_spearman": _round(_mean(q["tier_spearman"])),
    }


def tier_codes(tiers: Any) -> tuple[np.ndarray, tuple[str, ...]]:
    """Each row's tier (names, or None: a sequence or an Arrow string array) as a code into the
    distinct names (first seen first), -1 for none; Arrow's ``dictionary_encode`` finds them."""
    import pyarrow as pa

    encoded = (tiers if isinstance(tiers, pa.Array) else pa.array(list(tiers), pa.string())).dictionary_encode()
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)
    return codes, tuple(encoded.dictionary.to_pylist())


def _groups(key: np.ndarray, *columns: np.ndarray) -> tuple[dict[int, slice], list[np.ndarray]]:
    """``columns`` with their rows grouped by ``key`` (a stable sort: each group's rows in their
    order), and each key's slice: a group is then what a mask ``key == k`` selects, in the same
    order, so its means are the same bits, found with one pass over the rows rather than one a key."""
    order = np.argsort(_narrow(key), kind="stable")
    ordered = key[order]
    bounds = [0, *(np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist(), len(ordered)]
    slices = {int(ordered[a]): slice(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a}
    return slices, [c[order] for c in columns]


def _narrow(key: np.ndarray) -> np.ndarray:
    """``key`` as int8 where its values fit (a tier code, a grade): a stable sort of bytes is a
    radix sort, about 6x faster over a build's rows than of int32, and gives the same order."""
    if key.dtype.kind == "i" and key.size and key.dtype.itemsize > 1 and -128 <= key.min() and key.max() <= 127:
        return key.astype(np.int8)
    return key


def tier_stats(tiers: Sequence[tuple[str, int]], f: RowFeatures) -> dict[str, dict[str, float | int | None]]:
    out = {}
    slices, (score, n_words, overlap, human) = _groups(f.tier, f.score, f.n_words, f.overlap, f.human)
    for name, relevance in tiers:
        sel = slices.get(f.tier_names.index(name)) if name in f.tier_names else None
        if sel is None:
            out[name] = {"candidates": 0}
            continue
        s = score[sel]
        out[name] = {
            "candidates": sel.stop - sel.start,
            "relevance": relevance,
            "score_mean": _round(s.mean()),
            "score_min": _round(s.min()),
            "score_max": _round(s.max()),
            "words_mean": _round(n_words[sel].mean()),
            "query_overlap_mean": _round(overlap[sel].mean()),
            "human_share": _round((human[sel] == 1).mean()) if (human[sel] >= 0).all() else None,
        }
    return out


def grade_stats(f: RowFeatures) -> dict:
    """Candidates per grade, queries per list size, and per-grade score/length/overlap means."""
    sizes, q_per = np.unique(f.counts, return_counts=True)
    slices, (score, n_words, overlap) = _groups(f.relevance, f.score, f.n_words, f.overlap)
    per_grade = {}
    for g, sel in slices.items():
        per_grade[str(g)] = {
            "candidates": sel.stop - sel.start,
            "score_mean": _round(score[sel].mean()),
            "words_mean": _round(n_words[sel].mean()),
            "query_overlap_mean": _round(overlap[sel].mean()),
        }
    return {"grades": per_grade, "list_sizes": {str(s): int(q) for s, q in zip(sizes.tolist(), q_per.tolist())}}


def shortcut_probes(f: RowFeatures) -> dict[str, float | None]:
    """Pairwise agreement (ties count 1/2) of a ranking by one surface feature with the grades."""
    q = _figures(f)
    return {name: _round(_mean(q[f"probe:{name}"])) for name in _PROBES
            if name != "human_authorship" or _known_authors(f)}


def summarize(builder: Builder, per_split: dict[str, RowFeatures]) -> dict:
    """Stats per split and over all splits."""
    out: dict = {}
    tiers = builder.tiers()
    parts = dict(sorted(per_split.items()))
    if parts:  # one split: "all" is the same rows (no copy)
        parts["all"] = RowFeatures.concat(list(parts.values())) if len(parts) > 1 else next(iter(parts.values()))
    for name, f in parts.items():
        if f.n_queries == 0:
            continue
        if name == "all" and len(parts) == 2:  # one split: "all" is the same rows, so the same stats
            out[name] = copy.deepcopy(out[next(iter(parts))])
            continue
        s = {**query_stats(f)}
        if tiers is not None:
            s["tiers"] = tier_stats(tiers, f)
        s.update(grade_stats(f))
        s["shortcut_probes"] = shortcut_probes(f)
        for col, values in sorted(f.query_values.items()):
            finite = values[np.isfinite(values)]
            s[f"{col}_mean"] = _round(finite.mean()) if finite.size else None
        out[name] = s
    return out
