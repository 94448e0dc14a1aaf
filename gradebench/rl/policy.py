"""The policy: a causal-LM folder checked, fingerprinted, loaded; its context; its log-probabilities.

:func:`check_policy` runs before anything is written (a folder that is no causal LM, or has no
tokenizer, fails in one line); :func:`folder_fingerprint` hashes every file of the folder, so a
run's fingerprint changes with the weights; :func:`sequence_logps` and :func:`sequence_kl` are the
pure functions LiPO's scores and its KL log are made of.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradebench.errors import InvalidArgumentError
from gradebench.hashing import sha256_file, sha256_json

#: where a run folder (pretrain-policy, lipo, grpo, ppo) keeps its trained policy
RUN_POLICY_DIR = "policy"
_CORRUPT_HINT = "the policy's weights are truncated or damaged: save or download the model again"
_DOWNLOAD_HINT = "give a local model folder, e.g. `hf download gpt2-medium --local-dir models/gpt2-medium`"


@dataclass(frozen=True)
class PolicyInfo:
    """What :func:`check_policy` learned about a policy folder."""

    path: str
    model_type: str
    architectures: list[str]
    context: int
    fingerprint: str

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "model_type": self.model_type, "architectures": list(self.architectures),
                "context": self.context, "fingerprint": self.fingerprint}


def _causal_names() -> tuple[set[str], set[str]]:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    classes: set[str] = set()
    for value in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values():
        classes.update(value if isinstance(value, (list, tuple)) else [value])
    return set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES), classes


def context_length(config: Any, tokenizer: Any = None) -> int:
    """The most tokens the policy attends to: the config's positions, capped by the tokenizer's limit."""
    n = None
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            n = value
            break
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < 10**8:
        n = limit if n is None else min(n, limit)
    if n is None:
        raise InvalidArgumentError("cannot tell the policy's context length from its config",
                                   hint="set max_position_embeddings in its config.json")
    return int(n)


def folder_fingerprint(path: str | Path) -> str:
    """sha256 over the name and sha256 of every file in a folder (recursively, hidden ones skipped)."""
    root = Path(path)
    files = sorted(p for p in root.rglob("*") if p.is_file() and not any(part.startswith(".")
                                                                          for part in p.relative_to(root).parts))
    return sha256_json({str(p.relative_to(root)): sha256_file(p) for p in files})


def policy_folder(path: str | Path) -> Path:
    """The model folder of ``path``: ``path`` itself, or its ``policy/`` when ``path`` is a run folder
    (``gradebench pretrain-policy | lipo | grpo | ppo --out``) with no ``config.json`` of its own."""
    p = Path(path)
    inner = p / RUN_POLICY_DIR
    if p.is_dir() and not (p / "config.json").exists() and (inner / "config.json").is_file():
        return inner
    return p


def check_policy(path: str | Path) -> PolicyInfo:
    """Check that ``path`` is a local causal-LM folder with a tokenizer and intact weight files.

    ``path`` may also be a run folder that holds its trained policy in ``policy/``
    (:func:`policy_folder`); the info then describes ``policy/``.

    Nothing is loaded but configs and the tokenizer; the weight files are checked as
    :func:`check_policy_weights` does, so a damaged policy fails before a run folder is written.

    Raises:
        InvalidArgumentError: not a folder, no ``config.json``, a config of a model that is no
            causal LM (an encoder such as BERT, a sequence classifier), no loadable tokenizer, or
            no weights file, or a truncated or damaged one (named).
    """
    if not isinstance(path, (str, Path)):
        raise InvalidArgumentError(f"policy must be a path, got {type(path).__name__}")
    p = policy_folder(path)
    if not p.is_dir():
        raise InvalidArgumentError("--policy is not a folder", path=p, hint=_DOWNLOAD_HINT)
    if not (p / "config.json").is_file():
        raise InvalidArgumentError("--policy has no config.json (not a transformers model folder)", path=p,
                                   hint=_DOWNLOAD_HINT)
    from transformers import AutoConfig, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(p)
    except Exception as e:  # noqa: BLE001 - transformers raises many types for bad configs
        raise InvalidArgumentError(f"--policy config.json cannot be read ({type(e).__name__}: {e})", path=p,
                                   hint=_DOWNLOAD_HINT) from None
    model_types, classes = _causal_names()
    archs = list(getattr(config, "architectures", None) or [])
    model_type = str(getattr(config, "model_type", ""))
    causal = any(a in classes for a in archs) if archs else model_type in model_types
    if not causal or getattr(config, "is_encoder_decoder", False):
        what = ", ".join(archs) or model_type or "unknown"
        raise InvalidArgumentError(
            f"--policy is not a causal language model ({what})", path=p,
            hint="give a decoder-only LM folder (e.g. GPT-2) saved with AutoModelForCausalLM; "
                 "a scorer goes to --reward",
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(p)
    except Exception as e:  # noqa: BLE001
        raise InvalidArgumentError(
            f"--policy has no loadable tokenizer ({type(e).__name__}: {e})", path=p,
            hint="save the tokenizer into the policy folder (tokenizer.save_pretrained)") from None
    if tokenizer.eos_token_id is None:
        raise InvalidArgumentError("--policy tokenizer has no EOS token", path=p,
                                   hint="set eos_token in its tokenizer_config.json")
    check_policy_weights(p)
    return PolicyInfo(path=str(p.resolve()), model_type=model_type, architectures=archs,
                      context=context_length(config, tokenizer), fingerprint=folder_fingerprint(p))


def load_tokenizer(path: str | Path, *, padding_side: str = "right") -> Any:
    """The policy's tokenizer with a pad token (its EOS when it has none) and the given padding side."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = padding_side
    return tokenizer


def check_policy_weights(path: str | Path) -> None:
    """The policy folder's weight files: at least one, each intact (a safetensors header and byte
    ranges that cover the file, a ``torch.save`` zip whose members pass their CRC check).

    Raises:
        InvalidArgumentError: naming the folder (no weights) or the damaged file.
    """
    from gradebench.scorers._weight_files import check_weight_folder, weight_files

    p = Path(path)
    if not weight_files(p):
        raise InvalidArgumentError("--policy has no weights file (model.safetensors or pytorch_model.bin)", path=p,
                                   hint="save the model into the folder (model.save_pretrained)")
    check_weight_folder(p, error=InvalidArgumentError, hint=_CORRUPT_HINT)


def load_policy(path: str | Path) -> Any:
    """The policy as ``AutoModelForCausalLM`` in float32 (mixed precision, if any, is the trainer's).

    Raises:
        InvalidArgumentError: the weights cannot be loaded (one line naming the folder, or the
            damaged file :func:`check_policy_weights` finds).
    """
    import torch
    from transformers import AutoModelForCausalLM

    check_policy_weights(path)
    try:
        return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    except Exception as e:  # noqa: BLE001 - safetensors, torch and transformers raise many types
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        raise InvalidArgumentError(f"cannot load the policy ({type(e).__name__}: {lines[0] if lines else ''})",
                                   path=path, hint=_CORRUPT_HINT) from None


def disable_dropout(model: Any) -> Any:
    """Set every dropout probability of ``model`` to 0 (so policy and reference log-probs agree at step 0)."""
    from torch import nn

    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    return model


def use_bf16() -> bool:
    """bf16 mixed precision only on a CUDA GPU that supports it (TRL's configs default to bf16, which CPUs refuse)."""
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())


def precision() -> str:
    """``"bf16"`` where the trainers run in bf16 mixed precision (:func:`use_bf16`), else ``"fp32"``."""
    return "bf16" if use_bf16() else "fp32"


def train_quietly(trainer: Any) -> None:
    """``trainer.train()`` without the Trainer's printing and progress-bar callbacks (the step log
    reports progress) and with whatever TRL prints sent to stderr (stdout is the command's result)."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    with contextlib.redirect_stdout(sys.stderr):
        trainer.train()


def check_prompt_lengths(token_counts: list[int], ids: list[str], *, context: int, reserve: int,
                         what: str = "prompt") -> None:
    """Refuse prompts that leave fewer than ``reserve`` tokens of the policy's ``context``.

    Raises:
        InvalidArgumentError: naming the first offending query, its length and the context.
    """
    for n, qid in zip(token_counts, ids):
        if n >= context:
            raise InvalidArgumentError(
                f"the {what} of query {qid} is {n} tokens, longer than the policy's context of {context}",
                hint="use a policy with a longer context, or a benchmark with shorter queries",
            )
        if n + reserve > context:
            raise InvalidArgumentError(
                f"the {what} of query {qid} is {n} tokens and leaves {context - n} of the policy's {context} "
                f"for the response, which needs {reserve}",
                hint="lower --max-completion-length, or use a policy with a longer context",
            )


def sequence_logps(logits: Any, input_ids: Any, completion_mask: Any) -> Any:
    r"""Sum over completion tokens of :math:`\log \pi(y_t \mid x, y_{<t})`: ``[N]``.

    Args:
        logits: ``[N, T, V]`` causal-LM logits (position ``t`` predicts token ``t + 1``).
        input_ids: ``[N, T]`` prompt + completion (+ padding) token ids.
        completion_mask: ``[N, T]`` 1 at completion tokens (TRL's DPO convention), 0 elsewhere.
    """
    import torch

    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    target = logp.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return (target * completion_mask[:, 1:].to(target.dtype)).sum(-1)


def sequence_kl(logits: Any, ref_logits: Any, completion_mask: Any) -> Any:
    r"""Sum over completion positions of :math:`KL(\pi(\cdot \mid h_t) \,\|\, \pi_{ref}(\cdot \mid h_t))`: ``[N]``.

    The exact next-token KL over the vocabulary at each completion position of the given
    sequences (not a sampled estimate).
    """
    import torch

    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    ref = torch.log_softmax(ref_logits[:, :-1].float(), dim=-1)
    per_position = (logp.exp() * (logp - ref)).sum(-1)
    return (per_position * completion_mask[:, 1:].to(per_position.dtype)).sum(-1)
