"""What a classification head's output becomes as a score: its one logit, or one class's probability.

A head with one output (a reward model, a relevance cross-encoder) scores by its raw logit. A
head with several (an NLI model: contradiction / entailment / neutral) scores by the softmax
probability of one class, chosen by ``label`` (its name in ``id2label``, case-insensitive, or
its index); with no ``label``, a class named ``entailment`` is chosen (the entailment of the
candidate given the query), and any other multi-class head asks for one.

The classes are those transformers reads (``AutoConfig``'s ``num_labels`` and ``id2label``), not
``config.json`` alone: transformers leaves both out of the file for its default of two classes
(``LABEL_0``, ``LABEL_1``), so a file without them is a two-class head, not a one-output one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gradebench.errors import InvalidArgumentError

__all__ = ["head_classes", "resolve_head", "select_output"]


def head_classes(path: Path, *, trust_remote_code: bool = False) -> list[str]:
    """The class names of the head in the model folder ``path``, in output order, as transformers reads
    its config (``AutoConfig``: ``id2label`` over ``range(num_labels)``, by default ``LABEL_0``, ``LABEL_1``);
    none for a folder without ``config.json``.

    Raises:
        InvalidArgumentError: transformers cannot read the folder's ``config.json``.
    """
    if not (Path(path) / "config.json").is_file():  # a sentence-transformers folder of modules only
        return []
    from transformers import AutoConfig

    from gradebench.scorers._ce_model import quiet_loading

    try:
        with quiet_loading():
            config = AutoConfig.from_pretrained(str(path), local_files_only=True, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, KeyError, TypeError) as e:
        text = " ".join(str(e).split())[:300]
        raise InvalidArgumentError(f"cannot read the model's config ({type(e).__name__}: {text})",
                                   path=Path(path) / "config.json", key="model",
                                   hint="check that config.json is a transformers config") from None
    id2label = getattr(config, "id2label", None) or {}
    return [str(id2label.get(i, f"LABEL_{i}")) for i in range(int(config.num_labels))]


def resolve_head(classes: list[str], label: str | int | None, *, path: Path | None = None,
                 num_labels: int | None = None) -> dict[str, Any]:
    """``{"output": "logit"|"probability", "num_labels", "label", "label_index"}`` for a head whose
    classes are ``classes`` (:func:`head_classes`).

    ``num_labels`` overrides how many there are (a modular head).

    Raises:
        InvalidArgumentError: several classes and no (known) ``label``, or a ``label`` on a one-output head.
    """
    names = list(classes) or ["LABEL_0"]
    if num_labels is not None and num_labels != len(names):
        names = [f"LABEL_{i}" for i in range(num_labels)]
    if len(names) == 1:
        if label not in (None, 0, "0", names[0]):
            raise InvalidArgumentError(f"the model's head has one output, so label={label!r} does not apply",
                                       path=path, key="label", hint="drop label=")
        return {"output": "logit", "num_labels": 1, "label": None, "label_index": None}
    listing = ", ".join(f"{i}={n}" for i, n in enumerate(names))
    if label is None:
        found = [i for i, n in enumerate(names) if n.lower() == "entailment"]
        if not found:
            raise InvalidArgumentError(f"the model's head has {len(names)} classes ({listing}); which one scores?",
                                       path=path, key="label", hint="set label=NAME (or its index), e.g. --set label="
                                       + names[-1])
        index = found[0]
    elif isinstance(label, int) or (isinstance(label, str) and label.isdigit()):
        index = int(label)
        if not 0 <= index < len(names):
            raise InvalidArgumentError(f"label index {index} is out of range: the head has classes {listing}",
                                       path=path, key="label", hint="give one of its names or indices")
    else:
        found = [i for i, n in enumerate(names) if n.lower() == str(label).lower()]
        if not found:
            raise InvalidArgumentError(f"the model has no class {label!r} (its classes: {listing})", path=path,
                                       key="label", hint="give one of its names or indices")
        index = found[0]
    return {"output": "probability", "num_labels": len(names), "label": names[index], "label_index": index}


def select_output(logits: Any, head: dict[str, Any]) -> Any:
    """``[B]`` float32 scores from ``[B, num_labels]`` (or ``[B]``) logits, per :func:`resolve_head`."""
    logits = logits.float()
    if logits.ndim == 1:
        logits = logits[:, None]
    if logits.shape[-1] != head["num_labels"]:
        raise InvalidArgumentError(f"the model returned {logits.shape[-1]} outputs per item, its config says "
                                   f"{head['num_labels']}", key="model", hint="the model folder is inconsistent")
    if head["output"] == "logit":
        return logits[:, 0]
    return logits.softmax(dim=-1)[:, head["label_index"]]
