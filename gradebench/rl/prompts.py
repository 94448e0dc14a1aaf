"""Prompts from a benchmark: one per query, with the candidate that generations are compared with.

A policy sees a query through :data:`PROMPT_TEMPLATE` (``"{query}\\nExplanation:"``) and a
candidate as the continuation ``" " + candidate`` followed by the tokenizer's EOS, so LiPO
(which scores the benchmark's candidates) and GRPO/PPO (which score the policy's own
generations) train the same conditional distribution.

The **reference candidate** of a list is what "the reward ranks a generation above the
baseline" is measured against: the candidate of the ``fair`` tier (the template-fair
explanation of the core paper) when the list has one, else the lower-median-grade candidate
(ties by stored order). :func:`reference_index` is the one definition, used by all three
methods.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported where it is used: the CLI reads this module's template at start-up
    import numpy as np

from gradebench.errors import InvalidArgumentError

#: how a query is shown to the policy; ``{query}`` is replaced by the query text
PROMPT_TEMPLATE = "{query}\nExplanation:"
#: the tier whose candidate is the reference when a list has one
REFERENCE_TIER = "fair"


def format_prompt(query: str, template: str = PROMPT_TEMPLATE) -> str:
    """The prompt text of ``query`` (``template`` must contain ``{query}`` once)."""
    check_template(template)
    return template.replace("{query}", str(query))


def format_response(candidate: str) -> str:
    """The continuation text of a candidate (a leading space after the prompt's colon)."""
    return " " + str(candidate).strip()


def check_template(template: str) -> str:
    """``template`` if it holds ``{query}`` exactly once, else :class:`InvalidArgumentError`."""
    if not isinstance(template, str) or template.count("{query}") != 1:
        raise InvalidArgumentError(f"prompt template {template!r} must contain {{query}} exactly once",
                                   hint='e.g. --prompt-template "{query}\\nExplanation:"')
    return template


def reference_index(grades: np.ndarray, mask: np.ndarray, tiers: np.ndarray | None = None) -> int:
    """Index of a list's reference candidate: its ``fair`` one, else its lower-median grade.

    Args:
        grades: ``[list_size]`` grades.
        mask: ``[list_size]`` bool, True at real candidates (at least one).
        tiers: ``[list_size]`` tier names (None at padding), or None without a tier column.

    Returns:
        The position of the first real candidate of tier ``fair``; without one, the position
        of the candidate at rank ``(n - 1) // 2`` when the ``n`` real candidates are sorted by
        grade ascending (stable, so ties keep their stored order).

    Example:
        >>> import numpy as np
        >>> reference_index(np.array([2., 0., 4., 1., 3.]), np.ones(5, bool))
        0
    """
    import numpy as np

    valid = np.flatnonzero(np.asarray(mask, dtype=bool))
    if valid.size == 0:
        raise InvalidArgumentError("a list without candidates has no reference candidate")
    if tiers is not None:
        for j in valid:
            if tiers[j] == REFERENCE_TIER:
                return int(j)
    order = valid[np.argsort(np.asarray(grades, dtype=np.float64)[valid], kind="stable")]
    return int(order[(len(order) - 1) // 2])


def best_index(relevance: Any, mask: Any) -> int:
    """Position of a list's best candidate: the highest grade among valid ones, ties by stored order.

        >>> import numpy as np
        >>> best_index(np.array([1., 2., 2., 0.]), np.array([True, True, True, True]))
        1
    """
    import numpy as np

    valid = np.flatnonzero(np.asarray(mask, dtype=bool))
    if valid.size == 0:
        raise InvalidArgumentError("a list without candidates has no best candidate")
    grades = np.asarray(relevance, dtype=np.float64)[valid]
    return int(valid[int(np.argmax(grades))])  # argmax returns the first maximum


@dataclass(frozen=True)
class PromptItem:
    """One query as a policy prompt.

    Attributes:
        query_id: the benchmark's query id.
        query: the raw query text (what a gradebench reward scores against).
        prompt: the query through the prompt template (what the policy sees).
        reference: the reference candidate's text (see :func:`reference_index`).
        reference_grade: its relevance grade.
        reference_tier: its tier, or None.
    """

    query_id: str
    query: str
    prompt: str
    reference: str
    reference_grade: float
    reference_tier: str | None

    def as_row(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "query": self.query, "prompt": self.prompt,
                "reference": self.reference}


def prompt_items(lists: Any, template: str = PROMPT_TEMPLATE) -> list[PromptItem]:
    """One :class:`PromptItem` per query of a :class:`~gradebench.benchmark.lists.Lists`, in list order."""
    check_template(template)
    tiers = lists.extra.get("tier")
    items = []
    for q in range(lists.n_queries):
        j = reference_index(lists.relevance[q], lists.mask[q], None if tiers is None else tiers[q])
        tier = None if tiers is None else tiers[q, j]
        items.append(PromptItem(
            query_id=str(lists.query_ids[q]), query=str(lists.queries[q]),
            prompt=format_prompt(lists.queries[q], template), reference=str(lists.candidates[q, j]),
            reference_grade=float(lists.relevance[q, j]), reference_tier=None if tier is None else str(tier),
        ))
    return items


def training_lists(benchmark: Any, options: Any) -> tuple[Any, Any]:
    """``(benchmark, lists)``: the benchmark opened, and the lists of ``options.split`` (the first
    ``options.max_queries`` of them, when set)."""
    from gradebench.benchmark.lists import open_benchmark

    bench = open_benchmark(benchmark)
    lists = bench.lists(options.split)
    if options.max_queries is not None:
        lists = lists.head(options.max_queries)
    return bench, lists


def tokenized_prompts(items: list[PromptItem], tokenizer: Any, *, context: int, reserve: int) -> list[list[int]]:
    """Each prompt's token ids, checked to leave ``reserve`` of the policy's ``context`` tokens for the response."""
    from gradebench.rl.policy import check_prompt_lengths

    ids = [list(tokenizer(it.prompt)["input_ids"]) for it in items]
    check_prompt_lengths([len(x) for x in ids], [it.query_id for it in items], context=context, reserve=reserve)
    return ids


def reference_kind(lists: Any) -> str:
    """``"fair tier"`` when every list has a ``fair`` candidate, else ``"median grade"`` (or ``"mixed"``)."""
    import numpy as np

    tiers = lists.extra.get("tier")
    if tiers is None:
        return "median grade"
    has = [any(tiers[q, j] == REFERENCE_TIER for j in np.flatnonzero(lists.mask[q])) for q in range(lists.n_queries)]
    return "fair tier" if all(has) else ("median grade" if not any(has) else "mixed")
