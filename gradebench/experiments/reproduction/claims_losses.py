"""Claims about ranking losses: seeds/000 Table 3, loss families by grade kind, L2R2's family
order on alphaNLI, and LiPO's list-size curve. Each is a function ``(evidence, alpha) -> ClaimResult``."""

from __future__ import annotations

import numpy as np

from gradebench.experiments.perquery import mean_of_defined
from gradebench.experiments.reproduction import papers as P
from gradebench.experiments.reproduction.compare import (
    aligned,
    corpus_step,
    figure,
    missing_step,
    paired_rows,
    step,
    value_step,
    values_figure,
)
from gradebench.experiments.figures import separation_rows  # noqa: F401 - the figures' definition, re-exported
from gradebench.experiments.reproduction.data import FAMILY_OF, LOSS_FAMILIES, Evidence, System, stored
from gradebench.experiments.reproduction.model import ClaimResult, Step, Table
from gradebench.experiments.reproduction.rules import conclude

NDCG5 = "ndcg@5"
#: the benchmarks of the issue-20 grids and the grade kind of their recipes (records tell, when present)
GRID_BENCHMARKS: dict[str, str] = {
    "esnli": "paper tiers", "esnli-fixed": "paper tiers", "dnli": "paper tiers",
    "winowhy": "natural", "chaosnli-snli": "natural", "chaosnli-mnli": "natural", "dnli-natural": "natural",
    "worldtree": "natural", "anli": "natural",
}
def sweep_hint(benchmark: str) -> str:
    """The grid whose sweep writes ``benchmark``'s records (its file says how to build the benchmark)."""
    grid = f"{benchmark}-hashed" if benchmark.startswith("esnli") else "every-source-hashed"
    return f"gradebench sweep recipes/experiments/{grid}.yaml --results-dir leaderboard/results"


# -- separation ratio as a corpus statistic of per-query sums ------------------------------------
#: ``[n_queries, 5]`` rows (candidates, sums and sums of squares of predictions and grades): computed
#: from the predictions when a record is written, stored as the record's ``separation`` figures
SEPARATION = stored("separation")


def separation_statistic(rows: np.ndarray) -> np.ndarray:
    """``[batch, n, S, 5]`` -> ``[batch]``: the mean over seeds of sigma(predictions) / sigma(grades)
    pooled over the queries (the record's ``separation_ratio``; population standard deviations)."""
    t = rows.sum(axis=1)
    n = t[..., 0]
    var_x = np.maximum(t[..., 2] / n - (t[..., 1] / n) ** 2, 0.0)
    var_y = t[..., 4] / n - (t[..., 3] / n) ** 2
    return np.sqrt(var_x / var_y).mean(axis=-1)


# -- 1. seeds/000 Table 3 ---------------------------------------------------------------------------
def table3(ev: Evidence, alpha: float) -> ClaimResult:
    """MSE < Bradley-Terry < RankNet < ApproxNDCG < ListNet on NDCG@5 and the separation ratio, on esnli."""
    bench = "esnli"
    base = dict(
        id="000-table3", source=P.TABLE3_SOURCE, title="Loss comparison on e-SNLI (separation ratio and NDCG@5)",
        statement="Separation ratio and NDCG@5 both rise in the order MSE < Binary (Bradley-Terry) < RankNet < "
                  "ApproxNDCG < ListNet (RoBERTa-base on graded e-SNLI).",
        method=("Ours: the esnli benchmark (the paper's five tiers), hashed-mlp and the cross-encoder (where records "
                "exist), each trained with the loss on esnli itself on full lists (a cap on training queries is "
                "shown in the system's name).",
                "Figures: mean over seeds; CIs over queries of the seed-averaged per-query values; the separation "
                "ratio's CI is the envelope of the seeds' CIs.",
                "Steps: each adjacent pair of the losses present, in the paper's order, on NDCG@5 (sign flips of "
                "per-query differences) and on the separation ratio (swaps of whole queries' predictions, the "
                "ratio recomputed from pooled sums); all steps of both scorers Holm-corrected together.",
                "The separation ratio is sigma(predictions) / sigma(grades 0-4) on raw scores: not scale-free, so "
                "an unbounded ranking loss inflates it (see the README)."))
    if ev.fingerprint(bench) is None:
        return ClaimResult(**base, verdict="not testable",
                           reason=f"No test-split records on {bench}: build it and run {sweep_hint(bench)}, and "
                                  "recipes/experiments/esnli-cross-encoder.yaml for the cross-encoder.")
    steps: list[Step] = []
    tables = []
    for scorer in ("hashed-mlp", "cross-encoder"):
        systems = {loss: ev.pick(bench, scorer, loss) for loss in P.TABLE3_ORDER}
        rows = []
        for loss in P.TABLE3_ORDER:
            s, paper = systems[loss], P.TABLE3[loss]
            ours = [figure(ev, s, m) if s else None for m in (NDCG5, "spearman", "separation_ratio")]
            rows.append((loss, paper[0], ours[0], paper[1], ours[1], paper[2], ours[2],
                         "-" if s is None else len(s.records)))
        tables.append(Table(f"{scorer} on {bench}: paper (RoBERTa-base) vs ours", (
            "loss", "NDCG@5 paper", "NDCG@5 ours", "Spearman paper", "Spearman ours", "sep. ratio paper",
            "sep. ratio ours", "seeds"), tuple(rows)))
        present = [loss for loss in P.TABLE3_ORDER if systems[loss] is not None]
        missing = [loss for loss in P.TABLE3_ORDER if systems[loss] is None]
        if len(present) < 2:
            for metric in (NDCG5, "separation_ratio"):
                steps.append(missing_step(scorer, metric, P.TABLE3_ORDER[-1], P.TABLE3_ORDER[0],
                                          f"{scorer} records for fewer than two of the losses on {bench}"))
            continue
        for lo, hi in zip(present, present[1:]):
            a, b = systems[hi], systems[lo]
            steps.append(step(ev, scorer, NDCG5, a, b))
            rows_a, rows_b, seeds = paired_rows(ev, a, b, SEPARATION)
            steps.append(corpus_step(scorer, "separation_ratio", a.label, b.label, rows_a, rows_b,
                                     separation_statistic, seeds))
        for loss in missing:
            steps.append(missing_step(scorer, f"{NDCG5}, separation_ratio", f"{scorer} + {loss}", "its neighbours",
                                      f"no {scorer} + {loss} records on {bench}: the order is tested over the "
                                      "losses present"))
    notes = []
    probe = ev.pick(bench, "query-blind", "mse")
    if probe is not None:
        f = figure(ev, probe, NDCG5)
        notes.append(f"The query-blind probe (never reads the query) reaches NDCG@5 {_fmt(f.value)} on {bench}: "
                     "the benchmark is solved by shortcuts, so differences near 1.0 measure saturation.")
    adjusted, verdict, reason = conclude(steps, alpha)
    return ClaimResult(**base, verdict=verdict, reason=reason, tables=tuple(tables), steps=adjusted,
                       notes=tuple(notes))


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


# -- families ---------------------------------------------------------------------------------------
def main_scorer(ev: Evidence, benchmark: str) -> str | None:
    """The scorer trained on ``benchmark`` with the most registered losses (hashed-mlp on ties)."""
    counts: dict[str, int] = {}
    for s in ev.find(benchmark):
        if s.loss in FAMILY_OF and s.has_default_options() and s.trained_on == benchmark:
            counts[s.scorer] = counts.get(s.scorer, 0) + 1
    if not counts:
        return None
    return min(counts, key=lambda sc: (-counts[sc], sc != "hashed-mlp", sc))


def family_systems(ev: Evidence, benchmark: str, scorer: str) -> dict[str, list[System]]:
    out: dict[str, list[System]] = {}
    for fam, losses in LOSS_FAMILIES.items():
        found = [ev.pick(benchmark, scorer, loss) for loss in losses]
        out[fam] = [s for s in found if s is not None]
    return out


def family_means(ev: Evidence, fams: dict[str, list[System]], metric: str
                 ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], tuple[int, ...]]:
    """Per family, the per-query mean over its losses of the seed-averaged values (all families on the
    same queries and seeds), and each system's own aligned values (by label)."""
    systems = [s for group in fams.values() for s in group]
    _, values, seeds = aligned(ev, systems, metric)
    by_label = {s.label: values[i] for i, s in enumerate(systems)}
    means = {fam: mean_of_defined(np.vstack([by_label[s.label] for s in group]), axis=0) for fam, group in fams.items() if group}
    return means, by_label, seeds


def families(ev: Evidence, alpha: float) -> ClaimResult:
    """Listwise beats pairwise on the paper's tiers, pairwise beats listwise on natural grades."""
    base = dict(
        id="000-families", source="seeds/000, abstract (second finding)",
        title="Listwise losses on tiers, pairwise losses on natural grades",
        statement="Listwise objectives excel with well-separated quality tiers, while pairwise methods are more "
                  "robust to noisy natural annotations.",
        method=("Families as the loss registry's kinds: pairwise = " + ", ".join(LOSS_FAMILIES["pairwise"])
                + "; listwise = " + ", ".join(LOSS_FAMILIES["listwise"]) + " (lambdaloss is pairwise there).",
                "Per benchmark, the scorer trained there with the most losses (hashed-mlp); a family's figure is "
                "the per-query mean over its losses of the seed-averaged NDCG@5, on the queries and seeds all share. "
                "Only test-split records exist, so no loss is picked as the family's best (best-on-test would be "
                "optimistic): the family mean is compared; the best loss on test is shown for information.",
                "Tiered = the paper's five tiers (gold > good > fair > poor > nonsense) in the records; natural = "
                "no tier column. Benchmarks with other tiers (esnli-human, esnli-contrast*) are neither.",
                "Steps: on each tiered benchmark listwise > pairwise, on each natural one pairwise > listwise. "
                "The claim contrasts the two kinds, so it needs a tested step on each."))
    steps: list[Step] = []
    kind_of_part: dict[str, str] = {}
    rows = []
    other = []
    names = sorted(set(ev.benchmarks()) | set(GRID_BENCHMARKS))
    for bench in names:
        kind = ev.grade_kind(bench) or GRID_BENCHMARKS.get(bench)
        if kind == "other tiers":
            other.append(bench)
            continue
        above, below = ("listwise", "pairwise") if kind == "paper tiers" else ("pairwise", "listwise")
        part = f"{bench} ({'tiers' if kind == 'paper tiers' else 'natural'})"
        kind_of_part[part] = "tiered" if kind == "paper tiers" else "natural-grade"
        scorer = main_scorer(ev, bench) if ev.fingerprint(bench) else None
        fams = family_systems(ev, bench, scorer) if scorer else {}
        if not fams or not fams.get("listwise") or not fams.get("pairwise"):
            why = (f"no test-split records on {bench}" if ev.fingerprint(bench) is None else
                   f"no trained records of both families on {bench}")
            steps.append(missing_step(part, NDCG5, above, below, f"{why}: run {sweep_hint(bench)}"))
            continue
        means, by_label, seeds = family_means(ev, fams, NDCG5)
        steps.append(value_step(part, NDCG5, f"{above} mean", f"{below} mean", means[above], means[below], seeds))
        best = {fam: max(((float(np.nanmean(by_label[s.label])), s.loss) for s in fams[fam]), default=None)
                for fam in ("listwise", "pairwise")}
        rows.append((bench, "tiers" if kind == "paper tiers" else "natural", scorer,
                     values_figure(means["listwise"], seeds=seeds), values_figure(means["pairwise"], seeds=seeds),
                     *(f"{best[fam][1]} {best[fam][0]:.3f}" for fam in ("listwise", "pairwise"))))
    tables = (Table("NDCG@5 by loss family (test split)", (
        "benchmark", "grades", "scorer", "listwise mean", "pairwise mean", "best listwise (test)",
        "best pairwise (test)"), tuple(rows)),) if rows else ()
    notes = (f"Not part of the claim (other tiers): {', '.join(other)}.",) if other else ()
    kinds = {kind_of_part[s.part] for s in steps if s.p_value is not None}
    adjusted, verdict, reason = conclude(steps, alpha)
    if verdict != "not testable" and kinds != {"tiered", "natural-grade"}:
        lacking = "natural-grade" if "natural-grade" not in kinds else "tiered"
        verdict, reason = "not testable", (f"The claim contrasts tiered with natural-grade benchmarks, and no "
                                           f"{lacking} benchmark has records of both families. " + reason)
    return ClaimResult(**base, verdict=verdict, reason=reason, tables=tables, steps=adjusted, notes=notes)


# -- 7. seeds/003 L2R2 on alphaNLI ------------------------------------------------------------------
def l2r2(ev: Evidence, alpha: float) -> ClaimResult:
    """Listwise >= pairwise >= pointwise on alphaNLI, by pairwise accuracy."""
    bench, metric = "anli", "pairwise_agreement"
    base = dict(
        id="003-l2r2", source=P.L2R2_SOURCE, title="alphaNLI as ranking: listwise > pairwise > pointwise",
        statement="On alphaNLI, pairwise ranking losses beat classification and (most) listwise losses beat "
                  "pairwise ones (RoBERTa: KLD 88.45, Logistic 87.86, classification 85.64 dev accuracy).",
        method=("Ours: the anli benchmark (ChaosNLI alphaNLI votes, two hypotheses per list), the scorer trained "
                "there with the most losses; pairwise accuracy = the record metric pairwise_agreement (a tied pair "
                "counts 1/2; lists whose two hypotheses tie are excluded).",
                "Families as the loss registry's kinds (pointwise: mse, sigmoid_ce); a family's figure is the "
                "per-query mean over its losses of the seed-averaged values, on shared queries and seeds. The "
                "paper's family figures are the means of its losses in the family; its 'classification' is a "
                "double-choice classifier, which no gradebench loss is.",
                "Steps: pairwise > pointwise and listwise > pairwise, Holm-corrected together."))
    scorer = main_scorer(ev, bench) if ev.fingerprint(bench) else None
    fams = family_systems(ev, bench, scorer) if scorer else {}
    if not fams or sum(bool(v) for v in fams.values()) < 2:
        return ClaimResult(**base, verdict="not testable",
                           reason=f"No trained records of two loss families on {bench}: run {sweep_hint(bench)}.")
    means, by_label, seeds = family_means(ev, fams, metric)
    loss_rows = []
    for fam in ("pointwise", "pairwise", "listwise"):
        for s in fams[fam]:
            paper = P.L2R2_ROBERTA.get(s.loss or "")
            loss_rows.append((s.loss, fam, None if paper is None else paper / 100, figure(ev, s, metric)))
    paper_fam = {fam: [P.L2R2_ROBERTA[x] / 100 for x in losses if x in P.L2R2_ROBERTA]
                 for fam, losses in LOSS_FAMILIES.items()}
    paper_fam["pointwise"] = [P.L2R2_ROBERTA["classification"] / 100]
    fam_rows = tuple((fam, round(float(np.mean(paper_fam[fam])), 4) if paper_fam[fam] else None,
                      values_figure(means[fam], seeds=seeds) if fam in means else "no records",
                      ", ".join(s.loss or "" for s in fams[fam]) or "-")
                     for fam in ("pointwise", "pairwise", "listwise"))
    steps = []
    for lo, hi in (("pointwise", "pairwise"), ("pairwise", "listwise")):
        if lo in means and hi in means:
            steps.append(value_step(bench, metric, f"{hi} mean", f"{lo} mean", means[hi], means[lo], seeds))
        else:
            steps.append(missing_step(bench, metric, hi, lo, f"no {scorer} records of the "
                                      f"{lo if lo not in means else hi} family on {bench}"))
    adjusted, verdict, reason = conclude(steps, alpha)
    tables = (Table(f"Pairwise accuracy by family ({scorer} on {bench})",
                    ("family", "paper (RoBERTa dev)", "ours", "losses"), fam_rows),
              Table("Pairwise accuracy by loss", ("loss", "family", "paper (RoBERTa dev)", "ours"), tuple(loss_rows)))
    return ClaimResult(**base, verdict=verdict, reason=reason, tables=tables, steps=adjusted)


# -- 8. seeds/004 LiPO list size --------------------------------------------------------------------
def lipo_list_size(ev: Evidence, alpha: float) -> ClaimResult:
    """LiPO-lambda's (lambdaloss) advantage over DPO-style pairwise logistic (ranknet) grows with K."""
    base = dict(
        id="004-list-size", source=P.LIPO_SOURCE, title="List size: LiPO-lambda vs pairwise logistic (DPO)",
        statement="LiPO-lambda benefits more, and monotonically, from longer lists than pairwise methods: its "
                  "advantage over DPO (pairwise logistic) grows with the list size K.",
        method=("Ours: records whose training options set list_size K (each training list subsampled to K "
                "candidates; evaluation on full lists), lambdaloss (LiPO-lambda) and ranknet (pairwise logistic, "
                "DPO at K = 2), one benchmark and scorer, NDCG@5.",
                "The advantage at K is the per-query difference lambdaloss - ranknet of the seed-averaged values; "
                "steps: advantage(K') > advantage(K) for each pair of consecutive K, Holm-corrected together. "
                "Needs records for at least 3 values of K.",
                POLICY_METHOD))
    policy_tables, policy_notes = lipo_policy_part(ev)
    groups: dict[tuple[str, str], dict[str, dict[int, System]]] = {}
    for s in ev.systems:
        if s.list_size is not None and s.loss in ("lambdaloss", "ranknet") and not s.zero_shot:
            if s.fingerprint != ev.fingerprint(s.benchmark):
                continue
            by_loss = groups.setdefault((s.benchmark, s.scorer), {"lambdaloss": {}, "ranknet": {}})
            cur = by_loss[s.loss].get(s.list_size)
            if cur is None or (-len(s.records), s.id) < (-len(cur.records), cur.id):
                by_loss[s.loss][s.list_size] = s
    best = None
    for key in sorted(groups):
        ks = sorted(set(groups[key]["lambdaloss"]) & set(groups[key]["ranknet"]))
        if best is None or len(ks) > len(best[1]):
            best = (key, ks)
    if best is None or len(best[1]) < 3:
        have = "none" if best is None else f"K = {', '.join(map(str, best[1])) or 'none'} on {best[0][0]}"
        return ClaimResult(**base, verdict="not testable",
                           reason=f"Records of lambdaloss and ranknet at 3 or more list sizes are needed ({have}): "
                                  "train with `gradebench train ... --loss lambdaloss --list-size K` and "
                                  "`--loss ranknet --list-size K` for K = 2, 3, 4, ... and evaluate each run.",
                           tables=policy_tables, notes=policy_notes)
    (bench, scorer), ks = best
    pairs = [(groups[(bench, scorer)]["lambdaloss"][k], groups[(bench, scorer)]["ranknet"][k]) for k in ks]
    systems = [s for pair in pairs for s in pair]
    _, values, seeds = aligned(ev, systems, NDCG5)
    adv = {k: values[2 * i] - values[2 * i + 1] for i, k in enumerate(ks)}
    rows = tuple((f"K={k}", figure(ev, lam, NDCG5), figure(ev, rn, NDCG5), values_figure(adv[k], seeds=seeds))
                 for k, (lam, rn) in zip(ks, pairs))
    steps = [value_step(f"{scorer} on {bench}", NDCG5, f"advantage at K={k2}", f"advantage at K={k1}",
                        adv[k2], adv[k1], seeds) for k1, k2 in zip(ks, ks[1:])]
    adjusted, verdict, reason = conclude(steps, alpha)
    notes = []
    capped = [k for k, (lam, rn) in zip(ks, pairs)
              if min(_v(figure(ev, lam, NDCG5)), _v(figure(ev, rn, NDCG5))) >= 0.995]
    if capped:
        notes.append(f"Both losses reach NDCG@5 >= 0.995 at K = {', '.join(map(str, capped))}: the benchmark's "
                     "ceiling leaves no room for an advantage there.")
    return ClaimResult(**base, verdict=verdict, reason=reason, steps=adjusted, notes=tuple(notes) + policy_notes,
                       tables=(Table(f"NDCG@5 by training list size ({scorer} on {bench}, seeds: "
                                     f"{', '.join(map(str, seeds))})", ("K", "lambdaloss", "ranknet", "advantage"),
                                     rows),) + policy_tables)


# -- the policy part: `gradebench lipo --judge` records -----------------------------------------------
POLICY_RECIPE = "recipes/experiments/esnli-human-lipo-list-size.sh"
POLICY_METHOD = (
    "Policy part (shown, not in the verdict): `gradebench lipo` policy records (method lipo, loss lambdaloss or "
    "ranknet, options.list_size K, a held-out judge) of one benchmark, initial policy, judge and budget (every "
    "other option). Per K: each loss's held-out judge gain (the judge's mean score of the policy's completions "
    "of the held-out prompts after - before training, seed-averaged), the lambdaloss - ranknet difference of "
    "the after scores per held-out prompt (mean, bootstrap CI over prompts), and the held-out pair accuracy "
    "after training (beta * log-ratio ordering of the held-out lists' full candidate sets; 0.5 before).")


def _policy_group(r) -> tuple:
    """What two LiPO runs must share to sit in one table: benchmark, initial policy, judge, budget."""
    from gradebench.hashing import sha256_json

    options = {k: v for k, v in r.options.items() if k not in ("loss", "loss_params", "list_size")}
    j = r.judge
    return (r.benchmark.name, r.benchmark.fingerprint, r.policy.fingerprint, sha256_json(options),
            j.fingerprint or j.source, j.split, j.n_queries, j.samples)


def _by_prompt(records, side: str) -> np.ndarray | None:
    """The seed-averaged judge score per held-out prompt (``judge_by_query``) of ``side``; None if missing."""
    rows = [r.judge.after.get("judge_by_query") if side == "after" else r.judge.before.get("judge_by_query")
            for r in records]
    if any(not isinstance(x, list) for x in rows) or len({len(x) for x in rows}) != 1:
        return None
    return np.nanmean(np.array([[np.nan if v is None else v for v in x] for x in rows], dtype=np.float64), axis=0)


def _mean(values) -> float | None:
    ok = [float(v) for v in values if isinstance(v, (int, float)) and np.isfinite(v)]
    return round(float(np.mean(ok)), 4) if ok else None


def lipo_policy_part(ev: Evidence) -> tuple[tuple[Table, ...], tuple[str, ...]]:
    """The claim's policy table (``(tables, notes)``; both empty without judged LiPO records).

    With one training run per (loss, K) and seed, nothing here is tested: a paired test across the
    held-out prompts would compare two trained policies, not two losses (a second training seed
    can move a policy more than the losses do), so the table is shown and the verdict is the
    scorer part's alone.
    """
    cells: dict[tuple, dict[tuple[str, int], list]] = {}
    for r in ev.policies:
        if (r.method != "lipo" or r.loss is None or r.loss.name not in ("lambdaloss", "ranknet") or r.judge is None
                or not isinstance(r.options.get("list_size"), int)):
            continue
        cells.setdefault(_policy_group(r), {}).setdefault((r.loss.name, r.options["list_size"]), []).append(r)
    if not cells:
        return (), (f"Policy part: no judged `gradebench lipo` records of lambdaloss and ranknet with a list size; "
                    f"{POLICY_RECIPE} writes them.",)

    def ks(group: dict) -> list[int]:
        return sorted({k for loss, k in group if loss == "lambdaloss"} & {k for loss, k in group if loss == "ranknet"})

    key = max(sorted(cells), key=lambda g: len(ks(cells[g])))
    group, shared = cells[key], ks(cells[key])
    if not shared:
        return (), ("Policy part: judged `gradebench lipo` records exist, but no list size has both a lambdaloss "
                    f"and a ranknet run of the same policy, judge and budget; {POLICY_RECIPE} writes them.",)
    rows, seeds_seen = [], set()
    for k in shared:
        lam, rn = group[("lambdaloss", k)], group[("ranknet", k)]
        seeds_seen.update(r.seed for r in lam + rn)
        gains = [_mean(r.judge.after.get("judge_mean", np.nan) - r.judge.before.get("judge_mean", np.nan)
                       for r in runs) for runs in (lam, rn)]
        a, b = _by_prompt(lam, "after"), _by_prompt(rn, "after")
        diff = values_figure(a - b) if a is not None and b is not None and a.shape == b.shape else None
        acc = [_mean(r.judge.after.get("pair_accuracy") for r in runs) for runs in (lam, rn)]
        n_seeds = min(len({r.seed for r in lam}), len({r.seed for r in rn}))
        rows.append((f"K={k}", gains[0], gains[1], diff, acc[0], acc[1], n_seeds))
    name, _, _, _, _, split, n_queries, samples = key
    scorer = next(iter(group.values()))[0].judge.scorer or "the judge"
    title = (f"Policy: `gradebench lipo` by training list size ({name}, judge {scorer} on {n_queries} {split} "
             f"prompts x {samples}; seeds: {', '.join(map(str, sorted(seeds_seen)))})")
    table = Table(title, ("K", "judge gain lambdaloss", "judge gain ranknet", "lambdaloss - ranknet (after, per "
                          "prompt)", "pair acc. lambdaloss", "pair acc. ranknet", "seeds"), tuple(rows))
    note = ("Policy part: not tested, and not in the verdict. With one training run per loss, K and seed the "
            "only paired test available is across held-out prompts, which compares two trained policies, not "
            "two losses: a different training seed can move a policy as much as the loss does. The per-prompt "
            "interval in the table is the sampling spread over prompts only. Adding seeds (SEEDS=\"42 123 7\" "
            f"{POLICY_RECIPE}) would make a test across seeds possible; none is implemented yet.")
    return (table,), (note,)


def _v(f) -> float:
    return -1.0 if f.value is None else f.value
