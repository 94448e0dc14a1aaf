"""The verdict rules, in code and in the words the report prints (:data:`RULES`).

A claim is broken into *steps*: relations the paper asserts, each ``above > below`` on one
metric (an ordering ``A < B < C`` is the steps ``B > A`` and ``C > B``). Each step is a paired
randomization test over queries (:mod:`.compare`); the p-values of a claim's tested steps are
Holm-corrected together (:func:`adjust`), and then (:func:`decide`):

* **contradicted**: some step is significant in the opposite direction;
* **reproduced**: every tested step is significant in the claimed direction;
* **inconclusive**: otherwise (some step shows no significant difference either way);
* **not testable**: no step could be tested (records missing), or the claim needs something
  the records cannot give; the claim's reason says which records or fields are missing and
  which command would produce them.

A *check* (:data:`~.model.CHECK`) is a statement about every run, decided by counting the runs
that meet a stated definition, not by a test: it enters no Holm correction, an ``opposite``
check contradicts the claim like a significant step the other way, and a ``mixed`` one (the
runs disagree) leaves it inconclusive.
"""

from __future__ import annotations

from dataclasses import replace

from gradebench.experiments.conventions import TEST_RESAMPLES
from gradebench.experiments.reproduction.model import CHECK, Step, Verdict
from gradebench.stats import holm

#: the seed of every randomization test in the report (a fixed seed: the report is deterministic)
TEST_SEED = 0

RULES: tuple[str, ...] = (
    "Test split only. A system is a scorer, its loss and its training options (without the seed); "
    "its figure is the mean over its seeds, with a 95% percentile bootstrap CI over queries of the "
    "seed-averaged per-query values (the records' own bootstrap seed and resample count; the "
    "leaderboard's convention). Corpus metrics (the separation ratio) take the envelope of the seeds' "
    "CIs; figures computed here from predictions (accuracy, macro-F1, JSD) bootstrap the queries "
    "with seed 0.",
    "A claim is split into steps, each a relation the paper asserts (an ordering A < B < C is the "
    "steps B > A and C > B). A step is a two-sided paired randomization test over the queries both "
    f"sides share, averaged over the seeds both share ({TEST_RESAMPLES:,} random sign flips, or "
    "every one of the 2^n when that is fewer, seed 0): sign flips of per-query differences for "
    "per-query metrics, swaps of whole queries' rows for corpus statistics.",
    "The p-values of a claim's tested steps are Holm-corrected together (family-wise alpha below).",
    "contradicted: some step is significant in the opposite direction. reproduced: every tested "
    "step is significant in the claimed direction. inconclusive: otherwise (some step shows no "
    "significant difference either way).",
    "not testable: no step could be tested, or the claim needs data the records do not hold; the "
    "reason names the missing records and the command that would write them. Steps without records "
    "are listed as not tested and do not enter the verdict.",
    "Policy records hold one figure per run: their steps pair the runs by seed and flip the signs of "
    "the per-seed differences (exactly, all 2^n); with n pairs the smallest two-sided p is 2/2^n "
    "(0.25 for 3 seeds), so a few seeds show a direction, never significance. A check (test "
    "'check') is not a test but a count of the runs that meet a stated definition: as claimed or "
    "opposite when every run agrees, mixed otherwise; it is not Holm-corrected, an opposite check "
    "contradicts the claim and a mixed one leaves it inconclusive.",
)


def adjust(steps: list[Step], alpha: float) -> list[Step]:
    """The steps with Holm-adjusted p-values and outcomes (untested steps unchanged)."""
    tested = [i for i, s in enumerate(steps) if s.p_value is not None]
    out = list(steps)
    if not tested:
        return out
    result = holm([steps[i].p_value for i in tested], alpha=alpha)
    for i, adj, reject in zip(tested, result.adjusted, result.reject, strict=True):
        s = steps[i]
        outcome = "not significant"
        if reject and s.difference is not None and s.difference != 0:
            outcome = "as claimed" if s.difference > 0 else "opposite"
        out[i] = replace(s, p_adjusted=adj, outcome=outcome)
    return out


def decide(steps: list[Step]) -> Verdict:
    """The verdict of a claim from its adjusted steps (see the module docstring)."""
    outcomes = [s.outcome for s in steps if s.outcome != "not tested"]
    if not outcomes:
        return "not testable"
    if "opposite" in outcomes:
        return "contradicted"
    if all(o == "as claimed" for o in outcomes):
        return "reproduced"
    return "inconclusive"


def tally(steps: list[Step]) -> str:
    """``"3 of 4 tested steps as claimed, 1 not significant; 2 not tested"``."""
    tested = [s for s in steps if s.outcome != "not tested"]
    parts = []
    for outcome in ("as claimed", "opposite", "not significant", "mixed"):
        k = sum(s.outcome == outcome for s in tested)
        if k:
            parts.append(f"{k} {outcome}")
    text = f"{len(tested)} tested step{'s' if len(tested) != 1 else ''}" + (": " + ", ".join(parts) if parts else "")
    untested = len(steps) - len(tested)
    return text + (f"; {untested} not tested" if untested else "")


def conclude(steps: list[Step], alpha: float) -> tuple[tuple[Step, ...], Verdict, str]:
    """Adjust the steps, decide the verdict, and say why: per part, the tally and the steps that
    went against the claim (or, for an inconclusive verdict, those that were not significant)."""
    adjusted = adjust(steps, alpha)
    verdict = decide(adjusted)
    parts: dict[str, list[Step]] = {}
    for s in adjusted:
        parts.setdefault(s.part, []).append(s)
    lines = []
    for part, group in parts.items():
        line = f"{part}: {tally(group)}"
        shown = [s for s in group if s.outcome == "opposite"] or (
            [s for s in group if s.outcome in ("not significant", "mixed")] if verdict == "inconclusive" else [])
        if shown:
            line += " (" + "; ".join(describe(s) for s in shown) + ")"
        lines.append(line)
    return tuple(adjusted), verdict, ". ".join(lines) + "." if lines else ""


def describe(s: Step) -> str:
    """``"ndcg@5: listnet > mse: +0.012, p_adj 0.003, opposite"`` (the claimed relation, the measured
    difference above - below, the Holm-adjusted p-value; a check: its outcome and counts)."""
    if s.test == CHECK:
        return f"{s.metric}: {s.relation}: {s.outcome} ({s.note})"
    if s.p_value is None:
        return f"{s.metric}: {s.relation}: not tested ({s.note})"
    return (f"{s.metric}: {s.relation}: {s.difference:+.3g}, p_adj {fmt_p(s.p_adjusted)}"
            + ("" if s.outcome in ("as claimed", "not tested") else f", {s.outcome}"))


def fmt_p(p: float | None) -> str:
    if p is None:
        return "n/a"
    return f"{p:.2g}" if p >= 0.001 else "<0.001"
