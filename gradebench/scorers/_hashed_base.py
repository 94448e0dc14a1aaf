"""Base class of the torch scorers over hashed features (``hashed-mlp``, ``pair-mlp``).

Importing this module imports neither torch nor transformers; they load inside the methods.

A subclass sets ``Config`` (a :class:`HashedConfig` subclass), :meth:`_net_spec` (the module
class and its arguments), ``loss_kinds`` and the registry metadata. The base class featurises
lists (:func:`gradebench.scorers.features.list_features`), trains through
:func:`gradebench.training.engine.fit_torch_scorer`, scores in batches of queries on the
module's device, and saves ``model.safetensors`` (the module's ``state_dict``) plus
``gradebench_scorer.json`` (name, version, config, seed): no pickles.

Determinism: the module is initialised from ``torch.Generator(seed)`` and Trainer shuffles and
applies dropout from ``options.seed``, so one seed gives identical scores (same process, same
device); another seed gives another model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import numpy as np
from pydantic import AfterValidator, Field

from gradebench.benchmark.lists import Lists
from gradebench.errors import InvalidArgumentError
from gradebench.paths import write_json_atomic
from gradebench.scorers.base import FitJob, Scorer, ScorerConfig, check_scores

if TYPE_CHECKING:  # pragma: no cover
    from gradebench.scorers.features import ListFeatures

SCORER_FILE = "gradebench_scorer.json"


def _ngram_range(value: tuple[int, int]) -> tuple[int, int]:
    from gradebench.scorers.features import valid_ngram_range

    if not valid_ngram_range(value):
        raise ValueError("must be [min, max] with 1 <= min <= max <= 16, or [0, 0] for none")
    return value


#: a config's n-gram orders ``(min, max)``: ``1 <= min <= max <= 16``, or ``(0, 0)`` for none
NGramRange = Annotated[tuple[int, int], AfterValidator(_ngram_range)]


class HashedConfig(ScorerConfig):
    """Feature hashing and inference settings shared by the hashed-feature scorers."""

    dim: int = Field(2**16, ge=2**4, le=2**22, description="hashing dimension of query/candidate n-grams")
    shared_dim: int = Field(2**14, ge=2**4, le=2**22, description="hashing dimension of shared words")
    word_ngrams: NGramRange = Field((1, 2), description="word n-gram orders (min, max); (0, 0) = none")
    char_ngrams: NGramRange = Field((3, 5), description="character n-gram orders (min, max); (0, 0) = none")
    embed_dim: int = Field(32, ge=1, le=4096, description="width of the n-gram embeddings")
    hidden: int = Field(128, ge=1, le=8192)
    layers: int = Field(1, ge=1, le=8, description="hidden Linear-ReLU-Dropout blocks of the encoder")
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    batch_size: int = Field(256, ge=1, description="queries per inference batch")


#: config keys that fix the weights' shapes: a saved model loads only with the same values
ARCH_KEYS: tuple[str, ...] = ("dim", "shared_dim", "word_ngrams", "char_ngrams", "embed_dim", "hidden", "layers")




def write_scorer_json(scorer: Scorer, directory: Path) -> None:
    """Write ``gradebench_scorer.json``: name, version, seed and config (checked by :func:`read_scorer_json`)."""
    write_json_atomic(Path(directory) / SCORER_FILE, {
        "scorer": scorer.name, "version": scorer.version, "seed": scorer.seed,
        "config": scorer.config.model_dump(mode="json"),
    })


def read_scorer_json(directory: Path, name: str) -> dict[str, Any]:
    path = Path(directory) / SCORER_FILE
    if not path.is_file():
        raise InvalidArgumentError(f"not a saved {name} scorer (no {SCORER_FILE})", path=directory,
                                   hint="give the folder that the scorer's save() wrote")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise InvalidArgumentError(f"{SCORER_FILE} is not valid JSON ({e})", path=path,
                                   hint="save the scorer again") from None
    if not isinstance(obj, dict) or obj.get("scorer") != name:
        found = obj.get("scorer") if isinstance(obj, dict) else None
        raise InvalidArgumentError(f"the folder holds a {found!r} scorer, not {name!r}", path=path,
                                   hint=f"load it with --scorer {found}" if found else "save the scorer again")
    return obj


def check_arch(saved: dict[str, Any], config: ScorerConfig, keys: tuple[str, ...], directory: Path) -> None:
    """Raise if ``config`` differs from the saved config on a weight-shaping key."""
    current = config.model_dump(mode="json")
    for key in keys:
        if key in saved and saved[key] != current.get(key):
            raise InvalidArgumentError(
                f"the saved model has {key}={saved[key]!r} but the config asks for {current.get(key)!r}",
                path=directory, key=key, hint=f"drop {key}= or set {key}={saved[key]}",
            )


class HashedNeuralScorer(Scorer):
    """A torch module over hashed features, trained with a gradebench loss (see the module docstring)."""

    kind = "neural"
    trainable = True
    uses_loss = True
    default_lr = 1e-3
    Config: ClassVar[type[ScorerConfig]] = HashedConfig
    #: loss kinds fit() accepts
    loss_kinds: ClassVar[tuple[str, ...]] = ("pointwise", "pairwise", "listwise")
    #: feature parts the module reads (see _torch_common.batch_tensors)
    parts: ClassVar[tuple[str, ...]] = ("query", "candidate", "shared", "dense")
    #: cap on queries * width**2 per inference batch (pairwise modules), or None
    max_cells: ClassVar[int | None] = None

    def __init__(self, config: ScorerConfig | dict[str, Any] | None = None, *, seed: int = 42) -> None:
        super().__init__(config, seed=seed)
        self._net: Any = None

    # -- to implement ------------------------------------------------------------------------
    def _net_spec(self) -> tuple[type, dict[str, Any]]:
        """``(module class, constructor kwargs)``."""
        raise NotImplementedError

    # -- shared machinery --------------------------------------------------------------------
    def _encoder_kwargs(self) -> dict[str, Any]:
        from gradebench.scorers.features import DENSE_FEATURES

        c = self.config
        return dict(dim=c.dim, shared_dim=c.shared_dim, n_dense=len(DENSE_FEATURES), embed_dim=c.embed_dim,
                    hidden=c.hidden, layers=c.layers, dropout=c.dropout)

    def _new_net(self) -> Any:
        from gradebench.scorers._torch_common import build_module

        cls, kwargs = self._net_spec()
        return build_module(cls, self.seed, **kwargs)

    def _features(self, lists: Lists) -> ListFeatures:
        from gradebench.scorers.features import list_features

        c = self.config
        return list_features(lists, dim=c.dim, shared_dim=c.shared_dim, with_query=True,
                             word_ngrams=tuple(c.word_ngrams), char_ngrams=tuple(c.char_ngrams))

    def _predict(self, net: Any, lf: ListFeatures) -> np.ndarray:
        from gradebench.scorers._torch_common import predict

        return predict(net, lf, self.parts, batch_queries=self.config.batch_size, max_cells=self.max_cells)

    @property
    def net(self) -> Any:
        if self._net is None:
            raise InvalidArgumentError(f"scorer {self.name!r} is not trained",
                                       hint="train it first (gradebench train) or load a trained run")
        return self._net

    def _fit(self, job: FitJob) -> list[dict[str, Any]]:
        """Train with ``options.loss`` (None: :attr:`default_loss`); returns one record per epoch.

        Checkpoints and ``history.jsonl`` go to ``run_dir`` (a temp folder when None); see
        :func:`gradebench.training.engine.fit_torch_scorer` for resume and early stopping.
        """
        from gradebench.scorers._torch_common import batch_tensors
        from gradebench.training.engine import check_loss, fit_torch_scorer

        train, validation, options = job.train, job.validation, job.options
        if options.loss is None:
            options = options.model_copy(update={"loss": self.default_loss})
        check_loss(options.loss, options.loss_params, scorer=self.name, kinds=self.loss_kinds)
        net = self._new_net()
        train_f = self._features(train)
        val_f = self._features(validation) if validation is not None and validation.n_queries else None
        parts = self.parts

        def collate(rows: np.ndarray, width: int) -> dict[str, Any]:
            return batch_tensors(train_f, rows, width, parts)

        def score_fn(lists: Lists) -> np.ndarray:
            lf = val_f if (lists is validation and val_f is not None) else self._features(lists)
            return self._predict(net, lf)

        history = fit_torch_scorer(
            net, train=train, validation=validation, options=options, output_dir=job.run_dir, collate=collate,
            score_fn=score_fn, default_lr=self.default_lr, resume=job.resume, progress=job.progress,
            loss_kinds=self.loss_kinds, scorer=self.name,
        )
        self._net = net
        return history

    def score(self, lists: Lists) -> np.ndarray:
        """``[n_queries, list_size]`` scores of the trained module (0 at padding)."""
        net = self.net
        return check_scores(self._predict(net, self._features(lists)), lists, who=self.name)

    def save(self, directory: Path) -> None:
        """Write ``model.safetensors`` and ``gradebench_scorer.json`` into ``directory``."""
        from gradebench.scorers._torch_common import save_weights

        directory = Path(directory)
        save_weights(self.net, directory)
        write_scorer_json(self, directory)

    @classmethod
    def load(cls, directory: Path, config: ScorerConfig | dict[str, Any] | None = None, *,
             seed: int = 42) -> HashedNeuralScorer:
        """Rebuild a scorer saved by :meth:`save` (``config`` None: the saved one).

        Raises:
            InvalidArgumentError: not a saved scorer of this class, or ``config`` changes a
                key that shapes the weights (:data:`ARCH_KEYS`).
        """
        from gradebench.scorers._torch_common import load_weights

        directory = Path(directory)
        saved = read_scorer_json(directory, cls.name)
        saved_config = saved.get("config") or {}
        scorer = cls(saved_config if config is None else config, seed=seed)
        check_arch(saved_config, scorer.config, ARCH_KEYS + getattr(cls, "extra_arch_keys", ()), directory)
        scorer._net = load_weights(scorer._new_net(), directory)
        return scorer
