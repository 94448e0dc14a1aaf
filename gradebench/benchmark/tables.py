"""Graded lists -> Arrow tables (core columns, then the builder's extra columns) and stats features."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from gradebench.benchmark.summary import RowFeatures, tier_codes
from gradebench.datasets.base import Column, GradedColumns, GradedList


def lists_to_tables(
    columns: Sequence[Column],
    lists: Sequence[GradedList],
    out_splits: Sequence[str],
    stat_columns: Sequence[str] = (),
) -> dict[str, tuple[pa.Table, RowFeatures]]:
    """Rows of a batch of lists, grouped by output split (input order kept); see :func:`columns_to_tables`."""
    return columns_to_tables(columns, GradedColumns.from_lists(lists, columns), out_splits, stat_columns)


def columns_to_tables(
    columns: Sequence[Column],
    batch: GradedColumns,
    out_splits: Sequence[str],
    stat_columns: Sequence[str] = (),
) -> dict[str, tuple[pa.Table, RowFeatures]]:
    """The rows of a batch in columns, one table per output split (input order kept).

    Each column is converted to Arrow once for the whole batch; a batch that spans several
    output splits (``--resplit``) is then cut with one ``take`` per split.
    ``stat_columns``: numeric query-level columns whose values are kept for the build stats.
    """
    if len(out_splits) != len(batch.query_ids):
        raise ValueError(f"{len(out_splits)} output splits for {len(batch.query_ids)} queries")
    q_cols = [c for c in columns if c.level == "query"]
    c_cols = [c for c in columns if c.level == "candidate"]
    counts = np.asarray(batch.counts, dtype=np.int64)
    q_arrays = {
        "query_id": pa.array(batch.query_ids, pa.string()),
        "query": pa.array(batch.queries, pa.string()),
        **{c.name: pa.array(values, c.type) for c, values in zip(q_cols, batch.query_extra)},
    }
    score = np.asarray(batch.scores, dtype=np.float64)
    c_arrays = {
        "candidate_id": _arrow(batch.candidate_ids, pa.string()),
        "candidate": _arrow(batch.candidates, pa.string()),
        "score": pa.array(score, pa.float64()),
        "relevance": _arrow(batch.relevance, pa.int16()),
        "tier": _arrow(batch.tiers, pa.string()),
        **{c.name: _arrow(values, c.type) for c, values in zip(c_cols, batch.candidate_extra)},
    }
    tier, tier_names = tier_codes(c_arrays["tier"])
    feats = {
        "score": score,
        "relevance": np.asarray(batch.relevance, dtype=np.int16),
        "tier": tier,
        "human": np.asarray(batch.human, dtype=np.int8),
        "n_words": np.asarray(batch.n_words, dtype=np.int32),
        "overlap": np.asarray(batch.overlap, dtype=np.float64),
    }
    q_index = {c.name: i for i, c in enumerate(q_cols)}
    stat_values = {name: np.asarray(batch.query_extra[q_index[name]], dtype=np.float64) for name in stat_columns}
    names = list(dict.fromkeys(out_splits))
    of_query = np.asarray([names.index(s) for s in out_splits] if len(names) > 1 else [0] * len(out_splits))
    out = {}
    for k, split in enumerate(names):
        whole = len(names) == 1
        q_take = None if whole else np.flatnonzero(of_query == k)
        r_take = None if whole else np.flatnonzero(np.repeat(of_query == k, counts))
        q_counts = counts if whole else counts[q_take]
        q_rows = np.repeat(np.arange(q_counts.shape[0]) if whole else q_take, q_counts)
        n_rows = int(q_counts.sum())
        data = {}
        for name in ("query_id", "query"):
            data[name] = q_arrays[name].take(q_rows)
        for name in ("candidate_id", "candidate", "score", "relevance", "tier"):
            data[name] = c_arrays[name] if whole else c_arrays[name].take(r_take)
        data["split"] = pa.array([split] * n_rows, pa.string())
        for c in columns:  # declared order
            if c.level == "query":
                data[c.name] = q_arrays[c.name].take(q_rows)
            else:
                data[c.name] = c_arrays[c.name] if whole else c_arrays[c.name].take(r_take)
        part = {f: v if whole else v[r_take] for f, v in feats.items()}
        values = {n: v if whole else v[q_take] for n, v in stat_values.items()}
        out[split] = (pa.table(data), RowFeatures(counts=q_counts, query_values=values, tier_names=tier_names, **part))
    return out


def _arrow(values, type_: pa.DataType) -> pa.Array:
    """``values`` (a list, a numpy array or an Arrow array) as an Arrow array of ``type_``."""
    if isinstance(values, pa.Array):
        return values if values.type == type_ else values.cast(type_)
    return pa.array(values, type_)
