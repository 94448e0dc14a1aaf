"""Refusing a model folder whose tokenizer files disagree, before a loader reads them.

``tokenizer_config.json`` (or, without one, ``config.json``) names the class that loads the
tokenizer (``tokenizer_class``); ``tokenizer.json`` holds the tokenizer itself, whose
``model.type`` is its algorithm (``WordPiece``, ``BPE``, ``Unigram``, ``WordLevel``). A loader
believes the class: ``GPT2Tokenizer`` over a WordPiece ``tokenizer.json`` loads, silently, into
other token ids than the model was trained on (and other scores), and a name that is not a
tokenizer (``Trainer``) fails deep in transformers. :func:`check_tokenizer_files` refuses, in one
line naming the file and the key:

* a ``tokenizer_class`` that transformers does not have (it would fall back to another class);
* one that transformers has but that is not a tokenizer (not a ``PreTrainedTokenizerBase``);
* one whose algorithm clearly contradicts ``tokenizer.json`` (:data:`CLASS_FAMILIES`: a small,
  conservative table; a class it does not list, such as ``PreTrainedTokenizerFast`` or
  ``TokenizersBackend``, which read ``tokenizer.json`` as it is, is accepted).

A folder that maps its tokenizer to its own code (``auto_map``) is left to the remote-code check
(:func:`gradebench.scorers.adapters.model_files.check_no_remote_code`): with
``trust_remote_code`` the class comes from that code. transformers is imported only when a
folder names a class.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gradebench.errors import InvalidArgumentError

__all__ = ["CLASS_FAMILIES", "check_tokenizer_files", "tokenizer_folders"]

_SPM = frozenset({"Unigram", "BPE"})  # sentencepiece models: converted to Unigram or to BPE (byte fallback)
_BPE = frozenset({"BPE"})
_WORDPIECE = frozenset({"WordPiece"})
#: tokenizer class (without ``Fast``) -> the ``tokenizer.json`` model types it can read
CLASS_FAMILIES: dict[str, frozenset[str]] = {
    **dict.fromkeys([
        "BertTokenizer", "DistilBertTokenizer", "ElectraTokenizer", "MobileBertTokenizer", "SqueezeBertTokenizer",
        "LayoutLMTokenizer", "FunnelTokenizer", "MPNetTokenizer", "ConvBertTokenizer", "LxmertTokenizer",
        "DPRContextEncoderTokenizer", "DPRQuestionEncoderTokenizer", "DPRReaderTokenizer",
    ], _WORDPIECE),
    **dict.fromkeys([
        "GPT2Tokenizer", "RobertaTokenizer", "BartTokenizer", "LongformerTokenizer", "LEDTokenizer",
        "BlenderbotTokenizer", "MvpTokenizer", "DebertaTokenizer", "GPTNeoXTokenizer", "CodeGenTokenizer",
        "OpenAIGPTTokenizer", "CLIPTokenizer", "WhisperTokenizer", "Qwen2Tokenizer", "BloomTokenizer",
    ], _BPE),
    **dict.fromkeys([
        "T5Tokenizer", "MT5Tokenizer", "XLMRobertaTokenizer", "AlbertTokenizer", "CamembertTokenizer",
        "XLNetTokenizer", "DebertaV2Tokenizer", "BigBirdTokenizer", "PegasusTokenizer", "MBartTokenizer",
        "MBart50Tokenizer", "LlamaTokenizer", "CodeLlamaTokenizer", "GemmaTokenizer",
    ], _SPM),
}
HINT = ("set tokenizer_class in {file} to the class the model was trained with (PreTrainedTokenizerFast reads "
        "tokenizer.json as it is), or save the model's tokenizer again with save_pretrained")


def _read(path: Path) -> Any:
    """A JSON file of the model folder (None when absent; a broken one is a one-line error)."""
    from gradebench.scorers.adapters.model_files import read_json  # imported here: the adapters import us

    return read_json(path)


def tokenizer_folders(path: Path) -> list[Path]:
    """``path`` and the sub-folders a sentence-transformers ``modules.json`` loads a Transformer from."""
    out = [path]
    modules = _read(path / "modules.json")
    for m in modules if isinstance(modules, list) else []:
        sub = m.get("path") if isinstance(m, dict) else None
        if isinstance(sub, str) and sub.strip() and ".." not in Path(sub).parts and (path / sub).is_dir():
            if (path / sub).resolve() != path.resolve():
                out.append(path / sub)
    return out


def check_tokenizer_files(path: Path, *, trust_remote_code: bool = False) -> None:
    """Refuse a folder (and its sentence-transformers module folders) whose tokenizer files disagree.

    Raises:
        InvalidArgumentError: ``tokenizer_class`` is not a transformers class, not a tokenizer,
            or not one that reads the ``tokenizer.json`` beside it (see the module docstring).
    """
    for folder in tokenizer_folders(Path(path)):
        _check_one(folder, trust_remote_code=trust_remote_code)


def _check_one(folder: Path, *, trust_remote_code: bool) -> None:
    named = None
    for file in ("tokenizer_config.json", "config.json"):
        doc = _read(folder / file)
        if isinstance(doc, dict) and doc.get("tokenizer_class") is not None:
            named = (file, doc)
            break
    if named is None:
        return
    file, doc = named
    if doc.get("auto_map") and trust_remote_code:
        return  # the class is the folder's own code, allowed by the flag
    name = doc["tokenizer_class"]
    where = {"path": folder / file, "key": "tokenizer_class", "hint": HINT.format(file=file)}
    if not isinstance(name, str) or not name.isidentifier():
        raise InvalidArgumentError(f"tokenizer_class must be a class name, got {name!r}", **where)
    cls = _transformers_class(name)
    if cls is None:
        raise InvalidArgumentError(f"names the tokenizer class {name!r}, which transformers {_version()} does not have",
                                   **where)
    from transformers import PreTrainedTokenizerBase

    if not (isinstance(cls, type) and issubclass(cls, PreTrainedTokenizerBase)):
        raise InvalidArgumentError(f"names {name!r} as the tokenizer class, but transformers' {name} is not a "
                                   "tokenizer", **where)
    family = CLASS_FAMILIES.get(name.removesuffix("Fast"))
    tok = _read(folder / "tokenizer.json")
    kind = tok.get("model", {}).get("type") if isinstance(tok, dict) and isinstance(tok.get("model"), dict) else None
    if family is not None and isinstance(kind, str) and kind not in family:
        raise InvalidArgumentError(
            f"names the tokenizer class {name!r} (a {'/'.join(sorted(family))} tokenizer), but tokenizer.json holds "
            f"a {kind} tokenizer: the model would read other token ids than it was trained on", **where)


def _transformers_class(name: str) -> Any:
    """The class transformers' ``AutoTokenizer`` would load for ``name`` (None: it has none)."""
    from transformers.models.auto.tokenization_auto import tokenizer_class_from_name

    try:
        cls = tokenizer_class_from_name(name)
        if cls is None and not name.endswith("Fast"):
            cls = tokenizer_class_from_name(name + "Fast")
    except (ImportError, AttributeError, ValueError):
        return None
    return cls


def _version() -> str:
    import transformers

    return transformers.__version__
