"""``leaderboard()``: one row per system over the records of a results folder.

A *system* is (benchmark fingerprint, scorer name + version + config, loss + parameters,
training options without ``seed``); its records are its seeds (``system_seed``). If a seed has
several records (another bootstrap seed or resample count), the one with the smallest id is used.

Per system and metric:

* ``value``: the mean over seeds of the record values;
* CI, per-query metrics: a percentile bootstrap over queries (the records' seed, resample
  count and confidence) of the seed-averaged per-query values; with one seed this is exactly
  the record's own CI, which is reused;
* CI, corpus metrics (``separation_ratio``, ``tier_eta2``) and per-query metrics whose per-query
  values a packed folder leaves out (``query_separation_ratio``): the record's CI with one seed,
  else the envelope ``[min ci_low, max ci_high]`` over seeds (conservative);
* ``seed_std``: standard deviation over seeds (``ddof=1``; null with one seed).

Rows are sorted by ``sort_by`` (descending, undefined last, then by system label and id). The
first row is the best; every other system is compared with it by a two-sided paired
randomization test (:func:`gradebench.stats.paired_randomization_test`, 10,000 sign flips,
exact for <= 13 queries, seed 0) on the seed-averaged per-query values of ``sort_by`` over the
queries both define, and the p-values are Holm-corrected across systems
(:func:`gradebench.stats.holm`). ``tied_with_best`` is True where the adjusted p-value
exceeds ``alpha`` (not significantly different from the best). Significance needs a
per-query ``sort_by``; corpus metrics sort without tests. Note that with n queries the exact
two-sided test cannot reach p < 2 / 2^n (5 queries: 0.0625).

The query-blind probe (scorer ``query-blind``: the best a scorer can do without reading the
query) is each benchmark's validity figure: reported on its own line, with whether it is
tied with the best system (a benchmark the probe solves does not test query understanding).
Its ``verdict`` (:func:`verdict`) extends it: the best reader against the best shortcut, with a
paired bootstrap CI of the margin, and the human ceiling where the records hold one.

A ``human`` record (the human ceiling, :mod:`gradebench.experiments.human`) is a row under the
systems with rank 0 (shown as ``-``): outside the ranking, the best and the tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gradebench.errors import InvalidArgumentError, RecordError, UnknownNameError
from gradebench.experiments.conventions import PROBE, TEST, TEST_RESAMPLES
from gradebench.experiments.perquery import align, mean_of_defined
from gradebench.experiments.record import EvalRecord, json_float
from gradebench.experiments.render import Board, Leaderboard, Row
from gradebench.experiments.store import list_records, read_per_query_arrays
from gradebench.experiments.verify import verified_records
from gradebench.hashing import sha256_json
from gradebench.paths import RESULTS_DIR
from gradebench.registry import suggest
from gradebench.stats import BootstrapDraws, bootstrap_ci, holm, paired_randomization_test


def system_key(rec: EvalRecord) -> dict[str, Any]:
    """What makes two records the same system: everything but the seeds (for a trained scorer
    also the training benchmark and options, so a list-size ablation gets one row per size)."""
    run = None
    if rec.run is not None:
        # an option a record predates counts at its default (records of older versions still
        # join the rows of the same system trained today)
        options = {**_defaults(None), **rec.run.options}
        run = {"benchmark_fingerprint": rec.run.benchmark_fingerprint,
               "options": {k: v for k, v in options.items() if k != "seed"}}
    # an external model is its identity (files, adapter, options), wherever its folder lies
    config = rec.scorer.config if rec.scorer.model is None else {"model_identity": rec.scorer.model.identity}
    return {"benchmark_fingerprint": rec.benchmark.fingerprint, "scorer": rec.scorer.name,
            "scorer_version": rec.scorer.version, "config": config, "loss": rec.loss.name,
            "loss_params": rec.loss.params, "run": run}


def _params(d: dict[str, Any]) -> str:
    return "[" + ",".join(f"{k}={v}" for k, v in sorted(d.items())) + "]" if d else ""


def system_label(rec: EvalRecord) -> str:
    """``scorer[changed config] + loss[params] {changed training options} (trained on X)``."""
    defaults = _defaults(rec.scorer.name)
    changed = {k: v for k, v in rec.scorer.config.items() if defaults.get(k, _NONE) != v}
    if rec.scorer.model is not None:  # an external model: its name, not where it lies
        from gradebench.scorers.adapters.base import LOCATION_KEYS

        changed = {"model": rec.scorer.model.name, **{k: v for k, v in changed.items() if k not in LOCATION_KEYS}}
    if rec.scorer.name == "human" and rec.human is not None:  # the ceiling: how the annotators were split
        return f"human (split-half: {rec.human.score_half} vs {rec.human.grade_half} annotators)"
    text = rec.scorer.name + _params(changed)
    if rec.loss.name:
        text += f" + {rec.loss.name}{_params(rec.loss.params)}"
    if rec.run is not None:
        base = _defaults(None)
        changed = {k: v for k, v in rec.run.options.items()
                   if k not in ("seed", "loss", "loss_params") and base.get(k, _NONE) != v}
        if changed:
            text += " {" + ",".join(f"{k}={v}" for k, v in sorted(changed.items())) + "}"
        if rec.run.benchmark_fingerprint != rec.benchmark.fingerprint:
            text += f" (trained on {rec.run.benchmark})"
    return text


_NONE = object()


def _defaults(scorer: str | None) -> dict[str, Any]:
    """Default config of a registered scorer, or the default TrainOptions (``scorer=None``)."""
    try:
        from gradebench.scorers import TrainOptions, get_scorer_class

        model = TrainOptions if scorer is None else get_scorer_class(scorer).Config
        return model().model_dump(mode="json")
    except Exception:  # noqa: BLE001 - a record of a scorer not registered here: show its whole config
        return {}


def leaderboard(
    results_dir: str | Path = RESULTS_DIR,
    *,
    benchmark: str | None = None,
    split: str = "test",
    sort_by: str = "ndcg@5",
    alpha: float = 0.05,
) -> Leaderboard:
    """The leaderboard of every benchmark (or one, by name) in ``results_dir`` on ``split``.

    An existing folder without records gives an empty leaderboard; a folder that does not exist
    is an error (a mistyped ``--results-dir`` must not look like "no results yet").

    Raises:
        RecordError: ``results_dir`` does not exist or is not a folder.
        UnknownNameError: ``sort_by`` is not a metric of the records.
        InvalidArgumentError: ``alpha`` not in (0, 1).
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise InvalidArgumentError(f"alpha must be in (0, 1), got {alpha!r}", hint="e.g. --alpha 0.05")
    root = Path(results_dir)
    if not root.is_dir():
        raise RecordError("no such results folder" if not root.exists() else "the results folder is a file",
                          path=root, hint="give the folder `gradebench eval` wrote its records into (--results-dir), "
                                          "or evaluate something first (gradebench eval ...)")
    records = verified_records(results_dir, benchmark=benchmark, split=split)  # a record failing its checks is left out
    known = sorted({m for r in records for m in r.metrics})
    if records and sort_by not in known:
        raise UnknownNameError(f"unknown metric {sort_by!r}" + suggest(sort_by, known, cutoff=0.5),
                               hint=f"metrics of the records: {', '.join(known)}")
    by_bench: dict[tuple[str, str], list[EvalRecord]] = {}
    for r in records:
        by_bench.setdefault((r.benchmark.name, r.benchmark.fingerprint), []).append(r)
    boards = [_board(name, fp, split, recs, sort_by, alpha, results_dir=root)
              for (name, fp), recs in sorted(by_bench.items())]
    return Leaderboard(split=split, sort_by=sort_by, alpha=float(alpha), test=TEST, boards=boards,
                       policies=policy_rows(results_dir, benchmark))


def verdict_texts(results_dir: str | Path = RESULTS_DIR, *, split: str = "test",
                  sort_by: str = "ndcg@5") -> dict[str, str]:
    """Each benchmark's validity verdict from the records of ``results_dir``, by fingerprint: the
    board's :func:`gradebench.experiments.render.verdict_line`, led by where it comes from, for
    the cards that are published (``gradebench publish --results-dir``; the results card of
    ``publish-results``). Benchmarks without records on ``split`` are absent."""
    from gradebench.experiments.render import verdict_line

    out = {}
    for board in leaderboard(results_dir, split=split, sort_by=sort_by).boards:
        line = verdict_line(board)
        lead = f"Verdict ({sort_by}): "
        if line.startswith(lead):
            out[board.fingerprint] = f"from the result records ({sort_by}, {split} split): " + line[len(lead):]
    return out


#: the final-window metrics of a policy record shown on the leaderboard
POLICY_METRICS = ("reward_mean", "reward_std", "kl", "above_reference")


def policy_rows(results_dir: str | Path, benchmark: str | None = None) -> list[dict[str, Any]]:
    """One row per policy record: method, benchmark, policy, reward or loss, steps, final metrics."""
    rows = []
    for r in list_records(results_dir, benchmark=benchmark, kind="policy"):
        rows.append({
            "id": r.id,
            "method": r.method,
            "benchmark": r.benchmark.name,
            "benchmark_fingerprint": r.benchmark.fingerprint,
            "policy": _policy_name(r.policy.path),
            "objective": _objective(r),
            "seed": r.seed,
            "steps": r.n_steps,
            **{m: r.metrics.get(m) for m in POLICY_METRICS},
        })
    return rows


def _objective(r: Any) -> str:
    """A LiPO record's loss with its list size (``lambdaloss K=3``), else the reward's name."""
    if r.loss is None:
        return _reward_name(r.reward)
    k = (r.options or {}).get("list_size")
    return r.loss.name if k is None else f"{r.loss.name} K={k}"


def _policy_name(path: str) -> str:
    """A policy folder's name; a run folder's ``policy/`` is named with its run (``run/policy``)."""
    p = Path(path)
    return f"{p.parent.name}/{p.name}" if p.name == "policy" and p.parent.name else p.name


def _reward_name(reward: Any) -> str | None:
    """``scorer + loss`` of a reward the record names (v2), else its source."""
    if reward is None:
        return None
    if getattr(reward, "scorer", None):
        return f"{reward.scorer} + {reward.loss}" if reward.loss else reward.scorer
    return reward.source


def _board(name: str, fp: str, split: str, records: list[EvalRecord], sort_by: str, alpha: float, *,
           results_dir: Path) -> Board:
    systems: dict[str, list[EvalRecord]] = {}
    ceilings: dict[str, list[EvalRecord]] = {}
    for r in records:
        (ceilings if is_human(r) else systems).setdefault(sha256_json(system_key(r)), []).append(r)
    cache: Cache = {}
    draws = BootstrapDraws()  # the systems' bootstraps over the same queries share their resamples
    built = [_system(sid, _one_per_seed(recs), sort_by, cache, draws) for sid, recs in systems.items()]
    built.sort(key=lambda s: (_sort_value(s["metrics"].get(sort_by)), s["system"], s["system_id"]))
    humans = [_system(sid, _one_per_seed(recs), sort_by, cache, draws) for sid, recs in sorted(ceilings.items())]
    top = built[0]["records"][0].metrics.get(sort_by) if built else None
    level = None if top is None else top.level
    tests = _tests(built, sort_by, alpha) if level == "query" else {}
    rows = []
    for i, s in enumerate(built):
        p, adj, tied = tests.get(s["system_id"], (None, None, None))
        if i == 0 and level == "query":
            tied = True
        rec = s["records"][0]
        rows.append(Row(
            rank=i + 1, system=s["system"], system_id=s["system_id"], scorer=rec.scorer.name,
            scorer_version=rec.scorer.version, config=rec.scorer.config, loss=rec.loss.name,
            loss_params=rec.loss.params, options=None if rec.run is None else system_key(rec)["run"]["options"],
            n_seeds=len(s["records"]),
            seeds=[r.system_seed for r in s["records"]], record_ids=[r.id for r in s["records"]],
            n_queries=s["n_queries"], metrics=s["metrics"], is_best=i == 0, tied_with_best=tied,
            p_value=p, p_adjusted=adj, probe=rec.scorer.name == PROBE,
            training=training_budget(s["records"]), device=devices(s["records"]), kind=rec.scorer.kind,
        ))
    for s in humans:  # the ceiling: under the systems, outside the ranking and the tests
        rec = s["records"][0]
        rows.append(Row(
            rank=0, system=s["system"], system_id=s["system_id"], scorer=rec.scorer.name,
            scorer_version=rec.scorer.version, config=rec.scorer.config, loss=None, loss_params={}, options=None,
            n_seeds=len(s["records"]), seeds=[r.system_seed for r in s["records"]],
            record_ids=[r.id for r in s["records"]], n_queries=s["n_queries"], metrics=s["metrics"], is_best=False,
            tied_with_best=None, p_value=None, p_adjusted=None, probe=False, training=training_budget(s["records"]),
            device=devices(s["records"]), kind=rec.scorer.kind, human=True,
        ))
    validity = _validity(rows, sort_by)
    if validity is not None and not validity["evaluated"]:
        validity["commands"] = probe_commands(records[0].benchmark.path, name, fp, split, results_dir)
    if validity is not None:
        validity["verdict"] = verdict(built, humans, sort_by)
    return Board(benchmark=name, fingerprint=fp, split=split, rows=rows, validity=validity)


#: the shortcuts of a validity verdict: scorers that never read the pair (query-blind, label-aware),
#: surface statistics (length, overlap, bm25) and learned rankers on lexical features
SHORTCUTS = ("query-blind", "label-aware", "length", "overlap", "bm25", "lexical-gbdt", "lambdamart")
#: a shortcut at or above this value of the metric has solved the benchmark, whatever the readers do
SATURATED = 0.99
#: the scorer kinds whose systems are readers (a model reading query and candidate text)
READER_KINDS = ("neural", "external")


def is_human(rec: EvalRecord) -> bool:
    """A human-ceiling record (:mod:`gradebench.experiments.human`), not a system."""
    return rec.scorer.name == "human" and rec.human is not None


def verdict(systems: list[dict[str, Any]], humans: list[dict[str, Any]], sort_by: str) -> dict[str, Any]:
    """A board's validity verdict on ``sort_by``: the best reader (a system of a scorer kind in
    :data:`READER_KINDS`), the best shortcut (a scorer in :data:`SHORTCUTS`), the human ceiling where
    a ``human`` record exists, its headroom over the best system, and the margin of the best reader
    over the best shortcut: the mean per-query difference of their seed-averaged values with a
    percentile bootstrap CI over the queries both define (the records' resample count, seed 0).
    ``line``: "readers beat the best shortcut by X [lo, hi]" when the CI is above 0; "solved by a
    shortcut: not a reading benchmark" when it is below 0 or the shortcut reaches
    :data:`SATURATED`; else "not shown to need reading" (the CI holds 0)."""
    def top(group: list[dict[str, Any]]) -> dict[str, Any] | None:
        return next((s for s in group if s["metrics"].get(sort_by, {}).get("value") is not None), None)

    def brief(s: dict[str, Any] | None) -> dict[str, Any] | None:
        if s is None:
            return None
        m = s["metrics"][sort_by]
        rec = s["records"][0]
        name = s["system"] if is_human(rec) else rec.scorer.name + (f" + {rec.loss.name}" if rec.loss.name else "")
        return {"system": s["system"], "name": name, "scorer": rec.scorer.name, "value": m["value"],
                "ci_low": m.get("ci_low"), "ci_high": m.get("ci_high")}

    reader = top([s for s in systems if s["records"][0].scorer.kind in READER_KINDS])
    shortcut = top([s for s in systems if s["records"][0].scorer.name in SHORTCUTS])
    human = top(humans)
    best = top(systems)
    out: dict[str, Any] = {"metric": sort_by, "best_reader": brief(reader), "best_shortcut": brief(shortcut),
                           "human": brief(human), "headroom": None, "margin": None}
    if human is not None and best is not None:
        out["headroom"] = json_float(human["metrics"][sort_by]["value"] - best["metrics"][sort_by]["value"])
    if reader is None or shortcut is None:
        out["line"] = f"no verdict: no {'reader' if reader is None else 'shortcut'} evaluated"
        return out
    margin = _margin(reader, shortcut)
    out["margin"] = margin
    if margin is None:
        out["line"] = "no verdict: no per-query values shared by the best reader and the best shortcut"
        return out
    found = outcome(margin["ci_low"], margin["ci_high"], shortcut["metrics"][sort_by]["value"])
    if found == READS:
        out["line"] = (f"readers beat the best shortcut by {margin['value']:.3f} "
                       f"[{margin['ci_low']:.3f}, {margin['ci_high']:.3f}]")
    else:
        ci = "" if margin["ci_low"] is None else f" [{margin['ci_low']:.3f}, {margin['ci_high']:.3f}]"
        gap = f"the best reader is {margin['value']:+.3f}{ci} from the best shortcut"
        if found == SOLVED:
            out["line"] = f"solved by a shortcut: not a reading benchmark ({gap})"
        else:  # a CI around 0 under an unsaturated shortcut: no evidence either way
            out["line"] = f"not shown to need reading: {gap}"
    return out


#: the outcomes of a verdict (:func:`outcome`)
READS, SOLVED, NOT_SHOWN = "reads", "solved", "not shown"


def outcome(ci_low: float | None, ci_high: float | None, shortcut_value: float) -> str:
    """A verdict's outcome from the CI of the reader's margin over the best shortcut and that
    shortcut's value: :data:`READS` when the CI is above 0; :data:`SOLVED` when it is below 0 or
    the shortcut reaches :data:`SATURATED`; else :data:`NOT_SHOWN` (the CI holds 0, or there is
    none). The leaderboard's verdict and the reader check (``gradebench validity --run``) share it."""
    if ci_low is not None and ci_low > 0:
        return READS
    if (ci_high is not None and ci_high < 0) or shortcut_value >= SATURATED:
        return SOLVED
    return NOT_SHOWN


def _margin(reader: dict[str, Any], shortcut: dict[str, Any]) -> dict[str, Any] | None:
    """Paired bootstrap over queries of the best reader's minus the best shortcut's per-query values."""
    if reader["per_query"] is None or shortcut["per_query"] is None:
        return None
    other = dict(zip(*(x.tolist() for x in shortcut["per_query"])))
    diffs = np.array([v - other[q] for q, v in zip(*(x.tolist() for x in reader["per_query"])) if q in other],
                     dtype=np.float64)
    diffs = diffs[~np.isnan(diffs)]
    if diffs.size == 0:
        return None
    rec = reader["records"][0]
    try:
        ci = bootstrap_ci(diffs, n_resamples=rec.bootstrap.n_resamples, seed=0, confidence=rec.bootstrap.confidence,
                          method="percentile")
        low, high = json_float(ci.low), json_float(ci.high)
    except InvalidArgumentError:  # a single shared query
        low = high = None
    return {"value": json_float(float(diffs.mean())), "ci_low": low, "ci_high": high, "n_queries": int(diffs.size),
            "method": "paired percentile bootstrap over queries", "seed": 0}


def probe_commands(benchmark_path: str, name: str, fingerprint: str, split: str, results_dir: Path) -> list[str]:
    """The commands that add the query-blind probe to a board that lacks it, as they run from the
    folder the records' benchmark paths are relative to: train it (``--out`` a run folder under
    ``gradebench-out/runs``), then evaluate the run into ``results_dir`` on ``split``."""
    import shlex

    from gradebench.paths import RUNS_DIR

    run = RUNS_DIR / name / PROBE / fingerprint[:12]
    split_flag = [] if split == "test" else ["--split", split]
    train = ["gradebench", "train", "--benchmark", benchmark_path, "--scorer", PROBE, "--out", str(run)]
    evaluate = ["gradebench", "eval", "--run", str(run), *split_flag, "--results-dir", str(results_dir)]
    return [shlex.join(train), shlex.join(evaluate)]


def training_budget(records: list[EvalRecord]) -> str:
    """A system's training budget: ``<queries> queries x <epochs> epochs`` (``all`` queries without a
    cap; the epochs are the budget, early stopping may end sooner), or ``untrained``."""
    run = records[0].run
    if run is None:
        return "untrained"
    cap = run.options.get("max_train_queries")
    epochs = run.options.get("epochs")
    return f"{'all' if cap is None else cap} queries x {'?' if epochs is None else epochs} epochs"


def devices(records: list[EvalRecord]) -> str:
    """The device(s) the records ran on (``environment.torch_device``: ``cpu``, ``cuda (NVIDIA H100 ...)``;
    ``-`` without torch), joined by ``/`` when the seeds ran on several."""
    return " / ".join(sorted({r.environment.torch_device or "-" for r in records}))


def _one_per_seed(records: list[EvalRecord]) -> list[EvalRecord]:
    chosen: dict[int, EvalRecord] = {}
    for r in sorted(records, key=lambda r: r.id):
        chosen.setdefault(r.system_seed, r)
    return [chosen[s] for s in sorted(chosen)]


def _sort_value(m: dict[str, Any] | None) -> tuple[int, float]:
    v = None if m is None else m.get("value")
    return (1, 0.0) if v is None else (0, -float(v))


Cache = dict[str, dict[str, tuple[list[str], np.ndarray]]]


def _per_query(record: EvalRecord, metric: str, cache: Cache) -> tuple[list[str], np.ndarray]:
    """``(query ids, values)`` of one metric (each record's Parquet file is read once per leaderboard)."""
    table = cache.get(record.id)
    if table is None:
        table = cache[record.id] = read_per_query_arrays(record)
    return table[metric]


def _has_per_query(records: list[EvalRecord], metric: str, cache: Cache) -> bool:
    """Whether every record has per-query values of ``metric`` (a pack leaves some out:
    :data:`gradebench.experiments.pack.UNPACKED`)."""
    for r in records:
        if r.id not in cache:
            cache[r.id] = read_per_query_arrays(r)
    return all(metric in cache[r.id] for r in records)


def _per_query_matrix(records: list[EvalRecord], metric: str, cache: Cache) -> tuple[np.ndarray, np.ndarray]:
    """``(query_ids, [n_queries, n_seeds] values)`` over the queries every seed has, in the first seed's order."""
    ids, columns = align([_per_query(r, metric, cache) for r in records])
    return np.asarray(ids, dtype=object), np.column_stack(columns).astype(np.float64)


def _system(sid: str, records: list[EvalRecord], sort_by: str, cache: Cache, draws: BootstrapDraws) -> dict[str, Any]:
    first = records[0]
    metrics: dict[str, dict[str, Any]] = {}
    per_query_sort = None
    for name in first.metrics:
        mv = [r.metrics.get(name) for r in records]
        vals = [m.value for m in mv if m is not None and m.value is not None]
        entry: dict[str, Any] = {
            "value": json_float(np.mean(vals)) if vals else None,
            "seed_std": json_float(np.std(vals, ddof=1)) if len(vals) > 1 else None,
        }
        if len(records) == 1:
            entry.update(ci_low=mv[0].ci_low, ci_high=mv[0].ci_high)
        elif first.metrics[name].level == "corpus" or not _has_per_query(records, name, cache):
            lows = [m.ci_low for m in mv if m is not None and m.ci_low is not None]
            highs = [m.ci_high for m in mv if m is not None and m.ci_high is not None]
            full = len(lows) == len(records) and len(highs) == len(records)
            entry.update(ci_low=min(lows) if full else None, ci_high=max(highs) if full else None)
        else:
            _, values = _per_query_matrix(records, name, cache)
            entry.update(_seed_averaged_ci(mean_of_defined(values, axis=1), first, draws))
        metrics[name] = entry
    if sort_by in first.metrics and first.metrics[sort_by].level == "query" and _has_per_query(records, sort_by, cache):
        ids, values = _per_query_matrix(records, sort_by, cache)
        per_query_sort = (ids, mean_of_defined(values, axis=1))
    n_queries = min(r.benchmark.n_queries for r in records)
    return {"system_id": sid[:16], "system": system_label(first), "records": records, "metrics": metrics,
            "per_query": per_query_sort, "n_queries": n_queries}


def _seed_averaged_ci(values: np.ndarray, rec: EvalRecord, draws: BootstrapDraws) -> dict[str, float | None]:
    try:
        ci = bootstrap_ci(values, n_resamples=rec.bootstrap.n_resamples, seed=rec.bootstrap.seed,
                          confidence=rec.bootstrap.confidence, method=rec.bootstrap.method, nan_policy="omit",
                          draws=draws)
    except InvalidArgumentError:
        return {"ci_low": None, "ci_high": None}
    return {"ci_low": json_float(ci.low), "ci_high": json_float(ci.high)}


def _tests(systems: list[dict[str, Any]], sort_by: str, alpha: float) -> dict[str, tuple[Any, Any, Any]]:
    """``{system_id: (p, holm-adjusted p, tied_with_best)}`` for every system but the best."""
    if len(systems) < 2 or systems[0]["per_query"] is None:
        return {}
    best_ids, best_vals = systems[0]["per_query"]
    best = dict(zip(best_ids.tolist(), best_vals.tolist()))
    raw: dict[str, float] = {}
    untestable: list[str] = []
    for s in systems[1:]:
        if s["per_query"] is None:  # no per-query values of sort_by (a packed folder's query_separation_ratio)
            untestable.append(s["system_id"])
            continue
        ids, vals = s["per_query"]
        pairs = [(best[q], v) for q, v in zip(ids.tolist(), vals.tolist()) if q in best]
        a = np.array([p[0] for p in pairs], dtype=np.float64)
        b = np.array([p[1] for p in pairs], dtype=np.float64)
        try:
            raw[s["system_id"]] = paired_randomization_test(a, b, n_resamples=TEST_RESAMPLES, seed=0,
                                                            nan_policy="omit").p_value
        except InvalidArgumentError:  # fewer than 2 shared queries with defined values
            untestable.append(s["system_id"])
    out: dict[str, tuple[Any, Any, Any]] = {sid: (None, None, None) for sid in untestable}
    if raw:
        adjusted = holm(raw, alpha=alpha)
        for sid, p, adj, reject in zip(raw, adjusted.p_values, adjusted.adjusted, adjusted.reject, strict=True):
            out[sid] = (p, adj, not reject)
    return out


def _validity(rows: list[Row], sort_by: str) -> dict[str, Any] | None:
    probes = [r for r in rows if r.probe]
    rows = [r for r in rows if not r.human]
    if not rows:
        return None
    best = rows[0]
    if not probes:
        return {"probe": PROBE, "evaluated": False, "metric": sort_by}
    p = probes[0]
    pv, bv = p.metrics.get(sort_by, {}).get("value"), best.metrics.get(sort_by, {}).get("value")
    return {
        "probe": PROBE, "evaluated": True, "metric": sort_by, "value": pv,
        "ci_low": p.metrics.get(sort_by, {}).get("ci_low"), "ci_high": p.metrics.get(sort_by, {}).get("ci_high"),
        "best_system": best.system, "best_value": bv,
        "gap_to_best": None if pv is None or bv is None else json_float(bv - pv),
        "probe_is_best": p.is_best, "probe_tied_with_best": p.tied_with_best,
        "separation_ratio": p.metrics.get("separation_ratio", {}).get("value"),
    }
