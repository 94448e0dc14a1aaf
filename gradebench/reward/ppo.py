"""A reward as a ``torch.nn.Module`` over the policy's token ids: the one PPO reward adaptor.

PPO trainers hand the reward model token ids: a prompt (left-padded) followed by the response
(right-padded). A gradebench scorer reads text with its own tokenizer (or none), so
:class:`PolicyTokenReward` decodes the ids with the **policy** tokenizer (padding and special
tokens dropped) and scores ``(query, response)`` texts with the reward, which re-encodes them
its own way (the cross-encoder's pair encoding, inside :meth:`RewardFn.score_texts
<gradebench.reward.loading.RewardFn.score_texts>`). It serves two callers:

* **direct calls** -- ``rm(ids, context_length=n)`` (the first ``n`` columns are the prompt),
  ``rm(response_ids, prompts=[...])`` (the query texts given), or ``rm(ids)`` when the adaptor
  was built with ``prompt_ids``: ``[batch]`` float32 rewards, no gradient;
* **TRL's PPO** (``trl.experimental.ppo.PPOTrainer``, TRL 1.12) -- its ``get_reward(model,
  query_responses, pad_token_id, context_length)`` calls ``getattr(model,
  model.base_model_prefix)(input_ids=, attention_mask=, ...)``, then ``model.score(...)`` on
  ``hidden_states[-1]``, and reads the ``[batch, length, 1]`` result at each row's last response
  token. The adaptor's ``backbone`` returns each row's reward broadcast over the positions and
  ``score`` is the identity. TRL gives no prompt length, so the adaptor must be built with the
  ``prompt_ids`` of the PPO dataset: a row's prompt is found by its leading token ids, and the
  reward sees that prompt's ``queries`` text (e.g. the raw query, not the templated prompt).

Example::

    reward = gradebench.reward.load("reward/", normalize=True)
    rm = PolicyTokenReward(reward, policy_tokenizer)
    scores = rm(query_responses, context_length=queries.shape[1])   # [batch] float32, no grad

The reward keeps its own device (``load(..., device=...)``); the scores come back on the
device of ``input_ids``. ``gradebench.rl.rewards.TokenRewardModel`` is this class.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from gradebench.errors import InvalidArgumentError, RunError


class _Backbone(torch.nn.Module):
    """What TRL's ``get_reward`` calls: the rewards of the rows as ``hidden_states[-1]`` ``[batch, length, 1]``."""

    def __init__(self, rewards: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.rewards = rewards

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **_: Any) -> Any:
        values = self.rewards(input_ids, attention_mask)
        return SimpleNamespace(hidden_states=(values[:, None, None].expand(-1, input_ids.shape[1], 1),))


class PolicyTokenReward(torch.nn.Module):
    """Scores policy token ids with a gradebench reward (see the module docstring).

    Args:
        reward: the loaded reward (``gradebench.reward.load``: its ``score_texts`` is used), or any
            callable ``reward(prompts=..., completions=...) -> list[float]``.
        policy_tokenizer: the policy's tokenizer (``decode`` and ``pad_token_id`` are used).
        prompt_ids: the token ids of every prompt the rows may start with (TRL's PPO dataset).
        queries: the text the reward reads for each of ``prompt_ids`` (default: the decoded prompt).
        observe: ``observe(prompt_indices, rewards)`` after each call that found the prompts by
            their ids (e.g. a step log).
    """

    base_model_prefix = "backbone"

    def __init__(self, reward: Any, policy_tokenizer: Any, *, prompt_ids: Sequence[Sequence[int]] | None = None,
                 queries: Sequence[str] | None = None,
                 observe: Callable[[list[int], list[float]], None] | None = None) -> None:
        super().__init__()
        if not callable(getattr(reward, "score_texts", None)) and not callable(reward):
            raise InvalidArgumentError(
                f"reward must be a gradebench RewardFn or a callable, got {type(reward).__name__}",
                hint="load one with gradebench.reward.load(DIR)")
        if queries is not None and (prompt_ids is None or len(queries) != len(prompt_ids)):
            raise InvalidArgumentError("queries needs prompt_ids of the same length",
                                       hint="give one query text per prompt")
        self.reward = reward
        self.tokenizer = policy_tokenizer
        self.observe = observe
        prompts = [tuple(int(t) for t in ids) for ids in (prompt_ids or [])]
        self._prompts = {ids: i for i, ids in reversed(list(enumerate(prompts)))}  # first of equal prompts
        self._lengths = sorted({len(ids) for ids in prompts}, reverse=True)  # longest prompt first
        self.queries = list(queries) if queries is not None else [
            self.tokenizer.decode(list(ids), skip_special_tokens=True).strip() for ids in prompts]
        self.backbone = _Backbone(self._by_prompt)
        self.score = torch.nn.Identity()

    def decode(self, ids: torch.Tensor, keep: torch.Tensor) -> list[str]:
        """Each row's kept token ids as text (policy tokenizer, special tokens skipped)."""
        rows = ids.detach().cpu()
        mask = keep.detach().cpu().bool()
        return [self.tokenizer.decode(r[m].tolist(), skip_special_tokens=True).strip() for r, m in zip(rows, mask)]

    def rewards(self, queries: Sequence[str], responses: Sequence[str]) -> np.ndarray:
        """``[n]`` float64 rewards of ``n`` (query, response) texts."""
        if callable(getattr(self.reward, "score_texts", None)):
            scores = self.reward.score_texts(list(queries), list(responses))
        else:
            scores = self.reward(prompts=list(queries), completions=list(responses))
        values = np.asarray(scores, dtype=np.float64)
        if values.shape != (len(responses),):
            raise InvalidArgumentError(f"the reward returned {values.size} values for {len(responses)} responses",
                                       hint="a reward returns one float per (prompt, completion)")
        return values

    def _mask(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        if attention_mask is None:
            pad = getattr(self.tokenizer, "pad_token_id", None)
            return torch.ones_like(input_ids, dtype=torch.bool) if pad is None else input_ids != pad
        if attention_mask.shape != input_ids.shape:
            raise InvalidArgumentError(f"attention_mask {tuple(attention_mask.shape)} does not match input_ids "
                                       f"{tuple(input_ids.shape)}")
        return attention_mask.bool()

    def _split(self, tokens: list[int]) -> tuple[int, list[int]]:
        """``(prompt index, response ids)`` of a row's kept ids: the longest known prompt it starts with."""
        for n in self._lengths:
            index = self._prompts.get(tuple(tokens[:n]))
            if index is not None:
                return index, tokens[n:]
        raise RunError("a sequence starts with none of the reward adaptor's prompts",
                       hint="build the PolicyTokenReward with the prompt ids the policy is given")

    @torch.no_grad()
    def _by_prompt(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Rewards of prompt + response rows whose prompt is found among ``prompt_ids``."""
        if not self._prompts:
            raise InvalidArgumentError("this PolicyTokenReward knows no prompts",
                                       hint="build it with prompt_ids=..., or give context_length or prompts")
        keep = self._mask(input_ids, attention_mask)
        indices, responses = [], []
        for row, mask in zip(input_ids.tolist(), keep.tolist()):
            index, response = self._split([t for t, k in zip(row, mask) if k])
            indices.append(index)
            responses.append(self.tokenizer.decode(response, skip_special_tokens=True).strip())
        values = self.rewards([self.queries[i] for i in indices], responses)
        if self.observe is not None:
            self.observe(indices, values.tolist())
        return torch.as_tensor(values, dtype=torch.float32, device=input_ids.device)

    @torch.no_grad()
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, *,
                context_length: int | None = None, prompts: Sequence[str] | None = None) -> torch.Tensor:
        """``[batch]`` float32 rewards of ``input_ids`` (``[batch, seq]`` policy token ids).

        Args:
            input_ids: prompt + response ids (with ``context_length``, or alone when the adaptor
                knows its ``prompt_ids``), or response ids only (with ``prompts``).
            attention_mask: 1 at real tokens; default: ``input_ids != pad_token_id`` (TRL's convention).
            context_length: the first ``context_length`` columns are the prompt.
            prompts: the query texts, when ``input_ids`` hold only the responses.

        Raises:
            InvalidArgumentError: both ``context_length`` and ``prompts``, neither without known
                prompts, or shapes that do not fit.
        """
        if input_ids.ndim != 2:
            raise InvalidArgumentError(f"input_ids must be [batch, seq], got shape {tuple(input_ids.shape)}")
        if context_length is not None and prompts is not None:
            raise InvalidArgumentError("give context_length (prompt + response ids) or prompts (response ids "
                                       "only), not both")
        if context_length is None and prompts is None:
            if not self._prompts:
                raise InvalidArgumentError("give context_length (prompt + response ids) or prompts (response ids "
                                           "only)", hint="or build the PolicyTokenReward with prompt_ids=...")
            return self._by_prompt(input_ids, attention_mask)
        mask = self._mask(input_ids, attention_mask)
        if context_length is not None:
            if not 0 <= int(context_length) <= input_ids.shape[1]:
                raise InvalidArgumentError(f"context_length {context_length} is outside 0..{input_ids.shape[1]}")
            cl = int(context_length)
            queries = self.decode(input_ids[:, :cl], mask[:, :cl])
            responses = self.decode(input_ids[:, cl:], mask[:, cl:])
        else:
            queries = [str(p) for p in prompts]  # type: ignore[union-attr]
            if len(queries) != input_ids.shape[0]:
                raise InvalidArgumentError(f"{len(queries)} prompts for a batch of {input_ids.shape[0]}")
            responses = self.decode(input_ids, mask)
        return torch.as_tensor(self.rewards(queries, responses), dtype=torch.float32, device=input_ids.device)
