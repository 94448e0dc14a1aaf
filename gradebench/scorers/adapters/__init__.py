"""Model adapters: evaluate any model (a local folder or a Hugging Face Hub id) as a scorer.

Each adapter is a small module registering one scorer of kind ``external`` in the scorers'
registry, so an external model is a system like any other (records, leaderboard rows with CIs,
paired tests):

========================  ========================  ==================================================
``--adapter``             scorer                    what scores a (query, candidate) pair
========================  ========================  ==================================================
``cross-encoder``         ``hf-cross-encoder``      a sentence-transformers CrossEncoder's raw output
``sequence-classifier``   ``hf-sequence-classifier``  an AutoModelForSequenceClassification: its one
                                                    logit, or one class's probability (entailment)
``chat-reward``           ``hf-chat-reward``        a reward model over the chat template (query =
                                                    user turn, candidate = assistant turn)
``bi-encoder``            ``hf-bi-encoder``         cosine of SentenceTransformer embeddings
``llm-judge``             ``hf-llm-judge``          a causal LM with a prompt template: expected
                                                    rating or log P(yes) - log P(no)
========================  ========================  ==================================================

``--adapter auto`` reads the model's configs (:func:`~gradebench.scorers.adapters.model_files.detect_adapter`).
Loading never runs code from the model folder unless ``trust_remote_code=True`` is given as the
argument of :func:`make_model_scorer` (the CLI's ``--trust-remote-code``); the key in an options
dict, ``--set`` or an experiment file is refused.
Shared parts: :mod:`~gradebench.scorers.adapters.model_files` (locating, hashing, refusing
remote code, detection), :mod:`~gradebench.scorers.adapters.base` (config, provenance,
invariance), :mod:`~gradebench.scorers.adapters.runner` (seeded, sharded batches).

Example::

    from gradebench.scorers.adapters import make_model_scorer
    scorer = make_model_scorer("path/to/model", adapter="auto", options={"batch_size": 64})
"""

from __future__ import annotations

import os
from typing import Any

from gradebench.errors import InvalidArgumentError
from gradebench.scorers.adapters.model_files import ADAPTER_NAMES, detect_adapter, locate_model

__all__ = ["ADAPTERS", "ADAPTER_NAMES", "adapter_of", "make_model_scorer", "scorer_name"]

#: ``--adapter`` value -> registered scorer name
ADAPTERS = {name: f"hf-{name}" for name in ADAPTER_NAMES}


def scorer_name(adapter: str) -> str:
    """The registered scorer of an adapter (``bi-encoder`` -> ``hf-bi-encoder``)."""
    try:
        return ADAPTERS[adapter]
    except KeyError:
        from gradebench.registry import suggest

        raise InvalidArgumentError(f"unknown adapter {adapter!r}" + suggest(adapter, ["auto", *ADAPTER_NAMES]),
                                   key="adapter", hint=f"one of auto, {', '.join(ADAPTER_NAMES)}") from None


def adapter_of(model: str | os.PathLike[str], adapter: str = "auto", *, revision: str | None = None) -> str:
    """``adapter``, or with ``auto`` the one the model's configs call for."""
    if adapter != "auto":
        scorer_name(adapter)
        return adapter
    return detect_adapter(locate_model(model, revision=revision))[0]


def make_model_scorer(model: str | os.PathLike[str], adapter: str = "auto", options: dict[str, Any] | None = None, *,
                      trust_remote_code: bool = False, seed: int = 0) -> Any:
    """A scorer for ``model`` through ``adapter`` with ``options`` (the adapter's config keys).

    Raises:
        InvalidArgumentError / SourceNotFoundError: not a model, no adapter fits, a bad option,
            code in the folder without ``trust_remote_code``, ``trust_remote_code`` among ``options``.
    """
    from gradebench.scorers import get_scorer_class
    from gradebench.scorers.adapters.base import refuse_trust_key

    options = dict(options or {})
    for key in ("model",):
        if key in options:
            raise InvalidArgumentError(f"give the model as the model argument (--model), not as the option {key!r}",
                                       key=key, hint="drop --set model=")
    refuse_trust_key(options)  # only this function's argument (the flag) may allow code to run
    chosen = adapter_of(model, adapter, revision=options.get("revision"))
    scorer = get_scorer_class(scorer_name(chosen))({"model": os.fspath(model), **options}, seed=seed,
                                                   trust_remote_code=trust_remote_code)
    scorer.folder  # noqa: B018 - locate and check the model now (one line if it is not one)
    return scorer
