"""``lexical-gbdt``: LightGBM lambdarank on dense lexical features plus sparse hashed words (the strong lexical ceiling).

``lambdamart`` learns from 14 dense lexical features; a word model that reads which words a
candidate uses, which it shares with the query, and which words go with which query label
ranks much better on benchmarks whose tiers differ in wording (issue 18: 0.725 -> ~0.89
pairwise agreement on ``esnli-contrast``). This scorer is that word model, so a benchmark's
"lexical ceiling" is measured against a strong learner, not a weak one.

Features of a (query, candidate) pair (``[n_candidates, 16 + k]``):

* dense: :data:`gradebench.scorers.lexical.FEATURE_NAMES` (lengths, overlaps, shared bigrams,
  BM25, negation/reasoning/label-word counts, ...), plus ``query_negations`` (negation words in
  the query) and ``shared_negations`` (distinct negation words in both);
* sparse, binary: :func:`gradebench.scorers.features.word_cross_features` hashed into ``dim``
  columns: candidate words and bigrams, query words, shared words, new words, and the crosses
  of the query's label with the candidate's words and bigrams. Of these ``dim`` columns, the
  ``max_columns`` that most train candidates have (at least ``min_count``; ties by column) are
  kept; which ones is part of the saved model.

The query's label is read from the column ``label_column`` of the lists (``Lists.extra``, e.g.
``bench.lists(split, columns=("tier", "label"))``); lists without it train and score without
the label crosses (the fitted model remembers which, and refuses lists that lack a label it was
trained with).

Training: ``LGBMRanker(objective="lambdarank")``, early-stopped on NDCG@5 of the validation
lists. ``tune=True`` tries every point of :data:`GRID` (``num_leaves``, ``min_child_samples``)
and keeps the best by the validation ``eval_metric`` (ties: the first in grid order); each point
is one history record. Deterministic: ``deterministic=True``, column-wise histograms, one
thread, ``seed`` as LightGBM's ``random_state``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from gradebench.benchmark.lists import Lists
from gradebench.errors import GradebenchError, InvalidArgumentError, RunError
from gradebench.scorers import Scorer, ScorerConfig, register_scorer
from gradebench.scorers.base import FitJob, check_scores
from gradebench.scorers.lambdamart import _groups
from gradebench.scorers.lexical import FEATURE_NAMES, NEGATIONS

MODEL_FILE = "lexical_gbdt.txt"
META_FILE = "lexical_gbdt.json"
#: the dense features, in column order (then the kept hashed word columns, named ``w<column>``)
DENSE_NAMES: tuple[str, ...] = (*FEATURE_NAMES, "query_negations", "shared_negations")
#: (num_leaves, min_child_samples) tried with ``tune=True``
GRID: tuple[tuple[int, int], ...] = ((15, 20), (31, 20), (63, 10))
#: bump when the features change (a saved model records it)
FEATURE_VERSION = 1


class LexicalGBDTConfig(ScorerConfig):
    """``lexical-gbdt`` settings."""

    n_estimators: int = Field(500, ge=1, description="most boosting rounds")
    learning_rate: float = Field(0.1, gt=0)
    num_leaves: int = Field(31, ge=2)
    min_child_samples: int = Field(20, ge=1)
    early_stopping_rounds: int = Field(30, ge=1)
    tune: bool = Field(False, description="pick (num_leaves, min_child_samples) from GRID on the validation lists")
    dim: int = Field(2**18, ge=2**4, le=2**24, description="hashing dimension of the word features")
    max_columns: int = Field(5000, ge=0, description="most hashed word columns kept (the most frequent in train)")
    min_count: int = Field(5, ge=1, description="train candidates a kept word column needs")
    label_column: str | None = Field("label", description="the lists' column holding the query's label; None: no crosses")


def _lightgbm() -> Any:
    try:
        import lightgbm
    except ImportError:  # pragma: no cover - depends on the environment
        raise GradebenchError(
            "scorer 'lexical-gbdt' needs LightGBM, which is not installed",
            hint="pip install 'gradebench[lambdamart]' (or pip install lightgbm)",
        ) from None
    return lightgbm


def query_labels(lists: Lists, column: str | None) -> list[str | None] | None:
    """The label of each real candidate's query (row-major), or None when ``lists`` has no ``column``."""
    if column is None or column not in lists.extra:
        return None
    rows, cols = lists.flat_index()
    return [None if v is None else str(v) for v in lists.extra[column][rows, cols].tolist()]


def _dense(lists: Lists) -> np.ndarray:
    from gradebench.scorers.lexical import lexical_features
    from gradebench.scorers.text import tokenize_all

    base = lexical_features(lists)
    rows, cols = lists.flat_index()
    q_neg = [set(t) & NEGATIONS for t in tokenize_all(lists.queries.tolist())]
    c_tok = tokenize_all(lists.candidates[rows, cols].tolist())
    extra = np.zeros((len(c_tok), 2))
    for i, (r, toks) in enumerate(zip(rows.tolist(), c_tok)):
        extra[i] = (len(q_neg[r]), len(q_neg[r] & set(toks)))
    return np.hstack([base, extra])


@register_scorer("lexical-gbdt")
class LexicalGBDT(Scorer):
    """LightGBM lambdarank on dense lexical features + hashed words, shared words and label x word crosses."""

    kind = "gbdt"
    trainable = True
    summary = ("LightGBM lambdarank on lexical features + hashed candidate/query/shared words and label x word "
               "crosses (the strong lexical ceiling)")
    Config: ClassVar[type[ScorerConfig]] = LexicalGBDTConfig

    def list_columns(self) -> tuple[str, ...]:
        return () if self.config.label_column is None else (self.config.label_column,)

    def __init__(self, config: Any = None, *, seed: int = 42) -> None:
        super().__init__(config, seed=seed)
        self._booster: Any = None
        self._columns: np.ndarray | None = None
        self._uses_label = False
        self._params: dict[str, Any] = {}

    # -- features ------------------------------------------------------------------------------
    def _words(self, lists: Lists, labels: list[str | None] | None) -> Any:
        from gradebench.scorers.features import word_cross_features

        queries, candidates = lists.pairs()
        return word_cross_features(queries, candidates, labels, dim=self.config.dim)

    def _matrix(self, lists: Lists) -> Any:
        """CSR ``[n_candidates, len(DENSE_NAMES) + kept columns]`` float64 of the real candidates."""
        import scipy.sparse as sp

        labels = query_labels(lists, self.config.label_column)
        if self._uses_label and labels is None:
            raise InvalidArgumentError(
                f"lexical-gbdt was trained with the query label column {self.config.label_column!r}, "
                "which these lists lack", key="label_column",
                hint=f"read the lists with columns=('tier', {self.config.label_column!r})",
            )
        words = self._words(lists, labels if self._uses_label else None)
        return sp.hstack([sp.csr_matrix(_dense(lists)), _keep(words, self._columns, self.config.dim)],
                         format="csr", dtype=np.float64)

    # -- training ------------------------------------------------------------------------------
    def _fit(self, job: FitJob) -> list[dict[str, Any]]:
        import scipy.sparse as sp

        lgb = _lightgbm()
        cfg, train, validation = self.config, job.train, job.validation
        if train.n_candidates == 0:
            raise InvalidArgumentError("no training lists", hint="check the benchmark's train split")
        labels = query_labels(train, cfg.label_column)
        self._uses_label = labels is not None
        words = self._words(train, labels)
        self._columns = _select_columns(words, cfg.max_columns, cfg.min_count)
        x = sp.hstack([sp.csr_matrix(_dense(train)), _keep(words, self._columns, cfg.dim)], format="csr",
                      dtype=np.float64)
        y, g = _groups(train)
        has_val = validation is not None and validation.n_queries > 0
        xv = self._matrix(validation) if has_val else None
        grid = GRID if cfg.tune and has_val else ((cfg.num_leaves, cfg.min_child_samples),)
        names = [*DENSE_NAMES, *(f"w{c}" for c in self._columns.tolist())]
        history: list[dict[str, Any]] = []
        best: tuple[float, Any, dict[str, Any]] = (-np.inf, None, {})
        for i, (leaves, min_child) in enumerate(grid, start=1):
            params = dict(num_leaves=leaves, min_child_samples=min_child)
            model = lgb.LGBMRanker(
                objective="lambdarank", n_estimators=cfg.n_estimators, learning_rate=cfg.learning_rate,
                random_state=self.seed, deterministic=True, force_col_wise=True, n_jobs=1, verbose=-1, **params,
            )
            fit_kw: dict[str, Any] = {"group": g, "feature_name": names}
            callbacks = []
            if has_val:
                vy, vg = _groups(validation)
                fit_kw.update(eval_X=(xv,), eval_y=(vy,), eval_group=[vg], eval_at=[5])
                callbacks.append(lgb.early_stopping(cfg.early_stopping_rounds, verbose=False))
            model.fit(x, y, callbacks=callbacks, **fit_kw)
            trees = int(model.booster_.current_iteration())
            rec: dict[str, Any] = {"epoch": i, **params, "trees": trees}
            value = 0.0
            if has_val:
                from gradebench.training.evaluation import list_metrics, metric_key

                scores = validation.unflatten(model.booster_.predict(xv, num_threads=1))
                metrics = list_metrics(scores, validation, eval_metric=job.options.eval_metric)
                rec.update({metric_key(k): v for k, v in metrics.items()})
                value = float(rec.get(metric_key(job.options.eval_metric), 0.0))
            history.append(rec)
            if best[1] is None or value > best[0]:
                best = (value, model.booster_, {**params, "trees": trees})
            if job.progress is not None:
                job.progress(i, len(grid), f"lexical-gbdt: num_leaves={leaves}, {trees} trees")
        _, self._booster, self._params = best
        return history

    # -- inference -----------------------------------------------------------------------------
    def score(self, lists: Lists) -> np.ndarray:
        if self._booster is None:
            raise InvalidArgumentError("lexical-gbdt is not trained",
                                       hint="train it first (gradebench train --scorer lexical-gbdt)")
        out = np.zeros(lists.mask.shape)
        if lists.n_candidates:
            out[lists.mask] = self._booster.predict(self._matrix(lists), num_threads=1)
        return check_scores(out, lists, who=self.name)

    def fitted(self) -> dict[str, Any]:
        """What training chose: kept word columns, whether label crosses are used, the grid point and trees."""
        if self._booster is None:
            return {}
        return {"word_columns": len(self._columns), "label_crosses": self._uses_label, **self._params}

    # -- persistence ---------------------------------------------------------------------------
    def save(self, directory: Path) -> None:
        """``lexical_gbdt.txt`` (the LightGBM model), its sha256 (``lexical_gbdt.txt.sha256``) and
        ``lexical_gbdt.json`` (kept columns, label use, config)."""
        from gradebench.hashing import sha256_hex
        from gradebench.paths import write_json_atomic, write_text_atomic
        from gradebench.scorers._lgbm_text import DIGEST_SUFFIX, digest_line

        if self._booster is None:
            raise GradebenchError("lexical-gbdt is not trained; nothing to save")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        text = self._booster.model_to_string()
        write_text_atomic(directory / MODEL_FILE, text)
        write_text_atomic(directory / (MODEL_FILE + DIGEST_SUFFIX), digest_line(sha256_hex(text), MODEL_FILE))
        write_json_atomic(directory / META_FILE, {
            "feature_version": FEATURE_VERSION, "dense": list(DENSE_NAMES), "columns": self._columns.tolist(),
            "label_crosses": self._uses_label, "params": self._params,
            "config": self.config.model_dump(mode="json"),
        })

    @classmethod
    def load(cls, directory: Path, config: Any = None, *, seed: int = 42) -> LexicalGBDT:
        """Rebuild a scorer saved by :meth:`save` (``config`` None: the saved one).

        The model text is checked before LightGBM parses it (LightGBM aborts the process on a
        malformed model): against the sha256 recorded at save time, and for its structure
        (:mod:`gradebench.scorers._lgbm_text`; the only check for a run saved without a digest).

        Raises:
            RunError: naming the file: a missing, unreadable, truncated or changed model or
                metadata file, or a model of another feature set.
            InvalidArgumentError: ``config`` disagrees with the saved ``dim`` or ``label_column``.
        """
        from gradebench.scorers._lgbm_text import DIGEST_SUFFIX, read_model_text

        directory = Path(directory)
        path, meta_path = directory / MODEL_FILE, directory / META_FILE
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
                raise ValueError("not an object with a config")
        except (OSError, ValueError) as e:
            raise RunError(f"cannot read the lexical-gbdt metadata ({type(e).__name__}: {e})", path=meta_path,
                           hint=_REDO) from None
        if meta.get("feature_version") != FEATURE_VERSION or meta.get("dense") != list(DENSE_NAMES):
            raise RunError("the saved lexical-gbdt model uses another feature set", path=directory,
                           hint="train it again with this gradebench version")
        text = read_model_text(path, kind="lexical-gbdt", digest_path=directory / (MODEL_FILE + DIGEST_SUFFIX),
                               hint=_REDO)
        lgb = _lightgbm()
        try:
            booster = lgb.Booster(model_str=text)
        except Exception as e:  # noqa: BLE001 - LightGBMError, or a bad pandas_categorical line
            first = (str(e).strip().splitlines() or [""])[0]
            raise RunError(f"cannot load the lexical-gbdt model ({type(e).__name__}: {first})", path=path,
                           hint=_REDO) from None
        scorer = cls(meta.get("config") if config is None else config, seed=seed)
        for key in ("dim", "label_column"):
            if meta["config"].get(key) != getattr(scorer.config, key):
                raise InvalidArgumentError(
                    f"the saved lexical-gbdt model has {key}={meta['config'].get(key)!r}, "
                    f"not {getattr(scorer.config, key)!r}", key=key, path=directory,
                    hint="load it without a config, or with the one it was trained with",
                )
        try:
            columns = np.asarray(meta["columns"], dtype=np.int64)
            uses_label = bool(meta["label_crosses"])
        except (KeyError, TypeError, ValueError) as e:
            raise RunError(f"the lexical-gbdt metadata has no usable columns or label_crosses ({type(e).__name__}: {e})",
                           path=meta_path, hint=_REDO) from None
        if columns.ndim != 1 or booster.num_feature() != len(DENSE_NAMES) + len(columns):
            raise RunError("the saved lexical-gbdt model and its metadata disagree on the features", path=path,
                           hint=_REDO)
        scorer._booster = booster
        scorer._columns = columns
        scorer._uses_label = uses_label
        scorer._params = dict(meta.get("params") or {})
        return scorer


_REDO = "the run is corrupt; train it again (gradebench train --scorer lexical-gbdt)"


def _select_columns(words: Any, max_columns: int, min_count: int) -> np.ndarray:
    """The (sorted) hashed columns that at least ``min_count`` rows have, the ``max_columns`` most common."""
    counts = np.bincount(words.indices, minlength=words.shape[1])
    cols = np.flatnonzero(counts >= min_count)
    order = np.lexsort((cols, -counts[cols]))  # most common first, ties by column
    return np.sort(cols[order[:max_columns]]).astype(np.int64)


def _keep(words: Any, columns: np.ndarray, dim: int) -> Any:
    """``words[:, columns]`` (CSR), by a column remap (no dense intermediate)."""
    import scipy.sparse as sp

    remap = np.full(dim, -1, dtype=np.int64)
    remap[columns] = np.arange(len(columns))
    new = remap[words.indices]
    keep = new >= 0
    row_of = np.repeat(np.arange(words.shape[0]), np.diff(words.indptr))
    return sp.csr_matrix((words.data[keep].astype(np.float64), (row_of[keep], new[keep])),
                         shape=(words.shape[0], len(columns)))
