"""The record store: ``<results_dir>/<benchmark>/<id>.json`` (+ Parquet), listed and looked up.

Readers list only ``*.json`` files whose name is a record id; the temp files of writers in
progress (``.<name>.*.tmp``) are never seen, and a record's Parquet files exist before its
JSON does (see :mod:`gradebench.experiments.record`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gradebench.experiments.record import RECORD_SUFFIX, EvalRecord, RecordError, read_record

_ID_FILE = re.compile(r"^[0-9a-f]{64}\.json$")


def record_files(results_dir: str | Path, *, benchmark: str | None = None) -> list[Path]:
    """Record JSON files under ``results_dir`` (one benchmark's, if given), sorted by path."""
    root = Path(results_dir)
    if not root.is_dir():
        return []
    folders = [root / benchmark] if benchmark is not None else sorted(p for p in root.iterdir() if p.is_dir())
    out: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            out.extend(sorted(p for p in folder.iterdir() if _ID_FILE.match(p.name) and p.is_file()))
    return out


def list_records(
    results_dir: str | Path, *, benchmark: str | None = None, split: str | None = None,
) -> list[EvalRecord]:
    """Every record (optionally of one benchmark name and split), sorted by benchmark then id."""
    records = [read_record(p) for p in record_files(results_dir, benchmark=benchmark)]
    if split is not None:
        records = [r for r in records if r.split == split]
    return sorted(records, key=lambda r: (r.benchmark.name, r.id))


def find_record(ref: str | Path | EvalRecord, *, results_dir: str | Path) -> EvalRecord:
    """A record given as itself, a path to its JSON, or its id (a unique prefix of at least 6 hex digits).

    Raises:
        RecordError: no such record, or an ambiguous prefix (the candidates are listed).
    """
    if isinstance(ref, EvalRecord):
        return ref
    text = str(ref)
    p = Path(text)
    if p.suffix == RECORD_SUFFIX or p.is_file() or "/" in text:
        return read_record(p)
    if not re.fullmatch(r"[0-9a-f]{6,64}", text):
        raise RecordError(f"{text!r} is neither a record id nor a path to a record JSON",
                          hint="give an id (or a prefix of at least 6 hex digits) or a .json path")
    hits = [f for f in record_files(results_dir) if f.name.startswith(text)]
    if not hits:
        raise RecordError(f"no record with id {text}", path=results_dir,
                          hint="list ids with `gradebench query 'select id, scorer from results'` "
                          "or pass --results-dir")
    if len(hits) > 1:
        raise RecordError(f"record id prefix {text} is ambiguous ({len(hits)} records)", path=results_dir,
                          hint="give more digits: " + ", ".join(h.stem[:12] for h in hits[:5]))
    return read_record(hits[0])


def _parquet(path: Path | None, record: EvalRecord, what: str) -> Any:
    import pyarrow.parquet as pq

    if path is None or not path.is_file():
        raise RecordError(f"the record's {what} file is missing", path=path or record.id,
                          hint="evaluate again (or delete the record's JSON)")
    try:
        return pq.read_table(path).to_pandas()
    except Exception as e:  # noqa: BLE001 - pyarrow raises many types for bad files
        raise RecordError(f"cannot read the record's {what} ({type(e).__name__}: {e})", path=path,
                          hint="evaluate again") from None


def read_predictions(record: EvalRecord) -> Any:
    """The record's per-candidate predictions as a pandas DataFrame."""
    return _parquet(record.predictions_path, record, "predictions")


def read_per_query(record: EvalRecord, metric: str | None = None) -> Any:
    """The record's per-query metric values (long form), optionally of one metric."""
    df = _parquet(record.per_query_path, record, "per-query metrics")
    if metric is not None:
        df = df[df["metric"].astype(str) == metric]
    return df
