"""Per-query figures of the reproduction report, reduced from the predictions when a record is written.

The report (:mod:`gradebench.experiments.reproduction`) reads a few figures that come from the
per-candidate predictions of some benchmarks' records. The predictions do not travel with the
committed records (they are local files, see :mod:`gradebench.experiments.pack`), so each such
figure is computed per query from the predictions once -- by ``gradebench eval`` when it writes a
record, or by the migration from an old-layout record's predictions -- and stored beside the
per-query metrics as columns ``figure:<set>.<column>`` (float64, NaN = undefined for that query,
null = not computed for that record).

A :class:`FigureSet` names the benchmarks it is computed for and its columns; its function maps
the record's predictions as dense arrays (:class:`Dense`) to ``[n_queries, n_columns]``:

* ``separation`` (``esnli``, seeds/000 Table 3): candidates, sum and sum of squares of the
  predictions and of the grades -- the separation ratio as a corpus statistic of per-query rows;
* ``worldtree`` (seeds/001): MAP and NDCG against the gold explanation only and against the role
  grades, and Relevance / Completeness / F1ex of the top :data:`WORLDTREE_TOP_K` facts;
* ``winowhy`` (seeds/002, rank -> class): confusion counts of two score cuts (0, and half the split's
  top grade), and for the segment rule (any class prior) the labelled and Valid counts and the
  Valid flags of the labelled candidates in score order as one integer (bit ``i`` = rank ``i``);
* ``chaosnli``: JS distance, KL(human || model) and majority accuracy of softmax(scores) against
  the vote shares, as ChaosNLI's evaluation computes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gradebench.errors import RecordError
from gradebench.experiments.tables import FIGURE_PREFIX

#: WorldTree's whole-explanation metrics are computed on each system's top k facts (TFR-BERT's setting)
WORLDTREE_TOP_K = 8
#: WinoWhy's classes on the 5-annotator plausibility: Valid >= 0.8 (grade >= 4), Invalid <= 0.2 (grade <= 1)
VALID_MIN, INVALID_MAX = 4.0, 1.0
#: the largest labelled list whose ranked Valid flags fit a float64 integer exactly
MAX_RANKED = 53
PROB_FLOOR = 1e-15


@dataclass(frozen=True)
class Dense:
    """One record's predictions as dense ``[n_queries, list_size]`` arrays (queries in file order)."""

    query_ids: np.ndarray
    prediction: np.ndarray
    relevance: np.ndarray
    score: np.ndarray
    mask: np.ndarray


def dense_from_flat(ids: np.ndarray, prediction: np.ndarray, relevance: np.ndarray, score: np.ndarray) -> Dense:
    """:class:`Dense` of one row per candidate (``ids`` the query of each row, lists in row order;
    queries in order of first appearance, candidates left-aligned, zeros at padding)."""
    ids = np.asarray(ids, dtype=object)
    cols = [np.asarray(c, dtype=np.float64) for c in (prediction, relevance, score)]
    uniq, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    q = rank[inverse]
    counts = np.bincount(q, minlength=order.size)
    by_query = np.argsort(q, kind="stable")
    pos = np.empty(q.size, dtype=np.int64)
    pos[by_query] = np.arange(q.size) - np.repeat(np.cumsum(counts) - counts, counts)
    width = int(counts.max()) if counts.size else 0
    mask = np.zeros((order.size, width), dtype=bool)
    mask[q, pos] = True
    out = []
    for c in cols:
        arr = np.zeros((order.size, width), dtype=np.float64)
        arr[q, pos] = c
        out.append(arr)
    return Dense(uniq[order], out[0], out[1], out[2], mask)


def dense_predictions(path: Path) -> Dense:
    """Read ``query_id``, ``prediction``, ``relevance`` and ``score`` of a predictions file into :class:`Dense`."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, columns=["query_id", "prediction", "relevance", "score"])
    except Exception as e:  # noqa: BLE001 - pyarrow raises many types for bad files
        raise RecordError(f"cannot read the record's predictions ({type(e).__name__}: {e})", path=path,
                          hint="evaluate again") from None
    return dense_from_flat(np.asarray(table.column("query_id").to_pylist(), dtype=object),
                           *(np.asarray(table.column(c).to_pylist(), dtype=np.float64)
                             for c in ("prediction", "relevance", "score")))


def dense_from_lists(lists: Any, scores: np.ndarray) -> Dense:
    """:class:`Dense` of an evaluation's lists and scores: the same arrays as :func:`dense_predictions`
    gives for the predictions file the evaluation writes."""
    rows, cols = lists.flat_index()
    return dense_from_flat(lists.query_ids[rows], np.asarray(scores[rows, cols], dtype=np.float64),
                           np.asarray(lists.relevance[rows, cols], dtype=np.float64),
                           np.asarray(lists.score[rows, cols], dtype=np.float64))


# -- the figure functions -----------------------------------------------------------------------------
def separation_rows(d: Dense) -> np.ndarray:
    """``[n_queries, 5]``: candidates, sum and sum of squares of predictions and of relevance grades."""
    x = np.where(d.mask, d.prediction, 0.0)
    y = np.where(d.mask, d.relevance, 0.0)
    return np.column_stack([d.mask.sum(axis=1), x.sum(axis=1), (x * x).sum(axis=1), y.sum(axis=1),
                            (y * y).sum(axis=1)]).astype(np.float64)


def worldtree_values(d: Dense) -> np.ndarray:
    """``[n_queries, 7]``: MAP (>= 1), MAP (>= 2), binary NDCG against the gold facts, graded NDCG,
    Relevance@k, Completeness@k and F1ex@k of one record's rankings (ties averaged)."""
    from gradebench.metrics import MAP, NDCG, Completeness, F1ex, Relevance, evaluate

    k = WORLDTREE_TOP_K
    gold = d.mask & (d.relevance > 0)
    graded = evaluate(d.prediction, d.relevance, [MAP(threshold=1.0), MAP(threshold=2.0), NDCG(),
                                                  Relevance(k=k), Completeness(k=k), F1ex(k=k)],
                      mask=d.mask, gold=gold)
    binary = evaluate(d.prediction, gold.astype(np.float64), [NDCG()], mask=d.mask)
    pq = graded.per_query
    return np.column_stack([pq["map"], pq["map[threshold=2]"], binary.per_query["ndcg"], pq["ndcg"],
                            pq[f"relevance@{k}"], pq[f"completeness@{k}"], pq[f"f1ex@{k}"]])


def labelled(d: Dense) -> tuple[np.ndarray, np.ndarray]:
    """``(labelled, positive)``: candidates with a Valid or Invalid label, and the Valid ones."""
    lab = d.mask & ((d.relevance >= VALID_MIN) | (d.relevance <= INVALID_MAX))
    return lab, lab & (d.relevance >= VALID_MIN)


def confusion(pred: np.ndarray, lab: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """``[n_queries, 4]``: true positives, false positives, false negatives, true negatives."""
    return np.column_stack([(pred & pos).sum(axis=1), (pred & lab & ~pos).sum(axis=1),
                            (~pred & pos).sum(axis=1), (~pred & lab & ~pos).sum(axis=1)]).astype(np.float64)


def threshold_rows(cut: float) -> Callable[[Dense], np.ndarray]:
    """Valid where the score is at least ``cut``."""
    def rows(d: Dense) -> np.ndarray:
        lab, pos = labelled(d)
        return confusion(lab & (d.prediction >= cut), lab, pos)
    return rows


def segment_rows(prior: float) -> Callable[[Dense], np.ndarray]:
    """The segment rule: in each list, the top ``round(prior * n)`` of its ``n`` labelled candidates by
    score are Valid (ties: the benchmark's candidate order, which is content-shuffled)."""
    def rows(d: Dense) -> np.ndarray:
        lab, pos = labelled(d)
        m = np.floor(prior * lab.sum(axis=1) + 0.5)
        order = np.argsort(np.where(lab, -d.prediction, np.inf), axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(order.shape[1])[None, :].repeat(order.shape[0], 0), axis=1)
        return confusion(lab & (rank < m[:, None]), lab, pos)
    return rows


def ranked_valid(d: Dense) -> np.ndarray:
    """``[n_queries, 3]``: labelled candidates, Valid ones, and the Valid flags of the labelled
    candidates in the segment rule's order (score descending, ties in list order) as the integer
    ``sum(2^rank)`` (NaN for a list of more than :data:`MAX_RANKED` labelled candidates)."""
    lab, pos = labelled(d)
    order = np.argsort(np.where(lab, -d.prediction, np.inf), axis=1, kind="stable")
    flags = np.take_along_axis(pos, order, axis=1)
    n_lab = lab.sum(axis=1)
    weights = np.array([float(2 ** i) for i in range(min(flags.shape[1], MAX_RANKED))])
    bits = (flags[:, :weights.size] * weights[None, :]).sum(axis=1) if flags.size else np.zeros(len(n_lab))
    bits = np.where(n_lab > MAX_RANKED, np.nan, bits)
    return np.column_stack([n_lab, pos.sum(axis=1), bits]).astype(np.float64)


def segment_rows_from_ranked(prior: float, ranked: np.ndarray) -> np.ndarray:
    """:func:`segment_rows` from the stored :func:`ranked_valid` columns ``[n_queries, 3]``: the top
    ``round(prior * n)`` labelled candidates are Valid; TP = Valid flags among them."""
    n_lab, n_pos, bits = ranked[:, 0], ranked[:, 1], ranked[:, 2]
    m = np.floor(prior * n_lab + 0.5).astype(np.int64)
    codes = np.nan_to_num(bits, nan=0.0).astype(np.int64)
    tp = np.array([bin(int(c) & ((1 << int(k)) - 1)).count("1") for c, k in zip(codes, m)], dtype=np.float64)
    fp = m - tp
    rows = np.column_stack([tp, fp, n_pos - tp, n_lab - n_pos - fp]).astype(np.float64)
    return np.where(np.isnan(bits)[:, None], np.nan, rows)


def winowhy_rows(d: Dense) -> np.ndarray:
    """``[n_queries, 12]``: confusion counts at score 0 (sigmoid >= 0.5), the cut (half the split's top
    grade) and the confusion counts at it, then :func:`ranked_valid`."""
    top = float(np.max(np.where(d.mask, d.relevance, -np.inf))) if d.mask.any() else 0.0
    cut = top / 2
    return np.column_stack([threshold_rows(0.0)(d), np.full(d.mask.shape[0], cut), threshold_rows(cut)(d),
                            ranked_valid(d)])


def chaosnli_values(d: Dense) -> np.ndarray:
    """``[n_queries, 3]``: JS distance, KL(human || model) (natural logs) and majority accuracy of
    softmax(scores) against the vote shares, as ChaosNLI's evaluation computes them."""
    h = np.where(d.mask, d.score, 0.0)
    h = h / np.maximum(h.sum(axis=1, keepdims=True), 1e-300)
    z = np.where(d.mask, d.prediction, -np.inf)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p = np.where(d.mask, p / p.sum(axis=1, keepdims=True), 0.0)
    p = np.where(d.mask, np.maximum(p, PROB_FLOOR), 0.0)
    p = p / p.sum(axis=1, keepdims=True)

    def kl(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(a > 0, a * np.log(a / np.where(b > 0, b, 1.0)), 0.0)
        return terms.sum(axis=1)

    m = (h + p) / 2
    jsd = np.sqrt(np.maximum(0.5 * kl(h, m) + 0.5 * kl(p, m), 0.0))
    hmax = np.where(d.mask, h, -np.inf)
    majority = hmax == hmax.max(axis=1, keepdims=True)
    unique = majority.sum(axis=1) == 1
    top = (z == z.max(axis=1, keepdims=True)) & d.mask
    with np.errstate(invalid="ignore"):
        acc = np.where(unique, (top & majority).sum(axis=1) / top.sum(axis=1), np.nan)
    return np.column_stack([jsd, kl(h, p), acc])


# -- the sets -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FigureSet:
    """Per-query figures of the benchmarks named ``benchmarks``: ``fn(dense) -> [n_queries, len(columns)]``."""

    name: str
    benchmarks: tuple[str, ...]
    columns: tuple[str, ...]
    fn: Callable[[Dense], np.ndarray]
    #: continuous columns stored rounded to float32 (half the bytes); the report's figures from them
    #: (shown to 3 decimals, and the tests on them) are the same as from float64 -- checked on the
    #: committed records by the byte-for-byte test of REPRODUCTION.md
    float32: tuple[str, ...] = ()

    def column_names(self) -> list[str]:
        return [f"{FIGURE_PREFIX}{self.name}.{c}" for c in self.columns]


_CONFUSION = ("tp", "fp", "fn", "tn")
FIGURE_SETS: dict[str, FigureSet] = {s.name: s for s in (
    FigureSet("separation", ("esnli",), ("n", "sum_pred", "sum_pred2", "sum_grade", "sum_grade2"), separation_rows,
              float32=("sum_pred", "sum_pred2")),
    FigureSet("worldtree", ("worldtree",), ("map_gold", "map_role", "ndcg_gold", "ndcg_role", "relevance_at_k",
                                            "completeness_at_k", "f1ex_at_k"), worldtree_values,
              float32=("map_gold", "map_role", "ndcg_gold", "ndcg_role")),
    FigureSet("winowhy", ("winowhy",), (*(f"zero_{c}" for c in _CONFUSION), "cut", *(f"cut_{c}" for c in _CONFUSION),
                                        "labelled", "valid", "ranked_valid"), winowhy_rows),
    FigureSet("chaosnli", ("chaosnli-snli", "chaosnli-mnli"), ("jsd", "kl", "accuracy"), chaosnli_values,
              float32=("jsd", "kl")),
)}


def figure_sets(benchmark: str) -> list[FigureSet]:
    """The figure sets computed for the records of ``benchmark`` (by name)."""
    return [s for s in FIGURE_SETS.values() if benchmark in s.benchmarks]


def query_figures(benchmark: str, dense: Dense) -> dict[str, np.ndarray]:
    """``{column: [n_queries] float64}`` of every figure set of ``benchmark`` (queries in ``dense`` order)."""
    out: dict[str, np.ndarray] = {}
    for s in figure_sets(benchmark):
        values = np.asarray(s.fn(dense), dtype=np.float64).reshape(len(dense.query_ids), len(s.columns))
        for j, (col, name) in enumerate(zip(s.columns, s.column_names())):
            v = np.ascontiguousarray(values[:, j])
            out[name] = v.astype(np.float32).astype(np.float64) if col in s.float32 else v
    return out
