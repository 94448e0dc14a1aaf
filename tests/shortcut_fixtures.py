"""Synthetic benchmarks whose shortcut is known, for the validity figures and the scorers that measure them.

* ``label_cross``: every list holds four candidates, each a few filler words and one marker
  word (alpha, beta, gamma, delta). Under label ``entailment`` the markers are graded 3, 2, 1,
  0; under ``contradiction`` 0, 1, 2, 3. Each marker's grade depends only on the query's label:
  a probe that knows the label ranks perfectly, one that reads only the candidate is at chance
  (each pair of markers is ordered one way under one label, the other way under the other).
* ``needs_query``: the query names an entity; one candidate names the same entity (grade 1),
  the three others another entity each (grade 0). The label is drawn independently of the
  grades, so neither the candidate text nor the label helps; matching the query does.

Texts come from a local ``numpy.random.default_rng(seed)`` (no global RNG), so a table is the
same on every run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

LABELS = ("entailment", "contradiction")
MARKERS = ("alpha", "beta", "gamma", "delta")
GRADES = {"entailment": (3, 2, 1, 0), "contradiction": (0, 1, 2, 3)}
FILLER = tuple(f"w{i}" for i in range(40))
ENTITIES = tuple(f"ent{i}" for i in range(120))


def shortcut_table(kind: str, *, n_train: int = 80, n_test: int = 40, seed: int = 0) -> pa.Table:
    """A flat benchmark table (core columns, ``label``) of ``kind`` ``label_cross`` or ``needs_query``."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("query_id", "query", "candidate_id", "candidate", "relevance", "score",
                                             "split", "label")}

    def filler(k: int) -> str:
        return " ".join(rng.choice(FILLER, size=k).tolist())

    for q in range(n_train + n_test):
        split = "train" if q < n_train else "test"
        label = LABELS[int(rng.integers(len(LABELS)))]
        if kind == "label_cross":
            query = f"premise: {filler(5)} hypothesis: {filler(4)} label: {label}"
            texts = [f"{filler(3)} {m} {filler(3)}" for m in MARKERS]
            grades = list(GRADES[label])
        elif kind == "needs_query":
            ents = rng.choice(ENTITIES, size=4, replace=False).tolist()
            query = f"premise: {filler(4)} {ents[0]} {filler(2)} hypothesis: {filler(3)} label: {label}"
            texts = [f"{filler(3)} {e} {filler(3)}" for e in ents]
            grades = [1, 0, 0, 0]
        else:  # pragma: no cover - a typo in a test
            raise ValueError(kind)
        order = rng.permutation(4).tolist()  # stored order says nothing
        for j in order:
            cols["query_id"].append(f"q{q:04d}")
            cols["query"].append(query)
            cols["candidate_id"].append(f"q{q:04d}-c{j}")
            cols["candidate"].append(texts[j])
            cols["relevance"].append(grades[j])
            cols["score"].append(grades[j] / max(grades))
            cols["split"].append(split)
            cols["label"].append(label)
    return pa.table({**cols, "relevance": pa.array(cols["relevance"], pa.int64())})


def write_shortcut_benchmark(folder: Path, kind: str, **kw) -> list[str]:
    """Write ``shortcut_table(kind)`` as ``folder/data.parquet``; the file names (for ``validity_figures``)."""
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(shortcut_table(kind, **kw), folder / "data.parquet")
    return ["data.parquet"]


def shortcut_lists(kind: str, split: str, *, with_label: bool = True, **kw):
    """The ``split`` of ``shortcut_table(kind)`` as :class:`~gradebench.benchmark.lists.Lists`."""
    import pyarrow.compute as pc

    from gradebench.benchmark.lists import lists_from_table

    table = shortcut_table(kind, **kw)
    table = table.filter(pc.equal(table.column("split"), split))
    if not with_label:
        table = table.drop_columns(["label"])
    return lists_from_table(table, benchmark=kind, fingerprint="0" * 64, split=split)
