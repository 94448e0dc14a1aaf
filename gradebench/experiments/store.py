"""The record store: every record of every kind, written, read, listed and looked up in one place.

A record has a *kind* (:data:`KINDS`):

* ``evaluation`` -- one scorer on one split (:class:`~gradebench.experiments.record.EvalRecord`):
  ``<results_dir>/<benchmark>/<id>.json``, written after its two Parquet files
  ``<id>.predictions.parquet`` and ``<id>.queries.parquet``;
* ``policy`` -- one policy-optimisation run (:class:`~gradebench.experiments.policy_record.PolicyRecord`):
  ``<results_dir>/<benchmark>/<id>.policy.json``.

Records of both kinds lie side by side. Each file carries its kind in its ``kind`` field
(``"gradebench.result"`` or ``"gradebench.policy"``; a record without the field is an
evaluation record) and the file name says it too, so a lister of one kind never opens the other's
files. Every file is written to a temp file beside it and renamed onto its name, the JSON last,
so readers (which list only files named ``<64 hex>.json`` or ``<64 hex>.policy.json``) never see
a record without its tables nor a writer's temp files (``.<name>.*.tmp``), and any number of
processes can write into one results folder at once.

A writer holds a lock on its temp file until the rename (:func:`gradebench.locks.locked_temp_beside`),
so the temp files of a killed writer are told apart from a live one's: each write into a
benchmark's folder first removes the temp files nobody holds (:func:`gradebench.locks.remove_stale_temps`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from gradebench.errors import InvalidArgumentError, RecordError
from gradebench.experiments.policy_record import (
    POLICY_KIND,
    POLICY_SCHEMA_VERSION,
    POLICY_SCHEMA_VERSIONS,
    POLICY_SUFFIX,
    PolicyRecord,
)
from gradebench.experiments.record import RECORD_SUFFIX, RESULT_SCHEMA_VERSION, EvalRecord
from gradebench.experiments.tables import (
    json_text,
    numbers,
    predictions_digest,
    read_loose,
    record_values,
    rows_digest,
)
from gradebench.locks import locked_temp_beside, remove_stale_temps
from gradebench.names import check_name
from gradebench.paths import RESULTS_DIR, publish
from gradebench.stops import stop_point

#: where the CLI and the Python API write records unless told otherwise
DEFAULT_RESULTS_DIR = RESULTS_DIR
Kind = Literal["evaluation", "policy"]
Record = EvalRecord | PolicyRecord


@dataclass(frozen=True)
class RecordKind:
    """One kind of record: its model, its tag (the stored ``kind`` field), its file name and its words."""

    name: Kind
    tag: str
    model: type[EvalRecord] | type[PolicyRecord]
    suffix: str
    schema_version: int
    what: str
    redo: str
    find_hint: str
    #: older versions its model still reads (fields added since are optional)
    older_versions: tuple[int, ...] = ()

    def file_pattern(self) -> re.Pattern[str]:
        return re.compile(r"^[0-9a-f]{64}" + re.escape(self.suffix) + "$")


KINDS: dict[str, RecordKind] = {
    "evaluation": RecordKind(
        name="evaluation", tag="gradebench.result", model=EvalRecord, suffix=RECORD_SUFFIX,
        schema_version=RESULT_SCHEMA_VERSION, what="result record", redo="evaluate again",
        find_hint="list records with `gradebench query 'select id from results'`"),
    "policy": RecordKind(
        name="policy", tag=POLICY_KIND, model=PolicyRecord, suffix=POLICY_SUFFIX,
        schema_version=POLICY_SCHEMA_VERSION, what="policy record", redo="run the policy again",
        find_hint="run `gradebench lipo|grpo|ppo` first",
        older_versions=tuple(v for v in POLICY_SCHEMA_VERSIONS if v != POLICY_SCHEMA_VERSION)),
}
_BY_TAG = {k.tag: k for k in KINDS.values()}


def record_kind(kind: str | Record) -> RecordKind:
    """The :class:`RecordKind` of a kind name or of a record."""
    if isinstance(kind, str):
        if kind not in KINDS:
            raise InvalidArgumentError(f"unknown record kind {kind!r}", hint=f"kinds: {', '.join(KINDS)}")
        return KINDS[kind]
    for spec in KINDS.values():
        if isinstance(kind, spec.model):
            return spec
    raise InvalidArgumentError(f"not a record: {type(kind).__name__}", hint="give an EvalRecord or a PolicyRecord")


def kind_of(raw: dict[str, Any]) -> RecordKind | None:
    """The kind of a record's JSON object by its ``kind`` field (none = evaluation); None for an unknown tag."""
    return _BY_TAG.get(raw.get("kind", KINDS["evaluation"].tag))


def _kinds(kind: Kind | None) -> list[RecordKind]:
    return list(KINDS.values()) if kind is None else [record_kind(kind)]


# -- writing -----------------------------------------------------------------------------------------
def record_dir(results_dir: str | Path, benchmark: str) -> Path:
    """The folder of one benchmark's records.

    Raises:
        RecordError: ``benchmark`` is not a name (:func:`gradebench.names.check_name`): it would
            put the folder elsewhere than directly under ``results_dir``.
    """
    return Path(results_dir) / check_name(benchmark, what="benchmark name", error=RecordError)


def write_parquet_atomic(table: Any, path: Path, metadata: dict[str, str]) -> None:
    """Write an Arrow table to a temp file beside ``path``, then rename it onto ``path``."""
    import pyarrow.parquet as pq

    meta = {**(table.schema.metadata or {}), **{k.encode(): v.encode() for k, v in metadata.items()}}
    schema = table.schema.with_metadata(meta)
    with locked_temp_beside(path) as tmp:
        pq.write_table(table.cast(schema), tmp, compression="zstd", compression_level=1)
        stop_point("record-writing")
        publish(tmp, path)


def write_text_atomic(path: Path, text: str) -> None:
    """:func:`gradebench.paths.write_text_atomic` with a locked temp file (see the module docstring):
    ``text`` goes to a temp file beside ``path``, renamed onto ``path``."""
    with locked_temp_beside(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
        stop_point("record-writing")
        publish(tmp, path)


def write_record(record: Record, predictions: Any = None, per_query: Any = None,
                 results_dir: str | Path = DEFAULT_RESULTS_DIR) -> Path:
    """Write a record of any kind (an evaluation record's two Parquet tables first, the JSON last,
    carrying the tables' digests: :mod:`gradebench.experiments.verify`); returns the JSON path.

    Raises:
        InvalidArgumentError: an evaluation record without both tables, or a policy record with one.
    """
    spec = record_kind(record)
    folder = record_dir(results_dir, record.benchmark.name)
    remove_stale_temps(folder)  # what killed writers left
    if spec.name == "evaluation":
        if predictions is None or per_query is None:
            raise InvalidArgumentError("an evaluation record is written with its predictions and per-query tables")
        folder.mkdir(parents=True, exist_ok=True)
        meta = {"gradebench.result.schema_version": str(RESULT_SCHEMA_VERSION), "gradebench.record_id": record.id}
        write_parquet_atomic(predictions, folder / record.files.predictions, meta)
        write_parquet_atomic(per_query, folder / record.files.per_query, meta)
        record.files = record.files.model_copy(update={  # what readers check the tables against
            "per_query_sha256": rows_digest(read_loose(folder / record.files.per_query)),
            "predictions_sha256": predictions_digest(folder / record.files.predictions)})
    elif predictions is not None or per_query is not None:
        raise InvalidArgumentError(f"a {spec.what} has no tables", hint="call write_record(record, results_dir=...)")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{record.id}{spec.suffix}"
    write_text_atomic(path, json_text(record.to_dict()))
    record._path = path
    return path


# -- reading -----------------------------------------------------------------------------------------
def read_record(path: str | Path, *, kind: Kind | None = "evaluation") -> Record:
    """Read and validate one record (of ``kind``; any kind with ``kind=None``).

    Raises:
        RecordError: no such file, invalid JSON, another kind or schema version, or invalid content.
    """
    p = Path(path)
    expected = None if kind is None else record_kind(kind)
    what = "record" if expected is None else expected.what
    redo = "write it again" if expected is None else expected.redo
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        hint = KINDS["evaluation"].find_hint if expected is None else expected.find_hint
        raise RecordError(f"no such {what}", path=p, hint=hint) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise RecordError(f"{what} is not valid JSON ({e})", path=p, hint=f"delete it and {redo}") from None
    if not isinstance(raw, dict):
        raise RecordError(f"{what} is not a JSON object", path=p, hint=f"delete it and {redo}")
    spec = kind_of(raw)
    if spec is None:
        raise RecordError(f"unknown record kind {raw.get('kind')!r}", path=p, key="kind",
                          hint=f"this gradebench reads {', '.join(_BY_TAG)}")
    if expected is not None and spec is not expected:
        raise RecordError(f"not a {expected.what} (it is a {spec.what})", path=p,
                          hint=f"give a <id>{expected.suffix} file")
    version = raw.get("schema_version")
    if version != spec.schema_version and version not in spec.older_versions:
        raise RecordError(f"{spec.what} schema v{version} is not supported (this gradebench reads "
                          f"v{spec.schema_version})", path=p, hint=f"{spec.redo} with this gradebench version")
    try:
        record = spec.model.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(x) for x in err.get("loc", ())) or None
        raise RecordError(f"invalid {spec.what}: {err.get('msg')}", path=p, key=key,
                          hint=f"delete it and {spec.redo}") from None
    record._path = p
    return record


def record_files(results_dir: str | Path, *, benchmark: str | None = None,
                 kind: Kind | None = "evaluation") -> list[Path]:
    """Record JSON files of ``kind`` (every kind: None) under ``results_dir`` (one benchmark's, if
    given), sorted by path."""
    root = Path(results_dir)
    if not root.is_dir():
        return []
    patterns = [spec.file_pattern() for spec in _kinds(kind)]
    folders = [root / benchmark] if benchmark is not None else sorted(p for p in root.iterdir() if p.is_dir())
    out: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            out.extend(sorted(p for p in folder.iterdir() if any(x.match(p.name) for x in patterns) and p.is_file()))
    return out


def list_records(
    results_dir: str | Path, *, benchmark: str | None = None, split: str | None = None,
    kind: Kind | None = "evaluation",
) -> list[Record]:
    """Every record of ``kind`` (every kind: None), optionally of one benchmark name and split,
    sorted by benchmark, then kind, then id."""
    records = [read_record(p, kind=kind) for p in record_files(results_dir, benchmark=benchmark, kind=kind)]
    if split is not None:
        records = [r for r in records if _split(r) == split]
    order = list(KINDS)
    return sorted(records, key=lambda r: (r.benchmark.name, order.index(record_kind(r).name), r.id))


def _split(record: Record) -> str:
    return record.split if isinstance(record, EvalRecord) else record.benchmark.split


def find_record(ref: str | Path | Record, *, results_dir: str | Path, kind: Kind | None = "evaluation") -> Record:
    """A record given as itself, a path to its JSON, or its id (a unique prefix of at least 6 hex digits).

    Raises:
        RecordError: no such record, or an ambiguous prefix (the candidates are listed).
    """
    if isinstance(ref, (EvalRecord, PolicyRecord)):
        return ref
    text = str(ref)
    p = Path(text)
    if p.suffix == ".json" or p.is_file() or "/" in text:
        return read_record(p, kind=kind)
    if not re.fullmatch(r"[0-9a-f]{6,64}", text):
        raise RecordError(f"{text!r} is neither a record id nor a path to a record JSON",
                          hint="give an id (or a prefix of at least 6 hex digits) or a .json path")
    hits = [f for f in record_files(results_dir, kind=kind) if f.name.startswith(text)]
    if not hits:
        raise RecordError(f"no record with id {text}", path=results_dir,
                          hint="list ids with `gradebench query 'select id, scorer from results'` "
                          "or pass --results-dir")
    if len(hits) > 1:
        raise RecordError(f"record id prefix {text} is ambiguous ({len(hits)} records)", path=results_dir,
                          hint="give more digits: " + ", ".join(h.name[:12] for h in hits[:5]))
    return read_record(hits[0], kind=kind)


# -- an evaluation record's tables -------------------------------------------------------------------
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
    """The record's per-candidate predictions as a pandas DataFrame.

    Raises:
        RecordError: the predictions file is not there -- a packed results folder (``leaderboard/results``)
            keeps them out of git (:mod:`gradebench.experiments.pack`) -- or is unreadable.
    """
    path = record.predictions_path
    if path is None or not path.is_file():
        raise RecordError(PREDICTIONS_MISSING, path=path or record.id, hint=PREDICTIONS_HINT)
    return _parquet(path, record, "predictions")


#: what a reader says when a record's predictions are not there (they do not travel with committed records)
PREDICTIONS_MISSING = "the record's per-candidate predictions are not here (committed records keep them out of git)"
PREDICTIONS_HINT = ("evaluate the record again into the same --results-dir to write them (the record id, and so "
                    "the file name, stays the same)")


def read_per_query(record: EvalRecord, metric: str | None = None) -> Any:
    """The record's per-query metric values (long form: ``record_id, query_id, metric, value``; NaN =
    excluded), optionally of one metric: from its loose table, else the folder's pack."""
    import numpy as np
    import pandas as pd

    values = record_values(record)
    names = [m for m in values.metrics if metric is None or m == metric]
    n = len(values.query_ids)
    df = pd.DataFrame({
        "record_id": [record.id] * (n * len(names)),
        "query_id": values.query_ids * len(names),
        "metric": pd.Categorical([m for m in names for _ in range(n)], categories=list(values.metrics)),
        "value": np.concatenate([values.metrics[m] for m in names]) if names else np.zeros(0),
    })
    return df


#: the Arrow-to-NumPy reader older callers import from here
_numbers = numbers


def read_per_query_arrays(record: EvalRecord) -> dict[str, tuple[list[str], Any]]:
    """The record's per-query values as ``{metric: (query ids, float64 values)}``, each in file order:
    what :func:`read_per_query` gives grouped by metric, read without pandas (a leaderboard reads
    hundreds of records). From the record's loose table, else its rows of the folder's pack."""
    values = record_values(record)
    return {m: (list(values.query_ids), v) for m, v in values.metrics.items()}


def read_query_figures(record: EvalRecord) -> tuple[list[str], dict[str, Any]]:
    """``(query ids, {figure column: float64 values})``: the record's per-query report figures
    (:mod:`gradebench.experiments.figures`; empty when none were computed for it)."""
    values = record_values(record)
    return list(values.query_ids), dict(values.figures)


# -- the policy-record functions of before the store had kinds (gradebench.rl exports them) ---------
def write_policy_record(record: PolicyRecord, results_dir: str | Path) -> Path:
    """``write_record(record, results_dir=results_dir)``."""
    return write_record(record, results_dir=results_dir)


def read_policy_record(path: str | Path) -> PolicyRecord:
    """``read_record(path, kind="policy")``."""
    return read_record(path, kind="policy")


def list_policy_records(results_dir: str | Path, *, benchmark: str | None = None) -> list[PolicyRecord]:
    """``list_records(results_dir, benchmark=benchmark, kind="policy")``."""
    return list_records(results_dir, benchmark=benchmark, kind="policy")
