"""A model's folder: where it is, what its files hash to, whether it asks to run code, which adapter fits.

Everything here reads files only (JSON configs and bytes): no torch, no transformers, no code
from the folder.

* :func:`locate_model`: a local folder, or a Hugging Face Hub id resolved to its snapshot in the
  local cache (``huggingface_hub.snapshot_download``; with ``HF_HUB_OFFLINE=1`` only the cache
  is looked at, and an id that is not there is one line saying so).
* :func:`model_files`: the sha256 of every file a loader reads (weights, tokenizer, configs, and
  code when there is any), by role; the digests of the weights, of the tokenizer and of all of
  them are sha256 over canonical JSON of ``{relative path: sha256}``. Exports a loader never
  reads (``onnx/``, ``openvino/``, README, training-data notes) are left out.
* :func:`check_no_remote_code`: a folder whose ``config.json`` or ``tokenizer_config.json`` maps
  classes to code in the folder (``auto_map``), or whose ``modules.json`` names modules outside
  sentence-transformers, is refused unless ``trust_remote_code`` is given explicitly.
* :func:`detect_adapter` and :func:`check_adapter_fits`: the adapter a folder's configs call for,
  and a one-line refusal when the chosen adapter does not fit the model's head (a bare encoder
  read as a classifier would get a random head and score noise).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gradebench.errors import InvalidArgumentError, RemoteCodeError, SourceNotFoundError
from gradebench.hashing import sha256_file, sha256_json

__all__ = [
    "ADAPTER_NAMES", "ModelFolder", "RemoteCodeError", "check_adapter_fits", "check_no_remote_code", "chat_template_of",
    "detect_adapter", "locate_model", "model_files", "read_json",
]

#: the adapters, in the order ``--adapter`` lists them
ADAPTER_NAMES = ("cross-encoder", "sequence-classifier", "chat-reward", "bi-encoder", "llm-judge")

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
CONFIG_NAMES = frozenset({
    "config.json", "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json",
    "generation_config.json",
})
TOKENIZER_PREFIXES = ("tokenizer", "vocab", "merges", "special_tokens_map", "added_tokens", "spiece",
                      "sentencepiece", "chat_template")
TOKENIZER_SUFFIXES = (".model", ".tiktoken")
#: sub-folders of exports that no torch loader reads
SKIPPED_DIRS = frozenset({"onnx", "openvino", ".git", ".cache", ".huggingface"})
MODEL_HINT = "give a local model folder (config.json, weights, tokenizer) or a Hugging Face Hub id"
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


@dataclass(frozen=True)
class ModelFolder:
    """A located model.

    Attributes:
        id: the model as given (a path or a Hub id).
        path: the folder the files are read from (a Hub snapshot for Hub ids).
        source: ``local`` or ``hub``.
        revision: the Hub commit of the snapshot (None for local folders).
        name: a short display name: the Hub id, else the folder's name (its parent's when the
            folder is called ``model``).
    """

    id: str
    path: Path
    source: Literal["local", "hub"]
    revision: str | None
    name: str

    @property
    def config(self) -> dict[str, Any]:
        """``config.json`` (``{}`` when the folder has none)."""
        return read_json(self.path / "config.json", missing={})

    @property
    def architectures(self) -> list[str]:
        arch = self.config.get("architectures") or []
        return [str(a) for a in arch] if isinstance(arch, list) else []


def read_json(path: Path, *, missing: Any = None) -> Any:
    """A JSON file of a model folder (``missing`` when absent); a broken one is a one-line error."""
    if not path.is_file():
        return missing
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise InvalidArgumentError(f"{path.name} is not valid JSON ({e})", path=path,
                                   hint="the model folder is damaged: download or save it again") from None


def locate_model(model: str | os.PathLike[str], *, revision: str | None = None) -> ModelFolder:
    """The folder of ``model``: a local folder, else a Hub id looked up in the local cache.

    Raises:
        SourceNotFoundError: no such folder, and no such Hub id in the cache (offline) or on the Hub.
        InvalidArgumentError: the folder holds no model (no ``config.json`` or ``modules.json``).
    """
    text = os.fspath(model)
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"model must be a folder or a Hub id, got {model!r}", key="model", hint=MODEL_HINT)
    path = Path(text).expanduser()
    if path.exists():
        if revision is not None:
            raise InvalidArgumentError(f"revision={revision!r} applies to Hub ids, but {text!r} is a local folder",
                                       key="revision", hint="drop revision=, or give the Hub id")
        return _checked(ModelFolder(id=text, path=path.resolve(), source="local", revision=None,
                                    name=_local_name(path.resolve())))
    if text.startswith((".", "/", "~")) or not _HUB_ID.match(text):
        raise SourceNotFoundError("no such model folder", path=path, key="model", hint=MODEL_HINT)
    snapshot = _hub_snapshot(text, revision)
    return _checked(ModelFolder(id=text, path=snapshot, source="hub", revision=snapshot.name, name=text))


def _local_name(path: Path) -> str:
    return path.parent.name if path.name == "model" and path.parent.name else path.name


def _hub_snapshot(repo_id: str, revision: str | None) -> Path:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    try:
        found = snapshot_download(repo_id, revision=revision, local_files_only=offline,
                                  ignore_patterns=["onnx/*", "openvino/*", "*.onnx", "*.msgpack", "*.h5", "*.ot",
                                                   "*.tflite"])
    except LocalEntryNotFoundError:
        where = "the local Hugging Face cache" + (" (HF_HUB_OFFLINE=1: the Hub is not asked)" if offline else "")
        raise SourceNotFoundError(
            f"model {repo_id!r}{'' if revision is None else f' at revision {revision!r}'} is not a local folder "
            f"and not in {where}", key="model",
            hint=f"download it where there is network (`hf download {repo_id}`, into HF_HOME) or give a local folder",
        ) from None
    except (HFValidationError, OSError, ValueError) as e:
        raise SourceNotFoundError(f"cannot get model {repo_id!r} from the Hub ({type(e).__name__}: {e})",
                                  key="model", hint=MODEL_HINT) from None
    return Path(found)


def _checked(folder: ModelFolder) -> ModelFolder:
    p = folder.path
    if not p.is_dir():
        raise InvalidArgumentError("not a model folder (a file, not a folder)", path=p, key="model", hint=MODEL_HINT)
    if not (p / "config.json").is_file() and not (p / "modules.json").is_file():
        raise InvalidArgumentError("not a model folder (no config.json or modules.json)", path=p, key="model",
                                   hint=MODEL_HINT)
    return folder


# -- files ---------------------------------------------------------------------------------
def file_role(rel: str) -> str | None:
    """``weights`` | ``tokenizer`` | ``config`` | ``code`` for a file a loader reads, else None."""
    parts = rel.split("/")
    if any(p in SKIPPED_DIRS or p.startswith(".") for p in parts):
        return None
    name = parts[-1]
    if name.endswith(WEIGHT_SUFFIXES):
        return "weights"
    if name.startswith(TOKENIZER_PREFIXES) or name.endswith(TOKENIZER_SUFFIXES):
        return "tokenizer"
    if name in CONFIG_NAMES:
        return "config"
    if name.endswith(".py"):
        return "code"
    return None


def model_files(folder: ModelFolder) -> dict[str, Any]:
    """sha256 of every file a loader reads, and the digests of the weights, the tokenizer and all.

    Returns ``{"files": {rel: sha256}, "roles": {rel: role}, "weights_sha256", "tokenizer_sha256",
    "digest"}`` (a digest is None when there is no file of its kind).

    Raises:
        InvalidArgumentError: the folder holds no weight file.
    """
    found: dict[str, str] = {}
    for root, dirs, names in os.walk(folder.path, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(names):
            full = Path(root) / name
            rel = full.relative_to(folder.path).as_posix()
            role = file_role(rel)
            if role is not None and full.is_file():
                found[rel] = role
    files = {rel: sha256_file(folder.path / rel) for rel in sorted(found)}
    if not any(r == "weights" for r in found.values()):
        raise InvalidArgumentError(
            f"not a model folder (no weight file: {', '.join('*' + s for s in WEIGHT_SUFFIXES)})",
            path=folder.path, key="model", hint=MODEL_HINT)

    def digest(role: str) -> str | None:
        part = {k: v for k, v in files.items() if found[k] == role}
        return sha256_json(part) if part else None

    return {"files": files, "roles": dict(sorted(found.items())), "weights_sha256": digest("weights"),
            "tokenizer_sha256": digest("tokenizer"), "digest": sha256_json(files)}


# -- remote code -----------------------------------------------------------------------------
def check_no_remote_code(folder: ModelFolder, *, trust_remote_code: bool) -> list[str]:
    """What in the folder would run its own code (``[]`` if nothing); refused unless trusted.

    Raises:
        RemoteCodeError: something would run code from the folder and ``trust_remote_code`` is False.
    """
    reasons = []
    for name in ("config.json", "tokenizer_config.json"):
        doc = read_json(folder.path / name, missing={})
        if isinstance(doc, dict) and doc.get("auto_map"):
            reasons.append(f"{name} maps classes to code in the folder (auto_map)")
    modules = read_json(folder.path / "modules.json", missing=[])
    for m in modules if isinstance(modules, list) else []:
        kind = str(m.get("type", "")) if isinstance(m, dict) else ""
        if kind and not kind.startswith("sentence_transformers."):
            reasons.append(f"modules.json names the module {kind!r}, which is not part of sentence-transformers")
    st = read_json(folder.path / "config_sentence_transformers.json", missing={})
    act = st.get("activation_fn") if isinstance(st, dict) else None
    if isinstance(act, str) and not act.startswith(("torch.", "sentence_transformers.")):
        reasons.append(f"config_sentence_transformers.json names the activation {act!r} outside torch")
    if reasons and not trust_remote_code:
        raise RemoteCodeError(
            f"{reasons[0]}; gradebench never runs code from a model folder unless asked", path=folder.path,
            key="trust_remote_code", hint="pass --trust-remote-code (trust_remote_code=True) only if you trust it",
        )
    return reasons


# -- adapters --------------------------------------------------------------------------------
def _st_model_type(folder: ModelFolder) -> str | None:
    st = read_json(folder.path / "config_sentence_transformers.json", missing={})
    kind = st.get("model_type") if isinstance(st, dict) else None
    return str(kind) if kind else None


def _is_st_cross_encoder(folder: ModelFolder) -> bool:
    config = folder.config
    return _st_model_type(folder) == "CrossEncoder" or "sbert_ce_default_activation_function" in config or (
        isinstance(config.get("sentence_transformers"), dict) and "activation_fn" in config["sentence_transformers"])


def _has(arches: list[str], *suffixes: str) -> bool:
    return any(a.endswith(suffixes) for a in arches)


_SEQ_CLS = ("ForSequenceClassification",)
_CAUSAL = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")


def chat_template_of(folder: ModelFolder) -> str | None:
    """The tokenizer's chat template (``tokenizer_config.json`` or ``chat_template.jinja/json``), or None."""
    tc = read_json(folder.path / "tokenizer_config.json", missing={})
    template = tc.get("chat_template") if isinstance(tc, dict) else None
    if not template and (folder.path / "chat_template.jinja").is_file():
        template = (folder.path / "chat_template.jinja").read_text(encoding="utf-8")
    if not template:
        doc = read_json(folder.path / "chat_template.json", missing={})
        template = doc.get("chat_template") if isinstance(doc, dict) else None
    if isinstance(template, list):  # named templates: [{"name": "default", "template": ...}]
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    return template if isinstance(template, str) and template.strip() else None


def detect_adapter(folder: ModelFolder) -> tuple[str, str]:
    """``(adapter, why)`` for a folder, read from its configs.

    * a sentence-transformers CrossEncoder folder (``model_type: CrossEncoder``, or the older
      ``sbert_ce_default_activation_function`` key): ``cross-encoder``;
    * another sentence-transformers folder (``modules.json``): ``bi-encoder``;
    * ``*ForSequenceClassification``: ``chat-reward`` when the tokenizer has a chat template, else
      ``sequence-classifier``;
    * a causal LM (``*ForCausalLM``, ``*LMHeadModel``): ``llm-judge``.

    Raises:
        InvalidArgumentError: none of these (a bare encoder, say): give ``--adapter``.
    """
    arches = folder.architectures
    if _is_st_cross_encoder(folder):
        return "cross-encoder", "sentence-transformers CrossEncoder folder"
    if (folder.path / "modules.json").is_file():
        kind = _st_model_type(folder)
        if kind not in (None, "SentenceTransformer"):
            raise InvalidArgumentError(f"a sentence-transformers {kind} folder is not supported", path=folder.path,
                                       key="adapter", hint=f"adapters: {', '.join(ADAPTER_NAMES)}")
        return "bi-encoder", "sentence-transformers folder (modules.json)"
    if _has(arches, *_SEQ_CLS):
        if chat_template_of(folder) is not None:
            return "chat-reward", f"{arches[0]} with a chat template"
        return "sequence-classifier", arches[0]
    if _has(arches, *_CAUSAL):
        return "llm-judge", arches[0]
    raise InvalidArgumentError(
        f"cannot tell which adapter fits this model (architectures: {', '.join(arches) or 'none'})",
        path=folder.path, key="adapter",
        hint="give --adapter: bi-encoder reads a bare encoder with mean pooling; "
             f"the others need a scoring head ({', '.join(ADAPTER_NAMES)})",
    )


def check_adapter_fits(adapter: str, folder: ModelFolder) -> None:
    """Refuse (one line) an adapter that does not fit the model's head, before anything is loaded.

    Raises:
        InvalidArgumentError: e.g. ``sequence-classifier`` on a bare encoder (it would get a random
            head), ``llm-judge`` on a classifier, ``bi-encoder`` on a classification or LM head.
    """
    arches = folder.architectures
    arch = ", ".join(arches) or "no architectures"
    st = (folder.path / "modules.json").is_file()
    problem = None
    if adapter == "cross-encoder":
        if not (_is_st_cross_encoder(folder) or _has(arches, *_SEQ_CLS)):
            problem = f"the model ({arch}) has no cross-encoder scoring head"
    elif adapter in ("sequence-classifier", "chat-reward"):
        if _is_st_cross_encoder(folder) and not _has(arches, *_SEQ_CLS):
            problem = f"the model is a sentence-transformers CrossEncoder with its own head ({arch})"
        elif arches and not _has(arches, *_SEQ_CLS):
            problem = f"the model ({arch}) has no sequence-classification head"
        elif st and not _has(arches, *_SEQ_CLS):
            problem = "the model is a sentence-transformers embedding model, which has no classification head"
    elif adapter == "bi-encoder":
        if _is_st_cross_encoder(folder):
            problem = "the model is a cross-encoder (it scores pairs; it does not embed texts)"
        elif not st and _has(arches, *_SEQ_CLS, *_CAUSAL):
            problem = f"the model ({arch}) has a classification or language-modelling head, not an embedding one"
    elif adapter == "llm-judge":
        if not _has(arches, *_CAUSAL):
            problem = f"the model ({arch}) is not a causal language model"
    else:
        raise InvalidArgumentError(f"unknown adapter {adapter!r}", key="adapter",
                                   hint=f"one of auto, {', '.join(ADAPTER_NAMES)}")
    if problem is not None:
        try:
            fits, _ = detect_adapter(folder)
            hint = f"this folder fits --adapter {fits}"
        except InvalidArgumentError:
            hint = f"adapters: {', '.join(ADAPTER_NAMES)}"
        raise InvalidArgumentError(f"{problem}, so the {adapter} adapter does not fit", path=folder.path,
                                   key="adapter", hint=hint)
