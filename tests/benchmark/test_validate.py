"""Benchmark validation (great-expectations): the demo passes; each kind of corruption fails
with its expectation named, the count of failing records and example ids; a failing build is refused."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gradebench.benchmark.validate import (
    ValidationReport,
    benchmark_kind,
    load_suite,
    suite_parameters,
    tier_score_bounds,
    validate_folder,
)
from gradebench.errors import BenchmarkError
from gradebench.experiments.build import build
from tests.conftest import modules_loaded_by, shared_data

pytest.importorskip("great_expectations")

TRAIN = "data/train-00000-of-00001.parquet"


@pytest.fixture(scope="module")
def demo_report(demo_benchmark) -> ValidationReport:
    return validate_folder(demo_benchmark)


def _redigest(folder: Path) -> Path:
    """Record the current data files in the manifest, as a (faulty) build would have: ``validate``
    verifies the files against the manifest first, and these tests are about the suites."""
    from gradebench.benchmark.manifest import file_digests

    m = json.loads((folder / "manifest.json").read_text())
    m["file_digests"] = file_digests(folder, list(m["file_digests"]))
    (folder / "manifest.json").write_text(json.dumps(m))
    return folder


def _corrupt(src: Path, dst: Path, edit: Callable[[pd.DataFrame], pd.DataFrame]) -> Path:
    """A copy of the benchmark ``src`` whose train file went through ``edit`` (same Arrow schema)."""
    folder = dst / "bench"
    shutil.copytree(src, folder)
    table = pq.read_table(folder / TRAIN)
    df = edit(table.to_pandas())
    pq.write_table(pa.Table.from_pandas(df, schema=table.schema, preserve_index=False), folder / TRAIN)
    return _redigest(folder)


def _failure(report: ValidationReport, name: str):
    found = [f for f in report.failures if f.expectation == name]
    assert found, f"no failure named {name!r}: {[f.expectation for f in report.failures]}"
    return found[0]


def _first_query(df: pd.DataFrame) -> str:
    return str(df["query_id"].iloc[0])


# -- a good benchmark ---------------------------------------------------------------------------


def test_demo_passes(demo_report):
    assert demo_report.success
    assert demo_report.failures == [] and demo_report.first_failure() is None
    s = demo_report.summary()
    assert s["kind"] == "tiered" and s["suites"] == ["core", "tiered"]
    assert (s["rows"], s["queries"]) == (240, 48)
    # 8 column checks + 12 row checks + 5 query checks, 2 tiered row checks + 2 per tier x 5 tiers
    assert s["expectations"] == s["passed"] == 37
    assert s["failures"] == [] and s["skipped"] == []


def test_summary_is_small_deterministic_json(demo_benchmark, demo_report):
    s = demo_report.summary()
    text = json.dumps(s, sort_keys=True)
    assert len(text) < 1000
    assert "time" not in text and "run_id" not in text
    assert validate_folder(demo_benchmark).summary() == s  # a second run gives the same record


def test_manifest_argument_equals_manifest_file(demo_benchmark, demo_report):
    manifest = json.loads((demo_benchmark / "manifest.json").read_text())
    assert validate_folder(demo_benchmark, manifest=manifest).summary() == demo_report.summary()


def test_batches_are_not_fingerprinted_and_the_threshold_is_put_back(demo_benchmark, demo_report, monkeypatch):
    """great-expectations' md5 of every batch is skipped (a quarter of the time), the report is the same,
    and its module constant is as it was afterwards (also when validation raises)."""
    from great_expectations.execution_engine import pandas_execution_engine as engine

    def fail(df):
        raise AssertionError("a batch was fingerprinted")

    monkeypatch.setattr(engine, "hash_pandas_dataframe", fail)
    before = engine.HASH_THRESHOLD
    assert validate_folder(demo_benchmark).summary() == demo_report.summary()
    assert engine.HASH_THRESHOLD == before
    monkeypatch.setattr("gradebench.benchmark.validate._frames", lambda table: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        validate_folder(demo_benchmark)
    assert engine.HASH_THRESHOLD == before


def test_great_expectations_not_imported_with_the_module():
    assert modules_loaded_by("import gradebench.benchmark.validate", "great_expectations")[0] == []


# -- corrupted copies ---------------------------------------------------------------------------


def test_score_above_one(demo_benchmark, tmp_path):
    def edit(df):
        df.loc[3, "score"] = 1.5
        return df

    df = pq.read_table(demo_benchmark / TRAIN).to_pandas()
    qid, cid = df.loc[3, "query_id"], df.loc[3, "candidate_id"]
    report = validate_folder(_corrupt(demo_benchmark, tmp_path, edit))
    assert not report.success
    f = _failure(report, "score within [0, 1]")
    assert (f.unexpected, f.total, f.unit, f.columns) == (1, 240, "rows", ("score",))
    assert f.examples == ({"query_id": qid, "candidate_id": cid, "value": 1.5},)
    assert report.first_failure().startswith(
        f"score within [0, 1] failed on 1 of 240 rows (e.g. query_id {qid}, candidate_id {cid})"
    )


def test_duplicated_candidate_row(demo_benchmark, tmp_path):
    report = validate_folder(_corrupt(demo_benchmark, tmp_path, lambda df: pd.concat([df, df.iloc[[7]]])))
    df = pq.read_table(demo_benchmark / TRAIN).to_pandas()
    qid, cid = df.loc[7, "query_id"], df.loc[7, "candidate_id"]
    f = _failure(report, "unique (query_id, candidate_id)")
    assert (f.unexpected, f.total) == (2, 241)  # both copies
    assert {(e["query_id"], e["candidate_id"]) for e in f.examples} == {(qid, cid)}
    assert report.failures[0] is f  # suite order: the row check before the list-size check it causes
    size = _failure(report, "list size within bounds")
    assert size.unexpected == 1 and size.examples == ({"query_id": qid, "value": 6},)


@pytest.mark.parametrize("text", ["", "   ", "\t\n"])
def test_empty_candidate_text(demo_benchmark, tmp_path, text):
    def edit(df):
        df.loc[11, "candidate"] = text
        return df

    report = validate_folder(_corrupt(demo_benchmark, tmp_path, edit))
    df = pq.read_table(demo_benchmark / TRAIN).to_pandas()
    f = _failure(report, "candidate text not empty or whitespace-only")
    assert f.unexpected == 1
    assert f.examples[0]["query_id"] == df.loc[11, "query_id"]
    assert f.examples[0]["candidate_id"] == df.loc[11, "candidate_id"]
    assert [x.expectation for x in report.failures] == [f.expectation]


def test_empty_query_text(demo_benchmark, tmp_path):
    def edit(df):
        df["query"] = df["query"].where(df["query_id"] != _first_query(df), " ")
        return df

    df = pq.read_table(demo_benchmark / TRAIN).to_pandas()
    f = _failure(validate_folder(_corrupt(demo_benchmark, tmp_path, edit)), "query text not empty or whitespace-only")
    assert (f.unexpected, f.unit) == (1, "queries")
    assert f.examples[0]["query_id"] == _first_query(df)


def test_query_with_one_candidate(demo_benchmark, tmp_path):
    def edit(df):
        qid = _first_query(df)
        keep = (df["query_id"] != qid) | ~df.duplicated("query_id")
        return df[keep]

    df = pq.read_table(demo_benchmark / TRAIN).to_pandas()
    report = validate_folder(_corrupt(demo_benchmark, tmp_path, edit))
    f = _failure(report, "list size within bounds")
    assert (f.unexpected, f.total, f.unit) == (1, 48, "queries")
    assert f.examples == ({"query_id": _first_query(df), "value": 1},)
    assert "list size within bounds failed on 1 of 48 queries" in report.first_failure()
    # one candidate also means one grade
    assert _failure(report, "at least two distinct relevance values per query").unexpected == 1


def test_query_with_one_grade(demo_benchmark, tmp_path):
    def edit(df):
        df.loc[df["query_id"] == _first_query(df), "relevance"] = 2
        return df

    df = pq.read_table(demo_benchmark / TRAIN).to_pandas()
    report = validate_folder(_corrupt(demo_benchmark, tmp_path, edit))
    f = _failure(report, "at least two distinct relevance values per query")
    assert (f.unexpected, f.unit) == (1, "queries")
    assert f.examples == ({"query_id": _first_query(df), "value": 1},)
    # the relabelled tiers no longer carry their declared relevance (4 of the 5 tiers)
    wrong = [x for x in report.failures if x.expectation == "tier relevance equals its declared relevance"]
    assert sorted(x.details["tier"] for x in wrong) == ["gold", "good", "nonsense", "poor"]


def test_tier_score_outside_its_range(demo_benchmark, tmp_path):
    df = pq.read_table(demo_benchmark / TRAIN).to_pandas()
    row = int(df.index[df["tier"] == "nonsense"][0])

    def edit(d):
        d.loc[row, "score"] = 0.9  # nonsense: [0, 0.3] widened by the bonuses to at most 0.4
        return d

    report = validate_folder(_corrupt(demo_benchmark, tmp_path, edit))
    assert len(report.failures) == 1
    f = report.failures[0]
    assert f.expectation == "tier score within declared range (after adjustment bounds)"
    assert f.details == {"tier": "nonsense", "tier_score_min": 0.0, "tier_score_max": 0.4}
    assert (f.unexpected, f.total, f.columns) == (1, 48, ("tier", "score"))
    assert f.examples == ({"query_id": df.loc[row, "query_id"], "candidate_id": df.loc[row, "candidate_id"],
                           "value": 0.9},)
    assert report.first_failure().startswith(
        "tier score within declared range (after adjustment bounds) [tier nonsense] failed on 1 of 48 rows"
    )
    s = report.summary()
    assert not s["success"] and s["failures"][0]["details"]["tier"] == "nonsense"
    json.dumps(s)


def test_wrong_column_type_and_bad_split(demo_benchmark, tmp_path):
    folder = tmp_path / "bench"
    shutil.copytree(demo_benchmark, folder)
    t = pq.read_table(folder / TRAIN)
    i = t.schema.get_field_index("relevance")
    t = t.set_column(i, pa.field("relevance", pa.string()), pa.compute.cast(t["relevance"], pa.string()))
    j = t.schema.get_field_index("split")
    t = t.set_column(j, "split", pa.array(["dev"] * t.num_rows))
    pq.write_table(t, folder / TRAIN)
    report = validate_folder(_redigest(folder))
    f = _failure(report, "core column relevance present as int")
    assert (f.unexpected, f.total, f.unit) == (1, 3, "files")
    assert f.examples == ({"file": TRAIN, "name": "relevance", "value": "string"},)
    assert _failure(report, "split in {train, validation, test}").unexpected == 190


def test_missing_column_is_reported_and_its_checks_skipped(demo_benchmark, tmp_path):
    folder = tmp_path / "bench"
    shutil.copytree(demo_benchmark, folder)
    for f in (folder / "data").glob("*.parquet"):
        t = pq.read_table(f)
        pq.write_table(t.drop_columns(["score"]), f)
    report = validate_folder(_redigest(folder))
    f = _failure(report, "core column score present as float")
    assert f.unexpected == 3 and f.examples[0]["value"] == "missing"
    assert "score within [0, 1]" in report.skipped
    assert "tier score within declared range (after adjustment bounds) [tier gold]" in report.skipped


def test_natural_benchmark_uses_the_natural_suite(demo_benchmark, tmp_path):
    folder = tmp_path / "bench"
    shutil.copytree(demo_benchmark, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    for key in ("tiers", "scoring"):
        manifest["recipe"].pop(key)
    for stats in manifest["stats"].values():
        stats.pop("tiers", None)
    assert benchmark_kind(manifest) == "natural"
    report = validate_folder(folder, manifest=manifest)
    assert report.summary()["suites"] == ["core", "natural"]
    f = _failure(report, "tier is null for natural grades")  # the demo's rows still carry tiers
    assert (f.unexpected, f.total) == (240, 240)
    assert len(report.failures) == 1  # no list-size upper bound without tier counts


def test_missing_data_file(demo_benchmark, tmp_path):
    folder = tmp_path / "bench"
    shutil.copytree(demo_benchmark, folder)
    (folder / TRAIN).unlink()
    with pytest.raises(BenchmarkError, match="missing"):
        validate_folder(folder)


def test_data_changed_after_the_build_is_refused_before_the_suites_run(demo_benchmark, tmp_path):
    folder = tmp_path / "bench"
    shutil.copytree(demo_benchmark, folder)
    t = pq.read_table(folder / TRAIN)
    pq.write_table(t.slice(0, t.num_rows - 1), folder / TRAIN)
    with pytest.raises(BenchmarkError, match=f"the data does not match the manifest: {TRAIN}"):
        validate_folder(folder)


def test_great_expectations_missing(demo_benchmark, monkeypatch):
    monkeypatch.setitem(sys.modules, "great_expectations", None)
    with pytest.raises(BenchmarkError, match=r"great-expectations.*gradebench\[validate\]"):
        validate_folder(demo_benchmark)


# -- the suites and their parameters ------------------------------------------------------------


def test_suites_are_great_expectations_configurations():
    from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

    for name in ("core", "tiered", "natural"):
        suite = load_suite(name)
        for e in suite["expectations"]:
            kwargs = {k: (1 if isinstance(v, dict) and "$PARAMETER" in v else v) for k, v in e["kwargs"].items()}
            if e["kwargs"].get("value_set", {}) == {"$PARAMETER": "tier_names"} or "tier_relevance" in str(e):
                kwargs["value_set"] = [1]
            ExpectationConfiguration(type=e["type"], kwargs=kwargs, meta=e["meta"]).to_domain_obj()


def test_tier_score_bounds():
    adj = {"label_match_bonus": 0.05, "keyword_bonus": 0.03, "overlap_bonus": 0.02, "short_penalty": 0.1,
           "short_tiers": ["gold", "good"], "gibberish_penalty": 0.3, "gibberish_exempt_tiers": ["nonsense"]}
    alg1 = {"mode": "algorithm1", "adjustments": adj}
    gold = {"name": "gold", "relevance": 4, "score_range": [0.7, 1.0]}
    fair = {"name": "fair", "relevance": 2, "score_range": [0.3, 0.7]}
    nonsense = {"name": "nonsense", "relevance": 0, "score_range": [0.0, 0.3]}
    assert tier_score_bounds(gold, alg1, 4) == pytest.approx((0.3, 1.0))  # 0.7 - 0.1 - 0.3; clipped at 1
    assert tier_score_bounds(fair, alg1, 4) == pytest.approx((0.0, 0.8))  # 0.3 - 0.3 (no short penalty)
    assert tier_score_bounds(nonsense, alg1, 4) == pytest.approx((0.0, 0.4))  # exempt from gibberish
    assert tier_score_bounds(fair, {"mode": "uniform"}, 4) == (0.3, 0.7)
    assert tier_score_bounds(fair, {"mode": "grade"}, 4) == (0.5, 0.5)


def test_suite_parameters_from_the_manifest(demo_benchmark):
    manifest = json.loads((demo_benchmark / "manifest.json").read_text())
    params, tiers = suite_parameters(manifest)
    assert params == {"max_list_size": 5, "tier_names": ["gold", "good", "fair", "poor", "nonsense"]}
    assert tiers[0] == {"name": "gold", "tier_relevance": [4], "tier_score_min": 0.3, "tier_score_max": 1.0}
    manifest["recipe"]["tiers"][0]["count"] = 3
    assert suite_parameters(manifest)[0]["max_list_size"] == 7


# -- the engine ---------------------------------------------------------------------------------


def test_build_with_validation_records_the_summary(tmp_path, demo_report):
    result = build("demo", out=tmp_path, progress=False, validate=True)
    assert result.validation == demo_report.summary()
    manifest = json.loads((Path(result.path) / "manifest.json").read_text())
    assert manifest["validation"] == result.validation


def test_build_refuses_a_benchmark_with_scores_above_one(tmp_path, monkeypatch):
    # scoring without Algorithm 1's final clip: candidates with bonuses score above 1
    from gradebench.datasets.tiers.candidates import CandidateBuilder

    original = CandidateBuilder.candidate_columns

    def unclipped(self, units):
        c = original(self, units)
        return dataclasses.replace(c, scores=c.scores + 0.3)

    monkeypatch.setattr(CandidateBuilder, "candidate_columns", unclipped)
    with pytest.raises(BenchmarkError, match=r"fails validation: score within \[0, 1\] failed on \d+ of 240 rows"):
        build("demo", out=tmp_path, progress=False, validate=True, workers=1)
    assert not [p for p in (tmp_path / "demo").rglob("*") if p.name != ".staging"]  # no folder left


def test_build_refuses_a_list_with_one_candidate(tmp_path, monkeypatch):
    from gradebench.datasets.base import Builder
    from gradebench.datasets.tiers.builder import TieredNLIBuilder

    original = TieredNLIBuilder.make_lists

    def truncated(self, units):
        lists = original(self, units)
        g = lists[0]
        lists[0] = dataclasses.replace(
            g, candidate_ids=g.candidate_ids[:1], candidates=g.candidates[:1], scores=g.scores[:1],
            relevance=g.relevance[:1], tiers=g.tiers[:1], candidate_extra=tuple(c[:1] for c in g.candidate_extra),
            human=g.human[:1],
        )
        return lists

    monkeypatch.setattr(TieredNLIBuilder, "make_lists", truncated)
    monkeypatch.setattr(TieredNLIBuilder, "make_columns", Builder.make_columns)  # the lists above, in columns
    with pytest.raises(BenchmarkError, match="list size within bounds failed on 1 of 48 queries"):
        build("demo", out=tmp_path, progress=False, validate=True, workers=1)
    assert not [p for p in (tmp_path / "demo").rglob("*") if p.name != ".staging"]


# -- real data ----------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize(
    ("recipe", "source", "kind", "rows", "queries", "expectations"),
    [
        # e-SNLI dev carved 80/10/10: 9842 queries x 5 tiers; 37 = 25 core + 2 tiered + 2 x 5 tiers
        ("esnli", ("esnli", "eSNLI"), "tiered", 49210, 9842, 37),
        # WinoWhy: 273 WSC questions x 15 reasons, natural grades (core + "tier is null")
        ("winowhy", ("winowhy",), "natural", 4095, 273, 26),
    ],
)
def test_real_benchmarks_pass(tmp_path, recipe, source, kind, rows, queries, expectations):
    src = shared_data(*source)
    resplit = (80, 10, 10) if recipe == "esnli" else None
    result = build(recipe, source=src, out=tmp_path, progress=False, validate=True, resplit=resplit)
    assert result.validation == validate_folder(result.path).summary()
    v = result.validation
    assert v["success"], v["failures"]
    assert (v["kind"], v["rows"], v["queries"], v["expectations"]) == (kind, rows, queries, expectations)


@pytest.mark.parametrize("chunk_rows", [262_144, 100])
def test_tier_entries_filtered_once_report_what_row_conditions_report(demo_benchmark, tmp_path, monkeypatch,
                                                                      chunk_rows):
    """The per-tier entries run together on their tier's rows, filtered once; the report is the one
    great-expectations gives with each entry's own row condition (counts, totals, examples), over
    one chunk or many, with failures in several tiers, a bad grade and an undeclared tier."""
    import gradebench.benchmark.validate as v

    def edit(d):
        for k, tier in enumerate(("gold", "fair", "nonsense")):
            rows = d.index[d["tier"] == tier][k: k + 2 + k]
            d.loc[rows, "score"] = [1.5, -0.2, 0.97, 0.01][: len(rows)]
        d.loc[d.index[d["tier"] == "good"][:3], "relevance"] = 9
        d.loc[d.index[d["tier"] == "poor"][-1], "tier"] = "bogus"
        return d

    folder = _corrupt(demo_benchmark, tmp_path, edit)
    monkeypatch.setattr(v, "CHUNK_ROWS", chunk_rows)
    grouped = validate_folder(folder)
    monkeypatch.setattr(v, "_equality", lambda condition: None)
    by_condition = validate_folder(folder)
    assert dataclasses.asdict(grouped) == dataclasses.asdict(by_condition)
    tiers = sorted(f.details["tier"] for f in grouped.failures if "tier" in f.details)
    assert tiers == ["fair", "gold", "good", "nonsense"], [f.line() for f in grouped.failures]


def test_the_blank_text_regex_is_python_whitespace_and_runs_in_arrow():
    """The suites' blank-text pattern matches exactly what ``^\\s*$`` matches in Python (every
    str.isspace character, nothing else), and pandas evaluates it with Arrow, not row by row."""
    import re

    from pandas.core.arrays.string_arrow import ArrowStringArray

    patterns = {e["kwargs"]["regex"] for e in load_suite("core")["expectations"]
                if e["type"] == "expect_column_values_to_not_match_regex"}
    assert len(patterns) == 1
    pattern = patterns.pop()
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    samples = ["", " ", "\t\n", "a", " a ", "\u200b", "\ufeff", "x\n", "\n\n", "".join(spaces), "é", "\u3000\u00a0"]
    samples += spaces + [chr(c) for c in (0x0, 0x8, 0xE, 0x1B, 0x21, 0x84, 0x86, 0x9F, 0xA1, 0x1FFF, 0x200B, 0x2030)]
    assert [bool(re.search(pattern, s)) for s in samples] == [bool(re.search(r"^\s*$", s)) for s in samples]
    no_newlines = pd.array([s for s in samples if "\n" not in s], dtype="str")
    assert isinstance(no_newlines, ArrowStringArray) and not no_newlines._needs_python_regex(pattern)
    got = pd.Series(samples, dtype="str").str.contains(pattern).tolist()
    assert got == [bool(re.search(r"^\s*$", s)) for s in samples]


def test_the_first_problem_in_name_order_is_reported_with_the_files_hashed_at_once(tmp_path):
    from gradebench.benchmark.manifest import data_problem, file_digests

    names = [f"data/{s}-00000-of-00001.parquet" for s in ("test", "train", "validation")]
    for i, n in enumerate(names):
        (tmp_path / n).parent.mkdir(exist_ok=True)
        (tmp_path / n).write_bytes(bytes([i]) * 1000)
    m = {"file_digests": file_digests(tmp_path, names)}
    assert m["file_digests"][names[2]]["sha256"] == hashlib.sha256(b"\2" * 1000).hexdigest()
    assert data_problem(tmp_path, m, once=False) is None
    (tmp_path / names[1]).write_bytes(b"\7" * 1000)  # same size, other bytes
    (tmp_path / names[2]).unlink()
    assert data_problem(tmp_path, m, once=False) == f"{names[1]} does not match its recorded sha256"
    (tmp_path / names[0]).write_bytes(b"\0" * 999)
    assert data_problem(tmp_path, m, once=False) == f"{names[0]} has 999 bytes, the manifest records 1000"
    (tmp_path / names[0]).write_bytes(b"\0" * 1000)
    (tmp_path / names[1]).write_bytes(b"\1" * 1000)
    assert data_problem(tmp_path, m, once=False) == f"{names[2]} is missing"
