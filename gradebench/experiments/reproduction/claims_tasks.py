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
from gradebench.experiments.reproduction.data import Dense, Evidence, System, split_grade_counts
from gradebench.experiments.reproduction.model import ClaimResult, Figure, Step, Table
from gradebench.experiments.reproduction.rules import conclude


def _trained_or_baseline(ev: Evidence, bench: str) -> list[System]:
    """Every system evaluated on ``bench`` (not a transfer, not a list-size run), by label."""
    return [s for s in ev.find(bench) if s.list_size is None]


def per_query_means(ev: Evidence, system: System, fn: Callable[[Dense], np.ndarray]
                    ) -> tuple[list[str], np.ndarray]:
    """``fn(dense) -> [n_queries, k]`` per seed, averaged over the seeds (NaN omitted) on the queries
    every seed has: ``(query ids, [n_queries, k])``."""
    ids, values = align([(list(d.query_ids), fn(d)) for d in map(ev.dense, system.records)])
    return ids, mean_of_defined(np.stack(values), axis=0)


# -- 5. seeds/001 WorldTree --------------------------------------------------------------------------
WORLDTREE_METRICS = ("MAP gold (>= 1)", "MAP role (>= 2)", "NDCG gold (binary)", "NDCG role (graded)",
                     f"Relevance@{P.WORLDTREE_TOP_K}", f"Completeness@{P.WORLDTREE_TOP_K}", f"F1ex@{P.WORLDTREE_TOP_K}")


def worldtree_values(d: Dense) -> np.ndarray:
    """``[n_queries, 7]``: the :data:`WORLDTREE_METRICS` of one record's rankings (ties averaged)."""
    from gradebench.metrics import MAP, NDCG, Completeness, F1ex, Relevance, evaluate

    k = P.WORLDTREE_TOP_K
    gold = d.mask & (d.relevance > 0)
    graded = evaluate(d.prediction, d.relevance, [MAP(threshold=1.0), MAP(threshold=2.0), NDCG(),
                                                  Relevance(k=k), Completeness(k=k), F1ex(k=k)],
                      mask=d.mask, gold=gold)
    binary = evaluate(d.prediction, gold.astype(np.float64), [NDCG()], mask=d.mask)
    pq = graded.per_query
    return np.column_stack([pq["map"], pq["map[threshold=2]"], binary.per_query["ndcg"], pq["ndcg"],
                            pq[f"relevance@{k}"], pq[f"completeness@{k}"], pq[f"f1ex@{k}"]])


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
        _, vals = per_query_means(ev, s, worldtree_values)
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
#: the release's labels on the 5-annotator plausibility: Valid >= 0.8 (grade >= 4), Invalid <= 0.2
#: (grade <= 1), Undecided 0.4-0.6 (grades 2-3, left out as in WinoWhy's binary task)
VALID_MIN, INVALID_MAX = 4.0, 1.0
RANKERS = ("ranknet", "margin", "listnet")


def labelled(d: Dense) -> tuple[np.ndarray, np.ndarray]:
    """``(labelled, positive)``: candidates with a Valid or Invalid label, and the Valid ones."""
    lab = d.mask & ((d.relevance >= VALID_MIN) | (d.relevance <= INVALID_MAX))
    return lab, lab & (d.relevance >= VALID_MIN)


def confusion(pred: np.ndarray, lab: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """``[n_queries, 4]``: true positives, false positives, false negatives, true negatives."""
    return np.column_stack([(pred & pos).sum(axis=1), (pred & lab & ~pos).sum(axis=1),
                            (~pred & pos).sum(axis=1), (~pred & lab & ~pos).sum(axis=1)]).astype(np.float64)


def segment_rows(prior: float) -> Callable[[Dense], np.ndarray]:
    """The segment rule: in each list, the top ``round(prior * n)`` of its ``n`` labelled candidates by
    score are Valid (ties: the benchmark's candidate order, which is content-shuffled)."""
    def rows(d: Dense) -> np.ndarray:
        lab, pos = labelled(d)
        m = np.floor(prior * lab.sum(axis=1) + 0.5)
        order = np.argsort(np.where(lab, -d.prediction, np.inf), axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(order.shape[1])[None, :].repeat(order.shape[0], 0), axis=1)
        return confusion(lab & (rank < m[:, None]), lab, pos)
    return rows


def threshold_rows(cut: float) -> Callable[[Dense], np.ndarray]:
    """Valid where the score is at least ``cut``."""
    def rows(d: Dense) -> np.ndarray:
        lab, pos = labelled(d)
        return confusion(lab & (d.prediction >= cut), lab, pos)
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
    cut_pt = threshold_rows(0.0)

    def row(s: System, rule: str, fn: Callable[[Dense], np.ndarray]) -> tuple:
        _, r = seed_rows(ev, s, s.seeds, fn)
        return (s.label, rule, corpus_figure(r, accuracy_statistic, seeds=s.seeds),
                corpus_figure(r, macro_f1_statistic, seeds=s.seeds))

    if pointwise is not None:
        rows.append(row(pointwise, "sigmoid >= 0.5", cut_pt))
    if mse is not None:  # half the top grade: of the train split where the manifest is there, else of the records
        top = max(counts) if counts else max(float(np.max(ev.dense(r).relevance)) for r in mse.records)
        rows.append(row(mse, f"score >= {top / 2:g} (untuned)", threshold_rows(top / 2)))
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
            rows.append(row(s, f"segments (p = {prior:.3f})", segment_rows(prior)))
        if why is not None:
            for metric in ("accuracy", "macro-F1"):
                steps.append(missing_step(bench, metric, f"{scorer} + {loss} (segments)", "sigmoid_ce (threshold)",
                                          why))
            continue
        ra, rb, seeds = paired_rows(ev, s, pointwise, segment_rows(prior), cut_pt)
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
PROB_FLOOR = 1e-15


def chaosnli_values(d: Dense) -> np.ndarray:
    """``[n_queries, 3]``: JS distance, KL(human || model) (natural logs) and majority accuracy of
    softmax(scores) against the vote shares, as ChaosNLI's evaluation computes them."""
    h = np.where(d.mask, d.score, 0.0)
    h = h / np.maximum(h.sum(axis=1, keepdims=True), 1e-300)
    z = np.where(d.mask, d.prediction, -np.inf)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p = np.where(d.mask, p / p.sum(axis=1, keepdims=True), 0.0)
    p = np.where(d.mask, np.maximum(p, PROB_FLOOR), 0.0)
    p = p / p.sum(axis=1, keepdims=True)

    def kl(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(a > 0, a * np.log(a / np.where(b > 0, b, 1.0)), 0.0)
        return terms.sum(axis=1)

    m = (h + p) / 2
    jsd = np.sqrt(np.maximum(0.5 * kl(h, m) + 0.5 * kl(p, m), 0.0))
    hmax = np.where(d.mask, h, -np.inf)
    majority = hmax == hmax.max(axis=1, keepdims=True)
    unique = majority.sum(axis=1) == 1
    top = (z == z.max(axis=1, keepdims=True)) & d.mask
    acc = np.where(unique, (top & majority).sum(axis=1) / top.sum(axis=1), np.nan)
    return np.column_stack([jsd, kl(h, p), acc])


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
            _, vals = per_query_means(ev, s, chaosnli_values)
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
