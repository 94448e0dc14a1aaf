"""Graded lists -> Arrow tables (core columns, then the builder's extra columns) and stats features."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from gradebench.benchmark.summary import RowFeatures
from gradebench.datasets.base import Column, GradedList
from gradebench.errors import BenchmarkError
from gradebench.words import words


def _check(gl: GradedList, columns: Sequence[Column]) -> None:
    n = len(gl.candidates)
    for name in ("candidate_ids", "scores", "relevance"):
        if len(getattr(gl, name)) != n:
            raise BenchmarkError(f"list {gl.query_id}: {name} has {len(getattr(gl, name))} entries for {n} candidates",
                                 hint="a bug in the builder: every per-candidate field needs one entry per candidate")
    n_q = sum(c.level == "query" for c in columns)
    n_c = len(columns) - n_q
    if len(gl.query_extra) != n_q or len(gl.candidate_extra) != n_c:
        raise BenchmarkError(
            f"list {gl.query_id}: {len(gl.query_extra)} query and {len(gl.candidate_extra)} candidate extra values, "
            f"but the builder declares {n_q} and {n_c} columns",
            hint="a bug in the builder: query_extra/candidate_extra must follow its declared columns",
        )


def lists_to_tables(
    columns: Sequence[Column],
    lists: Sequence[GradedList],
    out_splits: Sequence[str],
    stat_columns: Sequence[str] = (),
) -> dict[str, tuple[pa.Table, RowFeatures]]:
    """Rows of a batch of lists, grouped by output split (input order kept).

    ``stat_columns``: numeric query-level columns whose values are kept for the build stats.
    """
    by_split: dict[str, list[GradedList]] = {}
    for gl, split in zip(lists, out_splits, strict=True):
        _check(gl, columns)
        by_split.setdefault(split, []).append(gl)
    q_cols = [c for c in columns if c.level == "query"]
    c_cols = [c for c in columns if c.level == "candidate"]
    out = {}
    for split, gls in by_split.items():
        counts = [len(g.candidates) for g in gls]
        take = pa.array(np.repeat(np.arange(len(gls)), counts))
        cid, text, score, rel, tier = [], [], [], [], []
        cand_extra: list[list] = [[] for _ in c_cols]
        n_words, overlap, human = [], [], []
        for g in gls:
            cid += g.candidate_ids
            text += g.candidates
            score += g.scores
            rel += g.relevance
            tier += g.tiers if g.tiers is not None else [None] * len(g.candidates)
            for col, values in zip(cand_extra, g.candidate_extra):
                col += values
            measured = g.measured or {}
            vocab = None
            for t in g.candidates:
                m = measured.get(t)
                if m is None:
                    if vocab is None:
                        vocab = g.vocab if g.vocab is not None else frozenset(words(g.query))
                    w = words(t)
                    m = len(w), (len(vocab.intersection(w)) / len(vocab) if vocab else 0.0)
                n_words.append(m[0])
                overlap.append(m[1])
            human += [-1] * len(g.candidates) if g.human is None else [int(bool(h)) for h in g.human]
        data = {
            "query_id": pa.array([g.query_id for g in gls], pa.string()).take(take),
            "query": pa.array([g.query for g in gls], pa.string()).take(take),
            "candidate_id": pa.array(cid, pa.string()),
            "candidate": pa.array(text, pa.string()),
            "score": pa.array(score, pa.float64()),
            "relevance": pa.array(rel, pa.int16()),
            "tier": pa.array(tier, pa.string()),
            "split": pa.array([split] * len(cid), pa.string()),
        }
        q_index = {c.name: i for i, c in enumerate(q_cols)}
        c_values = {c.name: values for c, values in zip(c_cols, cand_extra)}
        for c in columns:  # declared order
            if c.level == "query":
                data[c.name] = pa.array([g.query_extra[q_index[c.name]] for g in gls], c.type).take(take)
            else:
                data[c.name] = pa.array(c_values[c.name], c.type)
        stat_values = {
            name: np.asarray([g.query_extra[q_index[name]] for g in gls], dtype=np.float64)
            for name in stat_columns
        }
        feats = RowFeatures.from_rows(counts, score, rel, tier, human, n_words, overlap, stat_values)
        out[split] = (pa.table(data), feats)
    return out
