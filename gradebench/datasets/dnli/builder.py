"""δ-NLI / Defeasible NLI (Rudinger et al., 2020): two constructions over its human-written updates.

* :class:`DNLIBuilder` (``dnli``): the core paper's five synthetic tiers. Each row (premise,
  hypothesis, update type, human update) is one query ``premise + hypothesis + update type``;
  gold is the human update, lower tiers are templates. Gold is the only human-written text.
* :class:`DNLINaturalBuilder` (``dnli-natural``): one query per (premise, hypothesis) pair,
  whose candidates are all its human updates; the preferred update type (strengtheners, by
  default) is graded 1, the other 0. Every candidate is human-written.

Both read the release's JSON Lines files (:mod:`gradebench.datasets.dnli.reader`) and skip the rows
annotators marked impossible (``UpdateTypeImpossible``), as Rudinger et al. do. defeasible-social
has no premise: both builders use the Social-Chem-101 situation (``SocialChemSituation``) in its
place.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import pyarrow as pa
from pydantic import Field, field_validator

from gradebench.datasets import register_builder
from gradebench.datasets.base import Builder, Column, GradedList, Selection
from gradebench.datasets.common import check_template, shuffled_order
from gradebench.datasets.dnli.reader import FORMAT, SUBSETS, DNLIRow, clean_text, locate_dnli, read_dnli
from gradebench.datasets.records import SPLITS, InputFile, NLIExample
from gradebench.datasets.tiers.builder import TieredNLIBuilder
from gradebench.datasets.tiers.select import select as select_tiered
from gradebench.datasets.tiers.spec import TieredSection
from gradebench.hashing import short_id
from gradebench.strict import StrictModel
from gradebench.words import words

Subset = Literal["atomic", "snli", "social"]
UpdateType = Literal["strengthener", "weakener"]
UPDATE_TYPES: tuple[str, ...] = ("strengthener", "weakener")


def _subsets_ok(v: list[str]) -> list[str]:
    if len(set(v)) != len(v):
        raise ValueError(f"subsets must not repeat, got {v}")
    return v


def premise_of(row: DNLIRow) -> str:
    """The row's premise; for defeasible-social (no premise) its Social-Chem-101 situation."""
    return row.premise if row.subset != "social" else (row.situation or "")


class _DNLIFiles:
    """``formats``, ``locate`` and ``read`` of both δ-NLI builders (the recipe's ``subsets`` pick the files)."""

    formats = (FORMAT,)
    recipe: Any

    def locate(self, source: Path) -> list[InputFile]:
        return locate_dnli(source, self.recipe.subsets)

    def read(self, files: Sequence[InputFile]) -> Mapping[str, Sequence[DNLIRow]]:
        return read_dnli(files)


def _limited(records: Mapping[str, Sequence[DNLIRow]], limit: int | None) -> list[tuple[str, Sequence[DNLIRow]]]:
    """``(split, rows)`` in train/validation/test order, at most ``limit`` rows each."""
    out = []
    for split in [s for s in SPLITS if s in records] + sorted(set(records) - set(SPLITS)):
        rows = records[split]
        out.append((split, rows if limit is None else rows[:limit]))
    return out


# =========================================================================== dnli: five tiers


class DNLISection(TieredSection):
    """The tiered keys (labels = update types) plus which δ-NLI subsets to read."""

    subsets: list[Subset] = Field(default_factory=lambda: list(SUBSETS), min_length=1)

    @field_validator("subsets")
    @classmethod
    def _no_repeats(cls, v: list[str]) -> list[str]:
        return _subsets_ok(v)


@register_builder
class DNLIBuilder(_DNLIFiles, TieredNLIBuilder):
    """δ-NLI rows as tiered queries: label = update type, gold = the human update."""

    name = "dnli"
    version = 1
    section: ClassVar[type] = DNLISection
    summary = "δ-NLI rows; gold = the human update for (premise, hypothesis, update type), lower tiers from templates"

    def select(self, records: Mapping[str, Sequence[DNLIRow]], *, limit: int | None) -> Selection:
        """Rows -> :class:`NLIExample` (impossible and duplicate rows skipped), then the tiered selection.

        Skip reasons of its own: ``impossible_update`` (the annotator marked the update type
        impossible) and ``duplicate_update`` (same subset, premise, hypothesis, update type and
        update text as an earlier row of the split); then those of
        :mod:`gradebench.datasets.tiers.select` (``unknown_label`` for an unknown update type,
        ``empty_premise``, ``empty_explanation`` for an empty update, ...).
        """
        skipped: Counter = Counter()
        examples: dict[str, list[NLIExample]] = {}
        for split, rows in _limited(records, limit):
            seen: set[tuple[str, ...]] = set()
            kept = []
            for r in rows:
                if r.impossible:
                    skipped["impossible_update"] += 1
                    continue
                premise = premise_of(r)
                key = (r.subset, premise, r.hypothesis, r.update_type, r.update)
                if r.update and key in seen:
                    skipped["duplicate_update"] += 1
                    continue
                seen.add(key)
                kept.append(NLIExample(split, r.row, r.source_id, premise, r.hypothesis, r.update_type, (r.update,)))
            examples[split] = kept
        sel = select_tiered(self.recipe, examples, limit=None)
        return Selection(units=sel.queries, skipped=skipped + sel.skipped)

    def card_section(self) -> list[str]:
        return super().card_section() + [
            "",
            "Source rows: each δ-NLI row (one premise/hypothesis pair and one human update of one type) is "
            "one query; a pair appears once per update written for it, so queries of the same pair and "
            "update type share their text but not their gold. Rows marked impossible by the annotator are "
            "skipped (as in Rudinger et al., 2020); defeasible-social rows use the Social-Chem-101 situation "
            "as the premise. `source_row` counts rows within the subset's file.",
            "",
            "Known flaw: gold is the only human-written candidate, so a scorer can win by spotting "
            "authorship (see the shortcut probes in the build stats); `dnli-natural` has no such shortcut.",
        ]


# =========================================================================== dnli-natural


class DNLINaturalSection(StrictModel):
    """Recipe keys of ``dnli-natural``."""

    subsets: list[Subset] = Field(default_factory=lambda: list(SUBSETS), min_length=1)
    prefer: UpdateType = Field(
        default="strengthener",
        description="the update type graded 1 (the other is graded 0): 'strengthener' ranks updates "
        "that make the hypothesis more likely first",
    )
    query_template: str = Field(
        default="premise: {premise} hypothesis: {hypothesis} update: {label}",
        description="the query text; {label} is the preferred update type",
    )

    @field_validator("subsets")
    @classmethod
    def _no_repeats(cls, v: list[str]) -> list[str]:
        return _subsets_ok(v)

    @field_validator("query_template")
    @classmethod
    def _template_ok(cls, v: str) -> str:
        return check_template(v, ("premise", "hypothesis", "label"))


@dataclass(frozen=True, slots=True)
class Update:
    """One candidate of a pair: a human update and where it comes from."""

    text: str
    update_type: str
    source_id: str
    worker_id: int


@dataclass(frozen=True, slots=True)
class Pair:
    """A work unit of ``dnli-natural``: one (premise, hypothesis) pair and its kept updates."""

    query_id: str
    split: str
    subset: str
    premise: str
    hypothesis: str
    pair_id: str
    updates: tuple[Update, ...]


def _pair_rows(rows: Sequence[DNLIRow], skipped: Counter) -> list[DNLIRow]:
    """The usable rows of one pair, counting each dropped row's reason."""
    usable: list[DNLIRow] = []
    for r in rows:
        if r.impossible:
            reason = "impossible_update"
        elif r.update_type not in UPDATE_TYPES:
            reason = "unknown_update_type"
        elif not r.update:
            reason = "empty_update"
        elif not r.hypothesis:
            reason = "empty_hypothesis"
        elif not premise_of(r):
            reason = "empty_premise"
        else:
            usable.append(r)
            continue
        skipped[reason] += 1
    types_of: dict[str, set[str]] = {}
    for r in usable:
        types_of.setdefault(r.update, set()).add(r.update_type)
    out: list[DNLIRow] = []
    seen: set[str] = set()
    for r in usable:
        if len(types_of[r.update]) > 1:
            skipped["conflicting_update"] += 1  # the same text given as strengthener and weakener
        elif r.update in seen:
            skipped["duplicate_update"] += 1
        else:
            seen.add(r.update)
            out.append(r)
    return out


@register_builder
class DNLINaturalBuilder(_DNLIFiles, Builder):
    """δ-NLI pairs ranking their own human updates: the preferred update type above the other."""

    name = "dnli-natural"
    version = 1
    section: ClassVar[type] = DNLINaturalSection
    summary = "δ-NLI pairs ranking their human updates: strengtheners (1) above weakeners (0); all human-written"
    columns: ClassVar[tuple[Column, ...]] = (
        Column("premise", pa.string(), False, "source premise (defeasible-social: the Social-Chem-101 situation)",
               "query", dictionary=True),
        Column("hypothesis", pa.string(), False, "source hypothesis", "query", dictionary=True),
        Column("subset", pa.string(), False, "δ-NLI subset: atomic, snli or social", "query", dictionary=True),
        Column("pair_id", pa.string(), False,
               "the source's id of the pair (SNLIPairId, AtomicEventRelationId, SocialChemSituationUID)",
               "query", dictionary=True),
        Column("update_type", pa.string(), False, "strengthener or weakener", "candidate", dictionary=True),
        Column("source_id", pa.string(), False, "the candidate's row: <subset>/<split>.jsonl:<line>", "candidate"),
        Column("worker_id", pa.int64(), False, "anonymised id of the annotator who wrote the update (WorkerIdAnon)",
               "candidate"),
    )

    def select(self, records: Mapping[str, Sequence[DNLIRow]], *, limit: int | None) -> Selection:
        """Group each split's rows by pair; keep pairs with at least one update of each type.

        Pairs are keyed by subset, premise and hypothesis (whitespace-normalised), in order of
        first appearance. Row skips: ``impossible_update``, ``unknown_update_type``,
        ``empty_update``, ``empty_hypothesis``, ``empty_premise``, ``duplicate_update`` (same
        text as an earlier update of the pair), ``conflicting_update`` (a text given as both
        types: every copy dropped). Pair skips: ``pair_no_update`` (no usable row),
        ``pair_no_strengthener``, ``pair_no_weakener``, ``duplicate_query`` (the pair was
        already taken from another split).
        """
        skipped: Counter = Counter()
        units: list[Pair] = []
        seen: set[str] = set()
        for split, rows in _limited(records, limit):
            groups: dict[tuple[str, str, str], list[DNLIRow]] = {}
            for r in rows:
                key = (r.subset, clean_text(premise_of(r)), clean_text(r.hypothesis))
                groups.setdefault(key, []).append(r)
            for (subset, premise, hypothesis), group in groups.items():
                kept = _pair_rows(group, skipped)
                types = {r.update_type for r in kept}
                if not kept:
                    skipped["pair_no_update"] += 1
                    continue
                if len(types) < 2:
                    skipped["pair_no_weakener" if "strengthener" in types else "pair_no_strengthener"] += 1
                    continue
                qid = short_id("query", "dnli", subset, premise, hypothesis)
                if qid in seen:
                    skipped["duplicate_query"] += 1
                    continue
                seen.add(qid)
                updates = tuple(Update(r.update, r.update_type, r.source_id, r.worker_id) for r in kept)
                units.append(Pair(qid, split, subset, premise, hypothesis, group[0].pair_id, updates))
        return Selection(units=units, skipped=skipped)

    def make_lists(self, units: Sequence[Pair]) -> list[GradedList]:
        """One list per pair: relevance 1 for the preferred type, else 0; score = relevance."""
        r = self.recipe
        out = []
        for p in units:
            updates = list(p.updates)
            if r.shuffle_candidates:
                order = shuffled_order(r.seed_namespace, p.query_id, [u.text for u in updates])
                updates = [updates[i] for i in order]
            rel = [int(u.update_type == r.prefer) for u in updates]
            out.append(
                GradedList(
                    query_id=p.query_id,
                    query=r.query_template.format(premise=p.premise, hypothesis=p.hypothesis, label=r.prefer),
                    split=p.split,
                    candidate_ids=[short_id("candidate", p.query_id, u.text) for u in updates],
                    candidates=[u.text for u in updates],
                    scores=[float(g) for g in rel],
                    relevance=rel,
                    query_extra=(p.premise, p.hypothesis, p.subset, p.pair_id),
                    candidate_extra=(
                        [u.update_type for u in updates],
                        [u.source_id for u in updates],
                        [u.worker_id for u in updates],
                    ),
                    vocab=frozenset(words(p.premise)) | frozenset(words(p.hypothesis)),
                    human=[True] * len(updates),
                )
            )
        return out

    def card_section(self) -> list[str]:
        r = self.recipe
        other = "weakener" if r.prefer == "strengthener" else "strengthener"
        return [
            f"Each query is one δ-NLI (premise, hypothesis) pair (`{r.query_template}` with label = `{r.prefer}`); "
            f"its candidates are all the human updates written for the pair: each `{r.prefer}` has relevance 1 "
            f"and score 1.0, each `{other}` relevance 0 and score 0.0 (binary grades; δ-NLI has no finer ones).",
            "",
            "Pairs are grouped by subset, premise and hypothesis (whitespace-normalised) within a split and kept "
            "only with at least one update of each type. Rows the annotator marked impossible are skipped (as in "
            "Rudinger et al., 2020), as are repeated update texts; defeasible-social rows use the Social-Chem-101 "
            "situation as the premise. Subsets read: " + ", ".join(r.subsets) + ".",
            "",
            "Every candidate was written by a person, so there is no authorship shortcut. Annotation artefacts of "
            "the update types themselves (wording that gives away a weakener without reading the pair) remain; the "
            "query-blind probe in the build stats measures them.",
        ]
