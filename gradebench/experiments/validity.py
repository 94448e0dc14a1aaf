"""Learned validity figures of a benchmark: how far a shortcut gets, measured on held-out lists.

The build stats' ``shortcut_probes`` rank by one surface feature at a time. These figures
*learn* instead, on the train split, and are scored on the test split:

- ``query_blind``: the ``query-blind`` scorer (ridge on hashed n-grams of the candidate text
  alone; it never reads the query). Whatever it reaches comes from the candidates themselves
  (authorship style, templates, length), so a high value means the grades can be guessed
  without understanding the query. ``gradebench build`` warns above :data:`WARN_QUERY_BLIND`.
- ``bm25``: BM25 of the candidate against the query (untrained), on the test split.
- ``lexical_ceiling``: LightGBM LambdaMART on 14 lexical features (overlap, shared bigrams,
  length ratio, label words, ...), the best cheap lexical ranker; absent without lightgbm.

Each is reported as pairwise agreement with the grades (ties count 1/2; 0.5 = chance) and
NDCG@5. Training uses at most :data:`MAX_TRAIN` train lists and scoring at most
:data:`MAX_TEST` test lists (the first ones, in stored order), so the figures cost seconds
and are deterministic. A benchmark without both splits is carved 50/50 by query-id hash for
this purpose only (``carved: true``); one with fewer than :data:`MIN_LISTS` lists in either
part gets no figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gradebench.metrics import NDCG, MetricSpec, PairwiseAgreement

#: what each figure reports (its keys: ``pairwise_agreement``, ``ndcg@5``)
VALIDITY_METRICS: tuple[MetricSpec, ...] = (PairwiseAgreement(), NDCG(k=5))
#: a learned query-blind probe above this pairwise agreement makes `build` warn
WARN_QUERY_BLIND = 0.6
MAX_TRAIN = 2000
MAX_TEST = 5000
MIN_LISTS = 20


def _round(x: float) -> float:
    return round(float(x), 4)


def _figures(scores: np.ndarray, lists) -> dict[str, float]:
    """Each of :data:`VALIDITY_METRICS` of ``scores`` on ``lists``, rounded to 4 digits."""
    from gradebench.training.evaluation import evaluate_lists

    result = evaluate_lists(scores, lists, VALIDITY_METRICS)
    return {name: _round(v) for name, v in result.values(VALIDITY_METRICS).items()}


def _split_lists(table, benchmark: str, fingerprint: str) -> tuple[Any, Any, bool]:
    """(train lists, test lists, carved?) from a flat table with a ``split`` column."""
    import pyarrow.compute as pc

    from gradebench.benchmark.lists import lists_from_table
    from gradebench.benchmark.splits import resplit_of

    splits = set(table.column("split").unique().to_pylist())
    carved = not {"train", "test"} <= splits
    if carved:
        qids = table.column("query_id").to_pylist()
        side = {q: resplit_of(q, (50, 0, 50)) for q in set(qids)}
        labels = [side[q] for q in qids]
        import pyarrow as pa

        table = table.set_column(table.schema.get_field_index("split"), "split", pa.array(labels, pa.string()))
    parts = {}
    for name in ("train", "test"):
        sub = table.filter(pc.equal(table.column("split"), name))
        parts[name] = lists_from_table(sub, benchmark=benchmark, fingerprint=fingerprint, split=name)
    return parts["train"], parts["test"], carved


def validity_figures(folder: Path, files: Sequence[str], *, benchmark: str, fingerprint: str) -> dict[str, Any]:
    """The learned validity figures of the benchmark whose data files are ``files`` under ``folder``."""
    import pyarrow.parquet as pq

    from gradebench.scorers import make_scorer
    from gradebench.training.options import TrainOptions

    columns = ["query_id", "query", "candidate_id", "candidate", "relevance", "score", "split"]
    table = pq.read_table([str(Path(folder) / f) for f in files], columns=columns)
    train, test, carved = _split_lists(table, benchmark, fingerprint)
    out: dict[str, Any] = {
        "carved": carved,
        "train_lists": min(train.n_queries, MAX_TRAIN),
        "test_lists": min(test.n_queries, MAX_TEST),
        "warn_query_blind": WARN_QUERY_BLIND,
    }
    if train.n_queries < MIN_LISTS or test.n_queries < MIN_LISTS:
        out["skipped"] = f"fewer than {MIN_LISTS} train or test lists"
        return out
    train, test = train.head(MAX_TRAIN), test.head(MAX_TEST)
    options = TrainOptions(loss="mse", seed=0)
    blind = make_scorer("query-blind", {"alpha": 1.0}, seed=0)
    blind.fit(train, None, options)
    out["query_blind"] = _figures(blind.score(test), test)
    out["bm25"] = _figures(make_scorer("bm25").score(test), test)
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        out["lexical_ceiling"] = None
    else:
        ranker = make_scorer("lambdamart", seed=0)
        ranker.fit(train, None, TrainOptions(loss="lambdarank", seed=0))
        out["lexical_ceiling"] = _figures(ranker.score(test), test)
    return out


def warning(figures: dict[str, Any] | None) -> str | None:
    """The line `gradebench build` prints when the query-blind probe gives too much away."""
    qb = (figures or {}).get("query_blind")
    if qb and qb["pairwise_agreement"] > WARN_QUERY_BLIND:
        return (
            f"a query-blind probe reaches pairwise agreement {qb['pairwise_agreement']:.3f} "
            f"(> {WARN_QUERY_BLIND}) on held-out lists: the grades can be guessed without reading the query"
        )
    return None
