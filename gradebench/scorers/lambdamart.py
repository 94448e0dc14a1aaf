"""``lambdamart``: LightGBM's LambdaMART on the handcrafted lexical features (optional extra).

The classical learning-to-rank baseline (Burges 2010; Ke et al. 2017): gradient-boosted trees
with the lambdarank objective over :data:`gradebench.scorers.lexical.FEATURE_NAMES`. It is the
lexical ceiling of a benchmark: how far word matching, lengths and cue words go when learned.
Training is deterministic (``deterministic=True``, row-wise histograms, one thread, seeded).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from gradebench.benchmark.lists import Lists
from gradebench.errors import GradebenchError, InvalidArgumentError, RunError
from gradebench.hashing import sha256_hex
from gradebench.scorers import Scorer, ScorerConfig, register_scorer
from gradebench.scorers.base import FitJob
from gradebench.scorers.lexical import FEATURE_NAMES, lexical_features

MODEL_FILE = "lambdamart.txt"
FEATURES_FILE = "features.json"


class LambdaMARTConfig(ScorerConfig):
    n_estimators: int = Field(300, ge=1)
    learning_rate: float = Field(0.05, gt=0)
    num_leaves: int = Field(31, ge=2)
    min_child_samples: int = Field(20, ge=1)
    early_stopping_rounds: int = Field(30, ge=1)


def _lightgbm() -> Any:
    try:
        import lightgbm
    except ImportError:  # pragma: no cover - depends on the environment
        raise GradebenchError(
            "scorer 'lambdamart' needs LightGBM, which is not installed",
            hint="pip install 'gradebench[lambdamart]' (or pip install lightgbm)",
        ) from None
    return lightgbm


def _groups(lists: Lists) -> tuple[np.ndarray, np.ndarray]:
    """Integer labels and group sizes in row-major candidate order."""
    rows, cols = lists.flat_index()
    labels = lists.relevance[rows, cols]
    if np.any(labels != np.round(labels)) or np.any(labels < 0):
        raise InvalidArgumentError(
            "lambdamart needs non-negative integer relevance grades",
            hint="use a benchmark whose 'relevance' column holds integer grades",
        )
    return labels.astype(np.int64), lists.lengths.astype(np.int64)


@register_scorer("lambdamart")
class LambdaMART(Scorer):
    """LightGBM ``LGBMRanker(objective="lambdarank")`` on lexical features, early-stopped on NDCG@5."""

    kind = "gbdt"
    trainable = True
    summary = "LightGBM LambdaMART on 14 handcrafted lexical features (the lexical ceiling)"
    Config = LambdaMARTConfig

    def __init__(self, config: Any = None, *, seed: int = 42) -> None:
        super().__init__(config, seed=seed)
        self._booster: Any = None

    def _fit(self, job: FitJob) -> list[dict[str, Any]]:
        lgb = _lightgbm()
        cfg, train, validation = self.config, job.train, job.validation
        x, (y, g) = lexical_features(train), _groups(train)
        params = dict(
            objective="lambdarank", n_estimators=cfg.n_estimators, learning_rate=cfg.learning_rate,
            num_leaves=cfg.num_leaves, min_child_samples=cfg.min_child_samples, random_state=self.seed,
            deterministic=True, force_row_wise=True, n_jobs=1, verbose=-1,
        )
        model = lgb.LGBMRanker(**params)
        fit_kw: dict[str, Any] = {"group": g, "feature_name": list(FEATURE_NAMES)}
        callbacks = []
        if validation is not None and validation.n_queries:
            vy, vg = _groups(validation)
            fit_kw.update(eval_X=(lexical_features(validation),), eval_y=(vy,), eval_group=[vg], eval_at=[5])
            callbacks.append(lgb.early_stopping(cfg.early_stopping_rounds, verbose=False))
        model.fit(x, y, callbacks=callbacks, **fit_kw)
        self._booster = model.booster_
        history = []
        curve = model.evals_result_.get("valid_0", {}).get("ndcg@5", [])
        for i, v in enumerate(curve, start=1):
            history.append({"epoch": i, "eval_ndcg@5": float(v)})
        if job.progress is not None:
            job.progress(1, 1, f"lambdamart: {model.booster_.current_iteration()} trees")
        return history

    def score(self, lists: Lists) -> np.ndarray:
        if self._booster is None:
            raise GradebenchError("lambdamart is not trained", hint="train it first (gradebench train --scorer lambdamart)")
        out = np.zeros(lists.mask.shape)
        if lists.n_candidates:
            out[lists.mask] = self._booster.predict(lexical_features(lists), num_threads=1)
        return out

    def save(self, directory: Path) -> None:
        """``lambdamart.txt`` (LightGBM's text model), its sha256 (``lambdamart.txt.sha256``) and ``features.json``."""
        from gradebench.paths import write_text_atomic
        from gradebench.scorers._lgbm_text import DIGEST_SUFFIX, digest_line

        if self._booster is None:
            raise GradebenchError("lambdamart is not trained; nothing to save")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        text = self._booster.model_to_string()
        write_text_atomic(directory / MODEL_FILE, text)
        write_text_atomic(directory / (MODEL_FILE + DIGEST_SUFFIX), digest_line(sha256_hex(text), MODEL_FILE))
        write_text_atomic(directory / FEATURES_FILE, json.dumps(list(FEATURE_NAMES)) + "\n")

    @classmethod
    def load(cls, directory: Path, config: Any = None, *, seed: int = 42) -> LambdaMART:
        """Rebuild a scorer saved by :meth:`save`.

        The model text is checked before LightGBM parses it (LightGBM aborts the process on a
        malformed model): against the sha256 recorded at save time, and for its structure
        (:mod:`gradebench.scorers._lgbm_text`; the only check for a run saved without a digest).

        Raises:
            RunError: naming the file: a missing, unreadable, truncated or changed model, or a
                ``features.json`` of another feature set.
        """
        from gradebench.scorers._lgbm_text import DIGEST_SUFFIX, read_model_text

        directory = Path(directory)
        path = directory / MODEL_FILE
        features = directory / FEATURES_FILE
        try:
            names = json.loads(features.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise RunError(f"cannot read the LightGBM feature list ({type(e).__name__}: {e})", path=features,
                           hint=_REDO) from None
        if names != list(FEATURE_NAMES):
            raise RunError("the saved LambdaMART model uses another feature set", path=features,
                           hint="train it again with this gradebench version")
        text = read_model_text(path, kind="LambdaMART", digest_path=directory / (MODEL_FILE + DIGEST_SUFFIX),
                               hint=_REDO)
        lgb = _lightgbm()
        scorer = cls(config, seed=seed)
        try:
            scorer._booster = lgb.Booster(model_str=text)
        except Exception as e:  # noqa: BLE001 - LightGBMError, or a bad pandas_categorical line
            first = (str(e).strip().splitlines() or [""])[0]
            raise RunError(f"cannot load the LambdaMART model ({type(e).__name__}: {first})", path=path,
                           hint=_REDO) from None
        if scorer._booster.num_feature() != len(FEATURE_NAMES):
            raise RunError("the saved LambdaMART model uses another feature set", path=path, hint=_REDO)
        return scorer


_REDO = "the run is corrupt; train it again (gradebench train --scorer lambdamart)"
