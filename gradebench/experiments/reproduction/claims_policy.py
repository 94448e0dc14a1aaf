"""Claim 4, seeds/000 Table 7: policy optimisation with a ListNet-trained vs an MSE-trained reward.

The paper (PPO, GPT-2 medium, human-annotated e-SNLI): with a ListNet reward PPO converges in
about 1,000 steps and reaches quality 4.1/5; with an MSE reward it never converges (2.9/5).

Tested from policy records (schema v2: the reward names its scorer and loss, ``judge``,
``signal``, ``trajectory``): runs of a ``listnet`` and an ``mse`` reward of the same scorer,
method, benchmark, initial policy, options (the budget) and judge form a *group*; within it
the runs are paired by policy seed (:func:`gradebench.experiments.policy_report.paired`) and
compared on

* quality: the held-out judge's mean on held-out prompts, after - before training;
* convergence: the step at which the reward reached 90% of its gain, and whether each run
  converged at all (:func:`gradebench.experiments.policy_report.converged`: the reward rose and
  levelled off over the last half of the run) -- a *check*, a count of runs, not a test;
* the reward's signal: the advantage SNR (the paper's explanation is that ListNet's separated
  scores give PPO a stronger signal).

Paired steps flip the signs of the per-seed differences exactly; with 3 seeds their smallest
two-sided p is 0.25, so they can only be *not significant*, and the claim's "better" parts are
inconclusive unless there are 7 or more seed pairs. The convergence check decides by itself:
every MSE run converged contradicts "never converges".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gradebench.errors import InvalidArgumentError
from gradebench.experiments.conventions import TEST_RESAMPLES
from gradebench.experiments.policy_record import PolicyRecord
from gradebench.experiments.policy_report import CONVERGED_MAX_LATE_RATE, paired, reward_label, run_row
from gradebench.experiments.reproduction import papers as P
from gradebench.experiments.reproduction.data import Evidence
from gradebench.experiments.reproduction.model import CHECK, ClaimResult, Step, Table
from gradebench.experiments.reproduction.rules import TEST_SEED, conclude
from gradebench.hashing import sha256_json
from gradebench.stats import paired_randomization_test

RANKING, REGRESSION = "listnet", "mse"
#: the tested steps: part, record figure, metric shown, which way the claim says is better (+1 higher)
STEPS: tuple[tuple[str, str, str, int], ...] = (
    ("quality", "judge_gain", "held-out judge, after - before", 1),
    ("convergence", "steps_to_reach", "steps to 90% of the reward gain", -1),
    ("reward signal", "advantage_snr", "advantage SNR (judge-signed)", 1),
)
#: a reading of "converged": a run's row (:func:`gradebench.experiments.policy_report.run_row`) -> yes, no, unknown
Rule = Callable[[dict[str, Any]], "bool | None"]
#: the figures of the paired table: record figure -> (shown name, which way is better)
PAIRED_SHOWN: dict[str, tuple[str, int]] = {
    "judge_gain": ("held-out judge, after - before", 1),
    "steps_to_reach": ("steps to 90% of the reward gain", -1),
    "late_rate": ("late rate (rise over the last half / average rise)", -1),
    "advantage_snr": ("advantage SNR (judge-signed)", 1),
    "judge_agreement": ("judge agreement of the reward's order", 1),
    "group_reward_std": ("within-group reward std (calibrated units)", 1),
}
RECIPE = "recipes/experiments/esnli-human-policy.sh"


def policy_rewards(ev: Evidence, alpha: float) -> ClaimResult:
    """A ListNet reward makes policy optimisation converge (about 1,000 steps, quality 4.1/5); an MSE
    reward never does (2.9/5)."""
    paper = Table("Paper: PPO with each reward model (seeds/000 Table 7)", (
        "reward model loss", "sep. ratio", "PPO steps to converge", "quality (/5)", "errors"), tuple(
        (loss, sr, "no convergence" if steps is None else steps, quality, errors)
        for loss, (sr, steps, quality, errors) in P.TABLE7.items()))
    groups = _groups(ev.policies)
    methods = sorted({key[0] for key, runs in groups.items() if _paired_seeds(runs)})
    base = dict(
        id="000-table7", source=P.TABLE7_SOURCE + (f"; tested with {'/'.join(m.upper() for m in methods)}"
                                                   if methods else ""),
        title="ListNet vs MSE reward for policy optimisation (paper: PPO)",
        statement="With a ListNet-trained reward model PPO converges in about 1,000 steps and reaches quality "
                  "4.1/5; with an MSE-trained reward it never converges (2.9/5).",
        method=_method(methods))
    comparable = {key: runs for key, runs in groups.items() if _paired_seeds(runs)}
    if not comparable:
        return ClaimResult(**base, verdict="not testable", tables=(paper,), reason=_untestable(ev.policies, groups))
    labels = _group_labels(comparable)
    steps: list[Step] = []
    tables = [paper]
    counts: list[str] = []
    readings: list[str] = []
    for key, runs in comparable.items():
        label = labels[key]
        prefix = f"{label}: " if len(comparable) > 1 else ""
        rows = sorted((run_row(r) for r in runs), key=lambda row: (row["reward"], row["seed"]))
        a, b = (next(reward_label(r) for r in runs if r.reward.loss == loss) for loss in (RANKING, REGRESSION))
        for part, fig, metric, better in STEPS:
            steps.append(_run_step(prefix + part, metric, rows, fig, a, b, better))
        steps.append(_convergence_check(prefix + "convergence", rows, a, b))
        tables.append(Table(f"Our runs ({label}): one row per run", (
            "reward", "seed", "steps", "reward, first -> last decile", "steps to 90%", "late rate", "converged",
            "judge before -> after", "judge gain", "advantage SNR"), tuple(_run_cells(r) for r in rows)))
        tables.append(Table(f"Paired by seed ({label}): {a} - {b}, 95% t interval ({_df(rows, a, b)})", (
            "figure", a, b, "difference per seed", "mean difference [95% t]", f"seeds where {a} is better"),
            tuple(_paired_cells(rows, a, b))))
        (ka, na), (kb, nb) = _count(rows, a, _converged), _count(rows, b, _converged)
        budget = "/".join(str(n) for n in sorted({r["steps"] for r in rows}))
        counts.append(f"{prefix}{ka} of {na} {a} and {kb} of {nb} {b} runs levelled off within {budget} steps")
        readings += [prefix + _reading(rows, a, b, name, rule) for name, rule in OTHER_READINGS]
    adjusted, verdict, reason = conclude(steps, alpha)
    reason += f" Converged (reward rose, |late rate| <= {CONVERGED_MAX_LATE_RATE:g}): " + "; ".join(counts) + "."
    tested = [s for s in adjusted if s.p_value is not None]
    if tested:
        n_pairs = max(s.n_queries for s in tested)
        floor = 2 / 2 ** n_pairs
        reason += (f" The paired steps have at most {n_pairs} seed pairs: the smallest two-sided p an exact sign-flip "
                   f"test can give is {floor:.3g}"
                   + (", so they show a direction, not significance, and the claim's 'better' parts cannot be "
                      "reproduced" if floor > alpha / len(tested) else "")
                   + ". The convergence check is a count of runs, not a significance test.")
    notes = (
        "The check rests on the definition of 'converged'. Read more loosely: " + "; ".join(readings) + ". Late rate "
        "fits a line to the last half of the run's decile means, which is less noisy than a single decile against "
        "the one before: each decile mean averages a tenth of the run's per-step rewards, which vary a lot from step "
        f"to step, so a late rate near the cut ({CONVERGED_MAX_LATE_RATE:g}) can fall on either side of it by "
        "chance.",
    )
    return ClaimResult(**base, verdict=verdict, reason=reason, tables=tuple(tables), steps=adjusted, notes=notes)


# -- grouping --------------------------------------------------------------------------------------
def _group_key(r: PolicyRecord) -> tuple[Any, ...]:
    """What two runs must share to be compared: method, benchmark, initial policy, options, reward
    scorer and normalisation, judge."""
    judge = None if r.judge is None else (r.judge.fingerprint, r.judge.split, r.judge.n_queries, r.judge.samples)
    return (r.method, r.benchmark.name, r.benchmark.fingerprint, r.policy.fingerprint, sha256_json(r.options),
            r.reward.scorer, r.reward.normalize, sha256_json(judge))


def _groups(policies: Sequence[PolicyRecord]) -> dict[tuple[Any, ...], list[PolicyRecord]]:
    """The records whose reward names a listnet or mse loss, by :func:`_group_key` (one record per
    loss and seed: the smallest id), in key order."""
    out: dict[tuple[Any, ...], dict[tuple[str, int], PolicyRecord]] = {}
    for r in sorted(policies, key=lambda r: r.id):
        if r.reward is None or r.reward.loss not in (RANKING, REGRESSION) or not r.reward.scorer:
            continue
        out.setdefault(_group_key(r), {}).setdefault((r.reward.loss, r.seed), r)
    return {key: sorted(runs.values(), key=lambda r: (r.reward.loss, r.seed))
            for key, runs in sorted(out.items(), key=lambda kv: tuple(map(str, kv[0])))}


def _paired_seeds(runs: Sequence[PolicyRecord]) -> list[int]:
    seeds = [{r.seed for r in runs if r.reward.loss == loss} for loss in (RANKING, REGRESSION)]
    return sorted(seeds[0] & seeds[1])


def _group_labels(groups: dict[tuple[Any, ...], list[PolicyRecord]]) -> dict[tuple[Any, ...], str]:
    """``"grpo, esnli-human, hashed-mlp reward, 200 steps"``; a short hash of the key where two collide."""
    plain = {key: f"{key[0]}, {key[1]}, {key[5]} reward, {runs[0].n_steps} steps" for key, runs in groups.items()}
    names = list(plain.values())
    return {key: name if names.count(name) == 1 else f"{name} [{sha256_json(list(key))[:8]}]"
            for key, name in plain.items()}


def _untestable(policies: Sequence[PolicyRecord], groups: dict[tuple[Any, ...], list[PolicyRecord]]) -> str:
    write = (f"`bash {RECIPE}` writes six (GRPO, hashed-mlp + listnet and + mse rewards, seeds 42/123/7, a held-out "
             "lambdamart judge); in general `gradebench export-reward RUN_DIR --out REWARD_DIR` for a listnet and an "
             "mse run of one scorer, then for each reward and seed `gradebench grpo --policy POLICY --reward "
             "REWARD_DIR --judge JUDGE_DIR --benchmark BENCH --seed SEED --out RUN_DIR --results-dir "
             "leaderboard/results` "
             "(or `gradebench ppo`, same options).")
    if not policies:
        return "No policy records in this folder. " + write
    if not groups:
        return (f"{len(policies)} policy record(s), none with a reward trained with listnet or mse that names its loss "
                "(schema v1 records name a reward by folder only; LiPO has no reward). " + write)
    have = "; ".join(f"{key[0]} on {key[1]}: " + ", ".join(sorted({f'{r.reward.loss} seed {r.seed}' for r in runs}))
                     for key, runs in groups.items())
    return ("No listnet-reward run has an mse-reward run of the same seed, method, benchmark, initial policy, "
            f"options and judge to be paired with ({have}). " + write)


def _method(methods: Sequence[str]) -> tuple[str, ...]:
    lines = [
        "Ours: policy records (schema v2) whose reward names its scorer and loss. Runs of a listnet and an mse "
        "reward of the same scorer, method, benchmark, initial policy, options (the budget) and held-out judge form "
        "a group; within it the runs are paired by policy seed (same data order, same held-out sampling seed), as "
        "gradebench.experiments.policy_report pairs them.",
    ]
    if "grpo" in methods:
        lines.append(
            "The runs are GRPO, not the paper's PPO. GRPO standardises each group's rewards (minus the group's mean, "
            "divided by its std), so its advantages are unchanged when a reward is scaled or shifted: the reward's "
            "scale -- what the separation ratio measures, and the paper's explanation (an MSE reward compresses the "
            "scores, so the policy gets a weak signal) -- cannot matter, only how the reward orders and spaces each "
            "group's completions. The comparison tests the claim's outcome under GRPO, not its mechanism.")
    lines += [
        "Quality (the paper rates explanations 1-5): a held-out judge, never the optimised reward, scores the "
        "policy's completions for held-out prompts before and after training; the figure is its mean after - before "
        "(judge units, not comparable with 4.1/5).",
        "Convergence: steps to 90% = the first step at which the reward's trailing mean over a tenth of the run "
        "reaches 90% of its gain (last decile - first). A run converged when its reward rose (last decile above the "
        "first) and levelled off: |late rate| <= "
        f"{CONVERGED_MAX_LATE_RATE:g}, late rate = the least-squares slope of the reward's decile means over the "
        "last half of the run / its average rise per decile (1: still climbing as fast as on average, 0: flat). The "
        "paper's step counts are PPO steps of another policy: shown, not compared.",
        "Steps (per group): judge gain listnet > mse, steps to 90% listnet < mse, advantage SNR listnet > mse, exact "
        "sign-flip tests of the per-seed differences, Holm-corrected together (with 3 steps none can be significant "
        "with fewer than 7 seed pairs). Check: 'opposite' when every mse run converged (the paper says it never "
        "does), 'as claimed' when every listnet run converged and no mse run did, 'mixed' otherwise.",
    ]
    return tuple(lines)


# -- steps -----------------------------------------------------------------------------------------
def _run_step(part: str, metric: str, rows: list[dict[str, Any]], figure: str, a: str, b: str, better: int) -> Step:
    """The step ``a`` better than ``b`` on ``figure``, paired by seed (``better=-1``: ``a`` lower)."""
    claimed = f"{a} < {b}" if better < 0 else None
    p = paired(rows, figure, a, b, better=better)
    above, below = (b, a) if better < 0 else (a, b)
    base = dict(part=part, metric=metric, above=above, below=below, claimed=claimed, unit="seed pairs")
    if p is None or len(p.seeds) < 2:
        return Step(**base, above_value=None, below_value=None, difference=None, n_queries=0 if p is None else 1,
                    seeds=() if p is None else p.seeds, test=None, p_value=None,
                    note=f"fewer than 2 seeds with both runs' {figure}")
    hi, lo = (p.b_values, p.a_values) if better < 0 else (p.a_values, p.b_values)
    try:
        r = paired_randomization_test(hi, lo, n_resamples=TEST_RESAMPLES, seed=TEST_SEED)
    except InvalidArgumentError as e:
        return Step(**base, above_value=None, below_value=None, difference=None, n_queries=len(p.seeds),
                    seeds=p.seeds, test=None, p_value=None, note=str(e))
    return Step(**base, above_value=r.mean_a, below_value=r.mean_b, difference=r.statistic, n_queries=r.n,
                seeds=p.seeds, test=r.test, p_value=r.p_value)


def _convergence_check(part: str, rows: list[dict[str, Any]], a: str, b: str) -> Step:
    """Every ``a`` run converged and no ``b`` run did (as claimed), every ``b`` run converged (opposite), else mixed."""
    (ka, na), (kb, nb) = _count(rows, a, _converged), _count(rows, b, _converged)
    base = dict(part=part, metric="runs converged", above=a, below=b, n_queries=na + nb, unit="runs",
                seeds=tuple(sorted({r["seed"] for r in rows if r["reward"] in (a, b)})), p_value=None,
                claimed=f"every {a} run converges, no {b} run does")
    if na == 0 or nb == 0:
        return Step(**base, above_value=None, below_value=None, difference=None, test=None,
                    note="a reward has no run with a reward trajectory")
    outcome = _outcome(ka, na, kb, nb)
    return Step(**base, above_value=ka / na, below_value=kb / nb, difference=ka / na - kb / nb, test=CHECK,
                outcome=outcome,
                note=f"{ka} of {na} {a} runs and {kb} of {nb} {b} runs converged; a count, not a significance test")


def _count(rows: list[dict[str, Any]], reward: str, rule: Rule) -> tuple[int, int]:
    """How many of ``reward``'s runs meet ``rule`` (a row -> bool or None), of those it decides."""
    flags = [rule(r) for r in rows if r["reward"] == reward]
    flags = [f for f in flags if f is not None]
    return sum(flags), len(flags)


def _converged(row: dict[str, Any]) -> bool | None:
    """The reading the check uses: :func:`gradebench.experiments.policy_report.converged`."""
    return row["converged"]


def _reached_early(row: dict[str, Any]) -> bool | None:
    """The reward reached 90% of its gain before the last tenth of the run."""
    if row["reward_gain"] is None:
        return None
    return row["steps_to_reach"] is not None and row["steps_to_reach"] <= 0.9 * row["steps"]


def _flat_last_decile(row: dict[str, Any]) -> bool | None:
    """The reward rose, and its last decile rose less than a tenth of the gain over the one before."""
    if row["reward_gain"] is None:
        return None
    return row["reward_gain"] > 0 and row["end_change"] is not None and row["end_change"] < 0.1


#: looser readings of "converged", reported beside the check (never deciding it): name, rule
OTHER_READINGS: tuple[tuple[str, Rule], ...] = (
    ("reached 90% of its gain before the last tenth of the run", _reached_early),
    ("the last decile rose less than a tenth of the gain over the one before (end_change < 0.1)", _flat_last_decile),
)


def _outcome(ka: int, na: int, kb: int, nb: int) -> str:
    return "opposite" if kb == nb else "as claimed" if ka == na and kb == 0 else "mixed"


def _reading(rows: list[dict[str, Any]], a: str, b: str, name: str, rule: Rule) -> str:
    (ka, na), (kb, nb) = _count(rows, a, rule), _count(rows, b, rule)
    outcome = _outcome(ka, na, kb, nb)
    return (f"'{name}': {ka} of {na} {a} and {kb} of {nb} {b} runs, the check would be {outcome}"
            + (" and the claim contradicted" if outcome == "opposite" else ""))


# -- tables and text -------------------------------------------------------------------------------
def _f(x: Any, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def _run_cells(r: dict[str, Any]) -> tuple[Any, ...]:
    conv = "-" if r["converged"] is None else "yes" if r["converged"] else "no"
    return (r["reward"], r["seed"], r["steps"], f"{_f(r['reward_start'], '.2f')} -> {_f(r['reward_end'], '.2f')}",
            _f(r["steps_to_reach"], "d"), _f(r["late_rate"], ".2f"), conv,
            f"{_f(r['judge_mean_before'])} -> {_f(r['judge_mean_after'])}", _f(r["judge_gain"], "+.3f"),
            _f(r["advantage_snr"]))


def _df(rows: list[dict[str, Any]], a: str, b: str) -> str:
    p = paired(rows, "judge_gain", a, b)
    n = 0 if p is None else len(p.seeds)
    return f"{n - 1} degrees of freedom" if n > 1 else "no interval"


def _paired_cells(rows: list[dict[str, Any]], a: str, b: str) -> list[tuple[str, ...]]:
    out = []
    for figure, (name, better) in PAIRED_SHOWN.items():
        p = paired(rows, figure, a, b, better=better)
        if p is None:
            continue
        spec = ".0f" if figure == "steps_to_reach" else ".3f"
        mean = lambda v: format(sum(v) / len(v), spec)  # noqa: E731 - a local format
        ci = "" if p.ci is None else f" [{format(p.ci[0], spec)}, {format(p.ci[1], spec)}]"
        out.append((name, mean(p.a_values), mean(p.b_values),
                    ", ".join(f"{format(d, '+' + spec)} ({s})" for s, d in zip(p.seeds, p.diffs)),
                    format(p.mean_diff, "+" + spec) + ci, f"{p.a_better} of {len(p.seeds)}"))
    return out
