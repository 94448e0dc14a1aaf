"""Pairwise preferences (TRL and RewardBench layouts) as graded lists of two: chosen 1, rejected 0.

Each row is one list: the prompt is the query; the chosen response has relevance 1 and score
1.0, the rejected one relevance 0 and score 0.0. The row's subset (RewardBench's ``subset``) is
the ``subset`` column, its models and source scores are kept per candidate. A prompt that comes
with several pairs gives several lists (their query ids differ by their responses): a pair is a
comparison of its own two responses, and pairs of one prompt are not merged into one ranking.

Skip reasons (counted, never raised; each counts a row): ``no_prompt`` (an implicit-prompt
conversation without a user turn), ``empty_prompt``, ``prompt_mismatch`` (chosen and rejected
do not continue the same prompt, or a response holds a user turn after it), ``empty_chosen``,
``empty_rejected``, ``identical_responses`` (chosen and rejected are the same text),
``tie`` (``score_chosen`` equals ``score_rejected``) and ``duplicate_pair`` (the same subset,
prompt and pair again).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import ClassVar

import pyarrow as pa
from pydantic import Field

from gradebench.datasets import register_builder
from gradebench.datasets.base import Column, GradedList
from gradebench.datasets.preferences.reader import PairColumns, PairRow, read_pairs
from gradebench.datasets.records import InputFile
from gradebench.datasets.responses.conversation import (
    Conversation,
    answer_after,
    implicit_prompt,
    is_empty,
)
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

class PreferencesSection(ResponseSection):
    """Recipe keys of the ``preferences`` builder."""

    columns: PairColumns = Field(default_factory=PairColumns, description="the source column of each role")


def split_pair(row: PairRow) -> tuple[Conversation, Conversation, Conversation] | str:
    """``(prompt, chosen answer, rejected answer)`` of a row, or the reason it is skipped."""
    if row.prompt is None:  # implicit prompt: both are whole conversations (the reader checked)
        if isinstance(row.chosen, str) or isinstance(row.rejected, str):
            return "prompt_mismatch"  # not reached: the reader refuses plain text without a prompt column
        prompt = implicit_prompt(row.chosen)
        if prompt is None:
            return "no_prompt"
        if row.rejected[: len(prompt)] != prompt:
            return "prompt_mismatch"
        chosen, rejected = row.chosen[len(prompt):], row.rejected[len(prompt):]
        if any(t.role == "user" for t in rejected):
            return "prompt_mismatch"
        return prompt, chosen, rejected
    chosen = answer_after(row.prompt, row.chosen)
    rejected = answer_after(row.prompt, row.rejected)
    if chosen is None or rejected is None:
        return "prompt_mismatch"
    return row.prompt, chosen, rejected


@register_builder
class PreferencesBuilder(ResponseBuilder):
    name = "preferences"
    version = 1
    section: ClassVar[type] = PreferencesSection
    format_prefix = "preferences"
    duplicate_reason = "duplicate_pair"
    summary = ("pairwise preferences (TRL / RewardBench layouts, CSV/JSONL/Parquet, text or chat): per row, "
               "chosen (1) above rejected (0)")
    columns = (
        SUBSET,
        ROW_ID,
        PROMPT_MESSAGES,
        PREFERENCE,
        Column("model", pa.string(), True, "the model that wrote the response (chosen_model / rejected_model)",
               "candidate", dictionary=True),
        Column("source_score", pa.float64(), True, "the source's score of the response (score_chosen / "
               "score_rejected)", "candidate"),
        CANDIDATE_MESSAGES,
    )

    def read(self, files: Sequence[InputFile]) -> Mapping[str, Sequence[PairRow]]:
        return read_pairs(files, self.recipe.columns, self.recipe.messages)

    def _graded_list(self, row: PairRow, drops: Counter) -> GradedList | str:
        parts = split_pair(row)
        if isinstance(parts, str):
            return parts
        prompt, chosen, rejected = parts
        if is_empty(prompt):
            return "empty_prompt"
        if is_empty(chosen):
            return "empty_chosen"
        if is_empty(rejected):
            return "empty_rejected"
        good = Candidate(chosen, 1, 1.0, ("chosen", row.chosen_model, row.score_chosen))
        bad = Candidate(rejected, 0, 0.0, ("rejected", row.rejected_model, row.score_rejected))
        if good.key == bad.key:
            return "identical_responses"
        if row.score_chosen is not None and row.score_chosen == row.score_rejected:
            return "tie"
        qid = short_id("query", *query_key(row.subset, prompt), *good.key, *bad.key)
        r = self.recipe
        return assemble(namespace=r.seed_namespace, shuffle=r.shuffle_candidates, query_id=qid, prompt=prompt,
                        split=row.split, candidates=[good, bad], query_extra=(row.subset, row.source_id))

    def card_section(self) -> list[str]:
        return [
            "Pairwise preferences: each row is one list of two responses to its prompt, the chosen one graded 1 "
            "(score 1.0) and the rejected one 0 (score 0.0), so every ranking metric reads as preference "
            "accuracy. A prompt with several pairs gives several lists. Chat conversations are rendered as "
            "`role: content` blocks (one message: its content) and kept as JSON in `prompt_messages` and "
            "`candidate_messages`; the source's subset is the `subset` column.",
            "",
            self._mapped_line(),
        ]
