"""αNLI / ART (Bhagavatula et al., 2020) as graded lists of hypotheses, following L2R2 (Zhu et al., 2020).

An αNLI instance gives two observations (``obs1`` before, ``obs2`` after) and two hypotheses,
one judged the more plausible explanation. L2R2 reorganises the instances into a ranking task:
all instances with the same observation pair (compared after collapsing whitespace and case)
form one query (the recipe's ``query_template`` over ``obs1`` and ``obs2``) whose candidates
are every distinct hypothesis they contain (same normalisation). Each instance is one
comparison; a hypothesis' grade is how often it won its comparisons:

    score(h) = (1 / |C(h)|) * sum_{c in C(h)} share_c(h)

over the comparisons C(h) it appears in, where ``share_c(h)`` is 1 for the labelled winner and
0 for the loser in ART, and the share of ChaosNLI's 100 annotators who chose ``h`` in ChaosNLI
(a soft win rate). ``relevance`` is the dense rank of the score within the list (0 = lowest
win rate; equal win rates share a grade), so a list of one comparison has grades 1 and 0.
Lists with a single grade (e.g. a ChaosNLI 50/50 tie) are skipped.

Sources (recipe ``source.formats``): ``art-jsonl`` (ART's ``train.jsonl``/``dev.jsonl`` with
``train-labels.lst``/``dev-labels.lst``; train -> ``train``, dev -> ``validation``) and
``chaosnli-alphanli-jsonl`` (ChaosNLI's ``chaosNLI_alphanli.jsonl`` -> ``test``). ChaosNLI's
αNLI items ARE the 1,532 ART dev items: when both are read, an ART comparison whose observation
pair is in the ChaosNLI file is dropped (``observations_in_chaosnli_test``), so no query is in
two splits (with both sources, ``validation`` ends up empty).

Skip reasons (instances unless noted): ``unknown_label``, ``inconsistent_votes``,
``uid_mismatch``, ``no_votes`` (ChaosNLI, see :func:`gradebench.datasets.chaosnli.reader.vote_problem`),
``bad_story_id`` (a ChaosNLI uid that is not a story id plus 1/2), ``empty_observation``,
``empty_hypothesis``, ``identical_hypotheses``, ``observations_in_chaosnli_test``; lists:
``single_grade``, ``duplicate_query``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
from pydantic import Field, field_validator

from gradebench.datasets import register_builder
from gradebench.datasets.anli.reader import ART_LABELS, ART_SPLITS, ARTItem, labels_file_for, read_art
from gradebench.datasets.base import Builder, Column, GradedList, Selection
from gradebench.datasets.chaosnli.builder import RELEASE_FOLDER
from gradebench.datasets.chaosnli.reader import (
    ALPHA_LABELS,
    SUBSET_FILES,
    AlphaItem,
    read_chaosnli_alphanli,
    split_alpha_uid,
    vote_problem,
)
from gradebench.datasets.common import check_template, dense_rank, shuffled_order
from gradebench.datasets.records import InputFile
from gradebench.errors import SourceFormatError, SourceNotFoundError
from gradebench.hashing import short_id
from gradebench.strict import StrictModel
from gradebench.words import words

FORMAT_ART = "art-jsonl"
FORMAT_CHAOS = "chaosnli-alphanli-jsonl"
CHAOS_FILE = SUBSET_FILES["alphanli"]
#: sub-folders an ART release may sit in under the given source folder
ART_FOLDERS = ("", "anli", "alphanli")


def normalise(text: str) -> str:
    """The key texts are merged on: whitespace collapsed, case folded."""
    return " ".join(text.split()).casefold()


@dataclass(frozen=True, slots=True)
class Comparison:
    """One usable αNLI instance: the votes (or the ART label as 1/0 votes) between two hypotheses.

    ``key``, ``key1`` and ``key2`` are the normalised observation pair and hypotheses.
    """

    split: str
    row: int
    source_id: str
    obs1: str
    obs2: str
    hyp1: str
    hyp2: str
    votes: tuple[int, int]
    entropy: float | None
    key: tuple[str, str]
    key1: str
    key2: str


@dataclass
class _Group:
    """The comparisons of one observation pair, merged hypothesis by hypothesis.

    Shares are summed exactly (ints for ART's 1/0 votes, fractions otherwise), so equal win
    rates compare equal.
    """

    first: Comparison
    n: int = 0
    texts: dict[str, str] = field(default_factory=dict)  # normalised -> text as first seen
    shares: dict[str, int | Fraction] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    entropies: list[float] = field(default_factory=list)

    def add(self, c: Comparison) -> None:
        self.n += 1
        v1, v2 = c.votes
        total = v1 + v2
        for key, text, v in ((c.key1, c.hyp1, v1), (c.key2, c.hyp2, v2)):
            if key not in self.texts:
                self.texts[key] = text
                self.shares[key] = 0
                self.seen[key] = 0
            self.shares[key] += v if total == 1 else Fraction(v, total)
            self.seen[key] += 1
        if c.entropy is not None:
            self.entropies.append(c.entropy)

    def win_rates(self) -> list[float]:
        """Per hypothesis (in first-appearance order): summed shares / comparisons.

        Correctly rounded from the exact ratio (int true division or ``float(Fraction)``), so
        equal ratios give equal floats and ratios with denominators this small never collide.
        """
        out = []
        for k in self.texts:
            s, n = self.shares[k], self.seen[k]
            out.append(s / n if isinstance(s, int) else float(Fraction(s, n)))
        return out


class ANLISection(StrictModel):
    """Recipe keys of the ``anli`` builder."""

    query_template: str = Field(
        default="observation 1: {obs1} observation 2: {obs2}", description="query text; {obs1} and {obs2}"
    )

    @field_validator("query_template")
    @classmethod
    def _template_ok(cls, v: str) -> str:
        return check_template(v, frozenset({"obs1", "obs2"}))


@register_builder
class ANLIBuilder(Builder):
    name = "anli"
    version = 1
    section = ANLISection
    formats = (FORMAT_ART, FORMAT_CHAOS)
    summary = "αNLI (ART) observation pairs; candidates = their hypotheses graded by win rate (L2R2) or ChaosNLI votes"
    stat_columns = ("entropy",)
    columns = (
        Column("obs1", pa.string(), False, "first observation", "query"),
        Column("obs2", pa.string(), False, "second observation", "query"),
        Column("source_id", pa.string(), False, "ART story_id, or ChaosNLI '<story_id>-<1|2>', of the first instance",
               "query"),
        Column("source_row", pa.int64(), False, "0-based row of the first instance in its source split", "query"),
        Column("n_comparisons", pa.int64(), False, "αNLI instances merged into this list", "query"),
        Column("entropy", pa.float64(), True, "mean base-2 entropy of the ChaosNLI votes; null for ART", "query"),
        Column("comparisons", pa.int64(), False, "instances the hypothesis appears in", "candidate"),
        Column("wins", pa.float64(), False, "sum of its vote shares (ART: instances it won)", "candidate"),
    )

    # ------------------------------------------------------------------ locate / read

    def locate(self, source: Path) -> list[InputFile]:
        allowed = set(self.recipe.source.formats)
        src = Path(source)
        if not src.exists():
            raise SourceNotFoundError(
                "source not found", path=src, hint="pass the ART release folder, chaosNLI_alphanli.jsonl, or a folder"
            )
        if src.is_file():
            return self._locate_file(src, allowed)
        out: list[InputFile] = []
        if FORMAT_ART in allowed:
            root = next((src / sub for sub in ART_FOLDERS if (src / sub / "train.jsonl").is_file()
                         or (src / sub / "dev.jsonl").is_file()), None)
            if root is not None:
                for stem in ART_SPLITS:
                    if (root / f"{stem}.jsonl").is_file():
                        out += self._art_pair(root / f"{stem}.jsonl")
        if FORMAT_CHAOS in allowed:
            chaos = next((p for p in (src / CHAOS_FILE, src / RELEASE_FOLDER / CHAOS_FILE) if p.is_file()), None)
            if chaos is not None:
                out.append(InputFile(str(chaos), f"{FORMAT_CHAOS}:alphanli:test", "test"))
        if not out:
            wanted = []
            if FORMAT_ART in allowed:
                wanted.append("ART's train.jsonl/dev.jsonl with train-labels.lst/dev-labels.lst")
            if FORMAT_CHAOS in allowed:
                wanted.append(f"ChaosNLI's {CHAOS_FILE} (here or in {RELEASE_FOLDER}/)")
            raise SourceFormatError(
                "no αNLI files here: expected " + " or ".join(wanted),
                path=src,
                hint="pass the unzipped alphanli-train-dev.zip folder, the chaosNLI_v1.0 folder, or one file",
            )
        return out

    def _locate_file(self, src: Path, allowed: set[str]) -> list[InputFile]:
        if src.name == CHAOS_FILE:
            if FORMAT_CHAOS not in allowed:
                raise SourceFormatError(
                    f"is ChaosNLI's αNLI file, but recipe {self.recipe.name!r} does not read {FORMAT_CHAOS}",
                    path=src,
                    hint=f"add {FORMAT_CHAOS} to source.formats or pass ART files",
                )
            return [InputFile(str(src), f"{FORMAT_CHAOS}:alphanli:test", "test")]
        stem = src.name.removesuffix("-labels.lst").removesuffix(".jsonl")
        if stem in ART_SPLITS and src.name in (f"{stem}.jsonl", f"{stem}-labels.lst"):
            if FORMAT_ART not in allowed:
                raise SourceFormatError(
                    f"is an ART file, but recipe {self.recipe.name!r} does not read {FORMAT_ART}",
                    path=src,
                    hint=f"add {FORMAT_ART} to source.formats or pass {CHAOS_FILE}",
                )
            return self._art_pair(src.with_name(f"{stem}.jsonl"))
        raise SourceFormatError(
            "not an αNLI file: expected train.jsonl, dev.jsonl, their -labels.lst, or " + CHAOS_FILE,
            path=src,
            hint="pass one of those files, or the folder that holds them",
        )

    @staticmethod
    def _art_pair(jsonl: Path) -> list[InputFile]:
        labels = labels_file_for(jsonl)
        if not jsonl.is_file():
            raise SourceNotFoundError(f"{jsonl.name} is missing next to {labels.name}", path=jsonl,
                                      hint="copy both files of the split from the ART release")
        if not labels.is_file():
            raise SourceNotFoundError(
                f"{labels.name} is missing: {jsonl.name} needs its line-aligned labels file",
                path=labels,
                hint="copy both files of the split from the ART release (alphanli-train-dev.zip)",
            )
        stem = jsonl.name.removesuffix(".jsonl")
        split = ART_SPLITS[stem]
        return [
            InputFile(str(jsonl), f"{FORMAT_ART}:{jsonl.name}:{split}", split),
            InputFile(str(labels), f"{FORMAT_ART}:{labels.name}:{split}", split),
        ]

    def read(self, files: Sequence[InputFile]) -> Mapping[str, Sequence[ARTItem | AlphaItem]]:
        out: dict[str, list[ARTItem | AlphaItem]] = {}
        by_path = {f.path: f for f in files}
        for f in files:
            if f.role.startswith(FORMAT_CHAOS + ":"):
                out.setdefault(f.split, []).extend(read_chaosnli_alphanli(f.path))
            elif f.path.endswith(".jsonl"):
                labels = str(labels_file_for(f.path))
                if labels not in by_path:
                    raise SourceNotFoundError(f"{Path(labels).name} was not located with {Path(f.path).name}",
                                              path=labels, hint="pass the folder holding both files")
                out.setdefault(f.split, []).extend(read_art(f.path, labels, f.split))
        return {s: out[s] for s in ("train", "validation", "test") if s in out}

    # ------------------------------------------------------------------ select

    def select(self, records: Mapping[str, Sequence[ARTItem | AlphaItem]], *, limit: int | None) -> Selection:
        skipped: Counter = Counter()
        comparisons: dict[str, list[Comparison]] = {}
        for split in records:
            kept = comparisons.setdefault(split, [])
            for n, item in enumerate(records[split]):
                if limit is not None and n >= limit:
                    break
                c = _comparison(item, split)
                if isinstance(c, str):
                    skipped[c] += 1
                else:
                    kept.append(c)
        chaos_keys = {
            c.key
            for split, items in records.items()
            if any(isinstance(i, AlphaItem) for i in items)
            for c in comparisons[split]
        }
        units: list[GradedList] = []
        seen: set[str] = set()
        for split in ("train", "validation", "test"):
            groups: dict[tuple[str, str], _Group] = {}
            for c in comparisons.get(split, []):
                if split != "test" and c.key in chaos_keys:
                    skipped["observations_in_chaosnli_test"] += 1
                    continue
                g = groups.get(c.key)
                if g is None:
                    g = groups[c.key] = _Group(c)
                g.add(c)
            for g in groups.values():
                rates = g.win_rates()
                if len(set(rates)) < 2:
                    skipped["single_grade"] += 1
                    continue
                gl = self._graded_list(g, rates, split)
                if gl.query_id in seen:
                    skipped["duplicate_query"] += 1
                    continue
                seen.add(gl.query_id)
                units.append(gl)
        return Selection(units=units, skipped=skipped)

    def _graded_list(self, g: _Group, rates: list[float], split: str) -> GradedList:
        r = self.recipe
        c = g.first
        obs1, obs2 = c.obs1.strip(), c.obs2.strip()
        qid = short_id("query", c.source_id, obs1, obs2)
        keys = list(g.texts)
        rel = dense_rank(rates)
        cids = [short_id("candidate", qid, k) for k in keys]
        order = shuffled_order(r.seed_namespace, qid, cids) if r.shuffle_candidates else list(range(len(keys)))
        entropy = sum(g.entropies) / len(g.entropies) if g.entropies else None
        return GradedList(
            query_id=qid,
            query=r.query_template.format(obs1=obs1, obs2=obs2),
            split=split,
            candidate_ids=[cids[i] for i in order],
            candidates=[g.texts[keys[i]].strip() for i in order],
            scores=[rates[i] for i in order],
            relevance=[rel[i] for i in order],
            query_extra=(obs1, obs2, c.source_id, c.row, g.n, entropy),
            candidate_extra=([g.seen[keys[i]] for i in order], [float(g.shares[keys[i]]) for i in order]),
            vocab=frozenset(words(obs1)) | frozenset(words(obs2)),
            human=[True] * len(keys),
        )

    def card_section(self) -> list[str]:
        return [
            "αNLI / ART (Bhagavatula et al., 2020) reorganised as in L2R2 (Zhu et al., 2020): all instances "
            f"sharing an observation pair form one query (`{self.recipe.query_template}`) whose candidates are "
            "every hypothesis written for it (all by crowd workers).",
            "",
            "A hypothesis' score is its win rate over the comparisons (instances) it appears in: in ART a win is "
            "the gold label (1 or 0 per comparison); in ChaosNLI's αNLI subset it is the share of 100 annotators "
            "who preferred it (a soft win rate). Relevance is the dense rank of the win rate within the list "
            "(0 = lowest). Lists with a single grade (a 50/50 ChaosNLI tie) are skipped.",
            "",
            "Splits: ART train -> train, ART dev -> validation, ChaosNLI αNLI (the same 1,532 dev items with 100 "
            "votes each) -> test; an ART comparison whose observations are in the ChaosNLI file is dropped, so no "
            "query is in two splits. ART states no license for its data (the ART code repository is Apache-2.0); "
            "ChaosNLI is CC BY-NC 4.0, so the benchmark is marked not redistributable.",
        ]


def _comparison(item: ARTItem | AlphaItem, split: str) -> Comparison | str:
    """The usable comparison of one instance, or the reason it is skipped."""
    if isinstance(item, ARTItem):
        if item.label not in ART_LABELS:
            return "unknown_label"
        votes = (1, 0) if item.label == "1" else (0, 1)
        source_id, entropy = item.story_id, None
    else:
        reason = vote_problem(item.votes, ALPHA_LABELS)
        if reason is not None:
            return reason
        parts = split_alpha_uid(item.votes.uid)
        if parts is None:
            return "bad_story_id"
        source_id = f"{parts[0]}-{parts[1]}"
        votes = (item.votes.label_count[0], item.votes.label_count[1])
        entropy = item.votes.entropy
    if not item.obs1.strip() or not item.obs2.strip():
        return "empty_observation"
    if not item.hyp1.strip() or not item.hyp2.strip():
        return "empty_hypothesis"
    key1, key2 = normalise(item.hyp1), normalise(item.hyp2)
    if key1 == key2:
        return "identical_hypotheses"
    key = (normalise(item.obs1), normalise(item.obs2))
    return Comparison(split, item.row, source_id, item.obs1, item.obs2, item.hyp1, item.hyp2, votes, entropy,
                      key, key1, key2)
