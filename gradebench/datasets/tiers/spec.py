"""Recipe keys of the synthetic-tier strategy shared by the NLI builders (esnli, dnli, mnli, ...).

Tiers (gold/good/fair/poor/nonsense) take their candidates from the pair's human explanation,
label-aware templates, explanations borrowed from sibling/unrelated pairs, or a negation flip
of the pair's own explanation (:mod:`.contrast`; optional: a pair whose explanation has no
balanced flip gets no candidate from that tier); scores come from
Algorithm 1 (seeds/000, App. B), a uniform draw in the tier's range, or the grade alone.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from gradebench.datasets.common import check_template
from gradebench.strict import StrictModel

CandidateKind = Literal[
    "explanation", "template", "sibling_explanation", "unrelated_explanation", "negation_flip"
]

#: Placeholders a template or the query template may use.
PLACEHOLDERS = frozenset({"premise", "hypothesis", "label", "claimed_label"})
_NAME = r"^[a-z][a-z0-9_-]*$"


def _drop_defaults(model: StrictModel, data: dict, keys: dict[str, object]) -> dict:
    """``data`` without the ``keys`` whose value is their default.

    Keys added after recipes were fingerprinted (esnli-contrast v2) leave the resolved dump of a
    recipe that does not set them, and so its fingerprint, as it was.
    """
    for key, default in keys.items():
        if getattr(model, key) == default:
            data.pop(key, None)
    return data


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
    match: Literal["none", "query_overlap", "bm25"] = Field(
        default="none",
        description="unrelated_explanation only: 'query_overlap' picks, among match_pool content-seeded "
        "draws, the explanations whose word overlap with the query is closest to the pair's own "
        "explanation's, so lexical overlap does not give the tier away; 'bm25' picks, among every "
        "pair of the split about another premise WITH ANOTHER LABEL, the explanations whose BM25 "
        "against the query is closest to the own explanation's, each lent to at most `count` "
        "queries (match_pool unused)",
    )
    match_pool: int = Field(default=32, ge=1, le=1024)
    borrow_label: Literal["other", "same"] = Field(
        default="other",
        description="sibling_explanation and unrelated_explanation tiers: borrow explanations of pairs with "
        "ANOTHER label than the query's (`other`, the first recipes' rule) or with the SAME label (`same`: the "
        "label then says nothing about which candidate is the pair's own)",
    )
    flip_balance: Literal["rule", "label"] = Field(
        default="rule",
        description="negation_flip only: every rule is used as often in each direction over the split (`rule`), "
        "or over each label's pairs of the split (`label`), so a flipped text carries its label's usual negations",
    )
    flip_explanations: tuple[int, ...] = Field(
        default=(),
        description="negation_flip only: the human explanations tried in order (first one-clause, one-site text "
        "wins); empty: `explanation` alone",
    )
    own_from_flip: bool = Field(
        default=False,
        description="negation_flip only: the pair's own candidate (its explanation tier) is the explanation the "
        "flip was made from, so own and flipped differ by one negation",
    )
    keep_unflipped: float = Field(
        default=1.0, ge=0.0, le=1.0,
        description="negation_flip only: the share of pairs without a balanced flip that keep a list (without "
        "this tier), chosen by a content-seeded draw on the query id; the others are skipped "
        "(`no_negation_flip`). 1: every pair is kept; 0: every list has a flip",
    )
    description: str = ""

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        return _drop_defaults(self, handler(self), _TIER_NEW_KEYS)

    @field_validator("flip_explanations")
    @classmethod
    def _flip_explanations_ok(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if any(k not in (1, 2, 3) for k in v) or len(set(v)) != len(v):
            raise ValueError(f"flip_explanations must be distinct explanation numbers 1-3, got {list(v)}")
        return v

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
                check_template(t, PLACEHOLDERS)
        return v

    @model_validator(mode="after")
    def _kind_consistent(self) -> TierSpec:
        if self.candidates == "template" and not self.templates:
            raise ValueError(f"tier {self.name!r} takes candidates from templates but has none")
        if self.candidates != "template" and self.templates:
            raise ValueError(f"tier {self.name!r} has templates but candidates is {self.candidates!r}")
        if self.match != "none" and self.candidates != "unrelated_explanation":
            raise ValueError(f"tier {self.name!r}: match applies only to unrelated_explanation tiers")
        if self.candidates == "negation_flip" and self.count != 1:
            raise ValueError(f"tier {self.name!r}: a negation_flip tier has one candidate (count: 1)")
        if self.label == "any" and set(self.templates) - {"*"}:
            raise ValueError(f"tier {self.name!r} has label 'any': key its templates by '*'")
        if self.borrow_label != "other" and self.candidates not in ("sibling_explanation", "unrelated_explanation"):
            raise ValueError(f"tier {self.name!r}: borrow_label applies only to sibling/unrelated_explanation tiers")
        flip_keys = ("flip_balance", "flip_explanations", "own_from_flip", "keep_unflipped")
        set_keys = [k for k in flip_keys if getattr(self, k) != _TIER_NEW_KEYS[k]]
        if set_keys and self.candidates != "negation_flip":
            raise ValueError(f"tier {self.name!r}: {', '.join(set_keys)} apply only to negation_flip tiers")
        return self


#: TierSpec keys added with esnli-contrast v2, left out of the dump at their defaults
_TIER_NEW_KEYS: dict[str, object] = {
    "borrow_label": "other", "flip_balance": "rule", "flip_explanations": (), "own_from_flip": False,
    "keep_unflipped": 1.0,
}


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


#: feature groups an adversarial attacker may read (:mod:`.attackers`)
AttackerFeature = Literal["overlap", "length", "negation", "words", "bigrams", "shared_words", "label_words",
                          "label_overlap"]


class AttackerSpec(StrictModel):
    """One lexical attacker of the adversarial filter: a pairwise ridge ranker on its feature groups."""

    name: str = Field(pattern=_NAME)
    features: list[AttackerFeature] = Field(min_length=1, description="the feature groups it reads")
    alpha: float = Field(default=1.0, gt=0.0, le=1e6, description="ridge penalty")


class AdversarialSpec(StrictModel):
    """Adversarial distractor selection and filtering (``adversarial:``; :mod:`.adversarial`).

    Each round trains ``partitions`` members of every attacker, each on a content-seeded
    ``train_share`` of the train lists (AFLite, Le Bras et al. 2020), and scores every list with the
    members that did not see it (train) or with all of them (other splits). Then every candidate of
    a ``replace`` tier is swapped for the one of ``pool`` content-seeded alternatives (its tier's
    pool: the same premise's other explanations for a sibling tier, explanations of pairs about
    other premises for an unrelated tier, each label rule as the tier's ``borrow_label``; for an
    own-explanation tier, listed first, the pair's other annotators' explanations, none while the
    list holds a flipped candidate made from its own) that the members order worst (``choose:
    chance``: closest to chance; with ``length_match``, a sibling or unrelated one among the
    alternatives whose length in words is that close to the list's own explanation's), and a
    candidate of a ``drop`` tier whose pairs the members still order right in at least ``tau`` of
    their votes is dropped (a list left with fewer than ``min_tiers`` tiers is dropped, and with
    ``list_tau`` one whose pairs they order right in that share of their votes). With ``mirror`` the
    sibling and unrelated candidates are the split's lists' own explanations (:mod:`.adversarial`).
    Rounds stop once every attacker's agreement on the train lists is at most ``target``.
    """

    attackers: list[AttackerSpec] = Field(min_length=1)
    partitions: int = Field(default=16, ge=2, le=64, description="ensemble members per attacker")
    train_share: float = Field(default=0.5, gt=0.0, lt=1.0, description="train lists each member learns from")
    rounds: int = Field(default=3, ge=1, le=10)
    tau: float = Field(default=0.75, gt=0.5, le=1.0, description="vote share that makes a pair easy")
    target: float = Field(
        default=0.6, gt=0.5, lt=1.0,
        description="stop once every attacker's pairwise agreement on the train lists is at most this")
    pool: int = Field(default=16, ge=2, le=256, description="alternatives drawn per replaced candidate")
    replace: list[str] = Field(
        default_factory=list,
        description="tiers whose candidates are chosen from a pool, in this order (an own-explanation tier: "
        "among the pair's annotators' explanations)")
    drop: list[str] = Field(default_factory=list, description="tiers whose easy candidates are dropped")
    min_tiers: int = Field(default=2, ge=2, le=100, description="a list keeps at least this many tiers")
    list_tau: float | None = Field(
        default=None, gt=0.5, le=1.0,
        description="drop a whole list whose pairs the members order right in at least this share of their "
        "votes, pooled over its pairs, after its candidates are replaced and dropped (AFLite's filter with "
        "a list as the instance); null: lists go only when left with fewer than min_tiers tiers")
    hash_bits: int = Field(default=11, ge=6, le=16, description="hashed word features: 2**hash_bits slots")
    choose: Literal["hardest", "chance"] = Field(
        default="hardest",
        description="which pool alternative replaces a candidate: the one the members order worst "
        "(`hardest`), or the one whose pairs they order closest to chance (`chance`: the replacements "
        "do not leave the grades inverted for a model trained on the filtered lists to learn)")
    length_match: int | None = Field(
        default=None, ge=0, le=100,
        description="a replacement's length in words is within this many words of the list's own explanation "
        "(the current candidate is kept when no alternative is; a length that tracks the grade is a cue in the "
        "candidate alone); null: any length")

    mirror: bool = Field(
        default=False,
        description="every sibling and unrelated candidate is another list's own explanation: a sibling the own "
        "explanation of a list of the same premise (the link mutual), an unrelated one that of another premise's "
        "list (chosen by the members among the `pool` best by BM25 where the tier is in `replace`, each lent "
        "once), so a scorer that reads only the candidate orders own > sibling pairs at chance; those tiers "
        "cannot be in `drop`, and a dropped list takes its own explanation back")

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        return _drop_defaults(self, handler(self), {"choose": "hardest", "length_match": None, "list_tau": None,
                                                    "mirror": False})

    @model_validator(mode="after")
    def _names_unique(self) -> AdversarialSpec:
        names = [a.name for a in self.attackers]
        if len(set(names)) != len(names):
            raise ValueError(f"adversarial attacker names must be unique, got {names}")
        if not self.replace and not self.drop and not self.mirror:
            raise ValueError("adversarial needs tiers to `replace` or `drop`, or `mirror` (else it changes nothing)")
        return self


class TieredSection(StrictModel):
    """The recipe keys of the synthetic-tier strategy (seeds/000 Sec. 4, App. B)."""

    labels: list[str] = Field(min_length=2, description="labels kept; rows with another label are skipped")
    query_template: str = "premise: {premise} hypothesis: {hypothesis} label: {label}"
    tiers: list[TierSpec] = Field(min_length=2)
    scoring: ScoringSpec
    resplit_by: Literal["query", "premise"] = Field(
        default="query",
        description="with a resplit: carve output splits by query id (`query`), or by premise (`premise`: every "
        "pair of a premise lands in one split, and the tiers that borrow or balance over a split do so within "
        "each OUTPUT split, so building one split never reads another)",
    )
    adversarial: AdversarialSpec | None = Field(
        default=None, description="adversarial distractor selection and filtering against lexical attackers")

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        return _drop_defaults(self, handler(self), {"resplit_by": "query", "adversarial": None})

    @model_validator(mode="after")
    def _adversarial_tiers(self) -> TieredSection:
        adv = self.adversarial
        if adv is None:
            return self
        kinds = {t.name: t.candidates for t in self.tiers}
        if adv.length_match is not None and "explanation" not in kinds.values():
            raise ValueError("adversarial.length_match needs a tier of the pair's own explanation "
                             "(candidates: explanation) to match lengths against; remove length_match")
        borrowing = ("sibling_explanation", "unrelated_explanation")
        if not any(k in borrowing for k in kinds.values()):
            raise ValueError("adversarial needs a tier that borrows explanations (sibling_explanation or "
                             "unrelated_explanation); this recipe has none")
        choosable = borrowing + ("explanation",)
        for name in adv.replace:
            if kinds.get(name) not in choosable:
                raise ValueError(f"adversarial.replace names {name!r}, which is not an explanation, "
                                 f"sibling_explanation or unrelated_explanation tier of this recipe (those: "
                                 f"{[n for n, k in kinds.items() if k in choosable]})")
        owns = [i for i, name in enumerate(adv.replace) if kinds.get(name) == "explanation"]
        if owns and owns != [0]:
            raise ValueError(f"adversarial.replace lists the own-explanation tier {adv.replace[owns[-1]]!r} after "
                             "another: list it first (the others are matched against the own explanation)")
        top = self.tiers[0].name
        for name in adv.drop:
            if name not in kinds or name == top:
                raise ValueError(f"adversarial.drop names {name!r}: give tiers of this recipe below the top one "
                                 f"({[t.name for t in self.tiers[1:]]})")
        if adv.mirror:
            mirrored = [n for n, k in kinds.items() if k in borrowing]
            if "explanation" not in kinds.values():
                raise ValueError("adversarial.mirror needs a tier of the pair's own explanation (candidates: "
                                 "explanation): its texts are what the other tiers borrow; remove mirror")
            if adv.length_match is not None:
                raise ValueError("adversarial.length_match does not apply with mirror (the borrowed texts are "
                                 "other lists' own explanations); remove one of them")
            for name in adv.drop:
                if name in mirrored:
                    raise ValueError(f"adversarial.drop names {name!r}, a tier that mirror borrows for: dropping "
                                     "one of its candidates would leave the text on one side of a mirrored pair; "
                                     "remove it from drop (list_tau drops whole lists)")
            for name in adv.replace:
                if kinds[name] == "sibling_explanation":
                    raise ValueError(f"adversarial.replace names {name!r}: with mirror, siblings are the same "
                                     "premise's lists' own explanations, nothing to choose; remove it from replace")
        if adv.min_tiers > len(self.tiers):
            raise ValueError(f"adversarial.min_tiers {adv.min_tiers} is more than the recipe's {len(self.tiers)} tiers")
        return self

    @field_validator("query_template")
    @classmethod
    def _query_template_ok(cls, v: str) -> str:
        return check_template(v, PLACEHOLDERS - {"claimed_label"})

    @model_validator(mode="after")
    def _cross_checks(self) -> TieredSection:
        if len(set(self.labels)) != len(self.labels):  # (a wrong-label tier would have nothing to claim)
            raise ValueError(f"labels must be unique, got {self.labels}")
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
