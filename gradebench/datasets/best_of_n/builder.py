"""Best-of-N lists (RewardBench 2 layout): per row, the chosen response(s) 1 above the rejected ones 0.

Each row is one list holding all its responses: every chosen response (one, or several in
RewardBench 2's Ties subset) has relevance 1 and score 1.0, every rejected one relevance 0 and
score 0.0, so NDCG@1 and best-of-N accuracy ("is a chosen response ranked first?") read the
same. The row's subset is the ``subset`` column; ``position`` keeps each response's index in its
source list.

Skip reasons (counted, never raised). Per row: ``no_prompt`` (an implicit-prompt conversation
without a user turn), ``empty_prompt``, ``prompt_mismatch`` (responses that do not continue the
same prompt), ``no_chosen`` / ``no_rejected`` (none left after the drops below),
``chosen_equals_rejected`` (one text both chosen and rejected: the row contradicts itself) and
``duplicate_list`` (the same subset, prompt and responses again). Per response, dropped from its
list: ``empty_response`` and ``duplicate_response`` (a repeat of a response with the same grade).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import ClassVar

import pyarrow as pa
from pydantic import Field

from gradebench.datasets import register_builder
from gradebench.datasets.base import Column, GradedList
from gradebench.datasets.best_of_n.reader import BestOfNColumns, BestOfNRow, read_best_of_n
from gradebench.datasets.records import InputFile
from gradebench.datasets.responses.conversation import Conversation, answer_after, implicit_prompt, is_empty
from gradebench.datasets.responses.lists import (
    CANDIDATE_MESSAGES,
    PREFERENCE,
    PROMPT_MESSAGES,
    ROW_ID,
    SUBSET,
    Candidate,
    ResponseBuilder,
    ResponseSection,
    assemble,
    query_key,
)
from gradebench.hashing import short_id

class BestOfNSection(ResponseSection):
    """Recipe keys of the ``best-of-n`` builder."""

    columns: BestOfNColumns = Field(default_factory=BestOfNColumns, description="the source column of each role")


def split_row(row: BestOfNRow) -> tuple[Conversation, list[Conversation], list[Conversation]] | str:
    """``(prompt, chosen answers, rejected answers)`` of a row, or the reason it is skipped."""
    responses = [*row.chosen, *row.rejected]
    if row.prompt is None:  # implicit prompt: every response is a conversation (the reader checked)
        first = next((c for c in row.chosen if not isinstance(c, str)), None)
        prompt = implicit_prompt(first) if first is not None else None
        if prompt is None:
            return "no_prompt"
        answers: list[Conversation] = []
        for c in responses:
            if isinstance(c, str) or c[: len(prompt)] != prompt or any(t.role == "user" for t in c[len(prompt):]):
                return "prompt_mismatch"
            answers.append(c[len(prompt):])
    else:
        prompt = row.prompt
        found = [answer_after(prompt, c) for c in responses]
        if any(a is None for a in found):
            return "prompt_mismatch"
        answers = [a for a in found if a is not None]
    return prompt, answers[: len(row.chosen)], answers[len(row.chosen):]


@register_builder
class BestOfNBuilder(ResponseBuilder):
    name = "best-of-n"
    version = 1
    section: ClassVar[type] = BestOfNSection
    format_prefix = "best-of-n"
    summary = ("best-of-N lists (RewardBench 2 layout, CSV/JSONL/Parquet, text or chat): per row, the chosen "
               "response(s) (1) above every rejected one (0)")
    columns = (
        SUBSET,
        ROW_ID,
        PROMPT_MESSAGES,
        PREFERENCE,
        Column("position", pa.int32(), False, "0-based index of the response in its source list (chosen or "
               "rejected)", "candidate"),
        CANDIDATE_MESSAGES,
    )

    def read(self, files: Sequence[InputFile]) -> Mapping[str, Sequence[BestOfNRow]]:
        return read_best_of_n(files, self.recipe.columns, self.recipe.messages)

    def _graded_list(self, row: BestOfNRow, drops: Counter) -> GradedList | str:
        parts = split_row(row)
        if isinstance(parts, str):
            return parts
        prompt, chosen, rejected = parts
        if is_empty(prompt):
            return "empty_prompt"
        kept: dict[tuple[str, str], Candidate] = {}
        for grade, label, answers in ((1, "chosen", chosen), (0, "rejected", rejected)):
            for k, answer in enumerate(answers):
                cand = Candidate(answer, grade, float(grade), (label, k))
                if is_empty(answer):
                    drops["empty_response"] += 1
                elif cand.key in kept:
                    if kept[cand.key].relevance != grade:
                        return "chosen_equals_rejected"
                    drops["duplicate_response"] += 1
                else:
                    kept[cand.key] = cand
        cands = list(kept.values())
        if not any(c.relevance == 1 for c in cands):
            return "no_chosen"
        if not any(c.relevance == 0 for c in cands):
            return "no_rejected"
        keys = sorted(c.key for c in cands)
        qid = short_id("query", *query_key(row.subset, prompt), *(part for key in keys for part in key))
        r = self.recipe
        return assemble(namespace=r.seed_namespace, shuffle=r.shuffle_candidates, query_id=qid, prompt=prompt,
                        split=row.split, candidates=cands, query_extra=(row.subset, row.source_id))

    def card_section(self) -> list[str]:
        return [
            "Best-of-N lists: each row is one list holding all its responses, every chosen response graded 1 "
            "(score 1.0) and every rejected one 0 (score 0.0), so NDCG@1 is best-of-N accuracy (a chosen "
            "response ranked first). Chat conversations are rendered as `role: content` blocks (one message: its "
            "content) and kept as JSON in `prompt_messages` and `candidate_messages`; the source's subset is the "
            "`subset` column and `position` each response's index in its source list.",
            "",
            self._mapped_line(),
        ]
