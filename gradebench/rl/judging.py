"""A held-out judge's view of a policy: sample completions for held-out queries and score them.

The **judge** is a gradebench reward (an exported scorer, ``gradebench export-reward``) that is
*not* the reward being optimised; it reads ``(query, completion)`` like the reward does. A run
with a judge (``gradebench grpo --judge DIR``) evaluates the policy before and after training
on the same held-out prompts, with the same sampling seed (the run's), so the two are paired:

* prompts: the first ``queries`` queries of ``split`` (default ``validation``: queries the
  policy never trained on, whose candidates the scorers never trained on either);
* completions: ``samples`` per prompt, sampled as the trainer samples (``temperature``,
  no top-k / top-p filter, at most ``max_completion_length`` new tokens), under the run's seed;
* figures (:meth:`Judging.figures`): ``judge_mean`` (the judge's mean score of the completions,
  standardised with the judge's calibration, so 0 is the mean candidate of its validation
  split and 1 is one standard deviation), ``judge_above_reference`` (share of completions the
  judge scores above their query's reference candidate, :func:`~gradebench.rl.prompts.reference_index`),
  ``judge_above_best`` (share above the query's best candidate, e.g. the human explanation),
  ``reward_mean`` (the optimised reward on the same completions, to tell learning from reward
  hacking; null for a method without a reward, LiPO), ``judge_by_query`` (the judge's mean
  score of each prompt's completions, in the held-out order, so two runs judged on the same
  prompts can be compared prompt by prompt), and two judge-free checks: ``best_f1`` (:func:`word_f1` of each completion against
  its query's best candidate, the human explanation) and ``distinct_2``
  (:func:`distinct_bigrams`, low for a policy that repeats itself); ``mean_words`` and
  ``empty_share``;
* anchors (:meth:`Judging.anchors`, scored once): the judge's and the reward's mean score of the
  held-out candidates per grade, so ``judge_mean`` can be read against "a human explanation",
  "an explanation of another hypothesis", "an unrelated one".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradebench.errors import InvalidArgumentError
from gradebench.rl.prompts import best_index, format_prompt, reference_index
from gradebench.rl.rewards import RewardFn, RewardSource, call_reward, resolve_reward
from gradebench.strict import StrictModel

#: completions a held-out evaluation shows in the record
N_EXAMPLES = 3
#: prompts per generation batch
GEN_BATCH = 32


class JudgeOptions(StrictModel):
    """Where and how much a judge evaluates (``gradebench grpo --judge-split/--judge-queries/--judge-samples``)."""

    split: str = "validation"
    queries: int = 200
    samples: int = 2

    @classmethod
    def build(cls, **kwargs: Any) -> JudgeOptions:
        """The options, or one :class:`InvalidArgumentError` naming the flag."""
        for name in ("queries", "samples"):
            value = kwargs.get(name, cls.model_fields[name].default)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"--judge-{name} must be an integer >= 1, got {value!r}")
        if not isinstance(kwargs.get("split", "validation"), str):
            raise InvalidArgumentError(f"--judge-split must be a split name, got {kwargs['split']!r}")
        return cls(**kwargs)


@dataclass(frozen=True)
class HeldOut:
    """The held-out prompts: per query its id, raw query, prompt, candidates and their grades."""

    split: str
    query_ids: list[str]
    queries: list[str]
    prompts: list[str]
    candidates: list[list[str]]
    grades: list[list[float]]
    reference: list[int]
    best: list[int]


def held_out(bench: Any, options: JudgeOptions, template: str) -> HeldOut:
    """The first ``options.queries`` queries of ``options.split`` of an opened benchmark.

    Raises:
        UnknownNameError: no such split. InvalidArgumentError: the split has no queries.
    """
    lists = bench.lists(options.split).head(options.queries)
    if lists.n_queries == 0:
        raise InvalidArgumentError(f"split {options.split!r} of {bench.name} has no queries to judge",
                                   hint="choose another --judge-split")
    tiers = lists.extra.get("tier")
    cands, grades, ref, best = [], [], [], []
    for q in range(lists.n_queries):
        valid = np.flatnonzero(lists.mask[q])
        cands.append([str(lists.candidates[q, j]) for j in valid])
        grades.append([float(lists.relevance[q, j]) for j in valid])
        r = reference_index(lists.relevance[q], lists.mask[q], None if tiers is None else tiers[q])
        b = best_index(lists.relevance[q], lists.mask[q])
        ref.append(int(np.searchsorted(valid, r)))
        best.append(int(np.searchsorted(valid, b)))
    return HeldOut(split=options.split, query_ids=[str(x) for x in lists.query_ids],
                   queries=[str(x) for x in lists.queries], prompts=[format_prompt(x, template) for x in lists.queries],
                   candidates=cands, grades=grades, reference=ref, best=best)


def sample_completions(model: Any, tokenizer: Any, prompts: Sequence[str], *, samples: int, max_new_tokens: int,
                       temperature: float, seed: int) -> list[list[str]]:
    """``samples`` completions per prompt (``[n_prompts][samples]``), decoded without special tokens and
    stripped; sampled under ``seed`` with the global RNG left as it was. ``tokenizer`` pads on the left."""
    import torch

    was_training = model.training
    model.eval()
    out: list[list[str]] = []
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(seed)
            for i in range(0, len(prompts), GEN_BATCH):
                chunk = list(prompts[i:i + GEN_BATCH])
                enc = tokenizer(chunk, return_tensors="pt", padding=True).to(model.device)
                gen = model.generate(**enc, do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
                                     max_new_tokens=max_new_tokens, num_return_sequences=samples,
                                     pad_token_id=pad, eos_token_id=tokenizer.eos_token_id)
                texts = tokenizer.batch_decode(gen[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
                for k in range(len(chunk)):
                    out.append([t.strip() for t in texts[k * samples:(k + 1) * samples]])
    finally:
        model.train(was_training)
    return out


def word_f1(text: str, reference: str) -> float:
    """Bag-of-words F1 of ``text`` against ``reference`` (lower-cased ``\\w+`` words, counts clipped as in
    SQuAD's token F1); 0 when either is empty.

        >>> round(word_f1("a dog is an animal", "a dog is an animal ."), 6), word_f1("not not not", "a dog")
        (1.0, 0.0)
    """
    from collections import Counter

    from gradebench.words import lexical_words

    a, b = Counter(lexical_words(text)), Counter(lexical_words(reference))
    common = sum((a & b).values())
    if common == 0:
        return 0.0
    precision, recall = common / sum(a.values()), common / sum(b.values())
    return 2 * precision * recall / (precision + recall)


def distinct_bigrams(texts: Sequence[str]) -> float:
    """Distinct word bigrams over all bigrams of ``texts`` (bigrams within each text, counted over all
    texts: 1.0 = no bigram repeats; a policy that loops, or writes the same text for every
    prompt, scores low); NaN without bigrams.

        >>> distinct_bigrams(["a b a b", "c d"])
        0.75
    """
    from gradebench.words import lexical_words

    grams = [(w[i], w[i + 1]) for t in texts for w in [lexical_words(t)] for i in range(len(w) - 1)]
    return len(set(grams)) / len(grams) if grams else float("nan")


def _by_query(fn: RewardFn, queries: Sequence[str], texts: Sequence[Sequence[str]]) -> list[np.ndarray]:
    """``fn``'s scores of each query's texts (one call, each query's texts consecutive)."""
    flat_q = [q for q, ts in zip(queries, texts) for _ in ts]
    flat_t = [t for ts in texts for t in ts]
    scores = np.asarray(call_reward(fn, flat_q, flat_t), dtype=np.float64)
    out, i = [], 0
    for ts in texts:
        out.append(scores[i:i + len(ts)])
        i += len(ts)
    return out


def run_identity(source: RewardSource) -> str:
    """What a reward was trained as: its run fingerprint (an exported folder or a run), else its source."""
    meta = getattr(source.fn, "metadata", None)
    run = meta.get("run") if isinstance(meta, dict) else None
    if isinstance(run, dict) and isinstance(run.get("run_fingerprint"), str):
        return run["run_fingerprint"]
    return str(source.ref.get("source"))


def build_judging(judge: Any, bench: Any, *, template: str, split: str, queries: int, samples: int,
                  reward: RewardSource | None = None) -> Judging:
    """The held-out :class:`Judging` of the reward folder ``judge`` on ``bench``, checked before anything
    is written (``gradebench grpo | lipo --judge DIR --judge-split --judge-queries --judge-samples``).

    Args:
        reward: the optimised reward (GRPO), which the judge must not be; None for LiPO.

    Raises:
        InvalidArgumentError: the judge is not a folder, is the optimised reward, or bad ``--judge-*`` values.
        GradebenchError: whatever loading the judge folder raises.
    """
    from pathlib import Path

    jopts = JudgeOptions.build(split=split, queries=queries, samples=samples)
    if not isinstance(judge, (str, Path)):
        raise InvalidArgumentError(f"--judge must be a reward folder, got {type(judge).__name__}",
                                   hint="--judge DIR: a folder written by `gradebench export-reward`")
    judge_source = resolve_reward(judge, normalize=True)
    if reward is not None and run_identity(judge_source) == run_identity(reward):
        raise InvalidArgumentError("--judge is the reward being optimised; a judge must be held out",
                                   hint="export another scorer (another model, loss or seed) as the judge")
    held = held_out(bench, jopts, template)
    return Judging(held=held, source=judge_source, reward=None if reward is None else reward.fn,
                   samples=jopts.samples)


def judge_identity(judging: Judging) -> dict[str, Any]:
    """The judge's part of a run's record (``source``, ``fingerprint``, ``scorer``, ``split``, ``n_queries``,
    ``samples``): :class:`~gradebench.experiments.policy_record.JudgeRef` without the figures."""
    return {"source": judging.source.ref["source"], "fingerprint": judging.source.ref["fingerprint"],
            "scorer": judging.scorer, "split": judging.held.split, "n_queries": len(judging.held.queries),
            "samples": judging.samples}


@dataclass
class Judging:
    """A judge (and the optimised reward) over one :class:`HeldOut` set; the candidates' scores are
    computed once (:meth:`anchors`) and reused by every :meth:`evaluate`.

    Attributes:
        source: the judge (:func:`~gradebench.rl.rewards.resolve_reward` of its folder, standardised).
        reward: the optimised reward's callable (None for a method without one: LiPO).
    """

    held: HeldOut
    source: RewardSource
    reward: RewardFn | None
    samples: int

    @property
    def judge(self) -> RewardFn:
        return self.source.fn

    @property
    def scorer(self) -> str | None:
        """The judge's scorer and loss, e.g. ``"lambdamart"`` or ``"hashed-mlp + ranknet"``."""
        meta = getattr(self.source.fn, "metadata", None)
        if not isinstance(meta, dict):
            return None
        name = (meta.get("scorer") or {}).get("name")
        loss = (meta.get("loss") or {}).get("name")
        return f"{name} + {loss}" if name and loss else name

    def __post_init__(self) -> None:
        self._judged = _by_query(self.judge, self.held.queries, self.held.candidates)
        self._rewarded = (None if self.reward is None
                          else _by_query(self.reward, self.held.queries, self.held.candidates))

    def anchors(self) -> dict[str, Any]:
        """Per grade, the judge's and the reward's mean score of the held-out candidates (grade as a string key;
        ``reward_by_grade`` is null without a reward)."""
        grades = np.concatenate([np.asarray(g) for g in self.held.grades])
        j = np.concatenate(self._judged)
        r = None if self._rewarded is None else np.concatenate(self._rewarded)
        out: dict[str, Any] = {"judge_by_grade": {}, "reward_by_grade": None if r is None else {}}
        for g in sorted(set(grades.tolist())):
            key = f"{g:g}"
            out["judge_by_grade"][key] = round(float(j[grades == g].mean()), 6)
            if r is not None:
                out["reward_by_grade"][key] = round(float(r[grades == g].mean()), 6)
        return out

    def figures(self, completions: list[list[str]]) -> dict[str, Any]:
        """The judge's (and the reward's) view of ``completions`` of the held-out prompts (module docstring)."""
        held = self.held
        judged = _by_query(self.judge, held.queries, completions)
        rewarded = None if self.reward is None else _by_query(self.reward, held.queries, completions)
        above_ref, above_best = [], []
        for q, scores in enumerate(judged):
            above_ref.extend((scores > self._judged[q][held.reference[q]]).tolist())
            above_best.extend((scores > self._judged[q][held.best[q]]).tolist())
        texts = [t for ts in completions for t in ts]
        words = [len(t.split()) for t in texts]
        f1 = [word_f1(t, held.candidates[q][held.best[q]]) for q, ts in enumerate(completions) for t in ts]
        examples = [{"query_id": held.query_ids[q], "query": held.queries[q], "completion": completions[q][0]}
                    for q in range(min(N_EXAMPLES, len(completions)))]
        return {
            "judge_mean": round(float(np.concatenate(judged).mean()), 6),
            "judge_above_reference": round(float(np.mean(above_ref)), 6),
            "judge_above_best": round(float(np.mean(above_best)), 6),
            "reward_mean": None if rewarded is None else round(float(np.concatenate(rewarded).mean()), 6),
            "best_f1": round(float(np.mean(f1)), 6),
            "distinct_2": round(distinct_bigrams(texts), 6),
            "mean_words": round(float(np.mean(words)), 3),
            "empty_share": round(float(np.mean([n == 0 for n in words])), 6),
            "n_completions": len(texts),
            "judge_by_query": [round(float(s.mean()), 6) if s.size else None for s in judged],
            "examples": examples,
        }

    def evaluate(self, model: Any, tokenizer: Any, *, max_new_tokens: int, temperature: float,
                 seed: int) -> dict[str, Any]:
        """Sample :attr:`samples` completions per held-out prompt from ``model``; their :meth:`figures`."""
        completions = sample_completions(model, tokenizer, self.held.prompts, samples=self.samples,
                                         max_new_tokens=max_new_tokens, temperature=temperature, seed=seed)
        return self.figures(completions)
