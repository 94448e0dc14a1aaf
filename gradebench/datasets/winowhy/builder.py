"""WinoWhy (Zhang, Zhao & Song, ACL 2020): natural plausibility grades of reasons for WSC answers.

One graded list per Winograd Schema Challenge question. The query is the WSC sentence with
the pronoun to resolve and the correct answer (``query_template``); the candidates are the
question's reasons (15 in the release: 5 ``human``, 5 ``reverse``, 5 ``gpt``), graded by the
annotators' plausibility ``p`` (the share of 5 annotators who judged the reason valid):
``score = p`` and ``relevance = round(5 p)`` (0-5, the number of "valid" votes).

``reverse`` reasons are annotators' reasons for the question's WSC twin (the same sentence with
the other answer), reused verbatim, so they are written by a person: ``GradedList.human`` is
true for ``human`` and ``reverse`` reasons and false for GPT-2 ones. The same reverse text is
then a candidate of both twins with different grades, which only a scorer that reads the query
can separate. WinoWhy has no splits: every list goes to ``test`` (a recipe ``resplit`` may carve
others, but see ``twin_wsc_id``: a hash resplit puts twins, which share reason texts, apart).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar, Literal

import pyarrow as pa
from pydantic import Field, field_validator

from gradebench.datasets import register_builder
from gradebench.datasets.base import Builder, Column, GradedList, Selection
from gradebench.datasets.common import check_template, shuffled_order, template_fields
from gradebench.datasets.records import InputFile
from gradebench.datasets.winowhy.reader import CATEGORY_FILE, DATA_FILE, FORMAT_JSON, REASON_SOURCES, WinoWhyQuestion
from gradebench.errors import SourceFormatError, SourceNotFoundError
from gradebench.hashing import short_id
from gradebench.strict import StrictModel
from gradebench.words import words

ReasonSource = Literal["human", "reverse", "gpt"]
#: placeholders a WinoWhy query template may use
QUERY_PLACEHOLDERS = frozenset({"sentence", "marked_sentence", "pronoun", "answer", "other_answer"})
#: the plausibility grid: multiples of 1/5 (5 annotators)
VOTES = 5
_GRID_TOLERANCE = 1e-6
_SPLIT = "test"


class WinoWhySection(StrictModel):
    """Recipe keys of the ``winowhy`` builder."""

    query_template: str = Field(
        default="sentence: {marked_sentence} pronoun: {pronoun} answer: {answer}",
        description="the query text; placeholders {sentence}, {marked_sentence} (the pronoun in *asterisks*), "
        "{pronoun}, {answer} (the correct option) and {other_answer}",
    )
    reason_sources: tuple[ReasonSource, ...] = Field(
        default=REASON_SOURCES,
        min_length=1,
        description="which reasons become candidates: human (annotators, this question), reverse (annotators, "
        "the WSC twin's reasons) and gpt (GPT-2 continuations)",
    )

    @field_validator("query_template")
    @classmethod
    def _template_ok(cls, v: str) -> str:
        check_template(v, QUERY_PLACEHOLDERS)
        if not template_fields(v) & {"sentence", "marked_sentence"}:
            raise ValueError("query_template must contain {sentence} or {marked_sentence}")
        return v

    @field_validator("reason_sources")
    @classmethod
    def _no_repeats(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(v)) != len(v):
            raise ValueError(f"reason_sources lists a source twice: {list(v)}")
        return v


def answer_index(correct: str) -> int | None:
    """The 0-based option a ``correctAnswer`` names (``A``, ``b``, ``A.``, `` B. ``), or ``None``."""
    letter = correct.strip().rstrip(".").strip().upper()
    if len(letter) == 1 and "A" <= letter <= "Z":
        return ord(letter) - ord("A")
    return None


def grade(plausibility: float) -> int | None:
    """The number of "valid" votes behind a plausibility (``round(5 p)``), or ``None`` off the 1/5 grid."""
    votes = round(plausibility * VOTES)
    if not 0 <= votes <= VOTES or abs(plausibility * VOTES - votes) > _GRID_TOLERANCE * VOTES:
        return None
    return votes


def twin_ids(questions: Sequence[WinoWhyQuestion]) -> dict[int, int]:
    """Each question's WSC twin: the other question whose ``human`` reasons hold most of its ``reverse`` texts.

    Ties go to the lower ``wsc_id``; a question none of whose reverse texts is another's human
    reason has no entry.
    """
    owners: dict[str, set[int]] = {}
    for q in questions:
        for r in q.reasons:
            if r.source == "human" and r.text:
                owners.setdefault(r.text, set()).add(q.wsc_id)
    out = {}
    for q in questions:
        hits: Counter[int] = Counter()
        for r in q.reasons:
            if r.source == "reverse":
                hits.update(j for j in owners.get(r.text, ()) if j != q.wsc_id)
        if hits:
            best = max(hits.values())
            out[q.wsc_id] = min(j for j, n in hits.items() if n == best)
    return out


@register_builder
class WinoWhyBuilder(Builder):
    name = "winowhy"
    version = 1
    section = WinoWhySection
    formats = (FORMAT_JSON,)
    summary = "WinoWhy WSC questions; candidates = 15 human/reverse/GPT-2 reasons graded by annotator plausibility"
    columns: ClassVar[tuple[Column, ...]] = (
        Column("wsc_id", pa.int64(), False, "0-based index of the question in winowhy.json", "query"),
        Column("sentence", pa.string(), False, "the WSC sentence", "query", dictionary=True),
        Column("pronoun", pa.string(), False, "the pronoun to resolve", "query", dictionary=True),
        Column("correct_answer", pa.string(), False, "the correct option's text", "query", dictionary=True),
        Column("other_answer", pa.string(), True, "the other option's text (null if there is not exactly one)",
               "query", dictionary=True),
        Column("correct_option", pa.string(), False, "the correct option's letter, normalised (A, B)", "query",
               dictionary=True),
        Column("wsc_source", pa.string(), False, "the question's WSC provenance (source)", "query", dictionary=True),
        Column("twin_wsc_id", pa.int64(), True, "wsc_id of the WSC twin whose human reasons are this question's "
               "reverse reasons (shared texts); null if none", "query"),
        Column("categories", pa.string(), True, "comma-separated cat_ref.json categories; null without cat_ref.json",
               "query", dictionary=True),
        Column("reason_source", pa.string(), False, "human (annotator, this question), reverse (annotator, the "
               "WSC twin) or gpt (GPT-2)", "candidate", dictionary=True),
        Column("reason_index", pa.int64(), False, "0-based position of the reason in the question's list",
               "candidate"),
        Column("validity_label", pa.string(), False, "the release's label: Valid / Undecided / Invalid",
               "candidate", dictionary=True),
    )

    # ------------------------------------------------------------------ files

    def locate(self, source: Path) -> list[InputFile]:
        """``winowhy.json`` (the folder's, or the file given) plus ``cat_ref.json`` beside it when present."""
        source = Path(source)
        if not source.exists():
            raise SourceNotFoundError("not found", path=source, hint="pass the WinoWhy folder or its winowhy.json")
        hint = f"pass the WinoWhy release folder (holding {DATA_FILE}) or the {DATA_FILE} file itself"
        if source.is_dir():
            data = source / DATA_FILE
            if not data.is_file():
                raise SourceFormatError(f"no {DATA_FILE} in this folder", path=source, hint=hint)
        elif source.suffix.lower() == ".json" and source.name != CATEGORY_FILE:
            data = source
        elif source.name == CATEGORY_FILE:
            raise SourceFormatError(
                f"{CATEGORY_FILE} holds only the category index, not the graded reasons", path=source, hint=hint
            )
        elif source.suffix.lower() == ".csv":
            raise SourceFormatError(
                "this is the authors' binary-classification CSV (Undecided reasons removed, no grades)",
                path=source,
                hint=hint,
            )
        else:
            raise SourceFormatError("not a WinoWhy JSON file (expected a .json name)", path=source, hint=hint)
        files = [InputFile(str(data), f"{FORMAT_JSON}:reasons", _SPLIT)]
        cats = data.parent / CATEGORY_FILE
        if cats.is_file():
            files.append(InputFile(str(cats), f"{FORMAT_JSON}:categories", _SPLIT))
        return files

    def read(self, files: Sequence[InputFile]) -> Mapping[str, Sequence[WinoWhyQuestion]]:
        from gradebench.datasets.winowhy.reader import read_winowhy

        data = [f for f in files if f.role.endswith(":reasons")]
        cats = [f for f in files if f.role.endswith(":categories")]
        if len(data) != 1:
            raise SourceFormatError(f"expected one {DATA_FILE}, got {len(data)}", hint="pass one WinoWhy folder")
        return {_SPLIT: read_winowhy(data[0].path, cats[0].path if cats else None)}

    # ------------------------------------------------------------------ lists

    def select(self, records: Mapping[str, Sequence[WinoWhyQuestion]], *, limit: int | None) -> Selection:
        """One list per question with a known answer and at least two candidates of different grades.

        Questions skipped: ``unknown_correct_answer`` (``correctAnswer`` names no option),
        ``empty_correct_answer``, ``too_few_reasons`` (under 2 usable ones), ``single_grade``.
        Single reasons dropped from a list: ``unknown_reason_source`` (not human/reverse/gpt),
        ``empty_reason``, ``off_grid_plausibility`` (not a multiple of 0.2 in [0, 1]). Reasons
        whose source the recipe's ``reason_sources`` leaves out are not counted.
        """
        everything = [q for split in records.values() for q in split]
        twins = twin_ids(everything)
        skipped: Counter[str] = Counter()
        units: list[GradedList] = []
        for split in ("train", "validation", "test"):
            for q in list(records.get(split, ()))[:limit]:
                lst = self._graded_list(q, split, twins.get(q.wsc_id), skipped)
                if lst is not None:
                    units.append(lst)
        return Selection(units=units, skipped=skipped)

    def _graded_list(
        self, q: WinoWhyQuestion, split: str, twin: int | None, skipped: Counter[str]
    ) -> GradedList | None:
        idx = answer_index(q.correct_answer)
        if idx is None or idx >= len(q.answers):
            skipped["unknown_correct_answer"] += 1
            return None
        answer = q.answers[idx]
        if not answer:
            skipped["empty_correct_answer"] += 1
            return None
        others = [a for k, a in enumerate(q.answers) if k != idx]
        other = others[0] if len(others) == 1 else None
        r = self.recipe
        query = r.query_template.format(
            sentence=q.sentence, marked_sentence=q.marked_sentence, pronoun=q.pronoun, answer=answer,
            other_answer=other or "",
        )
        query_id = short_id("query", f"winowhy:{q.wsc_id}", q.sentence, q.pronoun, answer)
        rows = []
        for reason in q.reasons:
            if reason.source not in REASON_SOURCES:
                skipped["unknown_reason_source"] += 1
                continue
            if reason.source not in r.reason_sources:
                continue  # left out by the recipe, not a defect of the data
            if not reason.text:
                skipped["empty_reason"] += 1
                continue
            g = grade(reason.plausibility)
            if g is None:
                skipped["off_grid_plausibility"] += 1
                continue
            cid = short_id("candidate", query_id, str(reason.index), reason.source, reason.text)
            rows.append((cid, reason, g))
        if len(rows) < 2:
            skipped["too_few_reasons"] += 1
            return None
        if len({g for _, _, g in rows}) < 2:
            skipped["single_grade"] += 1
            return None
        if r.shuffle_candidates:
            rows = [rows[i] for i in shuffled_order(r.seed_namespace, query_id, [cid for cid, _, _ in rows])]
        return GradedList(
            query_id=query_id,
            query=query,
            split=split,
            candidate_ids=[cid for cid, _, _ in rows],
            candidates=[x.text for _, x, _ in rows],
            scores=[g / VOTES for _, _, g in rows],
            relevance=[g for _, _, g in rows],
            tiers=None,
            query_extra=(
                q.wsc_id, q.sentence, q.pronoun, answer, other, chr(ord("A") + idx), q.wsc_source, twin,
                ",".join(q.categories) or None,
            ),
            candidate_extra=(
                [x.source for _, x, _ in rows],
                [x.index for _, x, _ in rows],
                [x.label for _, x, _ in rows],
            ),
            vocab=frozenset(words(q.sentence)) | frozenset(words(answer)),
            human=[x.source != "gpt" for _, x, _ in rows],
        )

    def card_section(self) -> list[str]:
        r = self.recipe
        return [
            f"Each query is one WSC question of WinoWhy (`{r.query_template}`); its candidates are the "
            f"question's reasons from: {', '.join(r.reason_sources)}.",
            "",
            "- `human`: an annotator's reason for this question's answer;",
            "- `reverse`: an annotator's reason for the WSC twin (other answer), reused verbatim;",
            "- `gpt`: a GPT-2 continuation of the sentence after \"because\".",
            "",
            "Grades are natural: `relevance` = the number of 5 annotators who judged the reason plausible "
            "(0-5) and `score` = that share (the release's plausibility). `human` marks person-written "
            "reasons (human and reverse); GPT-2 reasons grade far lower on average, so authorship is a "
            "strong shortcut here (see the shortcut probes).",
        ]
