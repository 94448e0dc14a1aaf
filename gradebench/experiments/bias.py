"""Bias controls of a record: length-split pairwise agreement, and the surface baselines beside the system.

Computed for every record (every scorer, not only external models), from the predictions:

* **length pairs**: over every pair of candidates of one list with different grades, the
  pairwise agreement (the better-graded candidate scored higher; score ties count 1/2) on the
  pairs whose better candidate is the **shorter** one and, separately, the **longer** one
  (length in words, :func:`gradebench.words.words`; pairs of equal length are counted apart).
  A system that prefers long candidates agrees more often on the second group: ``gap`` (longer
  minus shorter) shows it. Pooled over pairs.
* **baselines**: the ``length`` (the better of longer-first and shorter-first), ``overlap`` and
  ``bm25`` scorers on the same lists, with the system's value of the same metric
  (:data:`METRIC`, the record's per-query mean). A baseline within :data:`MARGIN` of the system
  (or above it) gets a one-line warning: the system may do no more than that surface feature.
  A baseline is not compared with itself.
* **groups**: the same per value of the benchmark's subset/category column
  (:data:`GROUP_COLUMNS`, the first present), when it has one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gradebench.benchmark.lists import Lists
from gradebench.experiments.record import json_float
from gradebench.metrics import PairwiseAgreement
from gradebench.training.evaluation import evaluate_lists
from gradebench.words import words

__all__ = ["GROUP_COLUMNS", "MARGIN", "METRIC", "bias_controls", "group_of", "length_pairs"]

METRIC = PairwiseAgreement()
MARGIN = 0.02
#: columns naming a query's subset or category (importers keep RewardBench's ``subset``), first present wins
GROUP_COLUMNS = ("subset", "category")
#: the baselines put beside every system: name -> the configs tried (the best is reported)
BASELINES: dict[str, tuple[dict[str, Any], ...]] = {
    "length": ({"prefer": "longer"}, {"prefer": "shorter"}),
    "overlap": ({},),
    "bm25": ({},),
}


def word_lengths(lists: Lists) -> np.ndarray:
    """``[n_queries, list_size]`` number of words of each candidate (0 at padding)."""
    out = np.zeros(lists.mask.shape, dtype=np.int64)
    rows, cols = lists.flat_index()
    out[rows, cols] = [len(words(t)) for t in lists.candidates[rows, cols].tolist()]
    return out


def length_pairs(lists: Lists, scores: np.ndarray, lengths: np.ndarray | None = None) -> dict[str, Any]:
    """Pairwise agreement on the pairs whose better candidate is shorter / longer (see the module docstring)."""
    lengths = word_lengths(lists) if lengths is None else lengths
    s = np.asarray(scores, dtype=np.float64)
    totals = np.zeros((3, 2))  # rows: shorter, longer, same length; columns: pairs, credit
    step = max(1, (1 << 22) // max(1, lists.list_size ** 2))  # queries per chunk: [chunk, L, L] stays small
    for start in range(0, lists.n_queries, step):
        sl = slice(start, start + step)
        rel, mask, sc, ln = lists.relevance[sl], lists.mask[sl], s[sl], lengths[sl]
        better = (rel[:, :, None] > rel[:, None, :]) & mask[:, :, None] & mask[:, None, :]
        diff = sc[:, :, None] - sc[:, None, :]
        credit = np.where(diff > 0, 1.0, np.where(diff == 0, 0.5, 0.0))
        shorter = better & (ln[:, :, None] < ln[:, None, :])
        longer = better & (ln[:, :, None] > ln[:, None, :])
        for i, sel in enumerate((shorter, longer, better & ~shorter & ~longer)):
            totals[i] += (sel.sum(), credit[sel].sum())

    def agree(i: int) -> dict[str, Any]:
        n = int(totals[i, 0])
        return {"agreement": json_float(totals[i, 1] / n) if n else None, "n_pairs": n}

    a, b = agree(0), agree(1)
    gap = None if a["agreement"] is None or b["agreement"] is None else json_float(b["agreement"] - a["agreement"])
    return {"better_shorter": a, "better_longer": b, "n_same_length": int(totals[2, 0]), "gap": gap}


def group_of(lists: Lists) -> tuple[str | None, np.ndarray | None]:
    """``(column, [n_queries] group names)`` from the first subset/category column that names a group
    for some query, else ``(None, None)``: an importer's ``subset`` column that the source left empty
    (a preference file without subsets) is no grouping."""
    for col in GROUP_COLUMNS:
        values = lists.extra.get(col)
        if values is None:
            continue
        first = np.argmax(lists.mask, axis=1)
        names = np.array(["" if v is None else str(v) for v in values[np.arange(lists.n_queries), first]], dtype=object)
        if not any(names):
            continue
        return col, names
    return None, None


def _metric(scores: np.ndarray, lists: Lists) -> float | None:
    return json_float(evaluate_lists(scores, lists, [METRIC]).means[METRIC.name])


def baseline_scores(lists: Lists) -> dict[str, list[tuple[dict[str, Any], np.ndarray]]]:
    """Each baseline's ``[(config, scores)]`` on ``lists`` (BM25's idf over all of them)."""
    from gradebench.scorers import make_scorer

    return {name: [(dict(c), make_scorer(name, c).score(lists)) for c in configs] for name, configs in BASELINES.items()}


def _figures(lists: Lists, scores: np.ndarray, baselines: dict[str, list[tuple[dict[str, Any], np.ndarray]]],
             lengths: np.ndarray, *, system: str, label: str) -> dict[str, Any]:
    value = _metric(scores, lists)
    figures: dict[str, Any] = {}
    warnings = []
    for name, tried in baselines.items():
        values = [(_metric(s, lists), c) for c, s in tried]
        best, config = max(values, key=lambda vc: -np.inf if vc[0] is None else vc[0])
        figures[name] = {"scorer": name, "config": config, "value": best}
        if name == system or best is None or value is None:
            continue
        if best >= value - MARGIN:
            where = "above" if best > value else "within " + f"{MARGIN:g} of"
            warnings.append(f"{label}{name} baseline {METRIC.name} {best:.3f} is {where} the system's {value:.3f}: "
                            f"{_FEATURE[name]} alone does about as well")
    return {"n_queries": lists.n_queries, "system": value, "length_pairs": length_pairs(lists, scores, lengths),
            "baselines": figures, "warnings": warnings}


_FEATURE = {"length": "candidate length", "overlap": "word overlap with the query", "bm25": "BM25 lexical matching"}


def bias_controls(lists: Lists, scores: np.ndarray, *, system: str) -> dict[str, Any]:
    """The record's ``bias`` entry for ``scores`` on ``lists`` (``system``: the scorer's name)."""
    scores = np.asarray(scores, dtype=np.float64)
    baselines = baseline_scores(lists)
    lengths = word_lengths(lists)
    out = _figures(lists, scores, baselines, lengths, system=system, label="")
    column, names = group_of(lists)
    groups = []
    if column is not None:
        for name in sorted(set(names.tolist())):
            rows = np.flatnonzero(names == name)
            sub = lists.take(rows)
            width = sub.list_size
            part = {k: [(c, s[rows, :width]) for c, s in v] for k, v in baselines.items()}
            fig = _figures(sub, scores[rows, :width], part, lengths[rows, :width], system=system,
                           label=f"[{column}={name}] ")
            groups.append({"name": name, **fig})
    return {"metric": METRIC.name, "margin": MARGIN, **out, "group_column": column, "groups": groups}
