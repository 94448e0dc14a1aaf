"""``query-blind``: a linear probe on the candidate text alone — how much does a shortcut give away?

The probe never reads the query. Its features are hashed word 1-2-grams and character
3-5-grams of the **candidate text only** (:func:`gradebench.scorers.features.hash_texts`,
``dim = 2**18``), and its score is ``w . x_candidate``. Whatever ranking quality it reaches on
a benchmark comes from properties of the candidates themselves (authorship style, templates,
length, tier-specific vocabulary), so a high query-blind NDCG flags a benchmark whose grades
can be guessed without understanding the query.

Training (on the train split):

* default, ``loss="mse"`` with ``solver="auto"``/``"ridge"``: **within-list ridge regression**,
  deterministic and closed-form up to LSQR's tolerance. With ``X`` the candidate features,
  ``y`` the relevance grades and ``C`` the operator that subtracts each list's mean, it solves
  ``min_w ||C X w - C y||^2 + alpha ||w||^2`` (scipy's ``lsqr`` with ``damp = sqrt(alpha)``):
  the pointwise regression of grade differences inside each list, so per-query offsets (which
  a query-blind model cannot know and ranking ignores) cost nothing. ``alpha=None`` picks
  ``alpha`` from :data:`ALPHAS` by the validation ``eval_metric`` (ties -> the larger alpha;
  1.0 without validation lists); each alpha tried is one history record (``epoch`` = its
  position, largest first, warm-started from the previous solution). The seed plays no part.
* any other registered loss, or ``solver="torch"``: the same linear model (an ``EmbeddingBag``
  of width 1 plus a bias, starting at 0) trained by
  :func:`gradebench.training.engine.fit_torch_scorer` with that loss; the seed sets the order
  of the lists, so another seed gives another model.

Either way the model is a weight vector ``w`` (plus bias ``b``) saved as ``weights.safetensors``
next to ``gradebench_scorer.json``; scoring needs no torch.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from gradebench.benchmark.lists import Lists
from gradebench.errors import InvalidArgumentError
from gradebench.scorers import register_scorer
from gradebench.scorers._hashed_base import NGramRange, check_arch, read_scorer_json, write_scorer_json
from gradebench.scorers.base import FitJob, Scorer, ScorerConfig, check_scores

#: ridge penalties tried when ``alpha`` is None, from the strongest to the weakest
ALPHAS: tuple[float, ...] = (100.0, 10.0, 1.0, 0.1)
WEIGHTS_FILE = "weights.safetensors"
CORRUPT_HINT = "the file is truncated or damaged; train the run again (or save the scorer again)"


class QueryBlindConfig(ScorerConfig):
    """``query-blind`` settings."""

    dim: int = Field(2**18, ge=2**4, le=2**24, description="hashing dimension of candidate n-grams")
    word_ngrams: NGramRange = Field((1, 2), description="word n-gram orders (min, max); (0, 0) = none")
    char_ngrams: NGramRange = Field((3, 5), description="character n-gram orders (min, max); (0, 0) = none")
    solver: Literal["auto", "ridge", "torch"] = Field(
        "auto", description="auto: ridge for loss mse, the torch engine otherwise")
    alpha: float | None = Field(None, gt=0, description="ridge penalty; None picks one of ALPHAS on validation")
    max_iter: int = Field(1000, ge=1, description="LSQR iterations per alpha")
    tol: float = Field(1e-6, gt=0, lt=1, description="LSQR atol/btol")


@register_scorer("query-blind")
class QueryBlind(Scorer):
    """Linear model on hashed candidate n-grams only; never reads the query (shortcut probe)."""

    version = 1
    kind = "probe"
    trainable = True
    uses_loss = True
    default_loss = "mse"
    default_lr = 1e-2
    summary = "linear probe on hashed candidate n-grams only (never the query): how much do shortcuts give away"
    Config: ClassVar[type[ScorerConfig]] = QueryBlindConfig
    ARCH_KEYS: ClassVar[tuple[str, ...]] = ("dim", "word_ngrams", "char_ngrams")

    def __init__(self, config: ScorerConfig | dict[str, Any] | None = None, *, seed: int = 42) -> None:
        super().__init__(config, seed=seed)
        self._w: np.ndarray | None = None
        self._b = 0.0

    # -- features ------------------------------------------------------------------------------
    def _features(self, lists: Lists) -> Any:
        from gradebench.scorers.features import list_features

        c = self.config
        return list_features(lists, dim=c.dim, with_query=False, word_ngrams=tuple(c.word_ngrams),
                             char_ngrams=tuple(c.char_ngrams))

    def _flat(self, lists: Lists) -> Any:
        """CSR ``[n_candidates, dim]`` of the real candidates, row-major."""
        from gradebench.scorers.features import hash_texts

        c = self.config
        _, candidates = lists.pairs()
        return hash_texts(candidates, dim=c.dim, word_ngrams=tuple(c.word_ngrams), char_ngrams=tuple(c.char_ngrams))

    def _scores(self, x: Any, lists: Lists, w: np.ndarray, b: float) -> np.ndarray:
        return lists.unflatten(x @ w + b)

    # -- training ------------------------------------------------------------------------------
    def _fit(self, job: FitJob) -> list[dict[str, Any]]:
        """Fit ``w`` (see the module docstring for the two solvers); returns history records.

        The ridge solver is deterministic and writes no checkpoints: ``resume`` simply refits.
        """
        options = job.options
        loss = options.loss or self.default_loss
        if loss != "mse":
            from gradebench.losses import get_loss

            get_loss(loss)  # an unknown name fails first, with close matches
        solver = self.config.solver
        if solver == "auto":
            solver = "ridge" if loss == "mse" else "torch"
        if solver == "ridge":
            if loss != "mse":
                raise InvalidArgumentError(
                    f"solver 'ridge' fits the mse loss, got loss {loss!r}", key="solver",
                    hint="drop --loss (or use --loss mse), or set solver=torch for other losses",
                )
            if options.loss_params:
                raise InvalidArgumentError("loss 'mse' takes no parameters", key="loss_params")
            return self._fit_ridge(job)
        return self._fit_torch(replace(job, options=options.model_copy(update={"loss": loss})))

    def _fit_ridge(self, job: FitJob) -> list[dict[str, Any]]:
        from scipy.sparse.linalg import LinearOperator, lsqr

        from gradebench.training.evaluation import json_ready, list_metrics, metric_key

        train, validation, options, progress = job.train, job.validation, job.options, job.progress
        if train.n_candidates == 0:
            raise InvalidArgumentError("no training lists", hint="check the benchmark's train split")
        # float64 once (a float32 matrix is converted on every product) and the transpose as
        # CSR once: each LSQR iteration is then about 1.7x faster, with bit-identical products
        # (every output element sums the same terms in the same order)
        x = self._flat(train).astype(np.float64)
        xt = x.T.tocsr()
        groups = train.flat_index()[0]
        counts = np.bincount(groups, minlength=train.n_queries).astype(np.float64)

        def center(v: np.ndarray) -> np.ndarray:
            means = np.bincount(groups, weights=v, minlength=train.n_queries) / np.maximum(counts, 1.0)
            return v - means[groups]

        y = center(train.relevance[train.mask])
        op = LinearOperator(x.shape, matvec=lambda w: center(x @ np.ravel(w)),
                            rmatvec=lambda r: xt @ center(np.ravel(r)), dtype=np.float64)
        has_val = validation is not None and validation.n_queries > 0
        alphas = (self.config.alpha,) if self.config.alpha is not None else (ALPHAS if has_val else (1.0,))
        x_val = self._flat(validation) if has_val else None
        key = metric_key(options.eval_metric)
        history: list[dict[str, Any]] = []
        best_value, best_w = -np.inf, None
        w = np.zeros(x.shape[1])
        for i, alpha in enumerate(alphas, start=1):
            if progress is not None:
                progress(i - 1, len(alphas), f"ridge alpha={alpha:g}")
            w, _stop, iters, *_ = lsqr(op, y, damp=float(np.sqrt(alpha)), atol=self.config.tol,
                                       btol=self.config.tol, iter_lim=self.config.max_iter, x0=w)
            resid = op.matvec(w) - y
            rec: dict[str, Any] = {"epoch": i, "step": int(iters), "alpha": float(alpha),
                                   "loss": float(np.mean(resid**2))}
            if x_val is not None:
                metrics = list_metrics(self._scores(x_val, validation, w, 0.0), validation,
                                       eval_metric=options.eval_metric)
                rec.update({metric_key(k): v for k, v in metrics.items()})
            history.append(rec)
            value = float(rec.get(key, 0.0))
            if best_w is None or (np.isfinite(value) and value > best_value):  # ties keep the larger alpha
                best_value, best_w = value, w.copy()
        if progress is not None:
            progress(len(alphas), len(alphas), "ridge done")
        self._w, self._b = best_w, 0.0
        return [json_ready(r) for r in history]

    def _fit_torch(self, job: FitJob) -> list[dict[str, Any]]:
        from gradebench.scorers._torch_common import batch_tensors, build_module, predict
        from gradebench.scorers._torch_nets import LinearBag
        from gradebench.training.engine import check_loss, fit_torch_scorer

        train, validation, options = job.train, job.validation, job.options
        check_loss(options.loss, options.loss_params, scorer=self.name)
        net = build_module(LinearBag, self.seed, dim=self.config.dim)
        train_f = self._features(train)
        val_f = self._features(validation) if validation is not None and validation.n_queries else None
        parts = ("candidate",)

        def score_fn(lists: Lists) -> np.ndarray:
            lf = val_f if (lists is validation and val_f is not None) else self._features(lists)
            return predict(net, lf, parts)

        history = fit_torch_scorer(
            net, train=train, validation=validation, options=options, output_dir=job.run_dir,
            collate=lambda rows, width: batch_tensors(train_f, rows, width, parts), score_fn=score_fn,
            default_lr=self.default_lr, resume=job.resume, progress=job.progress, scorer=self.name,
        )
        self._w = net.weight.weight.detach().cpu().numpy()[:, 0].astype(np.float64)
        self._b = float(net.bias.detach().cpu())
        return history

    # -- inference -----------------------------------------------------------------------------
    def score(self, lists: Lists) -> np.ndarray:
        """``w . x_candidate + b`` for every real candidate (the query is never read)."""
        if self._w is None:
            raise InvalidArgumentError(f"scorer {self.name!r} is not trained",
                                       hint="train it first (gradebench train) or load a trained run")
        return check_scores(self._scores(self._flat(lists), lists, self._w, self._b), lists, who=self.name)

    # -- persistence ---------------------------------------------------------------------------
    def save(self, directory: Path) -> None:
        """``weights.safetensors`` (``w`` float64 ``[dim]``, ``b`` float64 ``[1]``) + ``gradebench_scorer.json``."""
        from safetensors.numpy import save_file

        if self._w is None:
            raise InvalidArgumentError(f"scorer {self.name!r} is not trained", hint="train it before saving")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".{WEIGHTS_FILE}.tmp"
        save_file({"w": np.ascontiguousarray(self._w), "b": np.asarray([self._b])}, str(tmp))
        tmp.replace(directory / WEIGHTS_FILE)
        write_scorer_json(self, directory)

    @classmethod
    def load(cls, directory: Path, config: ScorerConfig | dict[str, Any] | None = None, *,
             seed: int = 42) -> QueryBlind:
        """Rebuild a scorer saved by :meth:`save` (``config`` None: the saved one)."""
        from safetensors.numpy import load_file

        from gradebench.scorers._weight_files import check_weight_file, load_error

        directory = Path(directory)
        saved = read_scorer_json(directory, cls.name)
        saved_config = saved.get("config") or {}
        scorer = cls(saved_config if config is None else config, seed=seed)
        check_arch(saved_config, scorer.config, cls.ARCH_KEYS, directory)
        path = directory / WEIGHTS_FILE
        if not path.is_file():
            raise InvalidArgumentError(f"no {WEIGHTS_FILE} in the model folder", path=directory,
                                       hint="give the folder that the scorer's save() wrote")
        check_weight_file(path, error=InvalidArgumentError, hint=CORRUPT_HINT)
        try:
            tensors = load_file(str(path))
        except Exception as e:  # noqa: BLE001 - what the header check cannot see (e.g. an unreadable file)
            raise load_error(e, path, what="the saved weights", error=InvalidArgumentError,
                             hint=CORRUPT_HINT) from None
        w = tensors.get("w")
        if w is None or w.shape != (scorer.config.dim,):
            raise InvalidArgumentError(f"{WEIGHTS_FILE} holds no weight vector of size {scorer.config.dim}",
                                       path=path, hint="save the scorer again")
        b = tensors.get("b", np.zeros(1))
        if b.shape != (1,):
            raise InvalidArgumentError(f"{WEIGHTS_FILE} holds a bias of shape {b.shape}, not (1,)", path=path,
                                       hint="save the scorer again")
        scorer._w = w.astype(np.float64)
        scorer._b = float(b[0])
        return scorer
