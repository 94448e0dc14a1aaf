"""The shape of a reproduction report: claims, their tested steps, their tables, the verdicts.

:func:`gradebench.experiments.reproduction.reproduction_report` computes a
:class:`ReproductionReport`; :mod:`.render` lays it out as Markdown or terminal text. Every
figure in it is read from records (evaluation and policy records, their per-query and
prediction tables) or is one of the papers' figures, kept with its source in :mod:`.papers`.
``to_dict()`` is what ``gradebench report --json`` prints; :func:`.render.markdown` and
:func:`.render.text` lay a report out.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Verdict = Literal["reproduced", "contradicted", "inconclusive", "not testable"]
VERDICTS: tuple[str, ...] = ("reproduced", "contradicted", "inconclusive", "not testable")
#: what a tested step found, after Holm's correction within its claim ("mixed": a check that holds for
#: some runs and fails for others, see :class:`Step`)
Outcome = Literal["as claimed", "opposite", "not significant", "mixed", "not tested"]
#: the ``test`` of a step that is a count of runs meeting a stated definition, not a significance test
CHECK = "check"


@dataclass(frozen=True)
class Figure:
    """A value with its confidence interval (null bounds: no interval) and what it is over."""

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    seeds: tuple[int, ...] = ()


#: a table cell: text, a number (a paper's figure, a count), a figure with its CI, or empty
Cell = str | int | float | Figure | None


@dataclass(frozen=True)
class Table:
    """A table of one claim: ``columns`` names, ``rows`` of cells (the first cell names the row)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]


@dataclass(frozen=True)
class Step:
    """One asserted relation, ``above`` > ``below`` on ``metric``, and its paired test.

    ``difference`` is ``above - below`` on the queries (and seeds) both share: positive is the
    claimed direction. ``p_adjusted`` is Holm-adjusted over the tested steps of the claim;
    ``outcome`` is ``as claimed`` or ``opposite`` when ``p_adjusted <= alpha`` (by the sign of
    ``difference``), ``not significant`` otherwise, ``not tested`` when the records do not allow
    the test (``note`` says why).

    A *check* (``test == CHECK``, no p-value) is a count, not a test: whether every run of the
    records meets a stated definition (``note`` gives the counts). It is ``as claimed`` or
    ``opposite`` as the claim would have it, ``mixed`` when the runs disagree, and is never
    Holm-corrected. ``n_queries`` counts ``unit`` (queries by default; seed pairs or runs for
    policy records, which hold one figure per run).
    """

    part: str
    metric: str
    above: str
    below: str
    above_value: float | None
    below_value: float | None
    difference: float | None
    n_queries: int
    seeds: tuple[int, ...]
    test: str | None
    p_value: float | None
    p_adjusted: float | None = None
    outcome: Outcome = "not tested"
    note: str | None = None
    #: the claimed relation in words, when ``above > below`` would read wrongly (a lower-is-better metric)
    claimed: str | None = None
    #: what ``n_queries`` counts
    unit: str = "queries"

    @property
    def relation(self) -> str:
        return self.claimed or f"{self.above} > {self.below}"


@dataclass(frozen=True)
class ClaimResult:
    """One claim: what the paper says, what the records show, and the verdict with its reason."""

    id: str
    source: str
    title: str
    statement: str
    verdict: Verdict
    reason: str
    method: tuple[str, ...]
    tables: tuple[Table, ...] = ()
    steps: tuple[Step, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReproductionReport:
    """Every claim's result over one results folder (test-split records)."""

    results_dir: str
    alpha: float
    n_records: int
    n_policy_records: int
    rules: tuple[str, ...]
    claims: tuple[ClaimResult, ...] = field(default_factory=tuple)
    #: every system the claims can read: (benchmark, system, seeds, training budget, device)
    systems: tuple[tuple[str, str, str, str, str], ...] = field(default_factory=tuple)
    #: each benchmark's validity verdict, one line per board (the leaderboard's
    #: :func:`~gradebench.experiments.leaderboard.verdict`, on its sort metric)
    verdicts: tuple[str, ...] = field(default_factory=tuple)

    @property
    def counts(self) -> dict[str, int]:
        return {v: sum(c.verdict == v for c in self.claims) for v in VERDICTS}

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "counts": self.counts}
