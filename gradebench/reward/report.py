"""``reward_report()``: how fit a trained scorer is as an RL reward, on one split of a benchmark.

The figures follow the core paper's Table 24 (seeds/000, App. C.2) and add the scale-free ones
that matter once rewards are standardised (see :mod:`gradebench.reward.fitness` for the
formulas and the verdict cut points):

* ``score_std``, ``score_range`` (max - min), ``score_p05``/``score_p95``: raw-score spread
  (Table 24's "Score Std." and "Score Range");
* ``separation_ratio``: ``sigma(predicted) / sigma(grade)`` over all candidates, against the
  integer grades (``relevance``) as in the result records; ``separation_ratio_vs_score``:
  the same against the benchmark's graded ``score`` column in [0, 1] (the paper's "true
  scores"); ``true_std``: ``sigma(grade)``;
* ``grade_eta2``: between-grade share of score variance (tier eta^2); ``grade_eta2_centered``:
  the same after removing each list's mean (what a group-normalised reward sees);
* ``advantage_snr``: mean adjacent-grade gap of list-centred scores over the pooled
  within-grade std; ``min_adjacent_snr``: the weakest adjacent pair; ``inverted_adjacent_grades``;
* ``ndcg@5``: mean over queries (gain ``2^grade - 1``, average ties; as the records).

JSON has no infinity: ``advantage_snr``/``min_adjacent_snr`` are null when the within-grade
spread is 0 (every grade's centred scores are constant: the verdict is then ``yes`` if the gaps
are positive) or when the split has fewer than two grades (verdict ``undefined``).

Verdicts: ``verdict`` (standardised rewards: GRPO, RLOO, PPO with ``normalize=True``) from
the advantage SNR, ``paper_verdict`` (raw rewards) from the separation ratio with Table 24's
cut points; both, with their thresholds, are in the result.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gradebench.experiments.record import json_float
from gradebench.reward import fitness as F
from gradebench.scorers.base import ProgressFn


@dataclass
class RewardReport:
    """What ``reward_report`` returns and ``gradebench reward-report --json`` prints."""

    source: str
    scorer: str
    loss: str | None
    trained_on: dict[str, Any]
    benchmark: dict[str, Any]
    zero_shot: bool
    figures: dict[str, Any]
    by_grade: list[dict[str, Any]]
    verdict: str
    paper_verdict: str
    thresholds: dict[str, Any]
    paper_table_24: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def fitness_figures(scores: np.ndarray, relevance: np.ndarray, graded: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
    """Every figure of the report from dense ``[n_queries, list_size]`` arrays (JSON-ready floats)."""
    from gradebench.metrics.functional import ndcg

    spread = F.score_spread(scores, mask)
    snr = F.advantage_snr(scores, relevance, mask)
    y = relevance[mask]
    ndcg5 = ndcg(scores, relevance, k=5, mask=mask)
    return {
        "score_std": json_float(spread.std), "score_range": json_float(spread.range),
        "score_p05": json_float(spread.p05), "score_p95": json_float(spread.p95),
        "true_std": json_float(float(y.std()) if y.size else None),
        "separation_ratio": json_float(F.separation(scores, relevance, mask)),
        "separation_ratio_vs_score": json_float(F.separation(scores, graded, mask)),
        "grade_eta2": json_float(F.grade_eta2(scores, relevance, mask)),
        "grade_eta2_centered": json_float(F.grade_eta2(scores, relevance, mask, center="query")),
        "advantage_snr": json_float(snr.snr), "min_adjacent_snr": json_float(snr.min_snr),
        "within_grade_std": json_float(snr.within_std),
        "mean_adjacent_gap": json_float(float(np.mean(snr.gaps)) if snr.gaps else None),
        "inverted_adjacent_grades": snr.n_inverted,
        "ndcg@5": json_float(float(np.nanmean(ndcg5)) if np.isfinite(ndcg5).any() else None),
        "_snr": snr,  # removed before returning; used for the verdict (keeps inf)
    }


def reward_report(source: str | Path, *, benchmark: str | Path, split: str = "test", device: str | None = None,
                  progress: ProgressFn | None = None) -> RewardReport:
    """Score ``split`` of ``benchmark`` with the scorer of ``source`` and judge it as a reward.

    Args:
        source: a reward folder (``gradebench export-reward``) or a finished run folder.
        benchmark: a benchmark folder (its own, or another one for a transfer report).
        split: the split to score (default ``test``).
        device: where a model-backed scorer runs.

    Raises:
        RewardError / RunError: ``source`` is not a usable reward or run folder.
        BenchmarkError / UnknownNameError: bad benchmark folder or split.
    """
    from gradebench.benchmark.lists import open_benchmark
    from gradebench.errors import InvalidArgumentError
    from gradebench.experiments.suite import separation
    from gradebench.reward.loading import load
    from gradebench.scorers.base import check_scores

    total = 3
    if progress is not None:
        progress(0, total, "loading the scorer")
    reward = load(source, device=device)
    bench = open_benchmark(benchmark)
    lists = bench.lists(split)
    if lists.n_candidates == 0:
        raise InvalidArgumentError(f"split {split!r} of {bench.name} has no candidates", path=bench.path,
                                   hint="report on another split")
    if progress is not None:
        progress(1, total, f"scoring {lists.n_candidates} candidates")
    meta = reward.metadata
    scores = check_scores(reward.scorer.score(lists), lists, who=meta["scorer"]["name"])
    if progress is not None:
        progress(2, total, "figures")
    figures = fitness_figures(scores, lists.relevance, lists.score, lists.mask)
    snr = figures.pop("_snr")
    by_grade = separation(lists, scores, lists.relevance)["by_grade"]
    trained_on = {"name": meta["benchmark"]["name"], "fingerprint": meta["benchmark"]["fingerprint"]}
    zero_shot = trained_on["fingerprint"] != bench.fingerprint
    notes = []
    if zero_shot:
        notes.append(f"transfer: the scorer was trained on {trained_on['name']} ({trained_on['fingerprint'][:12]}), "
                     f"evaluated on {bench.name} ({bench.fingerprint[:12]})")
    if len(snr.grades) < 2:
        notes.append("the split has fewer than two grades: gaps, SNR and the verdict are undefined")
    verdict, paper = F.snr_verdict(snr.snr, snr.n_inverted), F.paper_verdict(figures["separation_ratio"])
    if verdict != paper and "undefined" not in (verdict, paper):
        notes.append(f"the verdicts differ (standardised: {verdict}, raw: {paper}): the separation ratio depends "
                     "on the scorer's units; standardise the reward (GRPO/RLOO do; PPO: load(..., normalize=True))")
    if progress is not None:
        progress(total, total, "done")
    return RewardReport(
        source=str(source), scorer=meta["scorer"]["name"], loss=(meta.get("loss") or {}).get("name"),
        trained_on=trained_on,
        benchmark={"name": bench.name, "fingerprint": bench.fingerprint, "path": str(bench.path), "split": split,
                   "n_queries": lists.n_queries, "n_candidates": lists.n_candidates},
        zero_shot=zero_shot, figures=figures, by_grade=by_grade, verdict=verdict, paper_verdict=paper,
        thresholds=F.thresholds_doc(), paper_table_24=F.PAPER_TABLE_24, notes=notes,
    )
