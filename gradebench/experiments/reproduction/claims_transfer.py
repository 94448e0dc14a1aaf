"""Claim 3: zero-shot transfer of e-SNLI-trained scorers to natural grades (seeds/000 §4).

(Claim 4, seeds/000 Table 7, is :mod:`.claims_policy`.)"""

from __future__ import annotations

import numpy as np

from gradebench.experiments.reproduction.claims_losses import GRID_BENCHMARKS
from gradebench.experiments.reproduction.compare import figure, mean_over_seeds, missing_step, seed_matrix, value_step
from gradebench.experiments.reproduction.data import Evidence, benchmark_folder
from gradebench.experiments.reproduction.model import ClaimResult, Step, Table
from gradebench.experiments.reproduction.rules import conclude

KENDALL = "kendall"
SOURCE_PREFIX = "esnli"


# -- 3. zero-shot transfer --------------------------------------------------------------------------
def zero_shot(ev: Evidence, alpha: float) -> ClaimResult:
    """Scorers trained on an e-SNLI benchmark order every natural-grade benchmark better than chance."""
    base = dict(
        id="000-zero-shot", source="seeds/000, §4 (held-out transfer, App. D)",
        title="Zero-shot transfer of e-SNLI-trained scorers to natural grades",
        statement="Scorers trained on e-SNLI alone transfer to held-out benchmarks without fine-tuning: on every "
                  "natural-grade benchmark their ranking agrees with the human grades better than chance "
                  "(Kendall tau > 0).",
        method=("Ours: every record of a run trained on an e-SNLI benchmark (its name starts with 'esnli') and "
                "evaluated with --zero-shot on a benchmark with natural grades (no tier column).",
                "Figure: Kendall tau-b per query (lists with constant grades excluded), mean over seeds, CI over "
                "queries of the seed-averaged values. Step: tau > 0, a sign-flip randomization test of the per-query "
                "values against 0, Holm-corrected over every system and benchmark; the 95% CI is shown beside it."))
    naturals = sorted({b for b in ev.benchmarks() if ev.grade_kind(b) == "natural"}
                      | {b for b, k in GRID_BENCHMARKS.items() if k == "natural"})
    run_example = _esnli_run(ev)
    steps: list[Step] = []
    rows = []
    for bench in naturals:
        systems = [s for s in ev.find(bench, zero_shot=True) if (s.trained_on or "").startswith(SOURCE_PREFIX)]
        if not systems:
            fp = ev.fingerprint(bench)
            # the default build folder, never --build-dir: the report does not depend on where it looked
            where = (benchmark_folder(next(r for r in ev.records if r.benchmark.fingerprint == fp)) if fp
                     else f"gradebench-out/{bench}/<fingerprint12>")
            steps.append(missing_step(bench, KENDALL, "e-SNLI-trained scorer", "0", (
                f"no zero-shot record on {bench}: gradebench eval --run {run_example} --benchmark {where} "
                "--zero-shot --results-dir leaderboard/results")))
            continue
        for s in systems:
            _, matrix = seed_matrix(ev, s, KENDALL)
            vals = mean_over_seeds(matrix)
            steps.append(value_step(bench, KENDALL, s.label, "0", vals, np.zeros_like(vals), s.seeds))
            own = ev.pick(bench, s.scorer, s.loss)
            rows.append((bench, s.label, figure(ev, s, KENDALL), figure(ev, own, KENDALL) if own else "no records"))
    adjusted, verdict, reason = conclude(steps, alpha)
    if verdict == "not testable":
        reason = ("No record of an e-SNLI-trained scorer evaluated on a natural-grade benchmark. " + reason)
    elif any(s.outcome == "not tested" for s in adjusted):
        untested = sorted({s.part for s in adjusted if s.outcome == "not tested"})
        reason += f" Not tested (no transfer records): {', '.join(untested)}."
    columns = ("benchmark", "system (zero-shot)", "tau", "same scorer + loss trained in-domain")
    tables = (Table("Kendall tau on natural-grade benchmarks", columns, tuple(rows)),) if rows else ()
    return ClaimResult(**base, verdict=verdict, reason=reason, tables=tables, steps=adjusted)


def _esnli_run(ev: Evidence) -> str:
    """A run folder of an e-SNLI-trained hashed-mlp + listnet (seed 42 first) from the records, else a placeholder."""
    for s in ev.find("esnli", scorer="hashed-mlp", loss="listnet"):
        if s.has_default_options():
            recs = sorted(s.records, key=lambda r: (r.system_seed != 42, r.system_seed))
            if recs and recs[0].run is not None:
                return recs[0].run.run_dir
    return "RUN_DIR"
