"""ChaosNLI (Nie, Zhou & Bansal, EMNLP 2020): natural grades from 100 annotator votes per pair.

Each SNLI or MNLI pair of ChaosNLI is one query (the recipe's ``query_template`` over premise
and hypothesis); its candidates are the three label verbalisations of the recipe (e.g. "The
hypothesis is entailed by the premise."), graded by the annotators' votes: ``score`` = the
label's vote share, ``relevance`` = its vote count (``relevance: votes``) or the dense rank of
its count within the list (``relevance: rank``: 0 = fewest votes, ties share a grade). A list
whose three labels got the same number of votes has a single grade and is skipped. The recipe
key ``subset`` picks the file (``snli``: ``chaosNLI_snli.jsonl``, ``mnli``:
``chaosNLI_mnli_m.jsonl``). ChaosNLI is an evaluation set: every list goes to ``test``.

Skip reasons (counted, never raised): ``unknown_label``, ``inconsistent_votes``,
``uid_mismatch``, ``no_votes`` (see :func:`gradebench.datasets.chaosnli.reader.vote_problem`),
``empty_premise``/``empty_hypothesis``, ``single_grade`` (all labels tied) and
``duplicate_query``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import pyarrow as pa
from pydantic import Field, field_validator, model_validator

from gradebench.datasets import register_builder
from gradebench.datasets.base import Builder, Column, GradedList, Selection
from gradebench.datasets.chaosnli.reader import NLI_LABELS, SUBSET_FILES, NLIItem, read_chaosnli_nli, vote_problem
from gradebench.datasets.common import check_template, dense_rank, shuffled_order
from gradebench.datasets.records import InputFile
from gradebench.errors import SourceFormatError, SourceNotFoundError
from gradebench.hashing import short_id
from gradebench.strict import StrictModel
from gradebench.words import words

FORMAT = "chaosnli-jsonl"
#: ChaosNLI's label letters -> the full label names used in columns and recipe keys
LABEL_NAMES: dict[str, str] = {"e": "entailment", "n": "neutral", "c": "contradiction"}
RELEASE_FOLDER = "chaosNLI_v1.0"


class Verbalisations(StrictModel):
    """The candidate text stating each label (the same three candidates for every query)."""

    entailment: str = Field(min_length=1)
    neutral: str = Field(min_length=1)
    contradiction: str = Field(min_length=1)

    @model_validator(mode="after")
    def _distinct(self) -> Verbalisations:
        texts = [self.entailment.strip(), self.neutral.strip(), self.contradiction.strip()]
        if not all(texts):
            raise ValueError("a verbalisation is blank")
        if len(set(texts)) != 3:
            raise ValueError("the three verbalisations must differ")
        return self


class ChaosNLISection(StrictModel):
    """Recipe keys of the ``chaosnli`` builder."""

    subset: Literal["snli", "mnli"] = Field(description="which ChaosNLI file: snli or mnli (chaosNLI_mnli_m.jsonl)")
    query_template: str = Field(
        default="premise: {premise} hypothesis: {hypothesis}", description="query text; {premise} and {hypothesis}"
    )
    verbalisations: Verbalisations
    relevance: Literal["votes", "rank"] = Field(
        default="votes",
        description="'votes': relevance = the label's vote count; 'rank': its dense rank by votes within the list "
        "(0 = fewest), which keeps exp2 gains small",
    )

    @field_validator("query_template")
    @classmethod
    def _template_ok(cls, v: str) -> str:
        return check_template(v, frozenset({"premise", "hypothesis"}))


@register_builder
class ChaosNLIBuilder(Builder):
    name = "chaosnli"
    version = 1
    section = ChaosNLISection
    formats = (FORMAT,)
    summary = "ChaosNLI SNLI/MNLI pairs; candidates = the three label verbalisations graded by 100 annotator votes"
    stat_columns = ("entropy",)
    columns = (
        Column("premise", pa.string(), False, "source premise", "query"),
        Column("hypothesis", pa.string(), False, "source hypothesis", "query"),
        Column("source_id", pa.string(), False, "ChaosNLI uid (the SNLI/MNLI pairID)", "query"),
        Column("source_row", pa.int64(), False, "0-based row of the pair in its ChaosNLI file", "query"),
        Column("majority_label", pa.string(), False, "ChaosNLI majority label of the 100 votes", "query",
               dictionary=True),
        Column("majority_tie", pa.bool_(), False, "the top two labels got equal votes (majority_label is arbitrary)",
               "query"),
        Column("old_label", pa.string(), False, "the original dataset's gold label", "query", dictionary=True),
        Column("old_labels", pa.list_(pa.string()), False, "the original annotators' labels (5, or 4)", "query"),
        Column("entropy", pa.float64(), False, "base-2 entropy of the 100 votes (ChaosNLI's value)", "query"),
        Column("candidate_label", pa.string(), False, "the label the candidate states", "candidate", dictionary=True),
        Column("votes", pa.int64(), False, "annotator votes for the candidate's label", "candidate"),
    )

    def locate(self, source: Path) -> list[InputFile]:
        subset = self.recipe.subset
        name = SUBSET_FILES[subset]
        src = Path(source)
        if not src.exists():
            raise SourceNotFoundError("source not found", path=src, hint="pass the chaosNLI_v1.0 folder or the file")
        if src.is_file():
            other = {f: s for s, f in SUBSET_FILES.items() if s != subset}
            if src.name in other:
                raise SourceFormatError(
                    f"is ChaosNLI's {other[src.name]} subset, "
                    f"but recipe {self.recipe.name!r} reads the {subset} subset",
                    path=src,
                    hint=f"pass {name} (or its folder), or use the recipe for that subset",
                )
            found = src
        else:
            candidates = [src / name, src / RELEASE_FOLDER / name]
            found = next((p for p in candidates if p.is_file()), None)
            if found is None:
                raise SourceFormatError(
                    f"no {name} here (looked in this folder and {RELEASE_FOLDER}/)",
                    path=src,
                    hint="pass the chaosNLI_v1.0 folder of the ChaosNLI release (chaosNLI_v1.0.zip, unzipped) "
                    "or the file itself",
                )
        return [InputFile(str(found), f"{FORMAT}:{subset}:test", "test")]

    def read(self, files: Sequence[InputFile]) -> Mapping[str, Sequence[NLIItem]]:
        out: dict[str, list[NLIItem]] = {}
        for f in files:
            out.setdefault(f.split, []).extend(read_chaosnli_nli(f.path))
        return out

    def select(self, records: Mapping[str, Sequence[NLIItem]], *, limit: int | None) -> Selection:
        skipped: Counter = Counter()
        units: list[GradedList] = []
        seen: set[str] = set()
        for split in sorted(records):
            for n, item in enumerate(records[split]):
                if limit is not None and n >= limit:
                    break
                reason = self._skip_reason(item)
                if reason is None:
                    gl = self._graded_list(item, split)
                    if gl.query_id in seen:
                        reason = "duplicate_query"
                    else:
                        seen.add(gl.query_id)
                        units.append(gl)
                if reason is not None:
                    skipped[reason] += 1
        return Selection(units=units, skipped=skipped)

    @staticmethod
    def _skip_reason(item: NLIItem) -> str | None:
        reason = vote_problem(item.votes, NLI_LABELS)
        if reason is not None:
            return reason
        if not item.premise.strip():
            return "empty_premise"
        if not item.hypothesis.strip():
            return "empty_hypothesis"
        if len(set(item.votes.label_count)) < 2:
            return "single_grade"
        return None

    def _graded_list(self, item: NLIItem, split: str) -> GradedList:
        r = self.recipe
        v = item.votes
        premise, hypothesis = item.premise.strip(), item.hypothesis.strip()
        qid = short_id("query", v.uid, premise, hypothesis)
        names = [LABEL_NAMES[lab] for lab in NLI_LABELS]
        texts = [getattr(r.verbalisations, name).strip() for name in names]
        cids = [short_id("candidate", qid, name) for name in names]
        counts = list(v.label_count)
        total = sum(counts)
        rel = counts if r.relevance == "votes" else dense_rank(counts)
        order = shuffled_order(r.seed_namespace, qid, cids) if r.shuffle_candidates else list(range(3))
        top = sorted(counts, reverse=True)
        return GradedList(
            query_id=qid,
            query=r.query_template.format(premise=premise, hypothesis=hypothesis),
            split=split,
            candidate_ids=[cids[i] for i in order],
            candidates=[texts[i] for i in order],
            scores=[counts[i] / total for i in order],
            relevance=[int(rel[i]) for i in order],
            query_extra=(
                premise,
                hypothesis,
                v.uid,
                item.row,
                LABEL_NAMES[v.majority_label],
                top[0] == top[1],
                LABEL_NAMES[v.old_label],
                list(item.old_labels),
                v.entropy,
            ),
            candidate_extra=([names[i] for i in order], [counts[i] for i in order]),
            vocab=frozenset(words(premise)) | frozenset(words(hypothesis)),
            human=[False] * 3,
        )

    def card_section(self) -> list[str]:
        r = self.recipe
        rel = (
            "its vote count (0-100)"
            if r.relevance == "votes"
            else "the dense rank of its vote count within the list (0 = fewest votes; tied labels share a grade)"
        )
        return [
            f"ChaosNLI {r.subset.upper()} (Nie et al., 2020): pairs whose original 5 annotators agreed at most 3 to 2, "
            "re-annotated by 100 crowd workers each. Each pair is one query "
            f"(`{r.query_template}`); its three candidates are fixed label statements:",
            "",
            "| label | candidate |",
            "|---|---|",
            *(f"| {lab} | {getattr(r.verbalisations, lab)} |" for lab in LABEL_NAMES.values()),
            "",
            f"A candidate's score is its label's vote share; its relevance is {rel}. Lists whose labels all got "
            "the same number of votes are skipped (`single_grade`). The `entropy` column is ChaosNLI's base-2 "
            "entropy of the votes; `majority_tie` marks pairs whose top two labels tied (ChaosNLI's "
            "`majority_label` is then an undocumented pick). The pairs come from the "
            f"{'SNLI dev' if r.subset == 'snli' else 'MNLI matched-dev'} set (`source_id` = its pairID): do not "
            "train or tune on that set when evaluating here. ChaosNLI is CC BY-NC 4.0.",
        ]
