"""``check_validity()``: a benchmark's validity figures, and a trained reader against its shortcuts.

What ``gradebench validity DIR [--run RUN]`` prints (``--json``: :meth:`ValidityCheck.to_dict`).

Without a run it reports the figures stored in the benchmark's manifest
(:mod:`gradebench.experiments.validity`, measured by ``gradebench build``) and the commands that
measure them where they are missing or stale, and that check a reader. With ``split`` another
held-out split than ``test`` (and no run) it measures the figures' attackers there instead,
trained as for them, in the stored figures' mode or ``mode``, and stores nothing: for tuning a
recipe on validation; ``tier_pairs`` then holds each one's agreement per pair of tiers.

With a run (a folder of ``gradebench train`` on this benchmark, loaded as ``gradebench eval --run``
loads it: :func:`gradebench.experiments.runs.load_run`), it scores the held-out lists the figures
use (the first :data:`~gradebench.experiments.validity.MAX_TEST` lists of ``split``, in stored
order) with the reader and with every attacker of the figures, trained exactly as for them on the
train split (:func:`gradebench.experiments.validity.attacker_values`: the query-blind probe, the
label-aware probe where the queries carry a label, BM25, and the two LightGBM ceilings where
LightGBM is installed). On the ``test`` split the attackers' figures are the stored ones. For each
metric of :data:`~gradebench.experiments.validity.VALIDITY_METRICS` (pairwise agreement, NDCG@5),
the best attacker is the one with the highest mean, and the reader's margin over it is the mean
per-query difference with a paired percentile bootstrap CI over the queries both define
(:func:`gradebench.stats.paired_bootstrap_test`, seeded from the benchmark's and the run's
fingerprints and the split: no global RNG). ``line`` gives the outcome on pairwise agreement with
the leaderboard verdict's rule (:func:`gradebench.experiments.leaderboard.outcome`), and
``tier_pairs`` the reader's and each attacker's agreement per pair of tiers.

With a record instead (``--record``: an evaluation record of ``gradebench eval`` on this benchmark,
with its per-candidate predictions beside it, checked against the digest the record carries), the
reader's scores are read from the predictions rather than computed again: a run trained on another
machine (a GPU) is checked where only its record travelled. The split is the record's; the
bootstrap seed is the one ``--run`` would use for the record's run (its run fingerprint), so the
same scores give the same margin either way.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gradebench.errors import BenchmarkError, InvalidArgumentError, RecordError, RunError, UnknownNameError
from gradebench.paths import RUNS_DIR
from gradebench.scorers.base import ProgressFn

#: the metric the outcome (``line``) is read on: the figures' headline
PRIMARY = "pairwise_agreement"
#: the confidence of the margin's CI
CONFIDENCE = 0.95
#: the reader the printed commands train when no run is given (a cheap neural reader)
HINT_SCORER = "hashed-mlp"
#: what each attacker is called in the output, by figure key
ATTACKER_NAMES = {
    "query_blind": "query-blind probe",
    "label_aware": "label-aware blind probe",
    "bm25": "BM25",
    "lexical_ceiling_dense": "lexical ceiling, dense",
    "lexical_ceiling_strong": "lexical ceiling, strong",
}


@dataclass
class ValidityCheck:
    """What :func:`check_validity` returns and ``gradebench validity --json`` prints."""

    #: name, fingerprint and path of the benchmark
    benchmark: dict[str, Any]
    split: str
    #: the figures stored in the manifest (None: never measured)
    figures: dict[str, Any] | None
    #: whether the stored figures are missing or of an older version (``gradebench validity DIR --measure``)
    stale: bool
    #: the run's folder, scorer, loss and fingerprint, with its figures on the lists (None without a run)
    reader: dict[str, Any] | None = None
    #: the attackers' figures on the same lists, by figure key (empty with the stored figures)
    attackers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: per metric: the best attacker and the reader's margin over it with its CI (empty without a run)
    margins: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the lists scored: how many, whether the figures' lists were carved by query-id hash, and
    #: (measured on another split) the mode; None with the stored figures
    lists: dict[str, Any] | None = None
    #: the outcome on :data:`PRIMARY` in words (None without a run)
    line: str | None = None
    #: commands as they run from here, by purpose: ``measure`` (the figures are missing or stale)
    #: and ``check_reader`` (train a reader, then check it); each runs after the one before it
    commands: dict[str, list[str]] = field(default_factory=dict)
    #: with a reader (under ``reader``, first) or measured on another split: each attacker's pairwise
    #: agreement per pair of tiers (or grades), pooled over the pairs
    #: (:func:`~gradebench.experiments.validity.grade_pairs`); empty with the stored figures
    tier_pairs: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_validity(
    benchmark: str | Path,
    *,
    run: str | Path | None = None,
    record: str | Path | None = None,
    split: str | None = None,
    n_resamples: int = 1000,
    progress: ProgressFn | None = None,
    mode: str | None = None,
) -> ValidityCheck:
    """The validity figures of ``benchmark``, and with ``run`` (or ``record``) the reader's check
    against the shortcuts.

    Args:
        benchmark: a folder written by ``gradebench build``.
        run: a finished run folder of ``gradebench train`` on this benchmark, or None.
        record: instead of ``run``, an evaluation record's JSON file of this benchmark whose
            predictions file is beside it: the reader's scores are read from it.
        split: the held-out split scored with ``run`` (not ``train``: the attackers learn from it);
            None: ``test``. With ``record``: None is the record's split, and another one is refused.
            Without either: None or ``test`` reports the stored figures; another held-out split
            has them measured there (nothing stored).
        n_resamples: bootstrap resamples of each margin's CI (unused without a reader).
        progress: optional ``progress(done, total, message)`` while a run is checked or figures
            are measured.
        mode: with ``split`` another held-out split and no reader: ``fast`` or ``full``, as
            ``gradebench build --validity``; None: the stored figures' mode, else ``fast``.

    Raises:
        BenchmarkError: not a benchmark folder (or a folder holding builds).
        UnknownNameError: no such split (the message names the benchmark's splits).
        InvalidArgumentError: ``split`` is ``train`` (with a reader, or measuring), the benchmark has
            no train split, or ``mode`` is given without measuring on another split.
        RunError: the run is missing, unfinished, corrupt, or trained on another benchmark.
        RecordError: the record is unreadable, fails its checks, has no predictions here, or is
            of another benchmark or split.
    """
    from gradebench.benchmark.info import info
    from gradebench.experiments.build import check_benchmark_folder
    from gradebench.experiments.validity import check_mode, is_stale
    from gradebench.stats._checks import check_n_resamples

    if run is not None and record is not None:
        raise InvalidArgumentError("--run and --record conflict: give one",
                                   hint="--run scores the lists with a trained run; --record reads a record's "
                                        "predictions")
    folder = check_benchmark_folder(benchmark)
    manifest = info(folder)
    name, fp = manifest["recipe"]["name"], manifest["fingerprint"]
    splits = list(manifest["splits"])
    shown = _q(benchmark)  # the benchmark folder as the user gave it
    reader = run if run is not None else record
    rec = None if record is None else _read_record(Path(record), name, fp, split, shown)
    tuning = reader is None and split not in (None, "test")  # figures measured on another split
    tunable = _tunable(splits)  # a held-out split other than test, to measure on
    if mode is not None:
        mode = check_mode(mode)
        if not tuning:
            raise InvalidArgumentError(
                "--validity sets how figures are measured on another split: give it with --split SPLIT alone",
                key="validity", hint=f"gradebench validity {shown} --split {tunable} --validity {mode}" if tunable
                else f"gradebench validity {shown} (the stored figures; this benchmark has no other held-out split)")
    if split is None:
        split = "test" if rec is None else rec.split
    if split not in splits:
        again = f"gradebench validity {shown}" + ("" if reader is None else
                                                  f" {'--run' if run is not None else '--record'} {_q(reader)}")
        other = _held_out(splits) if reader is not None else tunable
        raise UnknownNameError(f"benchmark {name} has no split {split!r}", path=folder,
                               hint=f"its splits: {', '.join(splits)}"
                                    + (f"; e.g. {again} --split {other}" if other else f"; e.g. {again}"))
    n_resamples = check_n_resamples(n_resamples)
    figures = manifest.get("validity")
    stale = is_stale(figures, (figures or {}).get("mode", "fast"))
    result = ValidityCheck(benchmark={"name": name, "fingerprint": fp, "path": str(folder)}, split=split,
                           figures=figures, stale=stale)
    if reader is None and not tuning:
        result.commands = _commands(shown, name, fp, stale, split)
        return result
    if split == "train" and rec is not None:
        raise InvalidArgumentError("the record is of the train split, which the attackers learn from; check "
                                   "a record of a held-out split", path=record,
                                   hint=f"gradebench eval --run RUN_DIR --split {_held_out(splits) or 'test'}, "
                                        f"then gradebench validity {shown} --record RECORD_JSON")
    if split == "train" and reader is not None:
        raise InvalidArgumentError("--split train: the attackers learn from the train split; check a reader on "
                                   "a held-out split", hint=f"give --split {_held_out(splits) or 'test'}")
    if split == "train":
        raise InvalidArgumentError("--split train: the attackers learn from the train split; measure them on a "
                                   "held-out split", hint=f"gradebench validity {shown} --split {tunable}"
                                   if tunable else f"gradebench validity {shown} (the stored figures)")
    if "train" not in splits:
        raise InvalidArgumentError(f"benchmark {name} has no train split for the attackers to learn from",
                                   path=folder, hint="check a reader on a benchmark with a train split"
                                   if reader is not None else f"gradebench validity {shown} (the stored figures)")
    if reader is None:
        return _measure_split(result, folder, manifest, progress, mode)
    if run is not None:
        return _check_run(result, folder, manifest, Path(run), shown, n_resamples, progress)
    return _check_run(result, folder, manifest, None, shown, n_resamples, progress, record=rec)


def _read_record(path: Path, name: str, fp: str, split: str | None, shown: str) -> Any:
    """The record at ``path``, checked, with its predictions here; of this benchmark (and of
    ``split`` unless it is None)."""
    from gradebench.experiments.store import PREDICTIONS_HINT, PREDICTIONS_MISSING
    from gradebench.experiments.verify import read_verified

    record = read_verified(path, predictions=True)
    where = record.predictions_path
    if where is None or not where.is_file():
        raise RecordError(PREDICTIONS_MISSING, path=where or path, hint=PREDICTIONS_HINT)
    b = record.benchmark
    if b.fingerprint != fp:
        raise RecordError(f"the record is of {b.name} ({b.fingerprint[:12]}), not of {name} ({fp[:12]})", path=path,
                          hint=f"check it on its own benchmark (gradebench validity BENCHMARK_DIR --record "
                               f"{_q(path)}, BENCHMARK_DIR the build of {b.name} {b.fingerprint[:12]})")
    if split is not None and record.split != split:
        raise RecordError(f"the record is of split {record.split!r}, not {split!r}", path=path,
                          hint=f"gradebench validity {shown} --record {_q(path)} --split {record.split}")
    return record


def _check_run(result: ValidityCheck, folder: Path, manifest: dict[str, Any], run: Path | None, shown: str,
               n_resamples: int, progress: ProgressFn | None, record: Any = None) -> ValidityCheck:
    from gradebench.benchmark.lists import open_benchmark
    from gradebench.experiments.runs import load_run
    from gradebench.experiments.validity import attacker_values, grade_pairs, per_query

    name, fp, split = manifest["recipe"]["name"], manifest["fingerprint"], result.split
    if run is not None:
        scorer, info = load_run(run)  # the code path of `gradebench eval --run`
        if info.benchmark_fingerprint != fp:
            raise RunError(
                f"the run was trained on {info.benchmark} ({info.benchmark_fingerprint[:12]}), not on {name} "
                f"({fp[:12]})", path=run,
                hint=f"check it on its own benchmark (gradebench validity {_q(info.benchmark_path)} --run "
                     f"{_q(run)}), or train a run on this one (gradebench train --benchmark {shown} --scorer "
                     f"{info.scorer} --out RUN_DIR)")
    mode = (result.figures or {}).get("mode", "fast")
    read, step, total, has_ceilings = _attacker_lists(folder, manifest, split, mode, progress, 6)
    test = read["test"]
    if run is not None:
        step(f"loading {info.scorer}")
        lists = _same_lists(open_benchmark(folder), split, test.query_ids, scorer.list_columns())
        scorer.prepare()
        reader_scores = _score(scorer, lists, step, progress)
        reader = {"run_dir": str(run), "scorer": info.scorer, "loss": info.loss,
                  "run_fingerprint": info.run_fingerprint, "seed": int(info.seed)}
    else:
        step(f"reading the predictions of record {record.id[:12]}")
        lists = _same_lists(open_benchmark(folder), split, test.query_ids, ())
        step(f"scoring {lists.n_candidates} candidates from the record's predictions")
        reader_scores = _recorded_scores(record, lists)
        reader = {"record": str(record.path), "record_id": record.id, "scorer": record.scorer.name,
                  "loss": record.loss.name,
                  "run_fingerprint": None if record.run is None else record.run.run_fingerprint,
                  "seed": int(record.system_seed)}
    reader_values = per_query(reader_scores, lists)
    pairs: dict[str, dict[str, dict[str, Any]]] = {"reader": grade_pairs(reader_scores, lists)}
    values = attacker_values(read, mode=mode, step=step, pairs=pairs)
    result.tier_pairs = _named_pairs(pairs, manifest)
    step("bootstrap")
    seed = _seed(fp, reader["run_fingerprint"] or reader.get("record_id"), split)
    result.reader = {**reader, **_figures(reader_values)}
    result.attackers = {k: {"name": ATTACKER_NAMES[k], **_figures(v)} for k, v in values.items()}
    result.lists = {"n_queries": int(test.n_queries), "carved": bool(read["carved"]),
                    "label_aware": read["query_label"] is not None, "lexical_ceilings": has_ceilings}
    result.margins = {m: _margin(reader_values[m], values, m, n_resamples=n_resamples, seed=seed)
                      for m in reader_values}
    result.line = _line(result.margins[PRIMARY], result.reader)
    if progress is not None:
        progress(total, total, "done")
    return result


def _attacker_lists(folder: Path, manifest: dict[str, Any], split: str, mode: str, progress: ProgressFn | None,
                    steps: int) -> tuple[dict[str, Any], Any, int, bool]:
    """The figures' lists with ``split`` held out (:func:`~gradebench.experiments.validity.read_attacker_lists`),
    the progress stepper over ``steps`` steps plus one per attacker beyond the query-blind probe and
    BM25, its total, and whether LightGBM's ceilings are measured."""
    from gradebench.benchmark.engine import builder_of
    from gradebench.experiments.validity import has_lightgbm, read_attacker_lists

    name, fp = manifest["recipe"]["name"], manifest["fingerprint"]
    has_ceilings = has_lightgbm()
    query_label = getattr(builder_of(manifest), "query_label", None)
    total = steps + (1 if query_label else 0) + (2 if has_ceilings else 0)
    step = _stepper(progress, total)
    step("reading the lists")
    files = [n for v in manifest["splits"].values() for n in v["files"]]
    read = read_attacker_lists(folder, files, benchmark=name, fingerprint=fp, query_label=query_label, mode=mode,
                               split=split)
    if read["test"].n_queries == 0:
        raise InvalidArgumentError(f"split {split!r} of {name} has no queries", path=folder,
                                   hint="give another --split")
    return read, step, total, has_ceilings


def _measure_split(result: ValidityCheck, folder: Path, manifest: dict[str, Any],
                   progress: ProgressFn | None, mode: str | None) -> ValidityCheck:
    """The attackers of the figures trained as for them and scored on ``result.split`` (a held-out
    split other than ``test``: tuning a recipe on validation), with their agreement per tier pair;
    nothing is stored."""
    from gradebench.experiments.validity import attacker_values, check_mode

    mode = check_mode(mode if mode is not None else (result.figures or {}).get("mode", "fast"))  # stored: checked
    read, step, total, has_ceilings = _attacker_lists(folder, manifest, result.split, mode, progress, 3)
    pairs: dict[str, dict[str, dict[str, Any]]] = {}
    values = attacker_values(read, mode=mode, step=step, pairs=pairs)
    result.attackers = {k: {"name": ATTACKER_NAMES[k], **_figures(v)} for k, v in values.items()}
    result.tier_pairs = _named_pairs(pairs, manifest)
    result.lists = {"n_queries": int(read["test"].n_queries), "carved": bool(read["carved"]),
                    "label_aware": read["query_label"] is not None, "lexical_ceilings": has_ceilings, "mode": mode}
    if progress is not None:
        progress(total, total, "done")
    return result


def _named_pairs(pairs: dict[str, dict[str, Any]], manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``pairs`` (per system, :func:`~gradebench.experiments.validity.grade_pairs`) with each pair of
    grades named by the recipe's tiers where it has them."""
    tiers = {float(t["relevance"]): t["name"] for t in manifest["recipe"].get("tiers") or ()
             if isinstance(t, dict) and "name" in t and "relevance" in t}
    return {k: {_pair_name(p, tiers): v for p, v in by.items()} for k, by in pairs.items()}


def _pair_name(pair: str, tiers: dict[float, str]) -> str:
    """``"3>2"`` as ``"own>sibling"`` where the recipe names its tiers' grades."""
    hi, lo = (float(g) for g in pair.split(">"))
    return f"{tiers[hi]}>{tiers[lo]}" if hi in tiers and lo in tiers else pair


def _same_lists(bench: Any, split: str, query_ids: np.ndarray, columns: Any) -> Any:
    """The lists of ``split`` with the query ids ``query_ids``, in that order, with the reader's ``columns``."""
    from gradebench.benchmark.lists import OPTIONAL_COLUMNS

    lists = bench.lists(split, columns=(*OPTIONAL_COLUMNS, *columns))
    at = {q: i for i, q in enumerate(lists.query_ids.tolist())}
    return lists.take(np.array([at[q] for q in query_ids.tolist()], dtype=np.int64))


def _score(scorer: Any, lists: Any, step: Any, progress: ProgressFn | None) -> np.ndarray:
    from gradebench.experiments.evaluate import _pass_progress
    from gradebench.scorers.base import check_scores
    from gradebench.ticks import reporting

    name = scorer.describe()["name"]
    message = f"scoring {lists.n_candidates} candidates with {name}"
    step(message)
    with reporting(_pass_progress(progress, step, message)):
        return check_scores(scorer.score(lists), lists, who=name)


def _recorded_scores(record: Any, lists: Any) -> np.ndarray:
    """The record's predictions on ``lists`` (every candidate must have one)."""
    import pyarrow.parquet as pq

    table = pq.read_table(record.predictions_path, columns=["query_id", "candidate_id", "prediction"])
    if table.column("prediction").null_count:
        raise RecordError(f"the record's predictions hold {table.column('prediction').null_count} empty scores",
                          path=record.predictions_path, hint="evaluate the run again and give the new record")
    got = dict(zip(zip(table.column("query_id").to_pylist(), table.column("candidate_id").to_pylist()),
                   table.column("prediction").to_pylist()))
    if len(got) != table.num_rows:
        raise RecordError(f"the record's predictions score {table.num_rows - len(got)} (query, candidate) pairs "
                          f"twice", path=record.predictions_path, hint="evaluate the run again and give the new record")
    rows, cols = lists.flat_index()
    scores = np.zeros(lists.mask.shape, dtype=np.float64)
    for r, c, q, cand in zip(rows.tolist(), cols.tolist(), lists.query_ids[rows].tolist(),
                             lists.candidate_ids[rows, cols].tolist()):
        value = got.get((q, cand))
        if value is None:
            raise RecordError(f"the record has no prediction for candidate {cand} of query {q}: it scored other "
                              f"lists than the {lists.split} split of this build", path=record.path,
                              hint="evaluate the run on this benchmark's split (gradebench eval --run RUN_DIR "
                                   "--benchmark BENCHMARK_DIR), then give that record")
        scores[r, c] = value
    return scores


def _figures(values: dict[str, np.ndarray]) -> dict[str, float | None]:
    from gradebench.experiments.validity import figure_of

    return {m: figure_of(v) for m, v in values.items()}


def _margin(reader: np.ndarray, attackers: dict[str, dict[str, np.ndarray]], metric: str, *, n_resamples: int,
            seed: int) -> dict[str, Any]:
    """The best attacker on ``metric`` (highest mean; the first of the figures' order on a tie) and
    the reader's margin over it: mean per-query difference, paired bootstrap CI over the queries both define."""
    from gradebench.experiments.record import json_float
    from gradebench.experiments.validity import figure_of
    from gradebench.stats import paired_bootstrap_test

    means = {k: figure_of(v[metric]) for k, v in attackers.items()}
    ranked = [k for k in attackers if means[k] is not None]
    best = max(ranked, key=lambda k: means[k]) if ranked else None
    out: dict[str, Any] = {"best_attacker": best, "best_attacker_name": ATTACKER_NAMES.get(best),
                           "best_attacker_value": None if best is None else means[best], "value": None,
                           "ci_low": None, "ci_high": None, "p_value": None, "n_queries": 0,
                           "confidence": CONFIDENCE, "method": "paired percentile bootstrap over queries",
                           "n_resamples": n_resamples, "seed": seed}
    if best is None:
        return out
    both = ~np.isnan(reader) & ~np.isnan(attackers[best][metric])
    out["n_queries"] = int(both.sum())
    if out["n_queries"] == 0:
        return out
    if out["n_queries"] == 1:  # no interval from a single query
        out["value"] = json_float(round(float(reader[both][0] - attackers[best][metric][both][0]), 6))
        return out
    test = paired_bootstrap_test(reader, attackers[best][metric], n_resamples=n_resamples, seed=seed,
                                 confidence=CONFIDENCE, ci_method="percentile", nan_policy="omit")
    out.update(value=json_float(round(test.statistic, 6)), ci_low=json_float(round(test.ci.low, 6)),
               ci_high=json_float(round(test.ci.high, 6)), p_value=json_float(round(test.p_value, 6)))
    return out


def _line(margin: dict[str, Any], reader: dict[str, Any]) -> str:
    """The outcome on :data:`PRIMARY` in words, by the leaderboard verdict's rule."""
    from gradebench.experiments.leaderboard import READS, SOLVED, outcome

    who = reader["scorer"] + (f" + {reader['loss']}" if reader.get("loss") else "")
    if margin["best_attacker"] is None:
        return "no verdict: no attacker could be measured"
    if margin["value"] is None:
        return "no verdict: no query where both the reader and the best attacker are defined"
    ci = "" if margin["ci_low"] is None else f" [{margin['ci_low']:.3f}, {margin['ci_high']:.3f}]"
    gap = f"{who} is {margin['value']:+.3f}{ci} from the best attacker ({margin['best_attacker_name']})"
    found = outcome(margin["ci_low"], margin["ci_high"], margin["best_attacker_value"])
    if found == READS:
        return f"the reader beats the best shortcut: {gap}"
    if found == SOLVED:
        return f"solved by a shortcut: not a reading benchmark ({gap})"
    return f"not shown to need reading: {gap}"


def _seed(fingerprint: str, run_fingerprint: str, split: str) -> int:
    """The bootstrap seed: derived from what is compared (the same check, the same CI)."""
    from gradebench.hashing import choice_index

    return choice_index(2**31 - 1, "validity-check", fingerprint, run_fingerprint, split)


def _stepper(progress: ProgressFn | None, total: int):
    from gradebench.experiments.evaluate import _stepper as stepper

    return stepper(progress, total)


def _q(path: str | Path) -> str:
    return shlex.quote(str(path))


def _tunable(splits: list[str]) -> str | None:
    """A held-out split other than ``test`` (``validation`` first), to measure the figures on."""
    others = [s for s in splits if s not in ("train", "test")]
    return "validation" if "validation" in others else (others[0] if others else None)


def _held_out(splits: list[str]) -> str | None:
    return next((s for s in ("test", "validation") if s in splits), None)


def _commands(shown: str, name: str, fp: str, stale: bool, split: str) -> dict[str, list[str]]:
    """The commands that measure missing figures and that check a reader, as they run from here."""
    out: dict[str, list[str]] = {}
    if stale:
        out["measure"] = [f"gradebench validity {shown} --measure"]
    if split != "train":
        run = _q(RUNS_DIR / name / HINT_SCORER / fp[:12])
        split_flag = "" if split == "test" else f" --split {split}"
        out["check_reader"] = [f"gradebench train --benchmark {shown} --scorer {HINT_SCORER} --out {run}",
                               f"gradebench validity {shown} --run {run}{split_flag}"]
    return out


def measure(benchmark: str | Path) -> ValidityCheck:
    """Measure the figures of ``benchmark`` again (in the mode of the stored ones, else ``fast``),
    store them in its manifest and card as ``gradebench build`` does, and report them."""
    from gradebench.benchmark.info import info
    from gradebench.experiments.build import add_validity, check_benchmark_folder

    folder = check_benchmark_folder(benchmark)
    mode = (info(folder).get("validity") or {}).get("mode", "fast")
    if mode not in ("fast", "full"):
        raise BenchmarkError(f"the stored figures have an unknown mode {mode!r}", path=folder,
                             hint="rebuild with `gradebench build ... --force`")
    add_validity(folder, mode=mode)
    return check_validity(benchmark)
