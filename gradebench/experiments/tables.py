"""The per-query tables of records: a record's loose ``<id>.queries.parquet`` or its rows of its folder's pack.

What :mod:`gradebench.experiments.store` reads and :mod:`gradebench.experiments.pack` writes (see
there for the layouts): :class:`RecordValues` (a record's query ids, per-query metric values and
report figures), :func:`read_loose`, :func:`read_pack` (cached per file state), :func:`record_values`
(loose table first, else the pack), :func:`rows_digest` and :func:`predictions_digest` (what a record's
``files`` digests hold), :func:`pack_table` and :func:`json_text` (how a record's JSON is written).
Reading imports neither pandas nor, until a table is read, numpy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gradebench.errors import RecordError
from gradebench.hashing import sha256_file, sha256_hex, sha256_json

#: the prefix of a report figure's name in a per-query table (gradebench.experiments.figures)
FIGURE_PREFIX = "figure:"
#: the pack of one benchmark folder's per-query values
PACK_NAME = "per_query.parquet"
PACK_SCHEMA_VERSION = 1
LOCK_NAME = ".pack.lock"
_META_VERSION = "gradebench.pack.schema_version"
_META_SETS = "gradebench.pack.metric_sets"
_ID_COLUMNS = ("record_id", "query_id", "metric_set")
#: per-query metrics a pack leaves out: ``query_separation_ratio`` is a continuous value per query
#: (3.2 of the 7 MB the packs of ``leaderboard/results`` would hold) that no committed report reads;
#: its mean and CI stay in the record, and the leaderboard's CI over seeds falls back to the envelope
#: of the records' CIs (as for a corpus metric)
UNPACKED = ("query_separation_ratio",)


def numbers(array: Any, dtype: Any) -> Any:
    """A primitive Arrow array as a NumPy array of ``dtype`` (nulls as NaN), read from its buffer:
    ``Array.to_numpy`` imports pandas, which costs more than reading a record."""
    import numpy as np
    import pyarrow as pa

    if array.null_count or not (pa.types.is_integer(array.type) or pa.types.is_floating(array.type)):
        return np.asarray(array.to_pylist(), dtype=np.float64).astype(dtype, copy=False)
    data = np.frombuffer(array.buffers()[1], dtype=array.type.to_pandas_dtype())
    return data[array.offset:array.offset + len(array)].astype(dtype)


@dataclass
class RecordValues:
    """One record's per-query values: query ids in list order, metrics (file order) and figures."""

    query_ids: list[str]
    metrics: dict[str, Any]
    figures: dict[str, Any] = field(default_factory=dict)


def pack_path(folder: str | Path) -> Path:
    return Path(folder) / PACK_NAME


def json_text(doc: dict[str, Any]) -> str:
    """How a record's JSON is written: sorted keys, no indentation, one trailing newline."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"


# -- reading ------------------------------------------------------------------------------------------
def read_loose(path: Path) -> RecordValues:
    """A loose ``<id>.queries.parquet`` (long form: ``query_id, metric, value``; figure rows named
    ``figure:...``) as :class:`RecordValues`.

    Raises:
        RecordError: the file is missing or unreadable.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    _numbers = numbers
    try:
        table = pq.ParquetFile(path).read(columns=["query_id", "metric", "value"])
        metric = table.column("metric").combine_chunks()
        if not pa.types.is_dictionary(metric.type):
            metric = metric.dictionary_encode()
        codes = _numbers(metric.indices, np.int64)
        names = [str(n) for n in metric.dictionary.to_pylist()]
        ids = np.asarray(table.column("query_id").to_pylist(), dtype=object)
        values = _numbers(table.column("value").combine_chunks(), np.float64)
        valid = (np.asarray(metric.is_valid().to_pylist(), dtype=bool) if metric.null_count
                 else np.ones(len(codes), bool))
    except FileNotFoundError:
        raise RecordError("the record's per-query metrics file is missing", path=path,
                          hint="evaluate again (or delete the record's JSON)") from None
    except Exception as e:  # noqa: BLE001 - pyarrow raises many types for bad files
        raise RecordError(f"cannot read the record's per-query metrics ({type(e).__name__}: {e})", path=path,
                          hint="evaluate again") from None
    # every name once (a dictionary may repeat a value), groups in order of first appearance and
    # rows in file order within a group, as pandas' groupby(sort=False) gives them
    first = {n: i for i, n in reversed(list(enumerate(names)))}
    group = np.asarray([first[n] for n in names], dtype=np.int64)[codes] if len(codes) else codes
    group = np.where(valid, group, -1)
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(names) + 1) - 0.5)
    spans = {names[g]: order[bounds[g]:bounds[g + 1]] for g in range(len(names)) if bounds[g + 1] > bounds[g]}
    out = RecordValues(query_ids=[], metrics={})
    for name in sorted(spans, key=lambda n: spans[n][0]):
        rows = spans[name]
        target = out.figures if name.startswith(FIGURE_PREFIX) else out.metrics
        target[name] = values[rows]
        if not out.query_ids and not name.startswith(FIGURE_PREFIX):
            out.query_ids = ids[rows].tolist()
    if not out.query_ids and out.figures:
        out.query_ids = ids[spans[next(iter(out.figures))]].tolist()
    return out


_CACHE: dict[Path, tuple[tuple[int, int], dict[str, RecordValues]]] = {}


def read_pack(folder: str | Path) -> dict[str, RecordValues]:
    """``{record id: RecordValues}`` of a folder's pack (empty without one); cached per file state.

    Raises:
        RecordError: the pack is unreadable or of another version.
    """
    import pyarrow.parquet as pq

    path = pack_path(folder)
    try:
        st = path.stat()
    except FileNotFoundError:
        return {}
    key = (st.st_mtime_ns, st.st_size)
    hit = _CACHE.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        pf = pq.ParquetFile(path)
        meta = pf.schema_arrow.metadata or {}
        version = meta.get(_META_VERSION.encode(), b"").decode()
        if version != str(PACK_SCHEMA_VERSION):
            raise RecordError(f"per-query pack version {version or '?'} is not supported (this gradebench reads "
                              f"v{PACK_SCHEMA_VERSION})", path=path, hint="pack the folder again with this gradebench")
        sets = json.loads(meta[_META_SETS.encode()].decode())
        table = pf.read()
    except RecordError:
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow raises many types for bad files
        raise RecordError(f"cannot read the per-query pack ({type(e).__name__}: {e})", path=path,
                          hint="restore it from git, or pack the folder again") from None
    out = _split_pack(table, sets)
    _CACHE[path] = (key, out)
    return out


def _split_pack(table: Any, sets: list[list[str]]) -> dict[str, RecordValues]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rid = table.column("record_id").combine_chunks()
    rid_codes = numbers(rid.indices, np.int64) if hasattr(rid, "indices") else np.zeros(0, np.int64)
    rid_names = rid.dictionary.to_pylist() if hasattr(rid, "dictionary") else []
    if not hasattr(rid, "indices"):  # a plain string column
        rid_names, rid_codes = np.unique(np.asarray(rid.to_pylist(), dtype=object), return_inverse=True)
        rid_names = list(rid_names)
    qids = np.asarray(table.column("query_id").to_pylist(), dtype=object)
    mset = numbers(table.column("metric_set").combine_chunks(), np.int64)
    cols = {name: numbers(table.column(name).combine_chunks(), np.float64) for name in table.column_names
            if name not in _ID_COLUMNS}
    nulls = {name: numbers(pc.cast(table.column(name).combine_chunks().is_null(), pa.uint8()), np.uint8).astype(bool)
             for name in cols}  # read from the buffer: to_numpy would import pandas
    starts = np.flatnonzero(np.r_[True, rid_codes[1:] != rid_codes[:-1]]) if rid_codes.size else np.zeros(0, int)
    ends = np.r_[starts[1:], rid_codes.size]
    out: dict[str, RecordValues] = {}
    for a, b in zip(starts, ends):
        record = str(rid_names[rid_codes[a]])
        metrics = {}
        for entry in sets[int(mset[a])]:
            name, source = (entry, entry) if isinstance(entry, str) else entry
            metrics[name] = np.where(nulls[source][a:b], np.nan, cols[source][a:b]).astype(np.float64)
        figures = {f: cols[f][a:b].astype(np.float64) for f in cols
                   if f.startswith(FIGURE_PREFIX) and not nulls[f][a:b].all()}
        out[record] = RecordValues(query_ids=qids[a:b].tolist(), metrics=metrics, figures=figures)
    return out


def record_values(record: Any) -> RecordValues:
    """A record's per-query values: its loose table if there, else its rows of the folder's pack.

    Raises:
        RecordError: neither has the record, or a file is unreadable.
    """
    path = record.per_query_path
    if path is None:
        raise RecordError("the record has not been written or read from a file", path=record.id,
                          hint="read it with gradebench.experiments.store.read_record")
    if path.is_file():
        return read_loose(path)
    packed = read_pack(path.parent).get(record.id)
    if packed is None:
        raise RecordError("the record's per-query values are missing (no loose table, not in the folder's pack)",
                          path=path, hint="evaluate again (or delete the record's JSON)")
    return packed


# -- digests (gradebench.experiments.verify checks them) --------------------------------------------
def rows_digest(values: RecordValues) -> str:
    """The digest of a record's per-query rows: sha256 of canonical JSON of ``{"query_ids": [...],
    "columns": {name: sha256 of the column's little-endian float64 bytes}}`` over every metric and
    figure column but :data:`gradebench.experiments.tables.UNPACKED` (a pack leaves those out), NaN
    written as one bit pattern. The same for a record's loose table and its rows of the pack (which
    hold the same float64 values, aliases and float32 figures included)."""
    import numpy as np

    columns = {}
    for name, v in {**values.metrics, **values.figures}.items():
        if name in UNPACKED:
            continue
        a = np.asarray(v, dtype=np.float64)
        a = np.where(np.isnan(a), np.nan, a).astype("<f8")
        columns[name] = sha256_hex(a.tobytes())
    return sha256_json({"query_ids": [str(q) for q in values.query_ids], "columns": columns})


def predictions_digest(path: str | Path) -> str:
    """The sha256 of a predictions file's bytes (what ``files.predictions_sha256`` holds)."""
    return sha256_file(path)


# -- writing ------------------------------------------------------------------------------------------
def _metric_set(v: RecordValues) -> list[Any]:
    """The record's packed metric names; a metric whose values equal (bit for bit) an earlier one's is
    ``[name, earlier]`` and has no values of its own (``ndcg@10`` is ``ndcg@5`` on lists of 5)."""
    import numpy as np

    out: list[Any] = []
    seen: list[str] = []
    for m, values in v.metrics.items():
        if m in UNPACKED:
            continue
        same = next((e for e in seen if v.metrics[e].tobytes() == np.asarray(values, np.float64).tobytes()), None)
        out.append(m if same is None else [m, same])
        if same is None:
            seen.append(m)
    return out


def _f32_exact(values: Any) -> bool:
    import numpy as np

    ok = np.isnan(values) | (values.astype(np.float32).astype(np.float64) == values)
    return bool(ok.all())


def pack_table(records: dict[str, RecordValues]) -> Any:
    """The pack of ``{record id: values}`` as an Arrow table (rows by record id, then list order)."""
    import numpy as np
    import pyarrow as pa

    order = sorted(records)
    sets: list[list[Any]] = []
    set_of = {}
    metric_names: list[str] = []
    figure_names: list[str] = []
    for rid in order:
        ms = _metric_set(records[rid])
        if ms not in sets:
            sets.append(ms)
        set_of[rid] = sets.index(ms)
        metric_names.extend(m for m in ms if isinstance(m, str) and m not in metric_names)
        figure_names.extend(f for f in records[rid].figures if f not in figure_names)
    counts = [len(records[rid].query_ids) for rid in order]
    data: dict[str, Any] = {
        "record_id": pa.array([rid for rid, n in zip(order, counts) for _ in range(n)], pa.string()).dictionary_encode(),
        "query_id": pa.array([q for rid in order for q in records[rid].query_ids], pa.string()).dictionary_encode(),
        "metric_set": pa.array([set_of[rid] for rid, n in zip(order, counts) for _ in range(n)], pa.int16()),
    }
    for c in metric_names:  # null = excluded, or not the record's own column
        parts = [np.asarray(records[rid].metrics[c], np.float64) if c in sets[set_of[rid]] else np.full(n, np.nan)
                 for rid, n in zip(order, counts)]
        values = np.concatenate(parts) if parts else np.zeros(0)
        data[c] = pa.array(values, pa.float64(), mask=np.isnan(values))
    for c in sorted(figure_names):  # null = not computed for the record; NaN = undefined
        parts = [np.asarray(records[rid].figures[c], np.float64) if c in records[rid].figures else np.full(n, np.nan)
                 for rid, n in zip(order, counts)]
        present = [np.full(n, c in records[rid].figures) for rid, n in zip(order, counts)]
        values = np.concatenate(parts) if parts else np.zeros(0)
        kind = pa.float32() if _f32_exact(values) else pa.float64()  # lossless either way
        data[c] = pa.array(values, pa.float64(), mask=~np.concatenate(present) if present else None).cast(kind)
    meta = {_META_VERSION: str(PACK_SCHEMA_VERSION), _META_SETS: json.dumps(sets, separators=(",", ":"))}
    return pa.table(data).replace_schema_metadata(meta)
