"""Recipe schema: a build recipe is YAML data validated into these pydantic models.

Every model forbids unknown keys, so a typo fails at load time with the key's name.
Defaults are part of the resolved recipe and therefore of the benchmark fingerprint.
"""

from __future__ import annotations

import string
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SplitName = Literal["train", "validation", "test"]
SourceFormat = Literal["esnli-csv", "esnli-preprocessed"]
CandidateKind = Literal["explanation", "template", "sibling_explanation", "unrelated_explanation"]

#: Placeholders a template or the query template may use.
PLACEHOLDERS = frozenset({"premise", "hypothesis", "label", "claimed_label"})
_NAME = r"^[a-z][a-z0-9_-]*$"


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_placeholders(text: str, allowed: frozenset[str] = PLACEHOLDERS) -> None:
    for _, field, spec, conv in string.Formatter().parse(text):
        if field is None:
            continue
        if field not in allowed or spec or conv:
            raise ValueError(
                f"template placeholder {{{field}}} is not allowed in {text!r}; "
                f"use only {', '.join('{' + p + '}' for p in sorted(allowed))} (write {{{{ and }}}} for literal braces)"
            )


class RemoteFileSpec(StrictModel):
    """A file of the source's published release and the checksum that verifies it."""

    filename: str = Field(description="path relative to the source's base_url")
    split: SplitName
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    git_blob_sha1: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")

    @model_validator(mode="after")
    def _needs_checksum(self) -> RemoteFileSpec:
        if self.sha256 is None and self.git_blob_sha1 is None:
            raise ValueError(
                f"download file {self.filename!r} has no checksum; add sha256: or git_blob_sha1: "
                "(a source without a checksum cannot be verified)"
            )
        return self


class SourceSpec(StrictModel):
    """Where the data comes from and which on-disk formats the recipe reads."""

    family: Literal["esnli"] = Field(description="reader family")
    formats: list[SourceFormat] = Field(min_length=1)
    default: Literal["download", "embedded"] = Field(
        description="what `build` reads when no --source is given"
    )
    embedded: str | None = Field(default=None, description="package-relative folder of an embedded source")
    base_url: str | None = Field(default=None, description="download base URL, pinned to a commit")
    files: list[RemoteFileSpec] = Field(default_factory=list)
    homepage: str = ""
    license: str
    citation: str

    @model_validator(mode="after")
    def _default_is_available(self) -> SourceSpec:
        if self.default == "download" and (not self.base_url or not self.files):
            raise ValueError("default 'download' needs base_url and files")
        if self.default == "embedded" and not self.embedded:
            raise ValueError("default 'embedded' needs embedded: <package-relative folder>")
        return self


class TierSpec(StrictModel):
    """One quality tier: where its candidates come from, its grade and its score range."""

    name: str = Field(pattern=_NAME)
    relevance: int = Field(ge=0, le=100, description="integer grade, higher is better")
    score_range: tuple[float, float] = Field(description="[min, max] of the base score, inside [0, 1]")
    candidates: CandidateKind
    count: int = Field(default=1, ge=1, le=64, description="candidates of this tier per query")
    explanation: int = Field(default=1, ge=1, le=3, description="which human explanation (1-based)")
    label: Literal["true", "wrong", "any"] = Field(
        default="true", description="templates keyed by the true label, a wrong label, or '*'"
    )
    templates: dict[str, list[str]] = Field(default_factory=dict)
    match: Literal["none", "query_overlap"] = Field(
        default="none",
        description="unrelated_explanation only: 'query_overlap' picks, among match_pool content-seeded "
        "draws, the explanations whose word overlap with the query is closest to the pair's own "
        "explanation's, so lexical overlap does not give the tier away",
    )
    match_pool: int = Field(default=32, ge=1, le=1024)
    description: str = ""

    @field_validator("score_range")
    @classmethod
    def _range_ok(cls, v: tuple[float, float]) -> tuple[float, float]:
        lo, hi = v
        if not (0.0 <= lo <= 1.0 and 0.0 <= hi <= 1.0):
            raise ValueError(f"score_range {list(v)} must lie inside [0, 1]")
        if lo > hi:
            raise ValueError(f"score_range min {lo} > max {hi}; write [min, max]")
        return v

    @field_validator("templates")
    @classmethod
    def _templates_ok(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for key, texts in v.items():
            if not texts:
                raise ValueError(f"templates for {key!r} is empty")
            for t in texts:
                if not t.strip():
                    raise ValueError(f"an empty template for {key!r}")
                _check_placeholders(t)
        return v

    @model_validator(mode="after")
    def _kind_consistent(self) -> TierSpec:
        if self.candidates == "template" and not self.templates:
            raise ValueError(f"tier {self.name!r} takes candidates from templates but has none")
        if self.candidates != "template" and self.templates:
            raise ValueError(f"tier {self.name!r} has templates but candidates is {self.candidates!r}")
        if self.match != "none" and self.candidates != "unrelated_explanation":
            raise ValueError(f"tier {self.name!r}: match applies only to unrelated_explanation tiers")
        if self.label == "any" and set(self.templates) - {"*"}:
            raise ValueError(f"tier {self.name!r} has label 'any': key its templates by '*'")
        return self


class AdjustmentsSpec(StrictModel):
    """Algorithm 1's content-aware adjustments (paper 000, App. B)."""

    label_match_bonus: float = 0.05
    label_words: dict[str, list[str]] = Field(
        description="words that count as mentioning each label (lower case, matched as whole words)"
    )
    keyword_bonus: float = 0.03
    reasoning_keywords: list[str] = Field(min_length=1)
    overlap_bonus: float = 0.02
    overlap_threshold: float = Field(default=0.3, ge=0.0, le=1.0)
    short_penalty: float = 0.10
    short_min_words: int = Field(default=15, ge=0)
    short_tiers: list[str] = Field(default_factory=lambda: ["gold", "good"])
    gibberish_penalty: float = 0.30
    gibberish_words: list[str] = Field(min_length=1)
    gibberish_exempt_tiers: list[str] = Field(default_factory=lambda: ["nonsense"])

    @field_validator("reasoning_keywords", "gibberish_words")
    @classmethod
    def _single_lower_words(cls, v: list[str]) -> list[str]:
        for w in v:
            if w != w.lower() or not w.isalnum():
                raise ValueError(f"{w!r} must be one lower-case alphanumeric word")
        return v


class ScoringSpec(StrictModel):
    """How a candidate's ``score`` is set.

    ``algorithm1``: a content-seeded uniform draw from the tier's range plus the
    adjustments, clipped to [0, 1]. ``uniform``: the draw alone. ``grade``: the tier's
    relevance divided by the highest relevance (no randomness, no surface features).
    """

    mode: Literal["algorithm1", "uniform", "grade"]
    adjustments: AdjustmentsSpec | None = None

    @model_validator(mode="after")
    def _adjustments_iff_algorithm1(self) -> ScoringSpec:
        if self.mode == "algorithm1" and self.adjustments is None:
            raise ValueError("mode 'algorithm1' needs an adjustments: section")
        if self.mode != "algorithm1" and self.adjustments is not None:
            raise ValueError(f"mode {self.mode!r} takes no adjustments (they belong to algorithm1)")
        return self


class Recipe(StrictModel):
    """A complete, versioned description of how one benchmark is built."""

    name: str = Field(pattern=_NAME)
    version: int = Field(ge=1)
    description: str
    source: SourceSpec
    labels: list[str] = Field(min_length=2, description="labels kept; rows with another label are skipped")
    seed_namespace: str = Field(min_length=1, description="prefix of every content-derived seed")
    query_template: str = "premise: {premise} hypothesis: {hypothesis} label: {label}"
    tiers: list[TierSpec] = Field(min_length=2)
    scoring: ScoringSpec
    shuffle_candidates: bool = Field(
        default=True, description="order candidates within a query by a content hash, not by tier"
    )
    resplit: tuple[int, int, int] | None = Field(
        default=None, description="default train/validation/test percentages carved by query-id hash"
    )
    notes: str = ""

    @field_validator("query_template")
    @classmethod
    def _query_template_ok(cls, v: str) -> str:
        _check_placeholders(v, PLACEHOLDERS - {"claimed_label"})
        return v

    @field_validator("resplit")
    @classmethod
    def _resplit_ok(cls, v: tuple[int, int, int] | None) -> tuple[int, int, int] | None:
        if v is not None:
            check_resplit(v)
        return v

    @model_validator(mode="after")
    def _cross_checks(self) -> Recipe:
        names = [t.name for t in self.tiers]
        if len(set(names)) != len(names):
            raise ValueError(f"tier names must be unique, got {names}")
        grades = [t.relevance for t in self.tiers]
        if grades != sorted(grades, reverse=True) or len(set(grades)) != len(grades):
            raise ValueError(f"tiers must be listed best first with distinct relevance, got {grades}")
        labels = set(self.labels)
        for t in self.tiers:
            keys = set(t.templates)
            if t.candidates == "template" and t.label != "any" and keys != labels:
                raise ValueError(
                    f"tier {t.name!r} templates must be keyed by every label {sorted(labels)}, got {sorted(keys)}"
                )
        adj = self.scoring.adjustments
        if adj is not None:
            if set(adj.label_words) != labels:
                raise ValueError(f"adjustments.label_words must have one entry per label {sorted(labels)}")
            for field in ("short_tiers", "gibberish_exempt_tiers"):
                unknown = set(getattr(adj, field)) - set(names)
                if unknown:
                    raise ValueError(f"adjustments.{field} names unknown tiers {sorted(unknown)}")
        return self


def check_resplit(v: tuple[int, int, int] | list[int]) -> tuple[int, int, int]:
    if len(v) != 3 or any(p < 0 for p in v) or sum(v) != 100:
        raise ValueError(f"resplit must be three non-negative percentages summing to 100, got {list(v)}")
    return (int(v[0]), int(v[1]), int(v[2]))
