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

great-expectations is imported inside :func:`validate_folder` (it takes seconds to import).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
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


def _data_files(folder: Path, manifest: Mapping[str, Any]) -> list[str]:
    names = [f for s in sorted(manifest["splits"]) for f in manifest["splits"][s]["files"]]
    for n in names:
        if not (folder / n).is_file():
            raise BenchmarkError(f"data file {n} listed in the manifest is missing", path=folder,
                                 hint="rebuild with `gradebench build ... --force`")
    return names


def read_frames(folder: Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The three tables the suites run on, as pandas DataFrames (see the module docstring)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = _data_files(folder, manifest)
    schema_rows, tables = [], []
    for n in names:
        schema = pq.read_schema(folder / n)
        present = [c for c in COLUMNS if c in schema.names]
        schema_rows += [{"file": n, "name": c, "arrow_type": str(schema.field(c).type) if c in present else "missing"}
                        for c in COLUMNS]
        tables.append(pq.read_table(folder / n, columns=present))
    # a column missing from a file or typed differently across files is left out of the rows
    # (the column checks report it; the checks that need it are listed as skipped)
    cols = [c for c in COLUMNS if tables and all(c in t.column_names for t in tables)
            and len({t.schema.field(c).type for t in tables}) == 1]
    if tables:  # files may differ in nullability only
        common = pa.schema([pa.field(c, tables[0].schema.field(c).type) for c in cols])
        table = pa.concat_tables([t.select(cols).cast(common) for t in tables])
    else:
        table = None
    frames = {"columns": pd.DataFrame(schema_rows, columns=["file", "name", "arrow_type"])}
    frames["rows"] = (table.drop_columns([c for c in ("query",) if c in cols]) if table is not None
                      else pa.table({})).to_pandas()
    frames["queries"] = _queries_frame(table) if table is not None and "query_id" in cols else pd.DataFrame()
    return frames


def _queries_frame(table: Any) -> Any:
    """One row per query_id in order of first appearance: n_candidates, n_grades, n_splits, query."""
    import pyarrow.compute as pc

    aggs: list[tuple[str, str, Any, str]] = [("query_id", "count", pc.CountOptions(mode="all"), "n_candidates")]
    aggs += [(c, "count_distinct", None, name) for c, name in (("relevance", "n_grades"), ("split", "n_splits"))
             if c in table.column_names]
    if "query" in table.column_names:
        aggs.append(("query", "first", None, "query"))
    grouped = table.group_by("query_id", use_threads=False).aggregate([(c, f, o) for c, f, o, _ in aggs])
    df = grouped.to_pandas()
    return df.rename(columns={f"{c}_{f}": name for c, f, _, name in aggs})


# -- great-expectations -------------------------------------------------------------------------


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


def _json_value(v: Any) -> Any:
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, str) and len(v) > 80:
        return v[:77] + "..."
    return v


def _failure(entry: _Entry, result: Any) -> Failure:
    unit = UNITS[entry.frame]
    if result.exception_info and result.exception_info.get("raised_exception"):
        msg = str(result.exception_info.get("exception_message") or "unknown error").splitlines()[0]
        return Failure(entry.check, entry.config["type"], entry.columns, None, None, unit, (), entry.details, msg)
    r = result.result or {}
    ids = ID_COLUMNS[entry.frame]
    examples = []
    for item in (r.get("partial_unexpected_index_list") or [])[:MAX_EXAMPLES]:
        if isinstance(item, dict):
            ex = {k: _json_value(item[k]) for k in ids if k in item}
            rest = [v for k, v in item.items() if k not in ids]
            if rest:
                ex["value"] = _json_value(rest[0])
        else:
            ex = {"row": _json_value(item)}
        examples.append(ex)
    unexpected = r.get("unexpected_count")
    total = r.get("element_count")
    if unexpected is None:  # a table-level expectation: the whole table fails
        unexpected, total = 1, 1
    return Failure(entry.check, entry.config["type"], entry.columns, int(unexpected), int(total), unit,
                   tuple(examples), entry.details)


def _run_frame(
    gx: Any, context: Any, name: str, frame: str, df: Any, entries: list[_Entry], params: dict
) -> dict[int, Any]:
    """Validate one table (``frame``'s columns that ``entries`` need) with its entries; results by entry index."""
    from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

    expectations = []
    for e in entries:
        try:
            expectations.append(ExpectationConfiguration(**e.config).to_domain_obj())
        except Exception as err:  # noqa: BLE001 - a bad suite entry is a packaging bug, reported as such
            raise BenchmarkError(f"expectation {e.check!r} is not valid for great-expectations: {err}",
                                 path=suites_dir(), hint="reinstall gradebench") from None
    suite = context.suites.add(gx.ExpectationSuite(name=f"gradebench-{name}", expectations=expectations))
    asset = context.data_sources.add_pandas(f"gradebench-{name}").add_dataframe_asset(name)
    batch = asset.add_batch_definition_whole_dataframe("all").get_batch(batch_parameters={"dataframe": df})
    index_columns = [c for c in ID_COLUMNS[frame] if c in df.columns]
    result_format = {"result_format": "SUMMARY", "partial_unexpected_count": MAX_EXAMPLES,
                     "unexpected_index_column_names": index_columns}
    results = batch.validate(suite, result_format=result_format, expectation_parameters=params)
    return {int(r.expectation_config.meta["gradebench_index"]): r for r in results.results}


def validate_folder(folder: str | Path, *, manifest: Mapping[str, Any] | None = None) -> ValidationReport:
    """Check the benchmark in ``folder`` against the core suite and its kind's suite.

    ``manifest`` defaults to ``folder/manifest.json`` (the engine passes its own before the
    folder is complete). Reads the data files the manifest lists, after checking them against its
    sizes and sha256s (:func:`gradebench.benchmark.manifest.verify_data`) when the manifest is read
    here. Failures come back in the report (suite order), never raised; a missing or changed data
    file or a missing great-expectations raises :class:`BenchmarkError`.
    """
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
    frames = read_frames(folder, m)
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    results: dict[int, Any] = {}
    skipped: list[str] = []
    for frame in FRAMES:
        df = frames[frame]
        runnable = []
        for e in entries:
            if e.frame != frame:
                continue
            if e.needs <= set(df.columns):
                runnable.append(e)
            else:
                skipped.append(e.check + (f" [tier {e.details['tier']}]" if "tier" in e.details else ""))
        # the checks of the text columns run on their own batch: great-expectations copies the
        # whole table for each row filter and hashes each batch, so the others run without texts
        groups: dict[frozenset[str], list[_Entry]] = {}
        for e in runnable:
            groups.setdefault(e.needs & TEXT_COLUMNS, []).append(e)
        for k, group in enumerate(groups.values()):
            needs = frozenset().union(*(e.needs for e in group))
            cols = [c for c in df.columns if c in needs or c in ID_COLUMNS[frame]]
            results.update(_run_frame(gx, context, f"{frame}-{k}", frame, df[cols], group, params))
    failures = [_failure(e, results[i]) for i, e in enumerate(entries) if i in results and not results[i].success]
    if skipped and not failures:  # a suite entry on a column no check covers: report it, never pass silently
        failures = [Failure(s, "not evaluated", (), None, None, "rows", error="a column it needs is missing")
                    for s in skipped]
    return ValidationReport(
        success=not failures,
        kind=kind,
        suites=names,
        suite_sha256=sha256_json(suites),
        rows=len(frames["rows"]),
        queries=len(frames["queries"]),
        expectations=len(results),
        failures=failures,
        skipped=skipped,
    )
