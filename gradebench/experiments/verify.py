"""A record is checked before it is believed: its digests, its figures' ranges and its counts.

Every reader of evaluation records (``leaderboard``, ``query``, ``plot``, ``report``, ``sweep``) reads
them through :func:`check_record`: :func:`verified_records` lists the records that pass and leaves out
each one that does not with one :class:`~gradebench.errors.RecordWarning` line naming its file;
:func:`find_verified` refuses a record the user named (:class:`~gradebench.errors.RecordError`, exit 2).

What is checked, in order (the first failure is the one line):

1. the JSON against the record schema (:func:`gradebench.experiments.store.read_record`);
2. each metric's figures: a value is finite and inside the metric's
   :attr:`~gradebench.metrics.MetricSpec.value_range` (``ndcg@5`` in [0, 1], ``kendall`` in [-1, 1],
   separation ratios >= 0), so is its CI, ``ci_low <= ci_high``, and for a query-level metric (a mean
   over queries) ``ci_low <= value <= ci_high``; a corpus-level statistic's bootstrap may miss its
   value (``tier_eta2`` near 0 is biased upward in resamples), so only its order and range are
   checked; ``n + n_excluded`` is the benchmark's ``n_queries``;
3. the per-query rows (loose table or the folder's pack): their digest equals ``files.per_query_sha256``
   (:func:`~gradebench.experiments.tables.rows_digest`, when the record carries one), there is one row
   per query of the benchmark, each query-level metric has ``n`` defined values inside its range whose mean is the record's value;
4. with ``predictions=True`` and the predictions file present: its sha256 equals
   ``files.predictions_sha256``; a record without that digest (written before it existed) has its file's
   ``gradebench.record_id`` metadata and row count checked instead. An absent file is not a failure here
   (a packed folder keeps predictions out of git); a reader that needs it says so itself.

Tolerances: ranges and the CI's order allow ``1e-9`` (float sums), the mean ``1e-9`` relative.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gradebench.errors import GradebenchError, RecordError, RecordWarning
from gradebench.experiments.record import EvalRecord
from gradebench.experiments.store import find_record, read_record, record_files
from gradebench.experiments.tables import RecordValues, predictions_digest, record_values, rows_digest

_TOL = 1e-9
REDO = "the record was edited or its tables replaced: evaluate it again (or delete its JSON)"


# -- checks -------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def metric_range(name: str) -> tuple[float, float]:
    """The closed interval a metric's values lie in, by its canonical name; unbounded for a name this
    gradebench cannot parse (a plugin's metric that is not installed)."""
    from gradebench.metrics import parse_metric

    try:
        return parse_metric(name).value_range
    except GradebenchError:
        return (-math.inf, math.inf)


def _fail(record: EvalRecord, message: str, key: str | None = None) -> RecordError:
    return RecordError(message, path=record.path or record.id, key=key, hint=REDO)


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _inside(x: float, lo: float, hi: float) -> bool:
    return lo - _TOL <= x <= hi + _TOL


def check_figures(record: EvalRecord) -> None:
    """Step 2 of the module docstring (the JSON alone).

    Raises:
        RecordError: the first figure out of its range, a CI that does not hold its value, or a count
            that is not the benchmark's.
    """
    n_queries = record.benchmark.n_queries
    for name, m in record.metrics.items():
        lo, hi = metric_range(name)
        where = f"metrics.{name}"
        for field in ("value", "ci_low", "ci_high"):
            x = getattr(m, field)
            if x is None:
                continue
            if not math.isfinite(x):
                raise _fail(record, f"{name} {field} is {x}, not a finite number", f"{where}.{field}")
            if not _inside(x, lo, hi):
                raise _fail(record, f"{name} {field} = {_fmt(x)} is outside the metric's range "
                                    f"[{_fmt(lo)}, {_fmt(hi)}]", f"{where}.{field}")
        if m.ci_low is not None and m.ci_high is not None:
            if m.ci_low > m.ci_high + _TOL:
                raise _fail(record, f"{name} CI [{_fmt(m.ci_low)}, {_fmt(m.ci_high)}] is reversed", where)
            if m.level == "query" and m.value is not None and not _inside(m.value, m.ci_low, m.ci_high):
                raise _fail(record, f"{name} = {_fmt(m.value)} lies outside its CI "
                                    f"[{_fmt(m.ci_low)}, {_fmt(m.ci_high)}]", where)
        if m.n + m.n_excluded != n_queries:
            raise _fail(record, f"{name} counts {m.n} + {m.n_excluded} excluded queries, the benchmark "
                                f"split has {n_queries}", f"{where}.n")


def check_rows(record: EvalRecord, values: RecordValues) -> None:
    """Step 3 of the module docstring.

    Raises:
        RecordError: the rows' digest is not the record's, or their counts, ranges or means do not match
            the record's figures.
    """
    import numpy as np

    want = record.files.per_query_sha256
    if want is not None and rows_digest(values) != want:
        raise _fail(record, "the per-query rows are not the record's (their digest differs from "
                            "files.per_query_sha256)", "files.per_query_sha256")
    n_queries = record.benchmark.n_queries
    if len(values.query_ids) != n_queries:
        raise _fail(record, f"the per-query table has {len(values.query_ids)} queries, the record says "
                            f"{n_queries}", "benchmark.n_queries")
    for name, m in record.metrics.items():
        v = values.metrics.get(name)
        if m.level != "query" or v is None:
            continue
        defined = np.asarray(v, dtype=np.float64)
        defined = defined[~np.isnan(defined)]
        if defined.size != m.n:
            raise _fail(record, f"{name} has {defined.size} defined per-query values, the record says n = {m.n}",
                        f"metrics.{name}.n")
        lo, hi = metric_range(name)
        if defined.size and not (np.all(np.isfinite(defined)) and defined.min() >= lo - _TOL
                                 and defined.max() <= hi + _TOL):
            raise _fail(record, f"{name} has per-query values outside the metric's range [{_fmt(lo)}, {_fmt(hi)}]",
                        f"metrics.{name}")
        mean = float(defined.mean()) if defined.size else None
        if (mean is None) != (m.value is None) or (
                mean is not None and not math.isclose(mean, m.value, rel_tol=_TOL, abs_tol=1e-12)):
            raise _fail(record, f"{name} = {m.value} is not the mean of its per-query values ({mean})",
                        f"metrics.{name}.value")


def check_predictions(record: EvalRecord) -> None:
    """Step 4 of the module docstring; nothing to check without the predictions file.

    Raises:
        RecordError: the file is not the record's (digest, or without one its metadata and row count).
    """
    import pyarrow.parquet as pq

    path = record.predictions_path
    if path is None or not path.is_file():
        return
    want = record.files.predictions_sha256
    if want is not None:
        if predictions_digest(path) != want:
            raise _fail(record, f"the predictions file {path.name} is not the record's (its sha256 differs from "
                                "files.predictions_sha256)", "files.predictions_sha256")
        return
    try:
        meta = pq.read_metadata(path)
    except Exception as e:  # noqa: BLE001 - pyarrow raises many types for bad files
        raise _fail(record, f"cannot read the predictions file {path.name} ({type(e).__name__})") from None
    owner = (meta.metadata or {}).get(b"gradebench.record_id", b"").decode("utf-8", "replace")
    if owner != record.id:
        raise _fail(record, f"the predictions file {path.name} belongs to record {owner[:12] or '(none)'}",
                    "files.predictions")
    if meta.num_rows != record.benchmark.n_candidates:
        raise _fail(record, f"the predictions file has {meta.num_rows} rows, the record says "
                            f"{record.benchmark.n_candidates} candidates", "benchmark.n_candidates")


def check_record(record: EvalRecord, *, predictions: bool = False) -> EvalRecord:
    """Check a record read from a file (see the module docstring); returns it.

    Args:
        predictions: also check its predictions file, when present (``plot``, ``query``'s view).

    Raises:
        RecordError: the first failed check, in one line naming the record's file.
    """
    check_figures(record)
    check_rows(record, record_values(record))
    if predictions:
        check_predictions(record)
    return record


# -- readers ------------------------------------------------------------------------------------------
def warn_left_out(e: GradebenchError, what: str = "left out") -> None:
    """Say in one line (a :class:`RecordWarning`) that a record was left out (``what``), and why."""
    text = RecordError(f"{e.message}; {what}", path=e.path, key=e.key, hint=e.hint).one_line()
    warnings.warn(text, RecordWarning, stacklevel=3)


def read_verified(path: str | Path, *, predictions: bool = False) -> EvalRecord:
    """:func:`~gradebench.experiments.store.read_record` then :func:`check_record`.

    Raises:
        RecordError: unreadable, or a failed check.
    """
    return check_record(read_record(path), predictions=predictions)


def verified_records(results_dir: str | Path, *, benchmark: str | None = None, split: str | None = None,
                     predictions: bool = False, files: Iterable[Path] | None = None) -> list[EvalRecord]:
    """The evaluation records under ``results_dir`` that pass :func:`check_record` (optionally of one
    benchmark and split), sorted by benchmark then id; each one that does not is left out with a
    :class:`RecordWarning` naming its file. ``files`` overrides the listing."""
    out = []
    for f in (record_files(results_dir, benchmark=benchmark) if files is None else files):
        try:
            record = read_record(f)
            if split is not None and record.split != split:
                continue
            out.append(check_record(record, predictions=predictions))
        except RecordError as e:
            warn_left_out(e)
    return sorted(out, key=lambda r: (r.benchmark.name, r.id))


def find_verified(ref: Any, *, results_dir: str | Path, predictions: bool = False) -> EvalRecord:
    """:func:`~gradebench.experiments.store.find_record` then :func:`check_record`: a record the user
    named is refused (``RecordError``, exit 2) rather than left out."""
    record = find_record(ref, results_dir=results_dir)
    if isinstance(ref, EvalRecord) and record.path is None:
        check_figures(record)  # a record in memory, never written: its figures are all there is
        return record
    return check_record(record, predictions=predictions)


def existing_record(path: Path) -> EvalRecord | None:
    """A record already at ``path`` that passes its checks (a sweep keeps it), else None: no file, or
    a record that fails (said in one line; the sweep evaluates it again and the new record replaces it)."""
    if not path.is_file():
        return None
    try:
        return read_verified(path)
    except RecordError as e:
        warn_left_out(e, "evaluating it again")
        return None
