"""Claims computed from the records' predictions: WorldTree's gold-only vs graded evaluation
(seeds/001), rank -> class on WinoWhy (seeds/002), and ChaosNLI's label distributions."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gradebench.experiments.perquery import align, mean_of_defined
from gradebench.experiments.reproduction import papers as P
from gradebench.experiments.reproduction.claims_losses import main_scorer, sweep_hint
from gradebench.experiments.reproduction.compare import (
    corpus_figure,
    corpus_step,
    missing_step,
    paired_rows,
    seed_rows,
    value_step,
    values_figure,
)
from gradebench.experiments.figures import (  # noqa: F401 - the figures' definitions, re-exported
    INVALID_MAX,
    PROB_FLOOR,
    VALID_MIN,
    chaosnli_values,
    confusion,
    labelled,
    segment_rows,
    segment_rows_from_ranked,
    threshold_rows,
    worldtree_values,
)
from gradebench.experiments.reproduction.data import Evidence, System, split_grade_counts, stored
from gradebench.experiments.reproduction.model import ClaimResult, Figure, Step, Table
from gradebench.experiments.reproduction.rules import conclude


def _trained_or_baseline(ev: Evidence, bench: str) -> list[System]:
    """Every system evaluated on ``bench`` (not a transfer, not a list-size run), by label."""
    return [s for s in ev.find(bench) if s.list_size is None]


def per_query_means(ev: Evidence, system: System, fn: Callable) -> tuple[list[str], np.ndarray]:
    """``fn(ev, record) -> (query ids, [n_queries, k])`` per seed, averaged over the seeds (NaN omitted)
    on the queries every seed has: ``(query ids, [n_queries, k])``."""
    ids, values = align([fn(ev, r) for r in system.records])
    return ids, mean_of_defined(np.stack(values), axis=0)


# -- 5. seeds/001 WorldTree --------------------------------------------------------------------------
WORLDTREE_METRICS = ("MAP gold (>= 1)", "MAP role (>= 2)", "NDCG gold (binary)", "NDCG role (graded)",
                     f"Relevance@{P.WORLDTREE_TOP_K}", f"Completeness@{P.WORLDTREE_TOP_K}", f"F1ex@{P.WORLDTREE_TOP_K}")


def worldtree(ev: Evidence, alpha: float) -> ClaimResult:
    """Gold-only evaluation underestimates explanation rankers against expert ratings (not testable here)."""
    del alpha
    bench = "worldtree"
    paper = Table("Paper: MAP against the WT2 gold explanation and against expert ratings", (
        "model", "MAP WT2 gold", "MAP experts >= 1", "MAP experts >= 2", "NDCG"),
        tuple((m, *v) for m, v in P.WORLDTREE_TABLE4.items()))
    base = dict(
        id="001-worldtree", source=P.WORLDTREE_SOURCE, title="WorldTree: gold-only vs graded evaluation",
        statement="Evaluating explanation rankers against a single gold explanation underestimates them: with "
                  "expert relevance ratings of facts outside it, MAP rises by 4-14 points, unevenly across models.",
        method=(f"Ours, from each worldtree record's predictions: the same rankings scored against the gold "
                f"explanation only (relevant = any grade > 0: MAP, binary NDCG) and against its role grades "
                f"(CENTRAL/GROUNDING 3, LEXGLUE/BACKGROUND 2, other roles 1, hard negatives 0: MAP with "
                f"relevant = grade >= 2, graded NDCG with gain 2^g - 1), NDCG over the whole list; and the "
                f"whole-explanation metrics of each system's top k = {P.WORLDTREE_TOP_K} facts (the paper's "
                f"TFR-BERT setting; a fixed k, since with k = the number of gold facts Relevance = Completeness "
                f"here): Relevance (share of the k that are gold), Completeness (share of gold in the k), F1ex.",
                "Figures: per-query values averaged over seeds, CI over queries (seed 0). Score ties averaged."))
    systems = _trained_or_baseline(ev, bench)
    reason = ("The paper compares the gold explanation with expert relevance ratings of the facts outside it; the "
              "worldtree benchmark here is graded by explanation role (the expert ratings files, "
              "wt-expert-ratings.*.json, are not available here), so every relevant fact is a gold fact and no "
              "evaluation from these records can credit a non-gold fact. The figures below are the role-graded "
              "analogue, not a test of the claim.")
    if not systems:
        return ClaimResult(**base, verdict="not testable", tables=(paper,), reason=(
            f"No test-split records on {bench} (run {sweep_hint(bench)}). " + reason))
    ranking_rows, whole_rows = [], []
    for s in systems:
        _, vals = per_query_means(ev, s, stored("worldtree"))
        figs = [values_figure(vals[:, j], seeds=s.seeds) for j in range(vals.shape[1])]
        ranking_rows.append((s.label, len(s.records), *figs[:4]))
        whole_rows.append((s.label, *figs[4:]))
    order = sorted(range(len(systems)), key=lambda i: (-_value(ranking_rows[i][2]), ranking_rows[i][0]))
    return ClaimResult(**base, verdict="not testable", reason=reason, tables=(
        paper,
        Table(f"Ours: the same rankings, gold-only vs role-graded ({bench}, test)",
              ("system", "seeds", *WORLDTREE_METRICS[:4]), tuple(ranking_rows[i] for i in order)),
        Table(f"Ours: whole explanations, top {P.WORLDTREE_TOP_K} facts", ("system", *WORLDTREE_METRICS[4:]),
              tuple(whole_rows[i] for i in order))))


def _value(f: object) -> float:
    return f.value if isinstance(f, Figure) and f.value is not None else -np.inf


# -- 6. seeds/002 rank -> class on WinoWhy ------------------------------------------------------------
RANKERS = ("ranknet", "margin", "listnet")


#: the stored ``winowhy`` figures: confusion counts at score 0, the cut, the counts at it, the ranked Valid flags
ZERO_CUT, MSE_CUT, RANKED = stored("winowhy", slice(0, 4)), stored("winowhy", slice(5, 9)), slice(9, 12)


def segments(prior: float):
    """The segment rule's confusion rows at ``prior`` from the stored ranked Valid flags."""
    def rows(ev: Evidence, record) -> tuple[list[str], np.ndarray]:
        ids, values = ev.figures(record, "winowhy")
        return ids, segment_rows_from_ranked(prior, values[:, RANKED])
    return rows


def accuracy_statistic(rows: np.ndarray) -> np.ndarray:
    """``[batch, n, S, 4]`` -> ``[batch]``: (TP + TN) / N pooled over queries, mean over seeds."""
    t = rows.sum(axis=1)
    return ((t[..., 0] + t[..., 3]) / t.sum(axis=-1)).mean(axis=-1)


def macro_f1_statistic(rows: np.ndarray) -> np.ndarray:
    """``[batch, n, S, 4]`` -> ``[batch]``: the mean of the Valid and Invalid F1 (pooled counts; an
    F1 with a zero denominator is 0), mean over seeds."""
    t = rows.sum(axis=1)
    tp, fp, fn, tn = t[..., 0], t[..., 1], t[..., 2], t[..., 3]
    with np.errstate(invalid="ignore", divide="ignore"):
        f_pos = np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
        f_neg = np.where(2 * tn + fp + fn > 0, 2 * tn / (2 * tn + fp + fn), 0.0)
    return ((f_pos + f_neg) / 2).mean(axis=-1)


def rank_to_class(ev: Evidence, alpha: float) -> ClaimResult:
    """A ranking-trained scorer cut into classes by the segment rule beats the same scorer trained pointwise."""
    bench = "winowhy"
    lo, hi = P.RANK_CLASS_CONVERTED
    base = dict(
        id="002-rank-to-class", source=P.RANK_CLASS_SOURCE, title="Rank -> class on WinoWhy",
        statement=f"A ranker converted to classes by cutting each ranking into class-sized segments beats "
                  f"classifiers trained on the labels (tweet sentiment: accuracy {lo}-{hi} vs "
                  f"{P.RANK_CLASS_BEST_CLASSIFIER} for the best classifier).",
        method=("Classes: a WinoWhy reason is Valid (plausible) when at least 4 of 5 annotators judged it so "
                "(grade >= 4, the release's 'Valid'), Invalid at most 1 of 5 (grade <= 1, 'Invalid'); Undecided "
                "reasons (grades 2-3) are left out, as in the authors' binary version of the data (dataset.csv).",
                "Ranking side: the scorer trained on winowhy with ranknet, margin and listnet; in each list the top "
                "round(p x n) of its n labelled reasons are Valid, p = the Valid share among labelled candidates of "
                "the TRAIN split (from the benchmark's manifest, fingerprint checked; never the test split).",
                "Pointwise side: the same scorer trained with sigmoid_ce (targets grade / 5), Valid when sigmoid >= "
                "0.5 (score >= 0). mse (regressing grades 0-5) cut at half the top grade is shown, not tested: the "
                "records hold no train-split predictions to tune its cut on.",
                "Accuracy and macro-F1 (the mean of the Valid and Invalid F1) over the pooled labelled candidates, "
                "mean over seeds; CI: query bootstrap (seed 0). Steps: each ranker > sigmoid_ce on both, a paired "
                "randomization test swapping whole queries' confusion counts, Holm-corrected together."))
    fp = ev.fingerprint(bench)
    scorer = main_scorer(ev, bench) if fp else None
    if scorer is None:
        return ClaimResult(**base, verdict="not testable",
                           reason=f"No trained records on {bench}: run {sweep_hint(bench)}.")
    pointwise = ev.pick(bench, scorer, "sigmoid_ce")
    mse = ev.pick(bench, scorer, "mse")
    rankers = {loss: ev.pick(bench, scorer, loss) for loss in RANKERS}
    any_record = next(s.records[0] for s in ev.find(bench))
    counts = split_grade_counts(any_record, "train", ev.build_dir)
    prior = None
    if counts:
        valid = sum(v for g, v in counts.items() if g >= VALID_MIN)
        invalid = sum(v for g, v in counts.items() if g <= INVALID_MAX)
        prior = valid / (valid + invalid) if valid + invalid else None
    rows, steps = [], []
    cut_pt = ZERO_CUT

    def row(s: System, rule: str, fn: Callable) -> tuple:
        _, r = seed_rows(ev, s, s.seeds, fn)
        return (s.label, rule, corpus_figure(r, accuracy_statistic, seeds=s.seeds),
                corpus_figure(r, macro_f1_statistic, seeds=s.seeds))

    if pointwise is not None:
        rows.append(row(pointwise, "sigmoid >= 0.5", cut_pt))
    if mse is not None:  # half the top grade of the evaluated split (stored with the record's figures)
        cut = float(ev.figures(mse.records[0], "winowhy")[1][0, 4])
        rows.append(row(mse, f"score >= {cut:g} (untuned)", MSE_CUT))
    for loss, s in rankers.items():
        why = None
        if s is None:
            why = f"no {scorer} + {loss} records on {bench}"
        elif prior is None:
            why = ("the train split's class prior needs the benchmark's manifest, which is neither at the record's "
                   f"path nor at {bench}/{fp[:12]} under the build folder (build it as the grid file says, or give "
                   "--build-dir)")
        elif pointwise is None:
            why = f"no {scorer} + sigmoid_ce records on {bench}"
        if s is not None and prior is not None:
            rows.append(row(s, f"segments (p = {prior:.3f})", segments(prior)))
        if why is not None:
            for metric in ("accuracy", "macro-F1"):
                steps.append(missing_step(bench, metric, f"{scorer} + {loss} (segments)", "sigmoid_ce (threshold)",
                                          why))
            continue
        ra, rb, seeds = paired_rows(ev, s, pointwise, segments(prior), cut_pt)
        note = None if seeds else "no shared seed"
        for metric, stat in (("accuracy", accuracy_statistic), ("macro-F1", macro_f1_statistic)):
            steps.append(corpus_step(bench, metric, f"{s.label} (segments)", f"{pointwise.label} (threshold)",
                                     ra, rb, stat, seeds, note=note))
    adjusted, verdict, reason = conclude(steps, alpha)
    tables = (Table(f"Valid vs Invalid reasons ({bench}, test)", ("system", "rule", "accuracy", "macro-F1"),
                    tuple(rows)),
              Table(P.RANK_CLASS_SOURCE, ("system", "accuracy"), (
                  ("best classifier", P.RANK_CLASS_BEST_CLASSIFIER), ("converted ranking (lowest)", lo),
                  ("converted ranking (highest)", hi))))
    return ClaimResult(**base, verdict=verdict, reason=reason, tables=tables, steps=adjusted)


# -- 9. ChaosNLI --------------------------------------------------------------------------------------
CHAOSNLI = ("chaosnli-snli", "chaosnli-mnli")
#: the pre-specified system the verdict tests (ListNet's loss is a cross-entropy between softmax
#: distributions, the closest of the losses to matching a label distribution)
CHAOSNLI_SYSTEM = ("hashed-mlp", "listnet")


def _chaos_claim(label: str, metric: str, ref: float) -> str:
    return f"{label} {'above' if metric == 'accuracy' else 'below'} the reference {ref:g}"


def chaosnli(ev: Evidence, alpha: float) -> ClaimResult:
    """A scorer's softmax over the three label statements reaches RoBERTa-large's agreement with the votes."""
    scorer, loss = CHAOSNLI_SYSTEM
    base = dict(
        id="chaosnli", source=P.CHAOSNLI_SOURCE, title="ChaosNLI: label distributions vs 100 human votes",
        statement="Reference level (RoBERTa-large): JSD / KL / accuracy "
                  + "; ".join(f"{b.split('-')[1].upper()} {v[0]:.3f} / {v[1]:.3f} / {v[2]:.3f}"
                              for b, v in P.CHAOSNLI_ROBERTA_LARGE.items())
                  + ". The claim tested: a gradebench ranker's distribution over the three label statements "
                    "reaches that level.",
        method=("Model distribution: softmax of each query's three raw scores at temperature 1 (only test "
                "predictions are in the records, so no temperature is fitted), floored at 1e-15 and renormalised; "
                "human distribution: the vote shares (the records' score column).",
                "As ChaosNLI's evaluation (src/evaluation/tools.py): JSD is scipy's jensenshannon, the Jensen-"
                "Shannon *distance* (square root of the divergence) with natural logs, not a base-2 divergence; KL "
                "is scipy's entropy(human, model), natural logs; accuracy: the top-scored statement is the "
                "majority label (lists whose top vote count is tied are left out; score ties share the credit).",
                "Scores close together give a near-uniform distribution, whose JSD and KL are low wherever the "
                "votes are spread: read them beside the query-blind probe's row (it never reads the pair).",
                f"Every system is shown; the verdict tests one named in advance, {scorer} + {loss} trained on the "
                "benchmark (no selection on test): steps JSD < reference, KL < reference, accuracy > reference, "
                "sign-flip tests of the per-query values against the reference figure, Holm-corrected together."))
    steps: list[Step] = []
    tables = []
    notes: list[str] = []
    for bench in CHAOSNLI:
        ref = P.CHAOSNLI_ROBERTA_LARGE[bench]
        systems = _trained_or_baseline(ev, bench)
        if not systems:
            for j, metric in enumerate(("JSD", "KL", "accuracy")):
                steps.append(missing_step(bench, metric, f"{scorer} + {loss}", "reference",
                                          f"no test-split records on {bench}: run {sweep_hint(bench)}",
                                          claimed=_chaos_claim(f"{scorer} + {loss}", metric, ref[j])))
            continue
        rows = [("RoBERTa-large (reference)", "-", *ref)]
        ours = []
        for s in systems:
            _, vals = per_query_means(ev, s, stored("chaosnli"))
            figs = [values_figure(vals[:, j], seeds=s.seeds) for j in range(3)]
            ours.append((s.label, len(s.records), *figs))
            if (s.scorer, s.loss) == CHAOSNLI_SYSTEM:
                for j, metric in enumerate(("JSD", "KL", "accuracy")):
                    const = np.full(vals.shape[0], ref[j])
                    claimed = _chaos_claim(s.label, metric, ref[j])
                    if metric == "accuracy":
                        steps.append(value_step(bench, metric, s.label, "reference", vals[:, j], const, s.seeds,
                                                claimed=claimed))
                    else:
                        steps.append(value_step(bench, metric, "reference", s.label, const, vals[:, j], s.seeds,
                                                claimed=claimed))
        if not any((s.scorer, s.loss) == CHAOSNLI_SYSTEM for s in systems):
            for j, metric in enumerate(("JSD", "KL", "accuracy")):
                steps.append(missing_step(bench, metric, f"{scorer} + {loss}", "reference",
                                          f"no {scorer} + {loss} records on {bench}: run {sweep_hint(bench)}",
                                          claimed=_chaos_claim(f"{scorer} + {loss}", metric, ref[j])))
        ours.sort(key=lambda r: (np.inf if r[2].value is None else r[2].value, r[0]))
        probe = next((r for r in ours if r[0] == "query-blind + mse"), None)
        if probe is not None and probe[4].value is not None:
            same = [r[0] for r in ours if r is not probe and r[4].value is not None
                    and abs(r[4].value - probe[4].value) < 1e-12]
            if same:
                notes.append(f"{bench}: {len(same)} of {len(ours) - 1} systems have exactly the accuracy of the "
                             f"query-blind probe ({probe[4].value:.3f}), which never reads the premise or the "
                             "hypothesis.")
        tables.append(Table(f"{bench} (test): lower JSD and KL are better", ("system", "seeds", "JSD", "KL",
                                                                             "accuracy"), tuple(rows + ours)))
    adjusted, verdict, reason = conclude(steps, alpha)
    return ClaimResult(**base, verdict=verdict, reason=reason, tables=tuple(tables), steps=adjusted,
                       notes=tuple(notes))
