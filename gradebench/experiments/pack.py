"""A results folder that travels: per-query values packed per benchmark, predictions kept local.

``gradebench eval`` writes, per record, ``<id>.json``, ``<id>.queries.parquet`` (per-query metric
values in long form, plus the record's per-query report figures, :mod:`gradebench.experiments.figures`)
and ``<id>.predictions.parquet`` (one row per candidate). That is the *loose* layout. A folder that
is committed (``leaderboard/results``) is *packed* by :func:`pack_results`:

* each benchmark folder's per-query tables become one Parquet file, :data:`PACK_NAME`, with one row
  per record x query: ``record_id`` and ``query_id`` (dictionary-encoded: each id is stored once),
  ``metric_set`` (the index of the record's metric names in the file's ``gradebench.pack.metric_sets``
  metadata), one float64 column per metric (null = the query is excluded) and one per report figure
  (``figure:<set>.<column>``; NaN = undefined, null = not computed for that record); rows sorted by
  record id, queries in list order. The values are the loose tables' own float64 values, so every
  figure read from them is the same, bit for bit. Each float column is stored as a dictionary or
  byte-stream-split, whichever is smaller (:func:`column_encodings`; the rule, :data:`PACK_ENCODING`,
  is in the metadata, and a pack written by an older rule is written again);
* the figures a record lacks (an old-layout record written before they existed) are computed from its
  predictions first;
* record JSON files are rewritten without indentation (the same JSON value), with the digests of their
  per-query rows and (when here) predictions file in ``files`` (:mod:`gradebench.experiments.verify`);
  a record whose rows or predictions do not match the digest it carries is refused (``RecordError``);
* the predictions stay where they are: a packed folder's ``<id>.predictions.parquet`` files are local
  (``leaderboard/results`` ignores them in git), read by ``gradebench query``'s ``predictions`` view
  and ``gradebench plot`` when present.

Readers (:func:`gradebench.experiments.store.read_per_query_arrays` and friends, the DuckDB views)
read a record's loose ``<id>.queries.parquet`` when it is there, else its rows of the pack.

Packing is idempotent and crash-consistent: it holds a lock on the folder (``.pack.lock``), writes the
new pack to a temp file renamed onto :data:`PACK_NAME` (every record of the folder, old pack rows
and loose tables merged; a pack row of a record whose JSON is gone is dropped), and only then deletes
the loose tables it folded in. Killed at any point, running it again finishes the job; a folder
already packed (by this encoding rule) is left byte for byte as it is.

Run it (on ``leaderboard/results`` after adding records written by ``gradebench eval``)::

    python -m gradebench.experiments.pack leaderboard/results
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gradebench.errors import GradebenchError, RecordError
from gradebench.experiments.figures import dense_predictions, figure_sets, query_figures
from gradebench.experiments.tables import (  # noqa: F401 - the layout's names, re-exported
    LOCK_NAME,
    PACK_NAME,
    PACK_SCHEMA_VERSION,
    UNPACKED,
    RecordValues,
    json_text,
    pack_path,
    pack_table,
    predictions_digest,
    read_loose,
    read_pack,
    record_values,
    rows_digest,
)


#: the rule :func:`write_pack` encodes columns by, kept in the pack's metadata: a pack written by an
#: older rule is written again by the next pack run (same values, smaller file)
PACK_ENCODING = "1"
_META_ENCODING = "gradebench.pack.encoding"
_WRITE_OPTIONS = {"compression": "zstd", "compression_level": 19, "write_statistics": False}


def write_pack(folder: Path, records: dict[str, RecordValues]) -> Path:
    """Write (temp file, rename) a folder's pack; deterministic bytes for the same values.

    Each float column is stored byte-stream-split where that makes it smaller than a dictionary
    (:func:`column_encodings`); the values read back are the same, bit for bit.
    """
    import pyarrow.parquet as pq

    from gradebench.locks import locked_temp_beside
    from gradebench.paths import publish
    from gradebench.stops import stop_point

    path = pack_path(folder)
    table = pack_table(records)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), _META_ENCODING: PACK_ENCODING})
    split = column_encodings(table)
    with locked_temp_beside(path) as tmp:
        pq.write_table(table, tmp, use_dictionary=[c for c in table.column_names if c not in split],
                       use_byte_stream_split=split or False, **_WRITE_OPTIONS)
        stop_point("record-writing")
        publish(tmp, path)
    return path


def column_encodings(table: Any) -> list[str]:
    """The float columns of ``table`` stored smaller byte-stream-split than with a dictionary.

    Per-query values that repeat (NDCG of 1.0, MRR of 1/k) compress best as a dictionary; values
    that rarely repeat (sums of predicted scores, divergences) compress better with their bytes
    split by position (exponents apart from mantissas). Each float column is written both ways,
    alone, and the smaller wins (ties: the dictionary), so the choice follows from the values.
    """
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    split = []
    for name in table.column_names:
        if not pa.types.is_floating(table.schema.field(name).type):
            continue
        column = table.select([name])
        sizes = []
        for bss in (False, True):
            buf = io.BytesIO()
            pq.write_table(column, buf, use_dictionary=not bss, use_byte_stream_split=[name] if bss else False,
                           **_WRITE_OPTIONS)
            sizes.append(buf.tell())
        if sizes[1] < sizes[0]:
            split.append(name)
    return split


def pack_encoding(folder: Path) -> str | None:
    """The :data:`PACK_ENCODING` rule a folder's pack was written by (None: before the rules)."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(pack_path(folder)).metadata or {}
    except (OSError, ValueError):
        return None
    value = meta.get(_META_ENCODING.encode())
    return None if value is None else value.decode()




@dataclass
class PackResult:
    """What :func:`pack_results` did, per results folder."""

    folders: list[str] = field(default_factory=list)
    packed: int = 0
    added: int = 0
    figures_computed: int = 0
    json_rewritten: int = 0
    loose_removed: int = 0
    without_values: list[str] = field(default_factory=list)
    without_figures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def summary(self) -> str:
        return (f"{self.packed} records in {len(self.folders)} packs ({self.added} added, "
                f"{self.figures_computed} with figures computed from predictions); {self.json_rewritten} JSON "
                f"files rewritten, {self.loose_removed} loose tables removed"
                + (f"; {len(self.without_values)} records without per-query values" if self.without_values else "")
                + (f"; {len(self.without_figures)} records without report figures (no predictions)"
                   if self.without_figures else ""))


def pack_folder(folder: str | Path, result: PackResult | None = None) -> PackResult:
    """Pack one benchmark folder (see the module docstring); returns what it did.

    Raises:
        Busy: another process is packing the folder.
        RecordError: a record, a loose table or the pack is unreadable.
    """
    from gradebench.experiments.store import read_record, record_files
    from gradebench.locks import FileLock, remove_stale_temps

    out = result or PackResult()
    start = out.figures_computed
    folder = Path(folder)
    lock = FileLock.acquire(folder / LOCK_NAME)
    try:
        remove_stale_temps(folder)
        files = record_files(folder.parent, benchmark=folder.name)
        old = read_pack(folder)
        values: dict[str, RecordValues] = {}
        folded: list[Path] = []
        for f in files:
            record = read_record(f)
            loose = record.per_query_path
            if loose is not None and loose.is_file():
                v = read_loose(loose)
                folded.append(loose)
                out.added += record.id not in old
            elif record.id in old:
                v = old[record.id]
            else:
                out.without_values.append(str(f))
                continue
            if record.files.per_query_sha256 not in (None, rows_digest(v)):
                raise RecordError("the record's per-query rows are not its own (their digest differs from "
                                  "files.per_query_sha256)", path=f, hint="evaluate it again, or delete its JSON")
            wanted = [c for s in figure_sets(record.benchmark.name) for c in s.column_names()]
            if any(c not in v.figures for c in wanted):
                pred = record.predictions_path
                if pred is not None and pred.is_file():
                    dense = dense_predictions(pred)
                    if [str(q) for q in dense.query_ids] != v.query_ids:
                        raise RecordError("the record's predictions and per-query values list other queries",
                                          path=pred, hint="evaluate again")
                    v.figures.update(query_figures(record.benchmark.name, dense))
                    out.figures_computed += 1
                else:
                    out.without_figures.append(str(f))
            values[record.id] = v
            out.json_rewritten += _compact_json(f, _digests(record, v, f))
        for f in record_files(folder.parent, benchmark=folder.name, kind="policy"):
            out.json_rewritten += _compact_json(f)
        if values:
            computed = out.figures_computed
            if (not pack_path(folder).is_file() or set(values) != set(old) or folded or computed != start
                    or _older_encoding(pack_encoding(folder))):
                write_pack(folder, values)
        elif pack_path(folder).is_file():
            pack_path(folder).unlink()
        for loose in folded:  # only once the pack holding their values is published
            loose.unlink(missing_ok=True)
            out.loose_removed += 1
        out.packed += len(values)
        out.folders.append(str(folder))
    finally:
        lock.release()
    return out


def _older_encoding(rule: str | None) -> bool:
    """Whether a pack written by ``rule`` is written again: one from before :data:`PACK_ENCODING`
    (a newer gradebench's rule is left alone, so two versions never rewrite a pack back and forth)."""
    return rule is None or not rule.isdigit() or int(rule) < int(PACK_ENCODING)


def _digests(record: Any, values: RecordValues, path: Path) -> dict[str, str | None]:
    """The record's ``files`` digests (:mod:`gradebench.experiments.verify`): of its per-query rows as
    packed, and of its predictions file when it is here (else the digest it carries, if any).

    Raises:
        RecordError: the predictions file here is not the one the record's digest names.
    """
    pred = record.predictions_path
    have = record.files.predictions_sha256
    if pred is not None and pred.is_file():
        got = predictions_digest(pred)
        if have not in (None, got):
            raise RecordError(f"the predictions file {pred.name} is not the record's (its sha256 differs from "
                              "files.predictions_sha256)", path=path, hint="evaluate it again, or delete its JSON")
        have = got
    return {"per_query_sha256": rows_digest(values), "predictions_sha256": have}


def _compact_json(path: Path, files: dict[str, Any] | None = None) -> int:
    """Rewrite a record's JSON as :func:`json_text` (the same JSON value, ``files`` updated with
    ``files``) unless it is already; 1 if rewritten."""
    from gradebench.experiments.store import write_text_atomic

    text = path.read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise RecordError(f"record is not valid JSON ({e})", path=path, hint="restore it, or delete it") from None
    if files:
        doc["files"] = {**doc.get("files", {}), **files}
    compact = json_text(doc)
    if text == compact:
        return 0
    write_text_atomic(path, compact)
    return 1


def pack_results(results_dir: str | Path) -> PackResult:
    """Pack every benchmark folder of ``results_dir`` (the migration from the loose layout).

    Raises:
        RecordError: ``results_dir`` is not a folder, or a file is unreadable.
    """
    root = Path(results_dir)
    if not root.is_dir():
        raise RecordError("no such results folder", path=root, hint="give a folder of records, e.g. leaderboard/results")
    out = PackResult()
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        from gradebench.experiments.store import record_files

        if record_files(root, benchmark=folder.name) or pack_path(folder).is_file():
            pack_folder(folder, out)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m gradebench.experiments.pack RESULTS_DIR...``: pack each folder, print a summary line."""
    args = sys.argv[1:] if argv is None else argv
    if not args or any(a in ("-h", "--help") for a in args):
        print("usage: python -m gradebench.experiments.pack RESULTS_DIR [RESULTS_DIR...]\n"
              "Packs each benchmark folder's per-query tables (computing the report figures from the predictions "
              "first), rewrites record JSON compactly; idempotent.")
        return 0 if args else 2
    try:
        for a in args:
            print(f"{a}: {pack_results(a).summary()}")
    except GradebenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
