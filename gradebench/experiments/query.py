"""SQL over the result records: an in-memory DuckDB connection with the views of ``views.sql``.

Views (see ``leaderboard/views.sql`` for every column): ``results`` (one row per record, metric
values and CIs flattened), ``metrics`` (record x metric), ``per_query`` (record x metric x
query), ``predictions`` (record x candidate) and ``candidates`` (the rows of the benchmarks
the records reference). The record files themselves are the store; no ``.duckdb`` file is
ever written.

What a query may do: read the views, nothing else. A query is one ``SELECT`` (``WITH ...
SELECT``, ``FROM ...``, ``VALUES``, ``DESCRIBE``, ``SHOW`` and ``SUMMARIZE`` included); a second
statement after ``;`` and any other statement (``COPY``, ``ATTACH``, ``CREATE``, ``SET``,
``PRAGMA``, ``INSTALL``...) are refused before anything runs. The connection reads only the
files the views are defined over (the records, their predictions and per-query files, the
policy records and the referenced benchmarks' Parquet files); ``read_csv('/etc/passwd')``, any
write, any other file and the network fail with a permission error, and the configuration is
locked so no statement can lift that.

Example -- which tier pairs each scorer confuses (share of differently-graded pairs it orders
the wrong way round, ties counting 1/2)::

    WITH p AS (
        SELECT pr.record_id, pr.scorer, pr.query_id, pr.prediction, c.tier, c.relevance
        FROM predictions pr
        JOIN candidates c USING (benchmark_fingerprint, query_id, candidate_id)
    )
    SELECT a.scorer, a.tier AS better, b.tier AS worse, count(*) AS pairs,
           avg(CASE WHEN a.prediction < b.prediction THEN 1.0
                    WHEN a.prediction = b.prediction THEN 0.5 ELSE 0.0 END) AS swapped
    FROM p a JOIN p b ON a.record_id = b.record_id AND a.query_id = b.query_id
                     AND a.relevance > b.relevance
    GROUP BY ALL ORDER BY swapped DESC, a.scorer, better, worse

(``gradebench query "..."`` runs it; ``--format csv|json`` for machine-readable output.)
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gradebench.errors import GradebenchError, InvalidArgumentError, QueryError
from gradebench.experiments.record import PER_QUERY_SUFFIX, PREDICTIONS_SUFFIX, RecordError
from gradebench.experiments.tables import FIGURE_PREFIX, pack_path
from gradebench.experiments.store import PREDICTIONS_HINT, record_files
from gradebench.experiments.verify import verified_records
from gradebench.paths import RESULTS_DIR

_PKG = Path(__file__).resolve().parents[1]
VIEWS = ("results", "metrics", "per_query", "query_figures", "predictions", "candidates", "records",
         "benchmark_files")
FORMATS = ("table", "csv", "json")
_EMPTY_CANDIDATES = (
    "(SELECT NULL::VARCHAR AS filename, NULL::VARCHAR AS query_id, NULL::VARCHAR AS query, "
    "NULL::VARCHAR AS candidate_id, NULL::VARCHAR AS candidate, NULL::DOUBLE AS score, NULL::SMALLINT AS relevance, "
    "NULL::VARCHAR AS tier, NULL::VARCHAR AS split WHERE false)"
)
VIEWS_HINT = ("views: results, metrics, per_query, query_figures, predictions, candidates, records, policies (columns in "
              'leaderboard/views.sql); quote metric columns: "ndcg@5"')
_EMPTY_PREDICTIONS = (
    "(SELECT NULL::VARCHAR AS record_id, NULL::VARCHAR AS query_id, NULL::VARCHAR AS candidate_id, "
    "NULL::VARCHAR AS split, NULL::DOUBLE AS prediction, NULL::DOUBLE AS relevance, NULL::DOUBLE AS score, "
    "NULL::VARCHAR AS tier WHERE false)"
)
_EMPTY_FILES = (
    "(SELECT NULL::VARCHAR AS file, NULL::VARCHAR AS benchmark, NULL::VARCHAR AS benchmark_fingerprint WHERE false)"
)


def views_sql_path() -> Path:
    """``views.sql``: ``gradebench/_leaderboard/views.sql`` in a wheel, ``leaderboard/views.sql`` in a checkout."""
    for candidate in (_PKG / "_leaderboard" / "views.sql", _PKG.parent / "leaderboard" / "views.sql"):
        if candidate.is_file():
            return candidate
    raise GradebenchError("views.sql not found", path=_PKG, hint="reinstall gradebench")


def _lit(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _list(paths: list[Path]) -> str:
    return "[" + ", ".join(_lit(str(p)) for p in paths) + "]"


def _benchmark_files(docs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """``(file, name, fingerprint)`` of every data file of the benchmarks the records name (found ones only)."""
    from gradebench.benchmark.lists import open_benchmark

    seen: dict[str, tuple[str, str, str]] = {}
    out: list[tuple[str, str, str]] = []
    for doc in docs:
        b = doc.get("benchmark", {})
        key = b.get("fingerprint")
        if key in seen or not b.get("path"):
            continue
        seen[key] = b
        try:
            bench = open_benchmark(b["path"])
        except GradebenchError:  # moved or deleted benchmark: its candidates are simply absent
            continue
        if bench.fingerprint != key:
            continue
        for files in bench.files.values():
            out.extend((str(f), bench.name, bench.fingerprint) for f in files)
    return sorted(out)


def _per_query_sources(loose: list[Path], packs: list[Path], left_out: list[str] = ()) -> tuple[str, str]:
    """The ``per_query`` and ``query_figures`` relations over the loose tables (long form, figures as
    ``figure:...`` rows) and the packs (a column per metric and figure, metric names per record in
    the file's metadata; see :mod:`gradebench.experiments.pack`), without the pack rows of the records
    ``left_out`` (ids of records that failed their checks)."""
    import pyarrow.parquet as pq

    metrics: list[str] = []
    figures: list[str] = []
    if loose:
        src = f"read_parquet({_list(loose)})"
        metrics.append(f"SELECT record_id, query_id, metric, value FROM {src} "
                       f"WHERE NOT starts_with(CAST(metric AS VARCHAR), '{FIGURE_PREFIX}')")
        figures.append(f"SELECT record_id, query_id, metric AS figure, value FROM {src} "
                       f"WHERE starts_with(CAST(metric AS VARCHAR), '{FIGURE_PREFIX}')")
    for path in packs:
        schema = pq.read_schema(path)
        sets = json.loads((schema.metadata or {}).get(b"gradebench.pack.metric_sets", b"[]").decode())
        src = f"read_parquet({_lit(str(path))})"
        if left_out:
            src = f"(SELECT * FROM {src} WHERE CAST(record_id AS VARCHAR) NOT IN ({', '.join(map(_lit, left_out))}))"
        for k, entries in enumerate(sets):
            pairs = [(e, e) if isinstance(e, str) else tuple(e) for e in entries]
            if pairs:
                names = ", ".join(_lit(n) for n, _ in pairs)
                cols = ", ".join(_ident(c) for _, c in pairs)
                metrics.append(f"SELECT record_id, query_id, unnest([{names}]) AS metric, unnest([{cols}]) AS value "
                               f"FROM {src} WHERE metric_set = {k}")
        cols = [c for c in schema.names if c.startswith(FIGURE_PREFIX)]
        if cols:
            inner = (f"SELECT record_id, query_id, unnest([{', '.join(_lit(c) for c in cols)}]) AS figure, "
                     f"unnest([{', '.join(f'CAST({_ident(c)} AS DOUBLE)' for c in cols)}]) AS value FROM {src}")
            figures.append(f"SELECT * FROM ({inner}) WHERE value IS NOT NULL")
    empty = "(SELECT NULL::VARCHAR AS record_id, NULL::VARCHAR AS query_id, NULL::VARCHAR AS {0}, NULL::DOUBLE AS value WHERE false)"
    return (("(" + " UNION ALL ".join(metrics) + ")") if metrics else empty.format("metric"),
            ("(" + " UNION ALL ".join(figures) + ")") if figures else empty.format("figure"))


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def view_statements(results_dir: str | Path) -> str:
    """The SQL of ``views.sql`` with its placeholders filled for ``results_dir``.

    Raises:
        RecordError: no record under ``results_dir``.
    """
    return _views(results_dir)[0]


def _views(results_dir: str | Path) -> tuple[str, list[Path]]:
    """``(view SQL, every file the views read)`` for ``results_dir``."""
    files = record_files(results_dir)
    if not files:
        raise RecordError("no result records", path=results_dir,
                          hint="evaluate something first (gradebench eval ...) or pass --results-dir")
    # a record failing its checks (its predictions included, when here) is left out of every view, in one line
    good = verified_records(results_dir, files=files, predictions=True)
    kept = {r.path for r in good}
    left_out = sorted(f.name[: -len(".json")] for f in files if f not in kept)
    files = [f for f in files if f in kept]
    if not files:
        raise RecordError("no result record passes its checks", path=results_dir,
                          hint="the warnings above name each record and what is wrong with it")
    docs = [{"benchmark": r.benchmark.model_dump(mode="json")} for r in good]
    stems = [f.name[: -len(".json")] for f in files]
    bench = _benchmark_files(docs)
    bench_paths = [Path(b[0]) for b in bench]
    if bench:
        source = f"read_parquet({_list(bench_paths)}, filename = true, union_by_name = true)"
        table = "(VALUES " + ", ".join(f"({_lit(f)}, {_lit(n)}, {_lit(fp)})" for f, n, fp in bench) + \
            ") AS t(file, benchmark, benchmark_fingerprint)"
    else:
        source, table = _EMPTY_CANDIDATES, _EMPTY_FILES
    policy_files = sorted(
        f for f in Path(results_dir).glob("*/*.policy.json") if f.is_file() and not f.name.startswith(".")
    )
    policy_source = (
        f"read_text({_list(policy_files)})" if policy_files
        else "(SELECT NULL::VARCHAR AS content, NULL::VARCHAR AS filename WHERE false)"
    )
    predictions = [p for p in (f.parent / (s + PREDICTIONS_SUFFIX) for f, s in zip(files, stems)) if p.is_file()]
    loose = [p for p in (f.parent / (s + PER_QUERY_SUFFIX) for f, s in zip(files, stems)) if p.is_file()]
    packs = sorted({pack_path(f.parent) for f in files if pack_path(f.parent).is_file()})
    per_query_source, figures_source = _per_query_sources(loose, packs, left_out)
    fills = {
        "${RECORD_FILES}": _list(files),
        "${POLICY_SOURCE}": policy_source,
        "${PREDICTIONS_SOURCE}": (f"read_parquet({_list(predictions)}, union_by_name = true)" if predictions
                                  else _EMPTY_PREDICTIONS),
        "${PER_QUERY_SOURCE}": per_query_source,
        "${FIGURES_SOURCE}": figures_source,
        "${CANDIDATES_SOURCE}": source,
        "${BENCHMARK_FILES}": table,
    }
    sql = views_sql_path().read_text(encoding="utf-8")
    for key, value in fills.items():
        sql = sql.replace(key, value)
    return sql, [*files, *predictions, *loose, *packs, *policy_files, *bench_paths]


def connect(results_dir: str | Path = RESULTS_DIR) -> Any:
    """An in-memory DuckDB connection with the result views defined, locked to them.

    The views are created first; then the connection may read only the files the views read
    (``allowed_paths``), every other file and network access is off
    (``enable_external_access = false``: no ``read_csv('/etc/passwd')``, ``COPY ... TO``,
    ``ATTACH``, ``INSTALL``) and the configuration is locked (``lock_configuration``), so no
    statement can turn that back on.
    """
    import duckdb

    sql, files = _views(results_dir)
    con = duckdb.connect(":memory:")
    try:
        con.execute(sql)
        con.execute(f"SET allowed_paths = {_list(files)}")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except duckdb.Error as e:
        con.close()
        raise QueryError(
            f"cannot define the result views: {_first_line(e)}", path=views_sql_path(),
            hint="a record or benchmark file may be corrupt; check the files under --results-dir",
        ) from None
    return con


def check_read_only(con: Any, sql: str) -> None:
    """Refuse anything but one read-only query: a second statement, or a statement that is not a
    ``SELECT`` (``WITH ... SELECT``, ``FROM ...``, ``VALUES``, ``DESCRIBE``, ``SUMMARIZE`` and
    ``SHOW`` are ``SELECT`` s to DuckDB).

    Raises:
        QueryError: the SQL does not parse, holds several statements, or one that is no query.
    """
    import duckdb

    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryError(f"SQL error: {_first_line(e)}", hint=VIEWS_HINT) from None
    if len(statements) != 1:
        raise QueryError(f"gradebench query runs one SELECT statement; this SQL holds {len(statements)}",
                         hint="drop everything after the first ';' and run each query on its own")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        name = getattr(kind, "name", str(kind))
        article = "an" if name[:1] in "AEIOU" else "a"  # an UPDATE, an INSERT, a DELETE
        raise QueryError(f"gradebench query is a read-only view of the records: {article} {name} statement is not "
                         "allowed, only SELECT (or WITH ... SELECT)",
                         hint="select from the views results, metrics, per_query, predictions, candidates, "
                              "records, policies; write files with --format csv|json and a shell redirect")


def _check_predictions(con: Any, sql: str, results_dir: str | Path) -> None:
    """Refuse a query of the ``predictions`` view when no record's predictions file is there (a packed
    folder such as ``leaderboard/results`` keeps them out of git): one line saying what to do.

    Raises:
        QueryError: the query reads ``predictions`` and none of the records has its predictions.
    """
    import re

    try:
        tables = {t.lower() for t in con.get_table_names(sql, qualified=False)}
    except Exception:  # noqa: BLE001 - a query DuckDB cannot bind: look for the name instead
        tables = {"predictions"} if re.search(r"\bpredictions\b", sql, re.IGNORECASE) else set()
    if "predictions" not in tables:
        return
    files = record_files(results_dir)
    if any((f.parent / (f.name[: -len(".json")] + PREDICTIONS_SUFFIX)).is_file() for f in files):
        return
    raise QueryError(f"the predictions view needs the records' per-candidate predictions, and none of the "
                     f"{len(files)} records has them here (committed records keep them out of git)",
                     hint=PREDICTIONS_HINT)


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


@dataclass(frozen=True)
class QueryResult:
    """Columns and rows of a query (values as plain Python: str, int, float, bool, None)."""

    columns: list[str]
    rows: list[list[Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "rows": [dict(zip(self.columns, r)) for r in self.rows]}

    def render(self, fmt: Literal["table", "csv", "json"] = "table") -> str:
        if fmt not in FORMATS:
            raise InvalidArgumentError(f"unknown format {fmt!r}", hint=f"one of {', '.join(FORMATS)}")
        if fmt == "json":
            return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"
        if fmt == "csv":
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(self.columns)
            w.writerows([["" if v is None else v for v in r] for r in self.rows])
            return buf.getvalue()
        text = [[_cell(v) for v in r] for r in self.rows]
        widths = [max([len(c)] + [len(r[i]) for r in text]) for i, c in enumerate(self.columns)]
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
        out = [line(self.columns), line(["-" * w for w in widths]), *(line(r) for r in text)]
        return "\n".join(out) + f"\n({len(self.rows)} row{'s' if len(self.rows) != 1 else ''})\n"


def _cell(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _plain(v: Any) -> Any:
    """DuckDB values -> JSON-ready Python values (NaN/inf -> None, Decimal -> float, others -> str)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    try:
        from decimal import Decimal

        if isinstance(v, Decimal):
            return float(v)
    except ImportError:  # pragma: no cover
        pass
    return str(v)


def run_query(sql: str, *, results_dir: str | Path = RESULTS_DIR) -> QueryResult:
    """Run ``sql``, one read-only query, over the result views of ``results_dir``.

    The query runs on a :func:`connect` connection (no file but the views' own, no network, a
    locked configuration) after :func:`check_read_only`.

    Raises:
        QueryError: the SQL is invalid or fails, holds several statements or one that is no
            query, or reads a file it may not (one line, with the views in the hint).
        RecordError: no records under ``results_dir``.
    """
    import duckdb

    if not isinstance(sql, str) or not sql.strip():
        raise InvalidArgumentError("empty SQL query",
                                   hint="e.g. gradebench query 'select scorer, \"ndcg@5\" from results'")
    con = connect(results_dir)
    try:
        check_read_only(con, sql)
        _check_predictions(con, sql, results_dir)
        cur = con.execute(sql)
        columns = [d[0] for d in cur.description] if cur.description else []
        rows = [[_plain(v) for v in r] for r in cur.fetchall()] if columns else []
    except duckdb.PermissionException as e:
        raise QueryError(f"SQL error: {_first_line(e)}", hint="gradebench query reads only the records' views; "
                         "files other than the records and their benchmarks are not readable") from None
    except duckdb.Error as e:
        raise QueryError(f"SQL error: {_first_line(e)}", hint=VIEWS_HINT) from None
    finally:
        con.close()
    return QueryResult(columns=columns, rows=rows)


def query(sql: str, *, results_dir: str | Path = RESULTS_DIR,
          fmt: Literal["table", "csv", "json"] = "table") -> str:
    """Run ``sql`` over the result views and render the answer as a text table, CSV or JSON."""
    if fmt not in FORMATS:
        raise InvalidArgumentError(f"unknown format {fmt!r}", hint=f"one of {', '.join(FORMATS)}")
    return run_query(sql, results_dir=results_dir).render(fmt)
