"""``hf-llm-judge``: a causal language model asked about each (query, candidate) through a prompt template.

The prompt comes from a YAML template (:mod:`gradebench.scorers.adapters.judge_template`;
``template=relevance-yes-no`` by default, or a file). With a chat template (``chat: auto`` and
the tokenizer has one, or ``chat: always``) the prompt is the user turn, followed by the
assistant header (``add_generation_prompt``) and the template's ``answer_prefix``; otherwise it
is the plain text ``prompt + "\\n" + answer_prefix``. The score is read from the model's
next-token distribution after it:

* ``yes-no``: ``log P(yes) - log P(no)``;
* ``rating``: the expected rating ``sum_r p(r) value(r)``, ``p`` renormalised over the rating tokens.

Each answer text must be one token of the model's tokenizer. Prompts longer than
``max_length`` keep their last tokens (where the question is asked).

Backends: ``transformers`` (CPU or GPU: left-padded batches with position ids counted over
real tokens, so a padded prompt is computed like the prompt alone, and only the last
position's logits are computed), or ``vllm`` (GPUs; ``pip install 'gradebench[vllm]'``;
``tensor_parallel_size`` GPUs per engine; under ``accelerate launch`` each process runs one
engine on its own GPUs). Where vLLM or a GPU is absent, ``backend=vllm`` is refused in one line.
"""

from __future__ import annotations

import math
import os
from typing import Any, Literal

import numpy as np
from pydantic import Field

from gradebench.errors import InvalidArgumentError
from gradebench.scorers import register_scorer
from gradebench.scorers.adapters.base import ModelConfig, ModelScorer, load_error, resolved_max_length
from gradebench.scorers.adapters.judge_template import JudgeTemplate, load_template, template_options
from gradebench.scorers.adapters.model_files import chat_template_of
from gradebench.scorers.adapters.runner import distributed, encode_texts, left_padded, plan_batches, run_plan
from gradebench.training.tokens import host_to_device

VLLM_HINT = "pip install 'gradebench[vllm]' on a machine with a CUDA GPU, or use backend=transformers"


class LLMJudgeConfig(ModelConfig):
    """``template``: a built-in template name or a YAML file. ``backend``: ``transformers`` or
    ``vllm``. ``tensor_parallel_size``: GPUs per vLLM engine."""

    template: str = "relevance-yes-no"
    backend: Literal["transformers", "vllm"] = "transformers"
    tensor_parallel_size: int = Field(1, ge=1)


@register_scorer("hf-llm-judge")
class LLMJudgeScorer(ModelScorer):
    """A causal LM judging each pair through a prompt template (see the module docstring)."""

    adapter = "llm-judge"
    token_batching = False  # a batch's logits span the vocabulary: batch_size stays the limit
    summary = ("an external causal LM with a prompt template: expected rating, or log P(yes) - log P(no), "
               "from its next-token probabilities")
    Config = LLMJudgeConfig

    @property
    def backend(self) -> str:  # type: ignore[override]
        return self.config.backend

    @property
    def template(self) -> tuple[JudgeTemplate, str]:
        if not hasattr(self, "_template"):
            self._template = load_template(self.config.template)
        return self._template

    def _max_length(self) -> int:
        return resolved_max_length(self.folder, self.config.max_length, cap=4096)

    def _options_of(self) -> dict[str, Any]:
        template, where = self.template
        has_chat = chat_template_of(self.folder) is not None
        if template.chat == "always" and not has_chat:
            raise InvalidArgumentError(f"the template {template.name!r} asks for a chat template (chat: always) and "
                                       "the model's tokenizer has none", path=self.folder.path, key="template",
                                       hint="set chat: auto or never in the template, or use a chat model")
        if self.config.backend == "vllm":
            check_vllm()
        chat = template.chat == "always" or (template.chat == "auto" and has_chat)
        opts = {**template_options(template, where), "chat": chat, "score": template.score.kind,
                "truncation": "keep the last max_length tokens"}
        if self.config.backend == "vllm":
            opts["tensor_parallel_size"] = self.config.tensor_parallel_size
        return opts

    def _load(self) -> Any:
        from transformers import AutoTokenizer

        folder = self.folder
        kwargs = {"trust_remote_code": self.config.trust_remote_code, "local_files_only": True}
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(folder.path), **kwargs)
        except (OSError, ValueError, KeyError, RuntimeError, TypeError) as e:
            raise load_error(e, folder, "a tokenizer") from None
        answer_ids = self._answer_ids(tokenizer)
        if self.config.backend == "vllm":
            return _VLLMEngine(self), tokenizer, answer_ids
        from transformers import AutoModelForCausalLM

        try:
            model = AutoModelForCausalLM.from_pretrained(str(folder.path), dtype=self.torch_dtype(), **kwargs)
        except (OSError, ValueError, KeyError, RuntimeError, TypeError) as e:
            raise load_error(e, folder, "a causal language model") from None
        model.to(self.device).eval()
        return model, tokenizer, answer_ids

    def _answer_ids(self, tokenizer: Any) -> np.ndarray:
        template, _ = self.template
        ids = []
        for text in template.answers():
            tokens = tokenizer.encode(text, add_special_tokens=False)
            if len(tokens) != 1:
                raise InvalidArgumentError(
                    f"the answer {text!r} of template {template.name!r} is {len(tokens)} tokens for this tokenizer",
                    path=self.folder.path, key="template",
                    hint="use answers that are one token each (try with or without the leading space)")
            ids.append(tokens[0])
        if len(set(ids)) != len(ids):
            raise InvalidArgumentError(f"two answers of template {template.name!r} are the same token",
                                       key="template", hint="give distinct answers")
        return np.asarray(ids, dtype=np.int64)

    def prompts(self, tokenizer: Any, queries: list[str], candidates: list[str]) -> list[str]:
        """The full prompt texts (chat-templated or plain), ending where the answer token goes."""
        template, _ = self.template
        chat = self.options()["chat"]
        out = []
        for q, c in zip(queries, candidates):
            body = template.render(q, c)
            if chat:
                turns = [] if template.system is None else [{"role": "system", "content": template.system}]
                text = tokenizer.apply_chat_template([*turns, {"role": "user", "content": body}], tokenize=False,
                                                     add_generation_prompt=True) + template.answer_prefix
            else:
                system = "" if template.system is None else template.system + "\n\n"
                text = system + body + ("\n" + template.answer_prefix if template.answer_prefix else "")
            out.append(text)
        return out

    def values(self, answer_logprobs: np.ndarray) -> np.ndarray:
        """Scores from ``[n, n_answers]`` log-probabilities of the answer tokens (template order)."""
        template, _ = self.template
        lp = np.asarray(answer_logprobs, dtype=np.float64)
        if template.score.kind == "yes-no":
            return lp[:, 0] - lp[:, 1]
        weights = np.asarray(list(template.answers().values()), dtype=np.float64)
        z = lp - lp.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        return p @ weights

    def _score_pairs(self, queries: list[str], candidates: list[str], keys: list[str], *,
                     batch_size: int) -> np.ndarray:
        model, tokenizer, answer_ids = self.model
        texts = self.prompts(tokenizer, queries, candidates)
        chat = self.options()["chat"]
        encoded = encode_texts(tokenizer, texts, max_length=self.options()["max_length"], add_special_tokens=not chat)
        batches = plan_batches(keys, encoded.lengths, seed=self.seed, batch_size=batch_size, bucket=self.config.bucket)
        if isinstance(model, _VLLMEngine):
            fn = lambda rows: model.answer_logprobs(encoded, rows, answer_ids)  # noqa: E731
        else:
            ids = host_to_device(answer_ids, model.device)  # once a pass, without waiting for the device
            fn = lambda rows: _answer_logprobs(model, encoded, rows, ids)  # noqa: E731
        lp = run_plan(batches, fn, len(keys), device_type=self.device_type)
        return self.values(lp)


def _answer_logprobs(model: Any, encoded: Any, rows: np.ndarray, answer_ids: Any) -> Any:
    """``[len(rows), n_answers]`` next-token log-probabilities of the answers (transformers backend;
    ``answer_ids`` on the model's device), left on the device: :func:`run_plan` copies every batch's
    back at once, so no batch waits for the one before."""
    import torch

    from gradebench.scorers._ce_infer import to_device

    with torch.inference_mode():
        batch = to_device(left_padded(encoded, rows), model.device)
        try:
            logits = model(**batch, use_cache=False, logits_to_keep=1).logits[:, -1, :]
        except TypeError:  # a model whose forward has no logits_to_keep
            logits = model(**batch, use_cache=False).logits[:, -1, :]
        return torch.log_softmax(logits.float(), dim=-1)[:, answer_ids]


def check_vllm() -> None:
    """Refuse ``backend=vllm`` (one line) where vLLM or a CUDA GPU is absent."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise InvalidArgumentError("the vLLM backend needs the vllm package, which is not installed", key="backend",
                                   hint=VLLM_HINT)
    import torch

    if not torch.cuda.is_available():
        raise InvalidArgumentError("the vLLM backend needs a CUDA GPU and there is none", key="backend",
                                   hint=VLLM_HINT)


class _VLLMEngine:
    """One vLLM engine (this process's GPUs) returning answer-token log-probabilities.

    The engine masks every token but the answers (``allowed_token_ids``) and returns their
    log-probabilities after that mask (``logprobs_mode="processed_logprobs"``): renormalised over
    the answers, which changes neither ``log P(yes) - log P(no)`` nor the rating distribution.
    Not exercised by the test suite without a GPU; on one with vLLM installed, run
    ``tests/adapters/test_adapters.py::test_vllm_judge_matches_transformers``.
    """

    def __init__(self, scorer: LLMJudgeScorer) -> None:
        check_vllm()
        _, world, local = distributed()
        tp = scorer.config.tensor_parallel_size
        if world > 1 and "CUDA_VISIBLE_DEVICES" not in os.environ:  # each process its own GPUs
            os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(local * tp + i) for i in range(tp))
        from vllm import LLM

        self.tp = tp
        self.llm = LLM(model=str(scorer.folder.path), tokenizer=str(scorer.folder.path), dtype=scorer.dtype,
                       seed=scorer.seed, tensor_parallel_size=tp, trust_remote_code=scorer.config.trust_remote_code,
                       max_logprobs=max(20, len(scorer.template[0].answers())), logprobs_mode="processed_logprobs",
                       max_model_len=scorer.options()["max_length"] + 1)

    def answer_logprobs(self, encoded: Any, rows: np.ndarray, answer_ids: np.ndarray) -> np.ndarray:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        ids = [int(i) for i in answer_ids]
        params = SamplingParams(max_tokens=1, temperature=1.0, logprobs=len(ids), allowed_token_ids=ids)
        prompts = [TokensPrompt(prompt_token_ids=encoded.ids[encoded.starts[r]:encoded.starts[r] + encoded.lengths[r]]
                                .tolist()) for r in rows]
        outs = self.llm.generate(prompts, params, use_tqdm=False)
        result = np.full((len(rows), len(ids)), -math.inf)
        for i, out in enumerate(outs):
            top = out.outputs[0].logprobs[0]
            for j, t in enumerate(ids):
                if t in top:
                    result[i, j] = top[t].logprob
        if not np.isfinite(result).any(axis=1).all():
            raise InvalidArgumentError("vLLM returned no log-probability for the answer tokens", key="backend",
                                       hint="use backend=transformers, or a vLLM version with logprobs_mode")
        return result
