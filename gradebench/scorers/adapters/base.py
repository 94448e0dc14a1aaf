"""The base of every model adapter: configuration, locating and hashing the model, device and dtype,
provenance for the record, and the batch-size-1 invariance check.

An adapter is a :class:`~gradebench.scorers.Scorer` of kind ``external`` registered in the
scorers' registry (``hf-cross-encoder``, ``hf-sequence-classifier``, ``hf-chat-reward``,
``hf-bi-encoder``, ``hf-llm-judge``), so an external model is a system like any other: records
through :func:`gradebench.experiments.evaluate.evaluate_scorer`, leaderboard rows, paired tests.
A subclass sets ``adapter``, its ``Config`` (a :class:`ModelConfig` subclass), and implements
:meth:`ModelScorer._options` (its resolved options, read from the model's files), :meth:`ModelScorer._load`
and :meth:`ModelScorer._score_pairs`.

**Identity.** What determines an adapter's scores is the content of the model's files (their
sha256, :func:`~gradebench.scorers.adapters.model_files.model_files`), the adapter, its resolved
options, the dtype, the device type, the backend and the scoring configuration. ``identity`` in
the provenance is the sha256 of exactly those; the record id uses it in place of the
configuration, so where the model lies (:data:`LOCATION_KEYS`: its path, Hub id and revision,
display name, device index) does not change the record, and other weights at the same path do.
"""

from __future__ import annotations

import hashlib
from abc import abstractmethod
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from gradebench.benchmark.lists import Lists
from gradebench.errors import InvalidArgumentError, InvarianceError, RemoteCodeError
from gradebench.hashing import sha256_json
from gradebench.scorers._devices import check_device
from gradebench.scorers._tokenizer_files import check_tokenizer_files
from gradebench.scorers._weight_files import check_weight_folder
from gradebench.scorers.adapters.model_files import (
    ModelFolder,
    check_adapter_fits,
    check_no_remote_code,
    locate_model,
    model_files,
    read_json,
)
from gradebench.scorers.adapters.runner import distributed, pick_device
from gradebench.scorers.base import Scorer, ScorerConfig, check_scores
from gradebench.training.tokens import TokenizerKey

__all__ = ["LOCATION_KEYS", "TRUST_KEY", "InvarianceError", "ModelConfig", "ModelScorer", "load_error",
           "refuse_trust_key", "resolved_max_length"]

#: configuration keys that say where a model is, what to call it, or how to check it, not what it computes
LOCATION_KEYS = ("model", "revision", "name", "trust_remote_code", "device", "invariance_queries",
                 "invariance_tolerance")
#: the configuration key that only the command-line flag (or the API argument) may set
TRUST_KEY = "trust_remote_code"
TRUST_MESSAGE = ("cannot be set in a configuration (--set, an experiment or recipe file, a config dict): only the "
                 "command-line flag lets code from a model folder run")
#: default largest difference allowed by the invariance check: float32, and bfloat16/float16
TOLERANCE = {"float32": 1e-4, "half": 5e-2}



def damaged_weights_hint(folder: ModelFolder) -> str:
    """How to fix a weights file that cannot be read: fetch a Hub model's files again, or put a local
    model's files back (its folder and name were right; the file is what is damaged)."""
    if folder.source == "hub":
        revision = f" --revision {folder.revision}" if folder.revision else ""
        return (f"the downloaded file is damaged: fetch it again (online) with "
                f"`hf download {folder.id}{revision} --force-download`, then rerun")
    return "the file is damaged (cut short or overwritten): copy or save the model into this folder again"

class ModelConfig(ScorerConfig):
    """Options every adapter has (``--set key=value``).

    Attributes:
        model: a local model folder or a Hugging Face Hub id (``gradebench eval --model``).
        revision: the Hub revision (branch, tag or commit) of a Hub id.
        name: the name shown on the leaderboard (default: the Hub id, else the folder's name).
        trust_remote_code: allow code inside the model folder to run. Set only by the command-line
            flag ``--trust-remote-code`` or the API's ``trust_remote_code=True`` argument
            (:func:`~gradebench.scorers.adapters.make_model_scorer`); as a key of a configuration
            (``--set``, an experiment file, a recipe, a dict) it is refused, so a file someone sends
            you cannot run code (:data:`TRUST_KEY`).
        batch_size: items per forward pass. Left unset on a CUDA device, a batch instead holds as
            many items as fit a token budget derived from the device's free memory (recorded as
            ``options.max_batch_tokens``; not for the LLM judge).
        max_length: tokens per input; None = the model's own limit (at most 512 for encoders,
            4096 for causal LMs).
        dtype: ``auto`` (float32 on CPU and MPS; bfloat16 on a GPU that has it, else float16),
            or ``float32``, ``bfloat16``, ``float16``.
        device: torch device; None = the best available (cuda > mps > cpu); under a distributed
            launch, ``cuda`` (given or picked) is ``cuda:LOCAL_RANK``.
        bucket: batch items of similar length together (less padding).
        invariance_queries: queries re-scored one item at a time by ``--check-invariance``.
        invariance_tolerance: the largest difference the check allows; None = 1e-4 in float32,
            5e-2 in bfloat16/float16.
    """

    model: str | None = None
    revision: str | None = None
    name: str | None = None
    trust_remote_code: bool = False
    batch_size: int = Field(32, ge=1)
    max_length: int | None = Field(None, ge=8, le=1 << 20)
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    device: str | None = None
    bucket: bool = True
    invariance_queries: int = Field(32, ge=1)
    invariance_tolerance: float | None = Field(None, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _no_trust_from_config(cls, data: Any) -> Any:
        # the last guard: Scorer.make_config refuses the key first, in one line (refuse_trust_key)
        if isinstance(data, dict) and TRUST_KEY in data and data[TRUST_KEY] is not False:
            raise ValueError(f"{TRUST_KEY} {TRUST_MESSAGE}")
        return data


def refuse_trust_key(config: Any) -> None:
    """Refuse a configuration that sets ``trust_remote_code`` (to anything but its default, False).

    Raises:
        RemoteCodeError: the key is there; the fix is the flag ``--trust-remote-code``.
    """
    value = config.get(TRUST_KEY, False) if isinstance(config, dict) else getattr(config, TRUST_KEY, False)
    if value is not False:
        raise RemoteCodeError(TRUST_MESSAGE, key=TRUST_KEY,
                              hint="drop the key and pass --trust-remote-code (make_model_scorer(..., "
                                   "trust_remote_code=True)) only if you trust the model folder")


def load_error(e: Exception, folder: ModelFolder, what: str) -> InvalidArgumentError:
    """The one-line error for a model a library could not load."""
    text = " ".join(str(e).split())
    if len(text) > 300:
        text = text[:300] + "..."
    return InvalidArgumentError(f"cannot load the model as {what} ({type(e).__name__}: {text})", path=folder.path,
                                key="model", hint="check that the folder is complete and fits the adapter")


def resolved_max_length(folder: ModelFolder, requested: int | None, *, cap: int) -> int:
    """``requested``, else the smallest limit the folder states (sentence-transformers' ``max_seq_length``,
    the tokenizer's ``model_max_length``, the config's position count), at most ``cap``."""
    if requested is not None:
        return int(requested)
    limits = []
    sbert = read_json(folder.path / "sentence_bert_config.json", missing={})
    if isinstance(sbert, dict) and isinstance(sbert.get("max_seq_length"), int):
        limits.append(sbert["max_seq_length"])
    tok = read_json(folder.path / "tokenizer_config.json", missing={})
    if isinstance(tok, dict) and isinstance(tok.get("model_max_length"), (int, float)) and tok["model_max_length"] < 1e7:
        limits.append(int(tok["model_max_length"]))
    config = folder.config
    for key in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length"):
        if isinstance(config.get(key), int) and config[key] > 0:
            limits.append(config[key])
            break
    return min([cap, *limits])


class ModelScorer(Scorer):
    """An external model as a scorer (see the module docstring)."""

    kind = "external"  # type: ignore[assignment]
    trainable = False
    adapter: ClassVar[str] = ""
    #: the library that runs the model (recorded)
    backend: ClassVar[str] = "transformers"
    Config = ModelConfig  # type: ignore[assignment]

    def __init__(self, config: Any = None, *, seed: int = 42, trust_remote_code: bool = False) -> None:
        """``trust_remote_code`` is the explicit permission (the flag); ``config`` may not carry it."""
        super().__init__(config, seed=seed)
        if trust_remote_code is not False and trust_remote_code is not True:
            raise InvalidArgumentError(f"trust_remote_code must be True or False, got {trust_remote_code!r}",
                                       key=TRUST_KEY, hint="pass trust_remote_code=True or leave it out")
        if trust_remote_code:
            # model_copy skips validation: the one way in besides a validated (refused) config
            self.config = self.config.model_copy(update={TRUST_KEY: True})
        self._folder: ModelFolder | None = None
        self._files: dict[str, Any] | None = None
        self._options: dict[str, Any] | None = None
        self._model: Any = None
        self._device: str | None = None
        self.tokenizer_key = TokenizerKey()  # the encoding cache's key of the loaded tokenizer

    @classmethod
    def make_config(cls, config: Any) -> Any:
        """The validated config; one that sets ``trust_remote_code`` is refused (see :class:`ModelConfig`)."""
        refuse_trust_key(config)
        return super().make_config(config)

    # -- the model's folder ----------------------------------------------------------------
    @property
    def folder(self) -> ModelFolder:
        """The located model, checked for remote code, for fitting this adapter, for tokenizer files that
        disagree and for damaged weight files (nothing loaded)."""
        if self._folder is None:
            if self.config.model is None:
                raise InvalidArgumentError(f"the {self.name} scorer needs a model", key="model",
                                           hint="gradebench eval --model PATH_OR_HUB_ID, or --set model=PATH")
            folder = locate_model(self.config.model, revision=self.config.revision)
            check_no_remote_code(folder, trust_remote_code=self.config.trust_remote_code)
            check_adapter_fits(self.adapter, folder)
            # a tokenizer class that is not one, or that does not read the folder's tokenizer.json
            check_tokenizer_files(folder.path, trust_remote_code=self.config.trust_remote_code)
            # a damaged weights file is one line naming it, not the loader's SafetensorError/UnpicklingError
            check_weight_folder(folder.path, error=InvalidArgumentError, hint=damaged_weights_hint(folder),
                                loaded_only=True)
            self._folder = folder
        return self._folder

    @property
    def files(self) -> dict[str, Any]:
        if self._files is None:
            self._files = model_files(self.folder)
        return self._files

    def options(self) -> dict[str, Any]:
        """The adapter's resolved options (what ``auto`` and None became), read from the model's files."""
        if self._options is None:
            options = {"max_length": self._max_length(), **self._options_of()}
            budget = self._token_budget()
            if budget is not None:
                options["max_batch_tokens"] = budget
            self._options = options
        return self._options

    #: whether batches may be cut by a token budget on CUDA (the LLM judge reads vocabulary-wide logits)
    token_batching: ClassVar[bool] = True

    def _token_budget(self) -> int | None:
        """On CUDA with ``batch_size`` left at its default: the token budget batches are cut by."""
        if not self.token_batching or "batch_size" in self.config.model_fields_set:
            return None
        from gradebench.training.tokens import token_budget

        return token_budget(self.folder.config, self.device)

    def max_batch_tokens(self, batch_size: int) -> int | None:
        """The token budget of a scoring pass at ``batch_size`` (None: ``batch_size`` items a batch;
        the invariance check's batches of one item are never cut by tokens)."""
        if batch_size != self.config.batch_size:
            return None
        return self.options().get("max_batch_tokens")

    def _max_length(self) -> int:
        return resolved_max_length(self.folder, self.config.max_length, cap=512)

    def _options_of(self) -> dict[str, Any]:
        """Adapter-specific resolved options (beyond ``max_length``)."""
        return {}

    # -- device and dtype -------------------------------------------------------------------
    @property
    def device(self) -> str:
        """The torch device the model runs on (see :class:`ModelConfig`)."""
        if self._device is None:
            import torch

            mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
            # a device this torch cannot use is one line naming it and what is available
            self._device = check_device(pick_device(self.config.device, cuda=torch.cuda.is_available(), mps=mps))
        return self._device

    @property
    def device_type(self) -> str:
        return self.device.split(":", 1)[0]

    @property
    def dtype(self) -> str:
        """The resolved dtype name (``float32``, ``bfloat16`` or ``float16``)."""
        if self.config.dtype != "auto":
            if self.config.dtype == "float16" and self.device_type == "cpu":
                raise InvalidArgumentError("dtype=float16 is not supported on CPU", key="dtype",
                                           hint="use dtype=float32 or dtype=bfloat16 on CPU")
            return self.config.dtype
        if self.device_type != "cuda":
            return "float32"
        import torch

        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"

    def torch_dtype(self) -> Any:
        import torch

        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[self.dtype]

    # -- the loaded model -------------------------------------------------------------------
    @property
    def model(self) -> Any:
        if self._model is None:
            from gradebench.scorers._ce_model import preserved_rng, quiet_loading

            self.options()  # refuse a bad model before loading it
            with preserved_rng(self.seed), quiet_loading():
                self._model = self._load()
        return self._model

    def prepare(self) -> None:
        """Load the model (see :meth:`gradebench.scorers.base.Scorer.prepare`)."""
        self.model  # noqa: B018

    @abstractmethod
    def _load(self) -> Any:
        """Load the model on :attr:`device` in :attr:`dtype` (errors: :func:`load_error`)."""

    # -- scoring ----------------------------------------------------------------------------
    def score(self, lists: Lists) -> np.ndarray:
        """``[n_queries, list_size]`` scores (0 at padding)."""
        return check_scores(lists.unflatten(self.score_lists(lists, batch_size=self.config.batch_size)), lists,
                            who=self.name)

    def score_lists(self, lists: Lists, *, batch_size: int) -> np.ndarray:
        """Flat (row-major) float64 scores of every real candidate of ``lists``."""
        rows, cols = lists.flat_index()
        queries = lists.queries[rows].tolist()
        candidates = lists.candidates[rows, cols].tolist()
        keys = [f"{q}\x1f{c}" for q, c in zip(lists.query_ids[rows].tolist(), lists.candidate_ids[rows, cols].tolist())]
        if not keys:
            return np.zeros(0, dtype=np.float64)
        return np.asarray(self._score_pairs(queries, candidates, keys, batch_size=batch_size), dtype=np.float64)

    @abstractmethod
    def _score_pairs(self, queries: list[str], candidates: list[str], keys: list[str], *,
                     batch_size: int) -> np.ndarray:
        """``[n]`` scores of ``n`` (query, candidate) pairs; ``keys`` seed their batch order."""

    # -- invariance ---------------------------------------------------------------------------
    def tolerance(self) -> float:
        if self.config.invariance_tolerance is not None:
            return float(self.config.invariance_tolerance)
        return TOLERANCE["float32" if self.dtype == "float32" else "half"]

    def check_invariance(self, lists: Lists, scores: np.ndarray) -> dict[str, Any]:
        """Re-score a sample of queries one candidate per batch and compare with ``scores``.

        The sample is the ``invariance_queries`` queries with the smallest
        ``sha256(seed, query_id)``; the result is the record's ``invariance`` entry: the sample
        sizes, the largest absolute difference, the tolerance, and whether it passed.
        """
        prefix = f"gradebench.invariance\x1f{self.seed}\x1f".encode()
        draws = [hashlib.sha256(prefix + str(q).encode("utf-8")).hexdigest() for q in lists.query_ids]
        chosen = sorted(sorted(range(lists.n_queries), key=lambda i: draws[i])[: self.config.invariance_queries])
        sample = lists.take(chosen)
        again = self.score_lists(sample, batch_size=1)
        before = np.asarray(scores, dtype=np.float64)[chosen][:, : sample.list_size][sample.mask]
        diff = float(np.max(np.abs(again - before))) if again.size else 0.0
        tol = self.tolerance()
        return {"batch_size": 1, "n_queries": len(chosen), "n_candidates": int(again.size), "max_abs_diff": diff,
                "tolerance": tol, "passed": bool(diff <= tol)}

    # -- provenance ---------------------------------------------------------------------------
    def provenance(self) -> dict[str, Any]:
        """The record's ``scorer.model`` entry (see :class:`gradebench.experiments.record.ModelProvenance`)."""
        folder, files = self.folder, self.files
        options = self.options()
        _, world, _ = distributed()
        scoring = {k: v for k, v in self.config.model_dump(mode="json").items() if k not in LOCATION_KEYS}
        identity = sha256_json({
            "adapter": self.adapter, "digest": files["digest"], "options": options, "dtype": self.dtype,
            "device_type": self.device_type, "backend": self.backend, "config": scoring,
        })
        return {
            "id": folder.id, "name": self.config.name or folder.name, "source": folder.source,
            "path": str(folder.path), "revision": folder.revision, "adapter": self.adapter, "backend": self.backend,
            "identity": identity, "digest": files["digest"], "weights_sha256": files["weights_sha256"],
            "tokenizer_sha256": files["tokenizer_sha256"], "files": files["files"], "options": options,
            "dtype": self.dtype, "device": self.device_type, "batch_size": self.config.batch_size,
            "processes": world, "order_seed": self.seed, "trust_remote_code": self.config.trust_remote_code,
            "libraries": _library_versions(),
        }

    def describe(self) -> dict[str, Any]:
        """Name, version, kind, config, the model's folder (``model_path``) and its provenance (``model``)."""
        out = super().describe()
        out["model_path"] = str(self.folder.path)
        out["model"] = self.provenance()
        return out


def _library_versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("torch", "transformers", "sentence-transformers", "tokenizers", "vllm"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out
