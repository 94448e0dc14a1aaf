"""``validate_folder``: check a benchmark folder against its expectation suite (great-expectations).

The suites are data, kept in ``schemas/suites/`` (``gradebench/_schemas/suites`` in a wheel):
``core.json`` for every benchmark, plus ``tiered.json`` when the builder has synthetic tiers
(the manifest's recipe has ``tiers``, or its stats have a ``tiers`` key) or ``natural.json``
otherwise. Each entry is a great-expectations ``ExpectationConfiguration`` whose ``meta``
says which table it runs on and the name failures are reported under:

- ``columns``: one row per (data file, core column) with the column's Arrow type, or
  ``missing``; checks that every core column is there with its type in every file.
- ``rows``: one row per candidate (the core columns except the query text); row checks.
- ``queries``: one row per ``query_id``, derived by a group-by (list size, distinct grades,
  splits per query, the query text); great-expectations then checks that table, so the list
  checks report counts of queries and example query ids like every other check.

``{"$PARAMETER": name}`` values come from the manifest (:func:`suite_parameters`): the
largest list size (the sum of the tiers' counts) and, per tier, its relevance and its score
bounds. Tiered entries with ``meta.for_each = "tier"`` are repeated once per declared tier
with a ``row_condition`` on the tier. Everything is expressed as great-expectations
expectations; only the derived tables are computed beforehand (with pyarrow).

The ``rows`` and ``queries`` tables are never built whole: the suites run on chunks of whole
row groups (:data:`CHUNK_ROWS` rows), and each expectation's counts and first failing records
are merged over the chunks in benchmark order, which gives the report a single run over the
whole table would give (the rows of a query, which the list checks and the uniqueness of
``(query_id, candidate_id)`` need together, are always in one chunk).

great-expectations is imported inside :func:`validate_folder` (it takes seconds to import).
"""

from __future__ import annotations

import copy
import json
from contextlib import contextmanager
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gradebench.benchmark.format import COLUMNS
from gradebench.errors import BenchmarkError
from gradebench.hashing import sha256_json

_PKG = Path(__file__).resolve().parents[1]
FRAMES = ("columns", "rows", "queries")
#: the unit a failure's count is in, per frame
UNITS = {"columns": "files", "rows": "rows", "queries": "queries"}
#: the columns that identify an unexpected record in failure examples, per frame
ID_COLUMNS = {"columns": ("file", "name"), "rows": ("query_id", "candidate_id"), "queries": ("query_id",)}
MAX_EXAMPLES = 5
#: long free-text columns, checked in a batch of their own (see validate_folder)
TEXT_COLUMNS = frozenset({"query", "candidate"})
#: slack on declared score bounds, for the rounding of Algorithm 1's float sums
TOLERANCE = 1e-9
#: low-cardinality string columns of the ``rows`` frame, checked as pandas categoricals
CATEGORICAL = ("tier", "split")
#: per-tier parameters of ``for_each: tier`` entries
TIER_PARAMETERS = ("tier_score_min", "tier_score_max", "tier_relevance")


def suites_dir() -> Path:
    """The expectation suites: ``gradebench/_schemas/suites`` in a wheel, ``schemas/suites`` in a checkout."""
    for candidate in (_PKG / "_schemas" / "suites", _PKG.parent / "schemas" / "suites"):
        if candidate.is_dir():
            return candidate
    raise BenchmarkError("no expectation suites found", path=_PKG, hint="reinstall gradebench")


def load_suite(name: str) -> dict[str, Any]:
    """One suite file (``core``, ``tiered`` or ``natural``) with its entries' shape checked."""
    path = suites_dir() / f"{name}.json"
    try:
        suite = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BenchmarkError(f"cannot read the expectation suite ({e})", path=path,
                             hint="reinstall gradebench") from None
    entries = suite.get("expectations") if isinstance(suite, dict) else None
    if not isinstance(entries, list):
        raise BenchmarkError("an expectation suite needs a list 'expectations'", path=path, hint="reinstall gradebench")
    for i, e in enumerate(entries):
        meta = e.get("meta", {}) if isinstance(e, dict) else {}
        if not (
            isinstance(e, dict) and isinstance(e.get("type"), str) and isinstance(e.get("kwargs"), dict)
            and meta.get("frame") in FRAMES and isinstance(meta.get("check"), str)
        ):
            raise BenchmarkError(
                f"expectation {i} needs 'type', 'kwargs' and meta.frame in {list(FRAMES)} and meta.check",
                path=path, hint="reinstall gradebench",
            )
        if "mostly" in e["kwargs"]:  # results are merged over chunks by their counts (see _Tally)
            raise BenchmarkError(f"expectation {i} uses 'mostly', which chunked validation does not support",
                                 path=path, hint="reinstall gradebench")
    return suite


def benchmark_kind(manifest: Mapping[str, Any]) -> str:
    """``tiered`` when the benchmark has synthetic tiers, else ``natural``."""
    recipe = manifest.get("recipe") or {}
    stats_all = (manifest.get("stats") or {}).get("all") or {}
    return "tiered" if recipe.get("tiers") or "tiers" in stats_all else "natural"


def tier_score_bounds(tier: Mapping[str, Any], scoring: Mapping[str, Any], max_relevance: int) -> tuple[float, float]:
    """The scores a tier's candidates may have under the recipe's scoring mode.

    ``algorithm1``: the declared ``score_range`` [lo, hi] widened by every adjustment that can
    fire for the tier (lower: lo - short_penalty if the tier is in ``short_tiers`` -
    gibberish_penalty unless it is exempt; upper: hi + label_match_bonus + keyword_bonus +
    overlap_bonus), clipped to [0, 1]. ``uniform``: exactly [lo, hi]. ``grade``: exactly
    relevance / max relevance.
    """
    mode = scoring.get("mode")
    if mode == "grade":
        value = tier["relevance"] / (max_relevance or 1)
        return value, value
    lo, hi = (float(x) for x in tier["score_range"])
    adj = scoring.get("adjustments") if mode == "algorithm1" else None
    if adj:
        name = tier["name"]
        signed = [adj["label_match_bonus"], adj["keyword_bonus"], adj["overlap_bonus"]]
        if name in adj.get("short_tiers", ()):
            signed.append(-adj["short_penalty"])
        if name not in adj.get("gibberish_exempt_tiers", ()):
            signed.append(-adj["gibberish_penalty"])
        lo += sum(min(0.0, s) for s in signed)
        hi += sum(max(0.0, s) for s in signed)
    return max(0.0, lo), min(1.0, hi)


def _declared_tiers(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The recipe's tiers; a tiered benchmark whose recipe has none falls back to its stats (no ranges)."""
    recipe = manifest.get("recipe") or {}
    if recipe.get("tiers"):
        return [dict(t) for t in recipe["tiers"]]
    stats_tiers = ((manifest.get("stats") or {}).get("all") or {}).get("tiers") or {}
    return [{"name": n, "relevance": v.get("relevance")} for n, v in stats_tiers.items()]


def suite_parameters(manifest: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Suite-wide ``$PARAMETER`` values and, for tiered benchmarks, per-tier values.

    Returns ``(parameters, tiers)``; each tier is ``{"name", "tier_relevance",
    "tier_score_min", "tier_score_max"}`` (the last two only where the recipe declares a range).
    """
    recipe = manifest.get("recipe") or {}
    params: dict[str, Any] = {"max_list_size": None}
    tiers: list[dict[str, Any]] = []
    if benchmark_kind(manifest) == "tiered":
        declared = _declared_tiers(manifest)
        scoring = recipe.get("scoring") or {}
        max_relevance = max((t.get("relevance") or 0 for t in declared), default=0)
        params["tier_names"] = [t["name"] for t in declared]
        if recipe.get("tiers"):
            params["max_list_size"] = sum(int(t.get("count", 1)) for t in declared)
        for t in declared:
            entry: dict[str, Any] = {"name": t["name"], "tier_relevance": [t.get("relevance")]}
            if "score_range" in t or scoring.get("mode") == "grade":
                lo, hi = tier_score_bounds(t, scoring, max_relevance)
                entry["tier_score_min"], entry["tier_score_max"] = round(lo, 12), round(hi, 12)
            tiers.append(entry)
    return params, tiers


@dataclass(frozen=True)
class Failure:
    """One failed expectation: its name, the columns it checks, how many records fail, examples."""

    expectation: str
    type: str
    columns: tuple[str, ...]
    #: failing records (None when the expectation raised, see ``error``)
    unexpected: int | None
    #: records checked
    total: int | None
    unit: str
    #: up to 5 failing records: their ids (query_id/candidate_id, or file/name) and the ``value``
    examples: tuple[dict[str, Any], ...] = ()
    #: for per-tier entries: the tier and the bounds or set it was checked against
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["columns"] = list(self.columns)
        d["examples"] = [dict(e) for e in self.examples]
        return {k: v for k, v in d.items() if v not in (None, {}, [])}

    def line(self) -> str:
        """``<expectation> failed on <n> of <total> <unit> (e.g. query_id ..., candidate_id ...)``."""
        name = self.expectation
        if self.details.get("tier") is not None:
            name += f" [tier {self.details['tier']}]"
        if self.error is not None:
            return f"{name} could not be evaluated: {self.error}"
        text = f"{name} failed on {self.unexpected} of {self.total} {self.unit}"
        if self.examples:
            ids = ", ".join(f"{k} {v}" for k, v in self.examples[0].items() if k != "value")
            text += f" (e.g. {ids})"
        return text


@dataclass
class ValidationReport:
    """What :func:`validate_folder` returns; :meth:`summary` goes into the manifest."""

    success: bool
    kind: str
    suites: tuple[str, ...]
    suite_sha256: str
    rows: int
    queries: int
    #: expectations evaluated (per-tier ones count once per tier)
    expectations: int
    failures: list[Failure]
    #: checks not evaluated because a column they need is missing (reported by the column checks)
    skipped: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """A small, deterministic JSON-serialisable record (no timestamps or run ids)."""
        return {
            "engine": "great_expectations",
            "kind": self.kind,
            "suites": list(self.suites),
            "suite_sha256": self.suite_sha256,
            "success": self.success,
            "rows": self.rows,
            "queries": self.queries,
            "expectations": self.expectations,
            "passed": self.expectations - len(self.failures),
            "failures": [f.to_dict() for f in self.failures],
            "skipped": list(self.skipped),
        }

    def first_failure(self) -> str | None:
        """The first failure (suite order) as one line, with how many more there are; None on success."""
        if not self.failures:
            return None
        more = len(self.failures) - 1
        return self.failures[0].line() + (f"; {more} more failing expectation{'s' * (more > 1)}" if more else "")


@dataclass(frozen=True)
class _Entry:
    """One expectation ready to run: its configuration, frame, name and per-tier details."""

    config: dict[str, Any]
    frame: str
    check: str
    columns: tuple[str, ...]
    needs: frozenset[str]
    details: dict[str, Any]


def _referenced_columns(kwargs: Mapping[str, Any]) -> set[str]:
    cols = {kwargs[k] for k in ("column", "column_A", "column_B") if isinstance(kwargs.get(k), str)}
    cols.update(kwargs.get("column_list") or ())
    cond = kwargs.get("row_condition")
    if isinstance(cond, dict) and isinstance(cond.get("column"), dict):
        cols.add(cond["column"]["name"])
    return cols


def _rename_parameters(value: Any, suffix: str) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$PARAMETER"} and value["$PARAMETER"] in TIER_PARAMETERS:
            return {"$PARAMETER": value["$PARAMETER"] + suffix}
        return {k: _rename_parameters(v, suffix) for k, v in value.items()}
    return value


def _padded(name: str, value: Any) -> Any:
    """Score bounds get :data:`TOLERANCE` of slack outwards; other parameters are used as they are."""
    if name == "tier_score_min":
        return value - TOLERANCE
    if name == "tier_score_max":
        return value + TOLERANCE
    return value


def expand(suites: Sequence[Mapping[str, Any]], tiers: Sequence[Mapping[str, Any]]) -> tuple[list[_Entry], dict]:
    """The suites' entries in order, ``for_each: tier`` ones once per tier; plus their tier parameters."""
    entries: list[_Entry] = []
    params: dict[str, Any] = {}
    for suite in suites:
        for e in suite["expectations"]:
            meta = e["meta"]
            copies = [(e["kwargs"], {})]
            if meta.get("for_each") == "tier":
                copies = []
                wanted = {p["$PARAMETER"] for p in e["kwargs"].values() if isinstance(p, dict) and "$PARAMETER" in p}
                for i, t in enumerate(tiers):
                    if not wanted <= set(t):
                        continue  # e.g. no declared score range for this tier
                    kwargs = _rename_parameters(e["kwargs"], f"__{i}")
                    kwargs["row_condition"] = {
                        "type": "comparison", "column": {"name": "tier"}, "operator": "==", "parameter": t["name"],
                    }
                    details = {"tier": t["name"], **{p: t[p] for p in sorted(wanted)}}
                    params.update({f"{p}__{i}": _padded(p, t[p]) for p in wanted})
                    copies.append((kwargs, details))
            for kwargs, details in copies:
                index = len(entries)
                config = {"type": e["type"], "kwargs": copy.deepcopy(kwargs),
                          "meta": {"gradebench_index": index, "check": meta["check"]}}
                columns = tuple(meta.get("columns") or sorted(_referenced_columns(kwargs)))
                entries.append(_Entry(config, meta["frame"], meta["check"], columns,
                                      frozenset(_referenced_columns(kwargs)), details))
    return entries, params


# -- the tables ---------------------------------------------------------------------------------

#: rows per validation chunk (whole row groups; a query's rows stay in one chunk, see _chunks).
#: Since batches are no longer fingerprinted, the per-chunk overhead is small: at 2.5M e-SNLI rows
#: (default build, validity figures alongside) 262,144-row chunks validate as fast as 524,288-row
#: ones (50.6 against 50.8 s for the whole build) with 200 MB less peak (1,328 against 1,528 MB)
CHUNK_ROWS = 262_144
#: a column added to every chunk: the row's (or the query's first row's) position in the benchmark,
#: so failure examples merged from several chunks come back in benchmark order
ORDER = "__gradebench_row"


def _data_files(folder: Path, manifest: Mapping[str, Any]) -> list[str]:
    names = [f for s in sorted(manifest["splits"]) for f in manifest["splits"][s]["files"]]
    for n in names:
        if not (folder / n).is_file():
            raise BenchmarkError(f"data file {n} listed in the manifest is missing", path=folder,
                                 hint="rebuild with `gradebench build ... --force`")
    return names


@dataclass
class _Layout:
    """What the suites run on, before any row is read: the columns table and the chunks."""

    columns: Any  # the ``columns`` frame (pandas)
    #: core columns present in every file with one type; the others are left out of the rows
    #: (the column checks report them; the checks that need them are listed as skipped)
    common: Any  # pyarrow schema
    #: chunks of row groups: [(file, [row group indices])...] each, in benchmark order
    chunks: list[list[tuple[str, list[int]]]]


def read_layout(folder: Path, manifest: Mapping[str, Any]) -> _Layout:
    """The ``columns`` frame and the row groups of every data file, grouped into chunks."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = _data_files(folder, manifest)
    schema_rows, schemas, chunks = [], [], []
    current: list[tuple[str, list[int]]] = []
    rows = 0
    for n in names:
        meta = pq.ParquetFile(folder / n)
        schema = meta.schema_arrow
        schemas.append(schema)
        schema_rows += [{"file": n, "name": c, "arrow_type": str(schema.field(c).type) if c in schema.names
                         else "missing"} for c in COLUMNS]
        for i in range(meta.metadata.num_row_groups):
            if current and rows >= CHUNK_ROWS:
                chunks.append(current)
                current, rows = [], 0
            if not current or current[-1][0] != n:
                current.append((n, []))
            current[-1][1].append(i)
            rows += meta.metadata.row_group(i).num_rows
    if current:
        chunks.append(current)
    cols = [c for c in COLUMNS if schemas and all(c in sc.names for sc in schemas)
            and len({sc.field(c).type for sc in schemas}) == 1]
    common = pa.schema([pa.field(c, schemas[0].field(c).type) for c in cols]) if schemas else pa.schema([])
    return _Layout(pd.DataFrame(schema_rows, columns=["file", "name", "arrow_type"]), common, chunks)


def _read_chunk(folder: Path, layout: _Layout, chunk: list[tuple[str, list[int]]], offset: int) -> Any:
    """The chunk's rows (the common columns, files may differ in nullability only) with their positions."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = layout.common.names
    parts = [pq.ParquetFile(folder / n).read_row_groups(groups, columns=cols, use_threads=False)
             for n, groups in chunk]
    # the files' types are the common ones (read_layout): only nullability may differ, so the
    # columns take the common schema as they are (a cast would re-validate every string)
    table = pa.concat_tables([pa.Table.from_arrays(t.select(cols).columns, schema=layout.common) for t in parts])
    return table.append_column(ORDER, pa.array(range(offset, offset + table.num_rows), pa.int64()))


def _frames(table: Any) -> dict[str, Any]:
    """The ``rows`` and ``queries`` frames (pandas) of a table of rows."""
    import pandas as pd

    rows = table.drop_columns([c for c in ("query",) if c in table.column_names]).to_pandas()
    for c in CATEGORICAL:
        if c in rows.columns and rows[c].dtype != object and not isinstance(rows[c].dtype, pd.CategoricalDtype):
            # a few distinct values: great-expectations re-applies a row condition on the tier for
            # every metric it computes, and a comparison on categories costs a tenth of one on strings
            rows[c] = rows[c].astype("category")
    return {
        "rows": rows,
        "queries": _queries_frame(table) if "query_id" in table.column_names else pd.DataFrame(),
    }


def read_frames(folder: Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The three tables the suites run on, whole, as pandas DataFrames (see the module docstring).

    For inspection and tests; :func:`validate_folder` runs the suites chunk by chunk instead.
    """
    import pandas as pd
    import pyarrow as pa

    layout = read_layout(Path(folder), manifest)
    tables, offset = [], 0
    for chunk in layout.chunks:
        tables.append(_read_chunk(Path(folder), layout, chunk, offset))
        offset += tables[-1].num_rows
    frames = {"columns": layout.columns}
    if tables:
        frames.update({k: v.drop(columns=[ORDER]) for k, v in _frames(pa.concat_tables(tables)).items()})
    else:
        frames.update(rows=pa.table({}).to_pandas(), queries=pd.DataFrame())
    return frames


def _queries_frame(table: Any) -> Any:
    """One row per query_id in order of first appearance: n_candidates, n_grades, n_splits, query.

    With the :data:`ORDER` column: the position of the query's first row, under the same name.
    """
    import pyarrow.compute as pc

    aggs: list[tuple[str, str, Any, str]] = [("query_id", "count", pc.CountOptions(mode="all"), "n_candidates")]
    aggs += [(c, "count_distinct", None, name) for c, name in (("relevance", "n_grades"), ("split", "n_splits"))
             if c in table.column_names]
    if "query" in table.column_names:
        aggs.append(("query", "first", None, "query"))
    if ORDER in table.column_names:
        aggs.append((ORDER, "min", None, ORDER))
    grouped = table.group_by("query_id", use_threads=False).aggregate([(c, f, o) for c, f, o, _ in aggs])
    df = grouped.to_pandas()
    return df.rename(columns={f"{c}_{f}": name for c, f, _, name in aggs})


def _split_queries(folder: Path, layout: _Layout) -> tuple[list[Any], Any]:
    """Per chunk, its rows' query ids; and the ids found in more than one chunk (a damaged file).

    Engine-built files never split a query across row groups, so the second is empty; when it
    is not, those queries' rows are taken out of their chunks and validated together, last.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if len(layout.chunks) < 2 or "query_id" not in layout.common.names:
        return [None] * len(layout.chunks), pa.array([], pa.string())
    uniques = []
    for chunk in layout.chunks:
        ids = pa.chunked_array([part for n, groups in chunk  # Arrow arrays: a ChunkedArray would be iterated in Python
                                for part in pq.ParquetFile(folder / n).read_row_groups(groups, columns=["query_id"])
                                .column(0).chunks], layout.common.field("query_id").type)
        if pa.types.is_dictionary(ids.type):
            ids = ids.cast(ids.type.value_type)
        uniques.append(pc.unique(ids))
    counts = pc.value_counts(pa.chunked_array(uniques).combine_chunks())
    spanning = counts.field("values").filter(pc.greater(counts.field("counts"), 1))
    return uniques, spanning


def _chunk_tables(folder: Path, layout: _Layout) -> Iterator[Any]:
    """The benchmark's rows as tables of whole queries, in order (queries split across chunks last)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    _, spanning = _split_queries(folder, layout)
    held = []
    offset = 0
    for chunk in layout.chunks:
        table = _read_chunk(folder, layout, chunk, offset)
        offset += table.num_rows
        if len(spanning):
            split = pc.is_in(table.column("query_id").cast(pa.string()), value_set=spanning)
            held.append(table.filter(split))
            table = table.filter(pc.invert(split))
        yield table
    if held:
        yield pa.concat_tables(held)


def _import_gx() -> Any:
    try:
        import great_expectations as gx
    except ModuleNotFoundError as e:
        if e.name != "great_expectations":
            raise
        raise BenchmarkError(
            "validation needs great-expectations, which is not installed",
            hint="pip install 'gradebench[validate]', or build with --no-validate",
        ) from None
    return gx


@contextmanager
def _no_batch_fingerprints() -> Iterator[None]:
    """Inside: great-expectations' pandas engine does not fingerprint the batches it is given.

    Below ``HASH_THRESHOLD`` bytes it md5s every cell of each batch (``hash_pandas_object``),
    only to label the batch in its markers, which a report here never reads: a quarter of the
    validation time (500,000 rows: 1.4 of 5.1 s). The threshold is set to 0 for the block and
    put back after it. Without that constant (another great-expectations), nothing changes.
    """
    try:
        from great_expectations.execution_engine import pandas_execution_engine as engine
    except ImportError:  # pragma: no cover - a great-expectations without that module
        yield
        return
    if not hasattr(engine, "HASH_THRESHOLD"):
        yield
        return
    saved = engine.HASH_THRESHOLD
    engine.HASH_THRESHOLD = 0
    try:
        yield
    finally:
        engine.HASH_THRESHOLD = saved


def _json_value(v: Any) -> Any:
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, str) and len(v) > 80:
        return v[:77] + "..."
    return v


@dataclass
class _Tally:
    """One expectation's results over every chunk it ran on, merged."""

    success: bool = True
    unexpected: int = 0
    total: int = 0
    #: (position in the benchmark, example) of the first failing records of each chunk
    examples: list[tuple[int, Any]] = field(default_factory=list)
    #: a table-level expectation (no per-record counts) that failed on some chunk
    table_failed: bool = False
    error: str | None = None

    def add(self, result: Any) -> None:
        """Merge one chunk's great-expectations result: counts add up, examples are pooled.

        Exact for map expectations without ``mostly`` (the suites use none): a record fails or
        passes on its own, or, for the uniqueness of (query_id, candidate_id), with the other
        rows of its query, which are always in the same chunk (see ``_chunk_tables``).
        """
        self.success = self.success and bool(result.success)
        if result.exception_info and result.exception_info.get("raised_exception"):
            if self.error is None:
                self.error = str(result.exception_info.get("exception_message") or "unknown error").splitlines()[0]
            return
        r = result.result or {}
        if r.get("unexpected_count") is None:
            self.table_failed = self.table_failed or not result.success
            return
        self.unexpected += int(r["unexpected_count"])
        self.total += int(r.get("element_count") or 0)
        for i, item in enumerate((r.get("partial_unexpected_index_list") or [])[:MAX_EXAMPLES]):
            position = item.pop(ORDER, i) if isinstance(item, dict) else i
            self.examples.append((position, item))


def _failure(entry: _Entry, tally: _Tally) -> Failure:
    unit = UNITS[entry.frame]
    if tally.error is not None:
        return Failure(entry.check, entry.config["type"], entry.columns, None, None, unit, (), entry.details,
                       tally.error)
    ids = ID_COLUMNS[entry.frame]
    examples = []
    for _, item in sorted(tally.examples, key=lambda e: e[0])[:MAX_EXAMPLES]:
        if isinstance(item, dict):
            ex = {k: _json_value(item[k]) for k in ids if k in item}
            rest = [v for k, v in item.items() if k not in ids]
            if rest:
                ex["value"] = _json_value(rest[0])
        else:
            ex = {"row": _json_value(item)}
        examples.append(ex)
    unexpected, total = tally.unexpected, tally.total
    if tally.table_failed and not unexpected:  # a table-level expectation: the whole table fails
        unexpected, total = 1, 1
    return Failure(entry.check, entry.config["type"], entry.columns, unexpected, total, unit, tuple(examples),
                   entry.details)


class _Runner:
    """One group of a frame's entries, ready to validate table after table (one suite, one asset)."""

    def __init__(self, gx: Any, context: Any, name: str, frame: str, entries: list[_Entry], params: dict,
                 columns: list[str], where: tuple[str, Any] | None = None) -> None:
        from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

        #: ``(column, value)``: the entries' common row condition, applied once before they run
        self.where = where
        expectations = []
        for e in entries:
            config = e.config
            if where is not None:
                config = {**config, "kwargs": {k: v for k, v in config["kwargs"].items() if k != "row_condition"}}
            try:
                expectations.append(ExpectationConfiguration(**config).to_domain_obj())
            except Exception as err:  # noqa: BLE001 - a bad suite entry is a packaging bug, reported as such
                raise BenchmarkError(f"expectation {e.check!r} is not valid for great-expectations: {err}",
                                     path=suites_dir(), hint="reinstall gradebench") from None
        self.suite = context.suites.add(gx.ExpectationSuite(name=f"gradebench-{name}", expectations=expectations))
        asset = context.data_sources.add_pandas(f"gradebench-{name}").add_dataframe_asset(name)
        self.batches = asset.add_batch_definition_whole_dataframe("all")
        self.columns = columns
        index_columns = [c for c in (*ID_COLUMNS[frame], ORDER) if c in columns]
        self.result_format = {"result_format": "SUMMARY", "partial_unexpected_count": MAX_EXAMPLES,
                              "unexpected_index_column_names": index_columns}
        self.params = params

    def run(self, df: Any, tallies: dict[int, _Tally]) -> None:
        df = df[self.columns]
        if self.where is not None:
            column, value = self.where
            df = df[df[column] == value]
        batch = self.batches.get_batch(batch_parameters={"dataframe": df})
        results = batch.validate(self.suite, result_format=self.result_format, expectation_parameters=self.params)
        for r in results.results:
            tallies.setdefault(int(r.expectation_config.meta["gradebench_index"]), _Tally()).add(r)


def _runners(gx: Any, context: Any, frame: str, columns: Sequence[str], entries: list[_Entry], params: dict,
             skipped: list[str]) -> list[_Runner]:
    """The runners of ``frame``'s entries whose columns are all there (the others go to ``skipped``).

    The checks of the text columns run on their own batch: great-expectations copies the whole
    table for each row filter, so the others run without the texts. Entries with the same
    ``column == value`` row condition (the per-tier ones) run together on those rows
    (:func:`_equality`).
    """
    present = set(columns)
    groups: dict[tuple[frozenset[str], tuple[str, Any] | None], list[_Entry]] = {}
    for e in entries:
        if e.frame != frame:
            continue
        if e.needs <= present:
            groups.setdefault((e.needs & TEXT_COLUMNS, _equality(e.config["kwargs"].get("row_condition"))),
                              []).append(e)
        else:
            skipped.append(e.check + (f" [tier {e.details['tier']}]" if "tier" in e.details else ""))
    out = []
    for k, ((_, where), group) in enumerate(groups.items()):
        needs = frozenset().union(*(e.needs for e in group))
        cols = [c for c in columns if c in needs or c in ID_COLUMNS[frame] or c == ORDER]
        out.append(_Runner(gx, context, f"{frame}-{k}", frame, group, params, cols, where))
    return out


def _equality(condition: Any) -> tuple[str, Any] | None:
    """``(column, value)`` of a ``column == value`` row condition (the per-tier entries' kind), else None.

    Entries sharing one are run together on the rows it selects, filtered once: great-expectations
    would filter the chunk again for each metric of each entry (about 7 times an entry). Its
    counts are then those of the filtered rows, as with the condition (``tests/benchmark``).
    """
    if (isinstance(condition, dict) and condition.get("type") == "comparison" and condition.get("operator") == "=="
            and set(condition) == {"type", "column", "operator", "parameter"}
            and isinstance(condition["column"], dict) and set(condition["column"]) == {"name"}
            and isinstance(condition["parameter"], (str, int, float, bool))):
        return condition["column"]["name"], condition["parameter"]
    return None


def validate_folder(folder: str | Path, *, manifest: Mapping[str, Any] | None = None) -> ValidationReport:
    """Check the benchmark in ``folder`` against the core suite and its kind's suite.

    ``manifest`` defaults to ``folder/manifest.json`` (the engine passes its own before the
    folder is complete). Reads the data files the manifest lists, after checking them against its
    sizes and sha256s (:func:`gradebench.benchmark.manifest.verify_data`) when the manifest is read
    here, a chunk of row groups at a time (:data:`CHUNK_ROWS` rows, whole queries), and merges the
    chunks' results, so memory does not grow with the benchmark. Failures come back in the report
    (suite order), never raised; a missing or changed data file or a missing great-expectations
    raises :class:`BenchmarkError`.
    """
    import pandas as pd
    import pyarrow as pa

    from gradebench.benchmark.manifest import read_manifest, verify_data

    gx = _import_gx()
    folder = Path(folder)
    if manifest is None:
        m = read_manifest(folder)
        verify_data(folder, m)  # a verdict on the data the manifest describes, not on files edited since
    else:
        m = manifest
    kind = benchmark_kind(m)
    names = ("core", kind)
    suites = [load_suite(n) for n in names]
    params, tiers = suite_parameters(m)
    entries, tier_params = expand(suites, tiers)
    params.update(tier_params)
    layout = read_layout(folder, m)
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    tallies: dict[int, _Tally] = {}
    skipped: list[str] = []
    n_rows = n_queries = 0
    with _no_batch_fingerprints():
        for runner in _runners(gx, context, "columns", list(layout.columns.columns), entries, params, skipped):
            runner.run(layout.columns, tallies)
        tables = iter(_chunk_tables(folder, layout)) if layout.chunks else iter([None])
        runners: dict[str, list[_Runner]] | None = None
        for table in tables:
            frames = _frames(table) if table is not None else {"rows": pa.table({}).to_pandas(),
                                                               "queries": pd.DataFrame()}
            if runners is None:  # every chunk has the same columns
                runners = {f: _runners(gx, context, f, list(frames[f].columns), entries, params, skipped)
                           for f in ("rows", "queries")}
            for f in ("rows", "queries"):
                for runner in runners[f]:
                    runner.run(frames[f], tallies)
            n_rows += len(frames["rows"])
            n_queries += len(frames["queries"])
    failures = [_failure(e, tallies[i]) for i, e in enumerate(entries) if i in tallies and not tallies[i].success]
    if skipped and not failures:  # a suite entry on a column no check covers: report it, never pass silently
        failures = [Failure(s, "not evaluated", (), None, None, "rows", error="a column it needs is missing")
                    for s in skipped]
    return ValidationReport(
        success=not failures,
        kind=kind,
        suites=names,
        suite_sha256=sha256_json(suites),
        rows=n_rows,
        queries=n_queries,
        expectations=len(tallies),
        failures=failures,
        skipped=skipped,
    )
