"""Multi-response ratings (UltraFeedback and HelpSteer layouts): a prompt's responses graded by their ratings.

One graded list per prompt (rows sharing a subset and prompt are one list, in either layout):
its responses are the candidates. A response's ``grade`` is its rating on one aspect
(``grade: helpfulness``) or the mean of several (``grade: [helpfulness, honesty]``), weighted
where an item says so (``grade: [{helpfulness: 2}, honesty]``), on the recipe's ``rating_range``
``[low, high]`` (a list, so that an ``extends:`` recipe replaces the grade instead of merging it); ``score = (grade - low) / (high - low)``
and ``relevance`` is the dense rank of the grade within the list (0 = the lowest; equal grades
share a rank), so a 1-5 scale and a 0-4 scale give the same relevance scale. Every aspect's
rating is kept in the ``ratings`` column, the combined grade in ``grade``.

Skip reasons (counted, never raised). Per source row: ``empty_prompt``. Per response, dropped
from its list: ``prompt_mismatch`` (a conversation holding a user turn after the prompt),
``empty_response``, ``missing_rating`` (an aspect of the grade not rated), ``duplicate_response``
(a repeat of a response with the same grade: the first is kept) and ``conflicting_duplicate``
(the same response graded differently: every copy is dropped). Per list: ``single_grade`` (fewer
than two different grades left: nothing to rank).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
from pydantic import Field, field_validator, model_validator

from gradebench.datasets import register_builder
from gradebench.datasets.base import Column, GradedList, Selection
from gradebench.datasets.common import dense_rank
from gradebench.datasets.ratings.reader import Completion, Layout, RatingScale, RatingsColumns, RatingsRow, read_ratings
from gradebench.datasets.records import InputFile
from gradebench.datasets.responses.conversation import Conversation, answer_after, is_empty
from gradebench.datasets.responses.lists import (
    CANDIDATE_MESSAGES,
    PROMPT_MESSAGES,
    SUBSET,
    Candidate,
    ResponseBuilder,
    ResponseSection,
    assemble,
    query_key,
    response_key,
)
from gradebench.hashing import short_id

#: grades are compared (ranked, deduplicated) rounded to this many decimals, so a weighted mean's
#: float noise never splits a tie
GRADE_DECIMALS = 9
RATING = pa.struct([pa.field("aspect", pa.string(), nullable=False), pa.field("rating", pa.float64())])


class RatingsSection(ResponseSection):
    """Recipe keys of the ``ratings`` builder."""

    layout: Layout = Field(description="'nested': one row per prompt with a list of completions (UltraFeedback); "
                           "'flat': one row per response, rows grouped by prompt (HelpSteer)")
    columns: RatingsColumns
    rating_key: str = Field(default="Rating", min_length=1,
                            description="the key holding the rating when an aspect's value is an object")
    rating_range: tuple[float, float] = Field(description="[low, high] of the rating scale (e.g. [1, 5])")
    grade: str | list[str | dict[str, float]] = Field(
        description="an aspect name (its rating is the grade), or a list of aspects whose (weighted) mean is the "
        "grade: a name weighs 1, {name: weight} weighs weight"
    )

    @field_validator("grade")
    @classmethod
    def _grade_ok(cls, v: str | list[str | dict[str, float]]) -> str | list[str | dict[str, float]]:
        if isinstance(v, str):
            return v
        if not v:
            raise ValueError("grade lists no aspect; name one aspect, or list several")
        names = []
        for item in v:
            if isinstance(item, dict) and len(item) != 1:
                raise ValueError(f"grade item {item} must be one aspect name or one {{aspect: weight}}")
            names += [item] if isinstance(item, str) else list(item)
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"grade lists aspect {twice[0]!r} twice")
        return v

    @field_validator("rating_range")
    @classmethod
    def _range_ok(cls, v: tuple[float, float]) -> tuple[float, float]:
        if not all(math.isfinite(x) for x in v) or v[0] >= v[1]:
            raise ValueError(f"rating_range must be [low, high] with low < high, got {list(v)}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> RatingsSection:
        if (self.layout == "nested") != (self.columns.completions is not None):
            raise ValueError("layout 'nested' needs columns.completions (the list of completions) and layout 'flat' "
                             f"needs it null; got layout {self.layout!r} with completions {self.columns.completions!r}")
        weights = self.weights()
        unknown = [a for a in weights if a not in self.columns.aspects]
        if unknown:
            raise ValueError(f"grade names aspect {unknown[0]!r}, which is not one of columns.aspects "
                             f"({', '.join(self.columns.aspects)})")
        bad = {a: w for a, w in weights.items() if not (math.isfinite(w) and w > 0)}
        if bad:
            a, w = next(iter(bad.items()))
            raise ValueError(f"grade weight of {a!r} is {w}; weights must be positive numbers")
        return self

    def weights(self) -> dict[str, float]:
        """Aspect -> weight of the grade (a name alone: weight 1)."""
        if isinstance(self.grade, str):
            return {self.grade: 1.0}
        out: dict[str, float] = {}
        for item in self.grade:
            out.update({item: 1.0} if isinstance(item, str) else item)
        return out

    def scale(self) -> RatingScale:
        return RatingScale(self.rating_key, float(self.rating_range[0]), float(self.rating_range[1]))


@dataclass(frozen=True)
class _Rated:
    """A response kept for its list: the answer, its grade and extra column values."""

    answer: Conversation
    grade: float
    completion: Completion


@register_builder
class RatingsBuilder(ResponseBuilder):
    name = "ratings"
    version = 1
    section: ClassVar[type] = RatingsSection
    format_prefix = "ratings"
    summary = ("multi-response ratings (UltraFeedback / HelpSteer layouts, CSV/JSONL/Parquet, text or chat): per "
               "prompt, its responses graded by one aspect's rating or a weighted mean")
    columns = (
        SUBSET,
        PROMPT_MESSAGES,
        Column("grade", pa.float64(), False, "the response's grade on the rating scale (one aspect, or the "
               "weighted mean of the recipe's grade)", "candidate"),
        Column("ratings", pa.list_(RATING), False, "every aspect's rating of the response (null: not rated)",
               "candidate"),
        Column("model", pa.string(), True, "the model that wrote the response", "candidate", dictionary=True),
        Column("source_id", pa.string(), False, "the row's id column, else <file name>:<line or row>; "
               "#k: the k-th completion (0-based) of a nested row", "candidate"),
        CANDIDATE_MESSAGES,
    )

    def read(self, files: Sequence[InputFile]) -> Mapping[str, Sequence[RatingsRow]]:
        r = self.recipe
        return read_ratings(files, r.columns, r.layout, r.scale(), r.messages)

    def _grade(self, ratings: tuple[float | None, ...]) -> float | None:
        by_aspect = dict(zip(self.recipe.columns.aspects, ratings))
        weights = self.recipe.weights()
        if any(by_aspect[a] is None for a in weights):
            return None
        total = sum(weights.values())
        return round(sum(w * by_aspect[a] for a, w in weights.items()) / total, GRADE_DECIMALS)  # type: ignore[operator]

    def select(self, records: Mapping[str, Sequence[RatingsRow]], *, limit: int | None) -> Selection:
        skipped: Counter = Counter()
        groups: dict[tuple[str, ...], list[_Rated]] = {}
        meta: dict[tuple[str, ...], tuple[str, str | None, Conversation]] = {}
        for split in records:
            for n, row in enumerate(records[split]):
                if limit is not None and n >= limit:
                    break
                if is_empty(row.prompt):
                    skipped["empty_prompt"] += 1
                    continue
                key = (split, *query_key(row.subset, row.prompt))
                meta.setdefault(key, (split, row.subset, row.prompt))
                rated = groups.setdefault(key, [])
                for c in row.completions:
                    answer = answer_after(row.prompt, c.response)
                    grade = self._grade(c.ratings)
                    if answer is None:
                        skipped["prompt_mismatch"] += 1
                    elif is_empty(answer):
                        skipped["empty_response"] += 1
                    elif grade is None:
                        skipped["missing_rating"] += 1
                    else:
                        rated.append(_Rated(answer, grade, c))
        units: list[GradedList] = []
        seen: set[str] = set()
        for key, rated in groups.items():
            split, subset, prompt = meta[key]
            cands = self._deduplicated(rated, skipped)
            if len({c.grade for c in cands}) < 2:
                skipped["single_grade"] += 1
                continue
            qid = short_id("query", *query_key(subset, prompt))
            if qid in seen:  # the same prompt in another split: the engine keeps one list per query id
                skipped["duplicate_prompt"] += 1
                continue
            seen.add(qid)
            units.append(self._graded_list(qid, split, subset, prompt, cands))
        return Selection(units=units, skipped=skipped)

    @staticmethod
    def _deduplicated(rated: list[_Rated], skipped: Counter) -> list[_Rated]:
        by_key: dict[tuple[str, str], list[_Rated]] = {}
        for r in rated:
            by_key.setdefault(response_key(r.answer), []).append(r)
        out = []
        for copies in by_key.values():
            if len({c.grade for c in copies}) > 1:
                skipped["conflicting_duplicate"] += len(copies)
                continue
            if len(copies) > 1:
                skipped["duplicate_response"] += len(copies) - 1
            out.append(copies[0])
        return out

    def _graded_list(self, qid: str, split: str, subset: str | None, prompt: Conversation,
                     rated: list[_Rated]) -> GradedList:
        r = self.recipe
        low, high = r.rating_range
        ranks = dense_rank([c.grade for c in rated])
        aspects = list(r.columns.aspects)
        cands = [
            Candidate(c.answer, rank, (c.grade - low) / (high - low), (
                c.grade,
                [{"aspect": a, "rating": x} for a, x in zip(aspects, c.completion.ratings)],
                c.completion.model,
                c.completion.source_id,
            ))
            for c, rank in zip(rated, ranks)
        ]
        return assemble(namespace=r.seed_namespace, shuffle=r.shuffle_candidates, query_id=qid, prompt=prompt,
                        split=split, candidates=cands, query_extra=(subset,))

    def card_section(self) -> list[str]:
        r = self.recipe
        weights = r.weights()
        if len(weights) == 1:
            how = f"its `{next(iter(weights))}` rating"
        else:
            how = "the weighted mean of its ratings (" + ", ".join(f"{a} × {w:g}" for a, w in weights.items()) + ")"
        layout = ("one row per prompt with a list of completions (UltraFeedback layout)" if r.layout == "nested"
                  else "one row per response, rows sharing a prompt grouped (HelpSteer layout)")
        low, high = r.rating_range
        return [
            f"Multi-response ratings, {layout}: each prompt is one list of its responses. A response's grade is "
            f"{how} on the scale [{low:g}, {high:g}]; its score is the grade rescaled to [0, 1] and its relevance "
            "the dense rank of the grade within the list (0 = lowest; equal grades share a rank). Every aspect's "
            "rating is in the `ratings` column (aspects: " + ", ".join(f"`{a}`" for a in r.columns.aspects)
            + "); the source's subset is the `subset` column.",
            "",
            self._mapped_line(),
            "Aspects: " + ", ".join(f"{a} = `{c}`" for a, c in r.columns.aspects.items())
            + (f" inside each `{r.columns.completions}` item (with `response` and `model`)" if r.layout == "nested"
               else "") + f"; an aspect given as an object holds its rating under `{r.rating_key}`.",
        ]
