"""WorldTree V2.1 (TextGraphs-2021 release): science questions ranked against tablestore facts.

Each question is one query (the recipe's ``query_template`` over the question stem and its
correct answer, by default TextGraphs-2021's ``"<question> [ANSWER] <answer>"``). Its
candidates are tablestore facts, each rendered as the sentence its table row reads as:

* graded by the expert ratings (``wt-expert-ratings.<split>.json``, 0..``rating_max``) when the
  split has a ratings file (``grade_by: auto``) or always (``grade_by: ratings``): every rated
  fact, ``relevance`` = its rating, ``score`` = rating / ``rating_max``;
* otherwise graded by explanation role (``grade_by: roles``, or ``auto`` without ratings): every
  fact of the gold explanation, ``relevance`` = ``role_grades[role]`` (recipe data),
  ``score`` = grade / the highest role grade;
* plus ``negatives.count`` hard negatives: facts outside the explanation (and unrated), taken
  from the tables of the list's relevant facts. The ``negatives.pool`` facts that share the
  most IDF-weighted words with the query (per square root of their length) are the pool, and
  the negatives are drawn from it by a content digest (seeded by ``seed_namespace`` and the
  question). They get grade ``negative_grade`` (roles) or 0 (ratings).

All facts are written by people (``human`` is all True). Question texts come from the AI2
Mercury dataset ("Do not distribute", EULA): benchmarks built here are not redistributable.

Skip reasons (counted, never raised): ``duplicate_question``, ``no_ratings`` (a rated split
lacks the question), ``no_rated_facts`` (the released test file), ``no_explanation`` (a
ratings-only record graded by roles), ``empty_explanation``, ``unknown_role``,
``fact_not_in_tablestore``, ``empty_question``, ``answer_not_found`` (the key names no option),
``too_few_candidates`` and ``single_grade``. A rating above ``rating_max`` is a
:class:`~gradebench.errors.RecipeError` (the recipe's scale does not fit the data).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
from pydantic import Field, StrictInt, field_validator, model_validator

from gradebench.datasets import register_builder
from gradebench.datasets.base import Builder, Column, GradedList, Selection
from gradebench.datasets.common import check_template, shuffled_order
from gradebench.datasets.records import SPLITS, InputFile
from gradebench.datasets.worldtree.reader import (
    FORMAT,
    Fact,
    Question,
    TableStore,
    find_release,
    join_ratings,
    read_questions,
    read_ratings,
    read_tablestore,
)
from gradebench.errors import InvalidArgumentError, RecipeError, SourceFormatError
from gradebench.hashing import choice_index, key_digest, short_id
from gradebench.strict import StrictModel
from gradebench.words import words

#: placeholders the query template may use
QUERY_FIELDS = frozenset({"question", "answer", "choices"})
#: IDF weights are integers (micro-units), so sums and ties are exact on every platform
_IDF_SCALE = 1_000_000


# --------------------------------------------------------------------------- recipe section


class NegativeSpec(StrictModel):
    """How many hard negatives each list gets and where they come from."""

    count: int = Field(default=10, ge=0, le=1000, description="hard negatives per list (0: none)")
    pool: int = Field(
        default=50, ge=1, le=100_000, description="the most query-overlapping facts the negatives are drawn from"
    )
    tables: Literal["same", "all"] = Field(
        default="same", description="'same': only the tables of the list's relevant facts; 'all': every table"
    )
    include_deprecated: bool = Field(default=False, description="allow rows marked in [SKIP] DEP as negatives")

    @model_validator(mode="after")
    def _pool_holds_count(self) -> NegativeSpec:
        if self.pool < self.count:
            raise ValueError(f"negatives.pool ({self.pool}) must be at least negatives.count ({self.count})")
        return self


class WorldTreeSection(StrictModel):
    """Recipe keys of the ``worldtree`` builder."""

    query_template: str = Field(
        default="{question} [ANSWER] {answer}",
        description="query text; {question} (stem), {answer} (correct option's text), {choices} ('(A) ... (B) ...')",
    )
    grade_by: Literal["auto", "roles", "ratings"] = Field(
        default="auto",
        description="'ratings': expert ratings; 'roles': explanation roles; 'auto': ratings where the split has a "
        "ratings file, else roles",
    )
    role_grades: dict[str, StrictInt] = Field(description="explanation role (CENTRAL, NEG, ...) -> relevance grade")
    negative_grade: int = Field(default=0, ge=0, le=100, description="grade of hard negatives when graded by roles")
    rating_max: int = Field(
        default=6, ge=1, le=100, description="the top of the expert rating scale (score = rating / max)"
    )
    negatives: NegativeSpec = Field(default_factory=NegativeSpec)

    @field_validator("query_template")
    @classmethod
    def _template_ok(cls, v: str) -> str:
        return check_template(v, QUERY_FIELDS)

    @field_validator("role_grades")
    @classmethod
    def _roles_ok(cls, v: dict[str, int]) -> dict[str, int]:
        if not v:
            raise ValueError("role_grades is empty; map each explanation role (CENTRAL, GROUNDING, ...) to a grade")
        for role, grade in v.items():
            if not role or role != role.strip() or " " in role or "|" in role:
                raise ValueError(f"role {role!r} must be one word as in the explanation column (e.g. CENTRAL)")
            if isinstance(grade, bool) or not 1 <= grade <= 100:
                raise ValueError(f"role_grades[{role!r}] = {grade!r}; grades are whole numbers in 1..100")
        return v

    @model_validator(mode="after")
    def _negatives_below_roles(self) -> WorldTreeSection:
        low = min(self.role_grades.values())
        if self.negative_grade >= low:
            raise ValueError(f"negative_grade ({self.negative_grade}) must be below every role grade (lowest {low})")
        return self


# --------------------------------------------------------------------------- records and units


class WorldTreeRecords(Mapping[str, Sequence[Question]]):
    """What :meth:`WorldTreeBuilder.read` returns: questions per split plus the tablestore.

    Attributes:
        store: the deduplicated tablestore the candidates come from.
        rated_splits: the splits that had a ratings file.
    """

    def __init__(self, questions: Mapping[str, Sequence[Question]], store: TableStore, rated_splits: frozenset[str]):
        self._questions = {s: list(questions[s]) for s in SPLITS if s in questions}
        self.store = store
        self.rated_splits = rated_splits

    def __getitem__(self, split: str) -> Sequence[Question]:
        return self._questions[split]

    def __iter__(self) -> Iterator[str]:
        return iter(self._questions)

    def __len__(self) -> int:
        return len(self._questions)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One fact of a list before ordering: its grade and where it came from."""

    uid: str
    text: str
    table: str | None
    role: str | None
    rating: int | None
    in_explanation: bool
    origin: str  # explanation | rated | negative
    deprecated: bool
    relevance: int
    score: float


@dataclass(frozen=True, slots=True)
class Unit:
    """One list to build: the question and its graded candidates (self-contained, picklable)."""

    query_id: str
    split: str
    query: str
    question: Question
    grading: str  # roles | ratings
    candidates: tuple[Candidate, ...]


# --------------------------------------------------------------------------- hard negatives


class NegativeSampler:
    """Hard negatives from the tablestore, ranked by IDF-weighted word overlap with the query.

    A fact's closeness to the query is the sum, over the distinct words
    (:func:`gradebench.words.words`) it shares with the query, of ``round(ln(N / df) * 1e6)``
    (integer weights, so sums are exact on every platform; N and df count the facts eligible as
    negatives), divided by the square root of the fact's number of distinct words (IEEE division
    and square root are exactly rounded, so the order is the same everywhere). Without that
    division long facts would win and candidate length alone would separate negatives (longer)
    from gold facts: on the real data the length probe is 0.38 unnormalised, 0.51 with it.
    """

    def __init__(self, store: TableStore, spec: NegativeSpec, namespace: str) -> None:
        self.spec = spec
        self.namespace = namespace
        self.facts: list[Fact] = [f for f in store.facts.values() if spec.include_deprecated or not f.deprecated]
        self.keys = [f.text.casefold() for f in self.facts]
        fact_words = [frozenset(words(f.text)) for f in self.facts]
        df = Counter(w for ws in fact_words for w in ws)
        n = len(self.facts)
        self.idf = {w: round(math.log(n / c) * _IDF_SCALE) for w, c in df.items()}
        self.norms = np.sqrt(np.asarray([max(1, len(ws)) for ws in fact_words], dtype=np.float64))
        postings: dict[str, list[int]] = defaultdict(list)
        for i, ws in enumerate(fact_words):
            for w in ws:
                postings[w].append(i)
        self.postings = {w: np.asarray(ix, dtype=np.int64) for w, ix in postings.items()}
        rows: dict[str, list[int]] = defaultdict(list)
        for i, f in enumerate(self.facts):
            rows[f.table].append(i)
        self.table_rows = {t: np.asarray(ix, dtype=np.int64) for t, ix in rows.items()}
        self.index_of_uid = {f.uid: i for i, f in enumerate(self.facts)}
        self.indices_of_key: dict[str, list[int]] = defaultdict(list)
        for i, key in enumerate(self.keys):
            self.indices_of_key[key].append(i)

    def sample(self, qid: str, query_words: set[str], tables: set[str], exclude_uids: set[str],
               exclude_texts: set[str]) -> list[Fact]:
        """``spec.count`` facts of ``tables`` (every table for ``tables: all``) drawn from the pool.

        The pool: the first ``spec.pool`` distinct (case-folded) texts among the facts not
        excluded (by UID or text), by closeness to ``query_words`` (highest first, then store
        order); when fewer facts overlap, the rest comes from the non-overlapping ones starting
        at a content-seeded position. The draw: the pool's first ``spec.count`` facts by
        ``key_digest(namespace, "negative", qid, uid)``, returned in pool order.
        """
        if self.spec.count == 0 or not self.facts:
            return []
        scores = np.zeros(len(self.facts), dtype=np.int64)
        for w in query_words:
            ix = self.postings.get(w)
            if ix is not None:
                scores[ix] += self.idf[w]
        if self.spec.tables == "all":
            mask = np.ones(len(self.facts), dtype=bool)
        else:
            mask = np.zeros(len(self.facts), dtype=bool)
            for t in tables:
                if t in self.table_rows:
                    mask[self.table_rows[t]] = True
        for uid in exclude_uids:
            i = self.index_of_uid.get(uid)
            if i is not None:
                mask[i] = False
        for key in exclude_texts:
            mask[self.indices_of_key.get(key, [])] = False

        pool: list[int] = []
        seen: set[str] = set()

        def take(indices: np.ndarray) -> None:
            for i in indices.tolist():
                if len(pool) == self.spec.pool:
                    return
                if self.keys[i] not in seen:
                    seen.add(self.keys[i])
                    pool.append(i)

        overlapping = np.flatnonzero(mask & (scores > 0))
        closeness = scores[overlapping] / self.norms[overlapping]
        take(overlapping[np.lexsort((overlapping, -closeness))])
        if len(pool) < self.spec.pool:
            rest = np.flatnonzero(mask & (scores <= 0))
            if len(rest):
                start = choice_index(len(rest), self.namespace, "negative-fill", qid)
                take(np.concatenate((rest[start:], rest[:start])))
        drawn = sorted(pool, key=lambda i: key_digest(self.namespace, "negative", qid, self.facts[i].uid))
        chosen = set(drawn[: self.spec.count])
        return [self.facts[i] for i in pool if i in chosen]


# --------------------------------------------------------------------------- the builder


@register_builder
class WorldTreeBuilder(Builder):
    name = "worldtree"
    version = 1
    section = WorldTreeSection
    formats = (FORMAT,)
    summary = (
        "WorldTree V2.1 science questions; candidates = tablestore facts graded by expert rating or "
        "explanation role, plus lexically close hard negatives (NOT redistributable)"
    )
    stat_columns = ("relevant_facts",)
    columns = (
        Column("question_id", pa.string(), False, "WorldTree QuestionID", "query"),
        Column("question", pa.string(), False, "question stem, without the answer options", "query"),
        Column("choices", pa.string(), True,
               "answer options as in the source, '(A) ... (B) ...'; null without a TSV row", "query"),
        Column("answer", pa.string(), False, "text of the correct option", "query"),
        Column("answer_key", pa.string(), True, "AnswerKey as in the source (a letter or a digit)", "query",
               dictionary=True),
        Column("topic", pa.string(), False, "question classes (Xu et al., 2020), comma-separated", "query",
               dictionary=True),
        Column("grading", pa.string(), False, "'ratings' (expert ratings) or 'roles' (explanation roles)", "query",
               dictionary=True),
        Column("relevant_facts", pa.int64(), False, "candidates graded above the lowest grade", "query"),
        Column("fact_uid", pa.string(), False, "tablestore UID of the fact", "candidate"),
        Column("table", pa.string(), True, "tablestore table of the fact; null for a rated fact not in the tables",
               "candidate", dictionary=True),
        Column("role", pa.string(), True, "explanation role (CENTRAL, GROUNDING, LEXGLUE, ...); null for negatives",
               "candidate", dictionary=True),
        Column("rating", pa.int64(), True, "expert rating; null when graded by roles", "candidate"),
        Column("in_explanation", pa.bool_(), False, "the fact is in the question's gold explanation", "candidate"),
        Column("origin", pa.string(), False, "'explanation', 'rated' or 'negative'", "candidate", dictionary=True),
        Column("deprecated", pa.bool_(), False, "the row is marked deprecated ([SKIP] DEP) in the tablestore",
               "candidate"),
    )

    # ---------------------------------------------------------------- files

    def locate(self, source: Path) -> list[InputFile]:
        release = find_release(source)
        files = [InputFile(str(p), f"{FORMAT}:table:{p.stem}", "") for p in release.tables]
        files += [InputFile(str(p), f"{FORMAT}:questions:{s}", s) for s, p in release.questions.items()]
        if self.recipe.grade_by != "roles":
            files += [InputFile(str(p), f"{FORMAT}:ratings:{s}", s) for s, p in release.ratings.items()]
        if self.recipe.grade_by == "ratings" and not release.ratings:
            raise SourceFormatError(
                "grade_by is 'ratings' but there is no wt-expert-ratings.<split>.json here",
                path=release.root,
                hint="add the ratings files of the TextGraphs-2021 zip, or set grade_by: auto or roles",
            )
        return files

    def read(self, files: Sequence[InputFile]) -> WorldTreeRecords:
        tables: list[str] = []
        questions: dict[str, list[Question]] = {}
        rated: dict[str, list[Question]] = {}
        for f in files:
            kind = f.role.split(":")[1]
            if kind == "table":
                tables.append(f.path)
            elif kind == "questions":
                questions[f.split] = read_questions(f.path, f.split)
            elif kind == "ratings":
                rated[f.split] = read_ratings(f.path, f.split)
            else:
                raise InvalidArgumentError(f"unknown worldtree file role {f.role!r}", hint="use files from locate()")
        store = read_tablestore(tables)
        joined = {
            s: join_ratings(questions.get(s, []), rated.get(s, [])) for s in SPLITS if s in questions or s in rated
        }
        return WorldTreeRecords(joined, store, frozenset(rated))

    # ---------------------------------------------------------------- selection

    def select(self, records: Mapping[str, Sequence[Question]], *, limit: int | None) -> Selection:
        if not isinstance(records, WorldTreeRecords):
            raise InvalidArgumentError(
                "worldtree records must be the WorldTreeRecords that read() returns (they carry the tablestore)",
                hint="pass builder.read(files) to select() unchanged",
            )
        r = self.recipe
        sampler = NegativeSampler(records.store, r.negatives, r.seed_namespace)
        skipped: Counter = Counter()
        units: list[Unit] = []
        seen: set[str] = set()
        for split in records:
            rows = records[split] if limit is None else records[split][:limit]
            rated = r.grade_by == "ratings" or (r.grade_by == "auto" and split in records.rated_splits)
            for q in rows:
                if q.qid in seen:
                    skipped["duplicate_question"] += 1
                    continue
                seen.add(q.qid)
                unit_or_reason = self._unit(q, rated, records.store, sampler)
                if isinstance(unit_or_reason, str):
                    skipped[unit_or_reason] += 1
                else:
                    units.append(unit_or_reason)
        return Selection(units=units, skipped=skipped)

    def _unit(self, q: Question, rated: bool, store: TableStore, sampler: NegativeSampler) -> Unit | str:
        """The question's list, or the reason it is skipped."""
        if not q.stem:
            return "empty_question"
        if not q.answer:
            return "answer_not_found"
        positives = self._rated(q, store) if rated else self._explained(q, store)
        if isinstance(positives, str):
            return positives
        r = self.recipe
        query = r.query_template.format(question=q.stem, answer=q.answer, choices=q.choices_text)
        query_id = short_id("query", q.qid, query)
        low = 0 if rated else r.negative_grade
        neg_score = 0.0 if rated else low / max(r.role_grades.values())
        relevant_tables = {c.table for c in positives if c.relevance > low and c.table is not None}
        exclude = {c.uid for c in positives} | {uid for uid, _ in q.explanation or ()}
        negatives = sampler.sample(
            q.qid,
            set(words(q.stem)) | set(words(q.answer)),
            relevant_tables,
            exclude,
            {c.text.casefold() for c in positives},
        )
        candidates = positives + [
            Candidate(f.uid, f.text, f.table, None, None, False, "negative", f.deprecated, low, neg_score)
            for f in negatives
        ]
        if len(candidates) < 2:
            return "too_few_candidates"
        if len({c.relevance for c in candidates}) < 2:
            return "single_grade"
        return Unit(query_id, q.split, query, q, "ratings" if rated else "roles", tuple(candidates))

    def _explained(self, q: Question, store: TableStore) -> list[Candidate] | str:
        """The explanation's facts graded by role (a repeated UID keeps its best role), or a skip reason."""
        if q.explanation is None:
            return "no_explanation"
        if not q.explanation:
            return "empty_explanation"
        grades = self.recipe.role_grades
        top = max(grades.values())
        best: dict[str, tuple[int, str]] = {}
        for uid, role in q.explanation:
            if role not in grades:
                return "unknown_role"
            if uid not in store.facts:
                return "fact_not_in_tablestore"
            if uid not in best or grades[role] > best[uid][0]:
                best[uid] = (grades[role], role)
        out = []
        for uid, (grade, role) in best.items():
            f = store.facts[uid]
            out.append(
                Candidate(uid, f.text, f.table, role, None, True, "explanation", f.deprecated, grade, grade / top)
            )
        return _dedupe_texts(out)

    def _rated(self, q: Question, store: TableStore) -> list[Candidate] | str:
        """The rated facts graded by rating (a repeated UID keeps its first rating), or a skip reason."""
        if q.ratings is None:
            return "no_ratings"
        if not q.ratings:
            return "no_rated_facts"
        r = self.recipe
        roles = dict(q.explanation or ())
        out: list[Candidate] = []
        seen: set[str] = set()
        for doc in q.ratings:
            if doc.uid in seen:
                continue
            seen.add(doc.uid)
            if doc.relevance > r.rating_max:
                raise RecipeError(
                    f"question {q.qid}: fact {doc.uid} is rated {doc.relevance}, above rating_max {r.rating_max}",
                    path=q.path,
                    line=q.line,
                    key="rating_max",
                    hint="set rating_max to the top of the ratings file's scale",
                )
            f = store.facts.get(doc.uid)
            text = f.text if f is not None else doc.text
            if not text:
                return "fact_not_in_tablestore"
            role = doc.role or roles.get(doc.uid)
            out.append(
                Candidate(
                    doc.uid,
                    text,
                    None if f is None else f.table,
                    role,
                    doc.relevance,
                    doc.is_gold or doc.uid in roles,
                    "rated",
                    False if f is None else f.deprecated,
                    doc.relevance,
                    doc.relevance / r.rating_max,
                )
            )
        return _dedupe_texts(out)

    # ---------------------------------------------------------------- lists

    def make_lists(self, units: Sequence[Unit]) -> list[GradedList]:
        r = self.recipe
        out = []
        for u in units:
            cands = list(u.candidates)
            ids = [short_id("candidate", u.query_id, c.uid) for c in cands]
            order = shuffled_order(r.seed_namespace, u.query_id, ids) if r.shuffle_candidates else range(len(cands))
            cands = [cands[i] for i in order]
            ids = [ids[i] for i in order]
            q = u.question
            low = min(c.relevance for c in cands)
            out.append(
                GradedList(
                    query_id=u.query_id,
                    query=u.query,
                    split=u.split,
                    candidate_ids=ids,
                    candidates=[c.text for c in cands],
                    scores=[c.score for c in cands],
                    relevance=[c.relevance for c in cands],
                    query_extra=(
                        q.qid,
                        q.stem,
                        q.choices_text or None,
                        q.answer,
                        q.answer_key,
                        q.topic,
                        u.grading,
                        sum(c.relevance > low for c in cands),
                    ),
                    candidate_extra=(
                        [c.uid for c in cands],
                        [c.table for c in cands],
                        [c.role for c in cands],
                        [c.rating for c in cands],
                        [c.in_explanation for c in cands],
                        [c.origin for c in cands],
                        [c.deprecated for c in cands],
                    ),
                    vocab=frozenset(words(q.stem)) | frozenset(words(q.answer or "")),
                    human=[True] * len(cands),
                )
            )
        return out

    # ---------------------------------------------------------------- card

    def card_section(self) -> list[str]:
        r = self.recipe
        neg = r.negatives
        lines = [
            "**Licence: NOT redistributable.** The question texts come from the AI2 Science Questions "
            "Mercury dataset (\"Do not distribute\", \"Non-commercial use only\", see the EULA in the "
            "release); the tablestore facts and explanations are CC BY-SA 4.0. Keep this benchmark "
            "private: do not publish or share it.",
            "",
            f"Each query is one WorldTree V2.1 question (`{r.query_template}`; {{question}} is the stem, "
            "{answer} the correct option's text). Candidates are tablestore facts (a row's non-[SKIP] "
            "cells joined), all written by people.",
            "",
            f"Grading (`grade_by: {r.grade_by}`): with expert ratings, relevance = the rating (0..{r.rating_max}) "
            f"and score = rating / {r.rating_max}; otherwise by the fact's role in the gold explanation, "
            "score = grade / highest grade:",
            "",
            "| role | relevance |",
            "|---|---|",
        ]
        by_grade = sorted(r.role_grades.items(), key=lambda kv: (-kv[1], kv[0]))
        lines += [f"| {role} | {grade} |" for role, grade in by_grade]
        lines.append(f"| hard negative | {r.negative_grade} (0 with ratings) |")
        lines += [
            "",
            f"Hard negatives: {neg.count} per list, facts outside the explanation "
            + ("from any table" if neg.tables == "all" else "from the tables of the list's relevant facts")
            + (", deprecated rows included" if neg.include_deprecated else ", deprecated rows excluded")
            + f"; the {neg.pool} facts sharing the most IDF-weighted words with the query (divided by the "
            "square root of the fact's word count, so length does not give negatives away) form the pool and "
            "the negatives are drawn from it by a content digest. Facts with the same text as a relevant "
            "fact are never negatives.",
        ]
        return lines


def _dedupe_texts(cands: list[Candidate]) -> list[Candidate]:
    """One candidate per case-folded text: the highest grade, then the first."""
    best: dict[str, int] = {}
    for i, c in enumerate(cands):
        key = c.text.casefold()
        j = best.get(key)
        if j is None or c.relevance > cands[j].relevance:
            best[key] = i
    keep = set(best.values())
    return [c for i, c in enumerate(cands) if i in keep]


__all__ = ["NegativeSampler", "NegativeSpec", "WorldTreeBuilder", "WorldTreeRecords", "WorldTreeSection"]
