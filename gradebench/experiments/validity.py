"""Learned validity figures of a benchmark: how far a shortcut gets, measured on held-out lists.

The build stats' ``shortcut_probes`` rank by one surface feature at a time. These figures
*learn* instead, on the train split, and are scored on the test split:

- ``query_blind``: the ``query-blind`` scorer (ridge on hashed n-grams of the candidate text
  alone; it never reads the query). Whatever it reaches comes from the candidates themselves
  (authorship style, templates, length), so a high value means the grades can be guessed
  without understanding the query. ``gradebench build`` warns above :data:`WARN_QUERY_BLIND`.
- ``label_aware``: the ``label-aware-blind`` scorer: the same probe, whose n-grams are also
  crossed with the query's label (the NLI label, the δ-NLI update type: the builder's
  ``query_label`` column), and nothing else of the query. A high value means the wording that
  goes with each label gives the grades away. None (with ``label_aware_skipped`` saying why)
  when the queries carry no label. ``build`` warns above :data:`WARN_LABEL_AWARE`.
- ``bm25``: BM25 of the candidate against the query (untrained), on the test split.
- ``lexical_ceiling_dense``: LightGBM LambdaMART on 14 dense lexical features (``lambdamart``:
  overlap, shared bigrams, length ratio, label words, ...); called ``lexical_ceiling`` before
  figures version 2. Absent without lightgbm.
- ``lexical_ceiling_strong``: the ``lexical-gbdt`` scorer: LightGBM lambdarank on those dense
  features plus hashed candidate words and bigrams, query words, shared words, negation counts
  and label x candidate-word crosses, early-stopped (``full``: also tuned over its grid) on a
  carve of the train lists (:data:`STRONG_CARVE` of them, by query-id hash; never the test
  split). It learns from more train lists than the others (:data:`STRONG_MAX_TRAIN`), as a word
  model needs them; ``lexical_ceiling_strong_setup`` records how many and what it picked.
  ``build`` warns above :data:`WARN_LEXICAL_STRONG`.

Each is reported as pairwise agreement with the grades (ties count 1/2; 0.5 = chance) and
NDCG@5. The probes, BM25 and the dense ceiling train on at most :data:`MAX_TRAIN` train lists
and every figure is scored on at most :data:`MAX_TEST` test lists (the first ones, in stored
order), so the figures cost seconds and are deterministic; only those lists are read from the
data files, so the cost does not grow with the benchmark. On benchmarks of
:data:`BACKGROUND_MIN_ROWS` to :data:`BACKGROUND_MAX_ROWS` rows the two LightGBM ceilings (below)
are fitted in a worker process while the other figures are measured. A benchmark without both splits is
carved 50/50 by query-id hash for this purpose only (``carved: true``); one with fewer than
:data:`MIN_LISTS` lists in either part gets no figures.

``mode`` (:data:`MODES`): ``fast`` (the default of ``gradebench build``) trains the strong ceiling
once with its default settings on at most 8,000 train lists (every list of an e-SNLI-size
build; about 11 s of one core for all the figures of ``esnli-contrast``); ``full`` uses every
train list and tunes it over :data:`gradebench.scorers.lexical_gbdt.GRID` (three fits), picking
by pairwise agreement on the carve. The figures record their ``mode``
and :data:`VALIDITY_VERSION`; a build finds cached figures of an older version (or ``fast``
ones when ``full`` is asked for) stale and measures them again.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Literal

import numpy as np

from gradebench.metrics import NDCG, MetricSpec, PairwiseAgreement

#: what each figure reports (its keys: ``pairwise_agreement``, ``ndcg@5``)
VALIDITY_METRICS: tuple[MetricSpec, ...] = (PairwiseAgreement(), NDCG(k=5))
#: version of the figures' keys and methods (1: query_blind, bm25, lexical_ceiling)
VALIDITY_VERSION = 2
ValidityMode = Literal["fast", "full"]
MODES: tuple[str, ...] = ("fast", "full")
#: a learned query-blind probe above this pairwise agreement makes `build` warn
WARN_QUERY_BLIND = 0.6
#: the label-aware blind probe above this pairwise agreement makes `build` warn
WARN_LABEL_AWARE = 0.65
#: the strong lexical ceiling above this pairwise agreement makes `build` warn
WARN_LEXICAL_STRONG = 0.85
MAX_TRAIN = 2000
MAX_TEST = 5000
MIN_LISTS = 20
#: train lists the strong lexical ceiling learns from (and carves its tuning lists from), per mode
STRONG_MAX_TRAIN: dict[str, int | None] = {"fast": 8000, "full": None}
#: share of those lists carved off (by query-id hash) to early-stop and tune the strong ceiling
STRONG_CARVE = 0.15
#: up to this many candidate rows, the lexical ceilings are fitted in a worker process while the
#: build is validated and the other figures are measured (e-SNLI dev: 12.5 s -> 9.2 s); above it,
#: in this process, after them. Started before validation (the engine's alongside hook), the
#: worker adds little to a big build's peak: 2.5M rows, 1,461 MB against 1,427 MB, 54.3 s against
#: 57.2 s. When it started after validation, it added about 400 MB (1,690 against 1,275 MB)
BACKGROUND_MAX_ROWS = 10_000_000
#: below this many rows the fit takes less than starting the worker (about 1 s): it stays here
BACKGROUND_MIN_ROWS = 20_000


def _round(x: float) -> float:
    return round(float(x), 4)


def _figures(scores: np.ndarray, lists) -> dict[str, float]:
    """Each of :data:`VALIDITY_METRICS` of ``scores`` on ``lists``, rounded to 4 digits."""
    from gradebench.training.evaluation import evaluate_lists

    result = evaluate_lists(scores, lists, VALIDITY_METRICS)
    return {name: _round(v) for name, v in result.values(VALIDITY_METRICS).items()}


def _split_lists(paths: Sequence[str], columns: list[str], benchmark: str, fingerprint: str,
                 quotas: dict[str, float], test_split: str = "test") -> tuple[Any, Any, bool, dict[str, int]]:
    """(train lists, test lists, carved?, lists per side) from the data files, reading only what is used.

    Each side keeps its first ``quotas[side]`` lists in stored order (what the figures use);
    the files are streamed in row batches, and reading stops once both sides are full, so the
    cost does not grow with the benchmark (a 2.5M-candidate build reads about 13,000 lists).
    The test side is the split ``test_split`` (the reader check scores another held-out split
    with it). A benchmark without both a train and that split is carved 50/50 by query-id hash.
    The rows of a list are contiguous, as the build writes them. ``lists per side``: the lists
    kept, which is every list of a side that has fewer than its quota.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from gradebench.benchmark.lists import lists_from_table
    from gradebench.benchmark.splits import resplit_of

    files = [pq.ParquetFile(p) for p in paths]
    per_file = [_file_splits(f) for f in files]
    splits = set().union(*per_file) if per_file else set()
    carved = not {"train", test_split} <= splits
    side_of = {"train": "train", test_split: "test"}  # a split's side (None: a split that is not used)
    kept: dict[str, list] = {"train": [], "test": []}
    count = {"train": 0, "test": 0}
    accepted: dict[str, str | None] = {}  # query id -> its side, or None (over quota / another split)

    def full() -> bool:
        return all(count[s] >= quotas[s] for s in count)

    for f, file_splits in zip(files, per_file):
        if full():
            break
        if not carved and not any(side_of.get(s) in count and count[side_of[s]] < quotas[side_of[s]]
                                  for s in file_splits):
            continue  # a file of a split that is not used, or of a side already full
        done = False
        for batch in f.iter_batches(batch_size=8192, columns=columns):
            qids = batch.column("query_id").to_pylist()
            split_of_row = batch.column("split").to_pylist()
            take: dict[str, list[int]] = {"train": [], "test": []}
            for i, q in enumerate(qids):
                side = accepted.get(q, "")
                if side == "":  # a new list
                    if full():  # every list of both sides is complete: their rows are contiguous
                        done = True
                        break
                    side = resplit_of(q, (50, 0, 50)) if carved else side_of.get(split_of_row[i])
                    if side not in count or count[side] >= quotas[side]:
                        side = None
                    else:
                        count[side] += 1
                    accepted[q] = side
                if side is not None:
                    take[side].append(i)
            for side, rows in take.items():
                if rows:
                    part = batch.take(pa.array(rows, pa.int64()))
                    if carved:
                        part = part.set_column(part.schema.get_field_index("split"), "split",
                                               pa.array([side] * len(rows), pa.string()))
                    kept[side].append(part)
            if done or (not carved and all(side_of.get(s) not in count or count[side_of[s]] >= quotas[side_of[s]]
                                           for s in file_splits)):
                break  # the rest of this file is of a side already full
    empty = pa.schema([files[0].schema_arrow.field(c) for c in columns]).empty_table() if files else None
    parts = {}
    for side, batches in kept.items():
        table = pa.Table.from_batches(batches) if batches else empty
        parts[side] = lists_from_table(table, benchmark=benchmark, fingerprint=fingerprint, split=side)
    return parts["train"], parts["test"], carved, count


def _file_splits(f: Any) -> set[str]:
    """The split values of a data file, from its row groups' statistics (all rows read when absent)."""
    index = f.schema_arrow.get_field_index("split")
    values: set[str] = set()
    for g in range(f.metadata.num_row_groups):
        stats = f.metadata.row_group(g).column(index).statistics
        if stats is None or not stats.has_min_max:
            return set(f.read(columns=["split"]).column("split").unique().to_pylist())
        lo, hi = stats.min, stats.max
        lo, hi = (lo.decode() if isinstance(lo, bytes) else lo), (hi.decode() if isinstance(hi, bytes) else hi)
        if lo != hi:
            return set(f.read(columns=["split"]).column("split").unique().to_pylist())
        values.add(lo)
    return values


def _carve(lists) -> tuple[Any, Any]:
    """(fit lists, tuning lists): :data:`STRONG_CARVE` of ``lists`` by a hash of the query id, stored order kept."""
    from gradebench.hashing import uniform

    tune = np.fromiter((uniform("validity-carve", str(q)) < STRONG_CARVE for q in lists.query_ids),
                       dtype=bool, count=lists.n_queries)
    return lists.take(np.flatnonzero(~tune)), lists.take(np.flatnonzero(tune))


def check_mode(mode: Any) -> str:
    """``mode`` if it is one of :data:`MODES`, else a one-line error naming them."""
    from gradebench.errors import InvalidArgumentError

    if mode not in MODES:
        raise InvalidArgumentError(f"validity mode must be one of {', '.join(MODES)}, got {mode!r}", key="validity",
                                   hint="e.g. --validity fast (the default) or --validity full")
    return str(mode)


def validity_figures(
    folder: Path,
    files: Sequence[str],
    *,
    benchmark: str,
    fingerprint: str,
    query_label: str | None = None,
    mode: ValidityMode = "fast",
) -> dict[str, Any]:
    """The learned validity figures of the benchmark whose data files are ``files`` under ``folder``.

    ``query_label`` names the column that holds each query's label (None: the queries carry
    none, and the label-aware probe is skipped); ``mode`` is ``fast`` or ``full``.
    """
    with measuring(folder, files, benchmark=benchmark, fingerprint=fingerprint, query_label=query_label,
                   mode=mode) as finish:
        return finish()


@contextmanager
def measuring(
    folder: Path,
    files: Sequence[str],
    *,
    benchmark: str,
    fingerprint: str,
    query_label: str | None = None,
    mode: ValidityMode = "fast",
) -> Iterator[Callable[[], dict[str, Any]]]:
    """:func:`validity_figures` in two steps: on entry the lists are read and the two lexical
    ceilings (LightGBM) start in a worker process (on benchmarks of :data:`BACKGROUND_MIN_ROWS`
    to :data:`BACKGROUND_MAX_ROWS` rows); the block gets ``finish()``, which measures the other
    figures here, waits for the worker and returns them all.

    Whatever the block does before ``finish()`` (the build's validation) runs meanwhile on the
    other core. Leaving the block without calling it stops the worker.
    """
    import pyarrow.parquet as pq

    mode = check_mode(mode)
    paths = [str(Path(folder) / f) for f in files]
    query_label, skipped_label = _label_column(paths, query_label)
    train, strong_train, test, carved = _read(paths, benchmark=benchmark, fingerprint=fingerprint,
                                              query_label=query_label, mode=mode)
    out: dict[str, Any] = {
        "version": VALIDITY_VERSION,
        "mode": mode,
        "carved": carved,
        "train_lists": train.n_queries,
        "test_lists": test.n_queries,
        "query_label": query_label,
        "warn_query_blind": WARN_QUERY_BLIND,
        "warn_label_aware": WARN_LABEL_AWARE,
        "warn_lexical_ceiling_strong": WARN_LEXICAL_STRONG,
    }
    if train.n_queries < MIN_LISTS or test.n_queries < MIN_LISTS:
        out["skipped"] = f"fewer than {MIN_LISTS} train or test lists"
        yield lambda: out
        return
    ceilings = nullcontext(None)
    if has_lightgbm():  # imported where the ceilings are fitted
        # the two LightGBM ceilings take about as long as all the other figures together: a
        # worker process fits them meanwhile (same inputs, same figures), so this process never
        # imports LightGBM (and scikit-learn with it: 1.3 s), unless the benchmark is tiny
        from gradebench.benchmark.workers import background_call

        fit, tune = _carve(strong_train)
        args = (train, fit, tune, test, query_label, mode)
        if BACKGROUND_MIN_ROWS <= sum(pq.ParquetFile(p).metadata.num_rows for p in paths) <= BACKGROUND_MAX_ROWS:
            ceilings = background_call(_lexical_ceilings, *args)
        else:
            ceilings = nullcontext(lambda: _lexical_ceilings(*args))
    with ceilings as ceiling_figures:
        yield lambda: _the_rest(out, train, test, query_label, skipped_label, ceiling_figures)


def has_lightgbm() -> bool:
    """Whether the two lexical ceilings can be fitted (LightGBM is installed; it is not imported here)."""
    return importlib.util.find_spec("lightgbm") is not None


def _label_column(paths: Sequence[str], query_label: str | None) -> tuple[str | None, str | None]:
    """(the label column the data files hold, or None; why the label-aware probe is skipped, or None)."""
    import pyarrow.parquet as pq

    if query_label is None:
        return None, "the queries carry no label"
    if not all(query_label in pq.read_schema(p).names for p in paths):
        return None, f"the data files have no {query_label!r} column"
    return query_label, None


def _read(paths: Sequence[str], *, benchmark: str, fingerprint: str, query_label: str | None, mode: str,
          test_split: str = "test") -> tuple[Any, Any, Any, bool]:
    """(train lists, the strong ceiling's train lists, test lists, carved?) as the figures use them:
    the first :data:`MAX_TRAIN` train lists, the first ``STRONG_MAX_TRAIN[mode]`` of them for the
    strong ceiling, the first :data:`MAX_TEST` lists of ``test_split`` (see :func:`_split_lists`)."""
    columns = ["query_id", "query", "candidate_id", "candidate", "relevance", "score", "split"]
    strong_max = STRONG_MAX_TRAIN[mode]
    quotas = {"train": float("inf") if strong_max is None else max(MAX_TRAIN, strong_max), "test": MAX_TEST}
    train, test, carved, _ = _split_lists(paths, columns + ([query_label] if query_label else []), benchmark,
                                          fingerprint, quotas, test_split)
    strong_train = train if strong_max is None else train.head(strong_max)
    return train.head(MAX_TRAIN), strong_train, test.head(MAX_TEST), carved


def _the_rest(out: dict[str, Any], train, test, query_label: str | None, skipped_label: str | None,
              ceiling_figures: Callable[[], dict[str, Any] | None] | None) -> dict[str, Any]:
    """The probes and BM25 here, then the lexical ceilings' figures (see :func:`measuring`)."""
    out["query_blind"] = _figures(_fit_blind(train).score(test), test)
    if query_label is None:
        out["label_aware"] = None
        out["label_aware_skipped"] = skipped_label
    else:
        out["label_aware"] = _figures(_fit_label_aware(train, query_label).score(test), test)
    out["bm25"] = _figures(_bm25().score(test), test)
    ceilings = ceiling_figures() if ceiling_figures is not None else None
    if ceilings is None:  # no LightGBM
        out["lexical_ceiling_dense"] = out["lexical_ceiling_strong"] = None
        return out
    out.update(ceilings)
    return out


def _fit_blind(train):
    """The ``query_blind`` figure's probe, trained on ``train``."""
    from gradebench.scorers import make_scorer
    from gradebench.training.options import TrainOptions

    blind = make_scorer("query-blind", {"alpha": 1.0}, seed=0)
    blind.fit(train, None, TrainOptions(loss="mse", seed=0))
    return blind


def _fit_label_aware(train, query_label: str):
    """The ``label_aware`` figure's probe (n-grams crossed with the column ``query_label``), trained on ``train``."""
    from gradebench.scorers import make_scorer
    from gradebench.training.options import TrainOptions

    aware = make_scorer("label-aware-blind", {"alpha": 1.0, "label_column": query_label}, seed=0)
    aware.fit(train, None, TrainOptions(loss="mse", seed=0))
    return aware


def _bm25():
    """The ``bm25`` figure's ranker (untrained)."""
    from gradebench.scorers import make_scorer

    return make_scorer("bm25")


def _fit_dense(train):
    """The ``lexical_ceiling_dense`` figure's LambdaMART, trained on ``train``."""
    from gradebench.scorers import make_scorer
    from gradebench.training.options import TrainOptions

    ranker = make_scorer("lambdamart", seed=0)
    ranker.fit(train, None, TrainOptions(loss="lambdarank", seed=0))
    return ranker


def _fit_strong(fit, tune, query_label: str | None, mode: str):
    """The ``lexical_ceiling_strong`` figure's ranker, fit on ``fit`` and early-stopped on ``tune``."""
    from gradebench.scorers import make_scorer
    from gradebench.training.options import TrainOptions

    strong = make_scorer("lexical-gbdt", {"label_column": query_label, "tune": mode == "full"}, seed=0)
    strong.fit(fit, tune if tune.n_queries else None,
               TrainOptions(loss="lambdarank", eval_metric="pairwise_agreement", seed=0))
    return strong


def _lexical_ceilings(train, fit, tune, test, query_label: str | None, mode: str) -> dict[str, Any] | None:
    """The dense ceiling (LambdaMART on ``train``) and the strong one (:func:`_strong_ceiling`);
    None where LightGBM cannot be imported."""
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        return None
    return {"lexical_ceiling_dense": _figures(_fit_dense(train).score(test), test),
            **_strong_ceiling(fit, tune, test, query_label, mode)}


def _strong_ceiling(fit, tune, test, query_label: str | None, mode: str) -> dict[str, Any]:
    """The ``lexical_ceiling_strong`` figure and its setup (fit on ``fit``, early-stopped on ``tune``)."""
    strong = _fit_strong(fit, tune, query_label, mode)
    return {
        "lexical_ceiling_strong": _figures(strong.score(test), test),
        "lexical_ceiling_strong_setup": {"train_lists": fit.n_queries, "tune_lists": tune.n_queries,
                                         **strong.fitted()},
    }


#: the attackers of the figures, in the order they are measured: (figure key, scorer, what it reads)
ATTACKERS: tuple[tuple[str, str, str], ...] = (
    ("query_blind", "query-blind", "the candidate only"),
    ("label_aware", "label-aware-blind", "the candidate and the query's label"),
    ("bm25", "bm25", "query and candidate"),
    ("lexical_ceiling_dense", "lambdamart", "14 lexical features"),
    ("lexical_ceiling_strong", "lexical-gbdt", "lexical and hashed word features"),
)


def read_attacker_lists(folder: Path, files: Sequence[str], *, benchmark: str, fingerprint: str,
                        query_label: str | None = None, mode: ValidityMode = "fast",
                        split: str = "test") -> dict[str, Any]:
    """The lists the figures use, with ``split`` as the held-out side: ``{"train", "strong_train",
    "test", "carved", "query_label", "label_skipped"}`` (``query_label`` None where the data
    files lack the column)."""
    paths = [str(Path(folder) / f) for f in files]
    label, skipped = _label_column(paths, query_label)
    train, strong_train, test, carved = _read(paths, benchmark=benchmark, fingerprint=fingerprint,
                                              query_label=label, mode=check_mode(mode), test_split=split)
    return {"train": train, "strong_train": strong_train, "test": test, "carved": carved, "query_label": label,
            "label_skipped": skipped}


def attacker_values(read: dict[str, Any], *, mode: ValidityMode = "fast",
                    step: Callable[[str], None] | None = None,
                    pairs: dict[str, dict[str, dict[str, Any]]] | None = None) -> dict[str, dict[str, np.ndarray]]:
    """Each attacker's per-query values on the held-out lists of ``read`` (:func:`read_attacker_lists`):
    ``{figure key: {metric name: [n_queries] values}}`` (NaN: undefined for that query), the
    attackers trained exactly as for the figures, in this process. The label-aware probe is
    left out where the queries carry no label, the two ceilings where LightGBM is missing.
    The mean over the defined queries, rounded to 4 digits, is the figure of :func:`validity_figures`
    on the same lists. ``step(message)`` is called before each attacker. With ``pairs`` (a dict),
    each attacker's :func:`grade_pairs` on the lists is put there under its figure key."""
    train, test, label = read["train"], read["test"], read["query_label"]
    fits: list[tuple[str, Callable[[], Any]]] = [("query_blind", lambda: _fit_blind(train))]
    if label is not None:
        fits.append(("label_aware", lambda: _fit_label_aware(train, label)))
    fits.append(("bm25", _bm25))
    if has_lightgbm():
        fits.append(("lexical_ceiling_dense", lambda: _fit_dense(train)))
        fits.append(("lexical_ceiling_strong", lambda: _fit_strong(*_carve(read["strong_train"]), label,
                                                                   check_mode(mode))))
    names = {key: scorer for key, scorer, _ in ATTACKERS}
    out = {}
    for key, fit in fits:
        if step is not None:
            step(f"training and scoring the {names[key]} attacker")
        scores = fit().score(test)
        out[key] = per_query(scores, test)
        if pairs is not None:
            pairs[key] = grade_pairs(scores, test)
    return out


def grade_pairs(scores: np.ndarray, lists) -> dict[str, dict[str, Any]]:
    """Pairwise agreement per pair of grades, pooled over every pair of the lists (ties count 1/2):
    ``{"3>2": {"agreement": share ordered right, "pairs": count}, ...}``, better grade first, best
    pairs first. Where an overall figure is above chance, this says which grades the cue tells apart."""
    right: dict[tuple[float, float], float] = {}
    count: dict[tuple[float, float], int] = {}
    for s, rel, ok in zip(scores, lists.relevance, lists.mask):
        s, rel = s[ok], rel[ok]
        hi, lo = np.nonzero(rel[:, None] > rel[None, :])
        if not len(hi):
            continue
        won = (s[hi] > s[lo]) + 0.5 * (s[hi] == s[lo])
        keys = np.stack([rel[hi], rel[lo]], axis=1)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        sums = np.bincount(inv.ravel(), weights=won, minlength=len(uniq))
        ns = np.bincount(inv.ravel(), minlength=len(uniq))
        for (a, b), w, n in zip(uniq.tolist(), sums.tolist(), ns.tolist()):
            right[(a, b)] = right.get((a, b), 0.0) + w
            count[(a, b)] = count.get((a, b), 0) + n
    name = lambda g: str(int(g)) if float(g).is_integer() else f"{g:g}"  # noqa: E731
    return {f"{name(a)}>{name(b)}": {"agreement": _round(right[(a, b)] / count[(a, b)]), "pairs": count[(a, b)]}
            for a, b in sorted(count, key=lambda k: (-k[0], -k[1]))}


def per_query(scores: np.ndarray, lists) -> dict[str, np.ndarray]:
    """``{metric name: [n_queries] values}`` of :data:`VALIDITY_METRICS` (NaN: undefined for that query)."""
    from gradebench.training.evaluation import evaluate_lists

    result = evaluate_lists(scores, lists, VALIDITY_METRICS)
    return {m.name: np.asarray(result.per_query[m.name], dtype=np.float64) for m in VALIDITY_METRICS}


def figure_of(values: np.ndarray) -> float | None:
    """A figure from per-query values: their mean over the defined queries, rounded as the stored figures (None: none defined)."""
    defined = values[~np.isnan(values)]
    return _round(defined.mean()) if defined.size else None


def is_stale(figures: dict[str, Any] | None, mode: str) -> bool:
    """Whether cached ``figures`` must be measured again for ``mode``: absent, of an older version, or fast when full is asked."""
    if not figures:
        return True
    if figures.get("version", 1) < VALIDITY_VERSION:
        return True
    return mode == "full" and figures.get("mode") != "full"


def warning_lines(figures: dict[str, Any] | None) -> list[str]:
    """The lines `gradebench build` prints when a shortcut gives too much away (none: an empty list).

    Figures of version 1 (``lexical_ceiling``, no label-aware probe) are read as well.
    """
    from gradebench.benchmark.card import current_figures

    v = current_figures(figures or {})
    out = []
    checks = (
        ("query_blind", WARN_QUERY_BLIND, "a query-blind probe",
         "the grades can be guessed without reading the query"),
        ("label_aware", WARN_LABEL_AWARE, "a probe that reads only the candidate and the query's label",
         "the wording that goes with each label gives the grades away"),
        ("lexical_ceiling_strong", WARN_LEXICAL_STRONG, "a word model (LightGBM on lexical and hashed word features)",
         "word matching and label-specific wording rank nearly as well as understanding could"),
    )
    for key, limit, who, meaning in checks:
        f = v.get(key)
        if f and f["pairwise_agreement"] > limit:
            out.append(f"{who} reaches pairwise agreement {f['pairwise_agreement']:.3f} (> {limit}) on held-out "
                       f"lists: {meaning}")
    return out


def warning(figures: dict[str, Any] | None) -> str | None:
    """The first of :func:`warning_lines`, or None."""
    found = warning_lines(figures)
    return found[0] if found else None
