"""The human ceiling: one half of the annotators predicting the other, through every system's metrics.

Where a benchmark's grades come from several annotators, its *human ceiling* is how well the
votes of one half of them rank the candidates as graded by the other half (split-half
agreement). :func:`evaluate_human` draws the split, scores each candidate by the scoring half's
votes, grades it by the grading half's votes with the benchmark's own rule, and hands both to
:func:`~gradebench.experiments.evaluate.evaluate_lists_record`: the same metric suite, bootstrap
over queries, record, per-query table and verification as every system. The record's scorer is
``human`` (kind ``human``), its ``labels`` are ``other-half`` and its ``human`` field says how the
split was made (:class:`~gradebench.experiments.record.HumanAgreement`).

Sources (:data:`SOURCES`, by the build's builder):

* ``chaosnli`` (ChaosNLI SNLI/MNLI): 100 votes per pair, one per annotator among the three
  labels. The 100 are split 50/50; a label's score is its vote count in one half, its grade the
  benchmark's rule (``relevance: rank``: the dense rank of the count in the list; ``votes``: the
  count) on the other half. Also the Jensen-Shannon divergence (base 2) between the two halves'
  label distributions per query, with its CI (``human.jsd``).
* ``winowhy``: each reason judged plausible or not by 5 annotators (the release's plausibility is
  their mean). The 5 are split 2/3; a reason's score is its yes votes among 2, its grade the yes
  votes among the other 3 (the benchmark's rule: the number of annotators who judged it plausible).

The releases give vote *counts*, not who voted what, so a half is a draw of the counted votes
without replacement (hypergeometric): vote ``j`` of a label (or a reason) gets the key
``uniform("gradebench/human", fingerprint, query_id, candidate_id, j)`` (:func:`gradebench.hashing.uniform`,
sha256 of content: no global RNG, no ``hash()``), and the smallest keys form the scoring half.

What it measures, and what not: the agreement of two independent half-size crowds with each
other. Systems are graded by the whole crowd, whose grades are less noisy than a half's, so the
ceiling is a lower bound on how well people agree with the full grades, and a system can pass it
without "beating humans". WinoWhy's 5 votes of a reason are treated as exchangeable (the release
does not say which annotator gave which), and 2 against 3 votes is a very noisy half.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from gradebench.benchmark.lists import OPTIONAL_COLUMNS, Benchmark, Lists, open_benchmark
from gradebench.datasets.common import dense_rank
from gradebench.errors import InvalidArgumentError
from gradebench.experiments.bias import GROUP_COLUMNS
from gradebench.experiments.record import EvalRecord, json_float
from gradebench.hashing import uniform
from gradebench.paths import RESULTS_DIR
from gradebench.scorers.base import Scorer
from gradebench.stats._checks import check_n_resamples, check_seed

#: the scorer name (and kind) of a human-ceiling record
HUMAN = "human"
#: namespace of the split's content seeds
NAMESPACE = "gradebench/human"
#: builders whose grades are annotator votes, and what the votes are of
SOURCES = {"chaosnli": "query", "winowhy": "candidate"}
#: annotators per item in each source
VOTES = {"chaosnli": 100, "winowhy": 5}


class HumanScorer(Scorer):
    """The scoring half's votes as scores (precomputed by :func:`split_half`; not a registered scorer)."""

    name = HUMAN
    kind = "human"  # type: ignore[assignment]
    summary = "one half of the annotators' votes (the human ceiling; gradebench human)"

    def __init__(self, scores: np.ndarray, config: dict[str, Any]) -> None:
        self._scores = scores
        self._config = dict(config)
        self.seed = 0

    def score(self, lists: Lists) -> np.ndarray:
        return self._scores

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "kind": self.kind, "config": dict(self._config)}


def _halves(n: int, yes: int, n_score: int, *parts: str) -> tuple[int, int]:
    """``(yes votes in the scoring half, yes votes in the grading half)`` of ``n`` votes of which ``yes``
    are yes: the ``n_score`` votes with the smallest content keys score."""
    keys = [uniform(NAMESPACE, *parts, str(j)) for j in range(n)]
    order = sorted(range(n), key=lambda j: (keys[j], j))
    in_score = sum(1 for j in order[:n_score] if j < yes)
    return in_score, yes - in_score


def source_of(bench: Benchmark) -> str:
    """The builder of ``bench`` if its grades are annotator votes, else :class:`InvalidArgumentError`."""
    builder = str((bench.manifest.get("builder") or {}).get("name", ""))
    if builder not in SOURCES:
        raise InvalidArgumentError(
            f"benchmark {bench.name} (builder {builder or '?'}): no split-half human ceiling, its lists do not "
            "keep one vote count per candidate", 
            path=bench.path, hint=f"give a build of one of: {', '.join(sorted(SOURCES))}")
    return builder


def split_half(bench: Benchmark, lists: Lists) -> tuple[np.ndarray, np.ndarray, dict[str, Any], np.ndarray | None]:
    """``(scores, grades, human, jsd)`` of the split-half ceiling on ``lists`` (see the module docstring).

    ``scores`` and ``grades`` are ``[n_queries, list_size]`` (0 at padding), ``human`` the record's
    :class:`~gradebench.experiments.record.HumanAgreement` without ``jsd``, ``jsd`` the per-query
    divergence between the halves (ChaosNLI) or None.

    Raises:
        InvalidArgumentError: the benchmark has no votes, or its grades are not its votes' rule
            (so the other half could not be graded the same way).
    """
    source = source_of(bench)
    n = VOTES[source]
    n_score = n // 2
    fp = bench.fingerprint
    scores = np.zeros(lists.relevance.shape, dtype=np.float64)
    grades = np.zeros(lists.relevance.shape, dtype=np.float64)
    jsd = None
    if source == "chaosnli":
        rule = str((bench.manifest.get("recipe") or {}).get("relevance", "votes"))
        votes = lists.extra["votes"]
        jsd = np.zeros(lists.n_queries, dtype=np.float64)
        for q in range(lists.n_queries):
            cols = np.flatnonzero(lists.mask[q])
            counts = [int(votes[q, c]) for c in cols]
            full = dense_rank(counts) if rule == "rank" else counts
            if sum(counts) != n or list(lists.relevance[q, cols]) != full:
                raise InvalidArgumentError(
                    f"query {lists.query_ids[q]} of {bench.name}: its grades are not the rule {rule!r} of its "
                    f"{sum(counts)} votes", path=bench.path, hint="rebuild the benchmark with this gradebench")
            a, b = _chaos_halves(counts, n, n_score, fp, str(lists.query_ids[q]),
                                 [str(lists.candidate_ids[q, c]) for c in cols])
            scores[q, cols] = np.asarray(a, dtype=np.float64) / n_score
            grades[q, cols] = dense_rank(b) if rule == "rank" else b
            jsd[q] = js_divergence(np.asarray(a, float) / n_score, np.asarray(b, float) / (n - n_score))
        grades_text = ("dense rank of the grading half's vote counts in the list (the recipe's relevance: rank)"
                       if rule == "rank" else "the grading half's vote count (the recipe's relevance: votes)")
    else:
        for q in range(lists.n_queries):
            for c in np.flatnonzero(lists.mask[q]):
                yes = int(lists.relevance[q, c])
                if not 0 <= yes <= n or abs(lists.score[q, c] * n - yes) > 1e-9:
                    raise InvalidArgumentError(
                        f"query {lists.query_ids[q]} of {bench.name}: relevance {yes} is not a count of {n} votes",
                        path=bench.path, hint="rebuild the benchmark with this gradebench")
                a, b = _halves(n, yes, n_score, fp, str(lists.query_ids[q]), str(lists.candidate_ids[q, c]))
                scores[q, c] = a / n_score
                grades[q, c] = b
        grades_text = "the grading half's yes votes (the benchmark's rule: annotators who judged the reason plausible)"
    human = {
        "method": "split-half", "item": SOURCES[source], "votes_per_item": n, "score_half": n_score,
        "grade_half": n - n_score, "grades": grades_text,
        "split_seed": f"each vote's key uniform('{NAMESPACE}', fingerprint, query_id, candidate_id, j); "
                      f"the {n_score} smallest score",
        "measures": (f"{n_score} annotators' votes ranking the candidates as {n - n_score} others grade them "
                     "(half-size crowds: a lower bound on agreement with the full crowd's grades, which "
                     "the systems are scored against)"),
    }
    return scores, grades, human, jsd


def _chaos_halves(counts: list[int], n: int, n_score: int, fp: str, qid: str,
                  cids: list[str]) -> tuple[list[int], list[int]]:
    """Split the ``n`` votes of one ChaosNLI pair (``counts`` per candidate label) into two halves."""
    keyed = []
    for i, (cid, k) in enumerate(zip(cids, counts, strict=True)):
        keyed.extend((uniform(NAMESPACE, fp, qid, cid, str(j)), i) for j in range(k))
    keyed.sort()
    a = [0] * len(counts)
    for _, i in keyed[:n_score]:
        a[i] += 1
    return a, [k - x for k, x in zip(counts, a, strict=True)]


def js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence in bits, in [0, 1]: ``(KL(p||m) + KL(q||m)) / 2`` with ``m = (p+q)/2``.

    >>> round(js_divergence(np.array([1.0, 0.0]), np.array([0.0, 1.0])), 6)
    1.0
    >>> js_divergence(np.array([0.3, 0.7]), np.array([0.3, 0.7]))
    0.0
    """
    m = (p + q) / 2

    def kl(x: np.ndarray) -> float:
        nz = x > 0
        return float(np.sum(x[nz] * np.log2(x[nz] / m[nz])))

    return max(0.0, (kl(p) + kl(q)) / 2)


def evaluate_human(
    benchmark: str | Path | Benchmark,
    *,
    split: str = "test",
    seed: int = 0,
    n_resamples: int = 1000,
    results_dir: str | Path = RESULTS_DIR,
    write: bool = True,
) -> EvalRecord:
    """The human ceiling of ``split`` of ``benchmark`` as a ``human`` record (``gradebench human``).

    Raises:
        InvalidArgumentError: no votes in the benchmark (one line naming it), an empty split, bad seed.
        BenchmarkError / UnknownNameError: bad benchmark folder or split.
    """
    from gradebench.experiments import suite as S
    from gradebench.experiments.evaluate import evaluate_lists_record
    from gradebench.stats import bootstrap_ci

    seed = check_seed(seed)
    n_resamples = check_n_resamples(n_resamples)
    if not isinstance(benchmark, Benchmark):
        from gradebench.experiments.build import check_benchmark_folder

        check_benchmark_folder(benchmark)
    bench = open_benchmark(benchmark)
    source = source_of(bench)  # before reading anything: a benchmark without votes is refused first
    if write:
        from gradebench.paths import check_writable_dir

        check_writable_dir(results_dir, what="--results-dir")
    extra = ("votes",) if source == "chaosnli" else ()
    lists = bench.lists(split, columns=(*OPTIONAL_COLUMNS, *GROUP_COLUMNS, *extra))
    if lists.n_queries == 0:
        raise InvalidArgumentError(f"split {split!r} of {bench.name} has no queries", path=bench.path,
                                   hint="evaluate another split")
    scores, grades, human, jsd = split_half(bench, lists)
    if jsd is not None:
        ci = bootstrap_ci(jsd, n_resamples=n_resamples, seed=seed, confidence=S.CONFIDENCE, method=S.CI_METHOD)
        human["jsd"] = {"level": "query", "value": json_float(float(jsd.mean())), "ci_low": json_float(ci.low),
                        "ci_high": json_float(ci.high), "n": int(jsd.size), "n_excluded": 0}
    config = {k: human[k] for k in ("method", "item", "votes_per_item", "score_half", "grade_half")}
    return evaluate_lists_record(bench, replace(lists, relevance=grades), HumanScorer(scores, config),
                                 seed=seed, n_resamples=n_resamples, results_dir=results_dir, write=write,
                                 human=human)
