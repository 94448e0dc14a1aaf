"""The Parquet -> dense reader: layout, ragged lists, subsampling, bad folders."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gradebench.benchmark.format import REQUIRED_COLUMNS as CORE_COLUMNS
from gradebench.benchmark.lists import lists_from_table, open_benchmark
from gradebench.errors import BenchmarkError, InvalidArgumentError, UnknownNameError


def _table(rows):
    cols = {c: [r[i] for r in rows] for i, c in enumerate(("query_id", "query", "candidate_id", "candidate",
                                                          "relevance", "score", "split"))}
    return pa.table(cols)


RAGGED = [
    ("q2", "second", "c1", "x", 1, 0.5, "test"),
    ("q1", "first", "a1", "aa", 2, 0.9, "test"),
    ("q2", "second", "c2", "y", 0, 0.1, "test"),
    ("q1", "first", "a2", "bb", 0, 0.2, "test"),
    ("q1", "first", "a3", "cc", 1, 0.4, "test"),
]


def test_dense_layout_keeps_first_appearance_and_stored_order():
    lists = lists_from_table(_table(RAGGED))
    assert list(lists.query_ids) == ["q2", "q1"]
    assert list(lists.queries) == ["second", "first"]
    assert lists.mask.tolist() == [[True, True, False], [True, True, True]]
    assert lists.candidates.tolist() == [["x", "y", ""], ["aa", "bb", "cc"]]
    np.testing.assert_array_equal(lists.relevance, [[1, 0, 0], [2, 0, 1]])
    assert lists.n_candidates == 5 and lists.list_size == 3
    assert lists.pairs() == (["second", "second", "first", "first", "first"], ["x", "y", "aa", "bb", "cc"])
    np.testing.assert_array_equal(lists.unflatten([1, 2, 3, 4, 5]), [[1, 2, 0], [3, 4, 5]])
    with pytest.raises(InvalidArgumentError):
        lists.unflatten([1, 2])


def test_take_trims_to_longest_list():
    lists = lists_from_table(_table(RAGGED)).take([0])
    assert lists.mask.shape == (1, 2) and list(lists.query_ids) == ["q2"]


def test_nan_grades_are_rejected():
    rows = [("q", "t", "c", "x", 1, float("nan"), "test")]
    with pytest.raises(BenchmarkError, match="NaN"):
        lists_from_table(_table(rows))


def test_demo_benchmark_reads_every_split(demo_benchmark):
    bench = open_benchmark(demo_benchmark)
    assert bench.name == "demo" and bench.splits == ["test", "train", "validation"]
    total = 0
    for split in bench.splits:
        lists = bench.lists(split)
        assert lists.mask.all() and lists.list_size == 5
        assert set(np.unique(lists.relevance)) <= {0, 1, 2, 3, 4}
        # the tier column comes along and matches the grades one to one
        assert {(t, r) for t, r in zip(lists.extra["tier"].ravel(), lists.relevance.ravel())} == {
            ("gold", 4), ("good", 3), ("fair", 2), ("poor", 1), ("nonsense", 0)}
        total += lists.n_candidates
    assert total == sum(v["candidates"] for v in bench.manifest["splits"].values())
    with pytest.raises(UnknownNameError, match="no split 'dev'"):
        bench.lists("dev")


def test_subsample_is_content_seeded_and_keeps_best_and_worst(demo_benchmark):
    lists = open_benchmark(demo_benchmark).lists("train")
    a, b = lists.subsample(3, seed=1), lists.subsample(3, seed=1)
    assert (a.mask.sum(axis=1) == 3).all()
    assert a.candidate_ids.tolist() == b.candidate_ids.tolist()
    assert a.candidate_ids.tolist() != lists.subsample(3, seed=2).candidate_ids.tolist()
    assert (a.relevance.max(axis=1) == 4).all() and (a.relevance.min(axis=1) == 0).all()
    # a query's draw does not depend on the other queries
    assert lists.take([3]).subsample(3, seed=1).candidate_ids.tolist() == [a.candidate_ids[3].tolist()]
    assert lists.subsample(5, seed=1) is lists
    with pytest.raises(InvalidArgumentError):
        lists.subsample(0, seed=1)


def redigest(folder):
    """Record the current data files in the manifest, as a (hand-made) build would."""
    from gradebench.benchmark.manifest import file_digests

    m = json.loads((folder / "manifest.json").read_text())
    m["file_digests"] = file_digests(folder, list(m["file_digests"]))
    (folder / "manifest.json").write_text(json.dumps(m))


def test_missing_core_column_and_bad_manifest(demo_benchmark, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(demo_benchmark, bad)
    f = sorted((bad / "data").glob("*.parquet"))[0]
    pq.write_table(pq.read_table(f).drop(["relevance"]), f)
    with pytest.raises(BenchmarkError, match="does not match the manifest"):
        open_benchmark(bad)
    redigest(bad)  # a folder whose manifest describes the bad file: the column check is what refuses it
    with pytest.raises(BenchmarkError, match="missing core column.*relevance"):
        open_benchmark(bad)
    (bad / "manifest.json").write_text("[1, 2]")
    with pytest.raises(BenchmarkError, match="not a JSON object"):
        open_benchmark(bad)
    (bad / "manifest.json").unlink()
    with pytest.raises(BenchmarkError, match="no manifest.json"):
        open_benchmark(bad)
    with pytest.raises(BenchmarkError, match="no such benchmark folder"):
        open_benchmark(tmp_path / "nope")


def _reverse_relevance(f):
    t = pq.read_table(f)
    rel = t.column("relevance")
    flipped = pa.array([4 - v for v in rel.to_pylist()], rel.type)
    pq.write_table(t.set_column(t.schema.get_field_index("relevance"), "relevance", flipped), f)


def test_tampered_data_is_refused_before_it_is_read(demo_benchmark, tmp_path):
    """Edited, swapped or truncated data files never give results under the genuine fingerprint."""
    from gradebench.benchmark.manifest import _VERIFIED

    cases = {
        "relevance reversed": lambda d: _reverse_relevance(d / "data" / "test-00000-of-00001.parquet"),
        "test swapped for validation": lambda d: shutil.copyfile(
            d / "data" / "validation-00000-of-00001.parquet", d / "data" / "test-00000-of-00001.parquet"),
        "truncated": lambda d: (d / "data" / "train-00000-of-00001.parquet").write_bytes(
            (d / "data" / "train-00000-of-00001.parquet").read_bytes()[:100]),
        "removed": lambda d: (d / "data" / "train-00000-of-00001.parquet").unlink(),
    }
    for what, tamper in cases.items():
        folder = tmp_path / what.replace(" ", "-")
        shutil.copytree(demo_benchmark, folder)
        open_benchmark(folder)  # genuine: verified (and remembered for this process)
        tamper(folder)
        with pytest.raises(BenchmarkError, match="does not match the manifest"):
            open_benchmark(folder)
    # the once-per-process cache is keyed by size, mtime and inode: a same-size edit is caught
    same = tmp_path / "same-size"
    shutil.copytree(demo_benchmark, same)
    open_benchmark(same)
    f = same / "data" / "test-00000-of-00001.parquet"
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))
    assert f.stat().st_size == len(data)
    with pytest.raises(BenchmarkError, match="recorded sha256"):
        open_benchmark(same)
    assert _VERIFIED  # and a genuine folder is hashed once, not on every open


def test_a_stray_parquet_file_does_not_join_a_split(demo_benchmark, tmp_path):
    folder = tmp_path / "stray"
    shutil.copytree(demo_benchmark, folder)
    n = open_benchmark(folder).lists("test").n_queries
    shutil.copyfile(folder / "data" / "train-00000-of-00001.parquet", folder / "data" / "test-00001-of-00002.parquet")
    assert open_benchmark(folder).lists("test").n_queries == n


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("name", "../../escaped", "not a valid name"),
        ("name", "/abs/path", "not a valid name"),
        ("name", "Upper", "not a valid name"),
        ("fingerprint", "../x", "not a sha256"),
        ("file", "../../../etc/passwd", "not a data file"),
        ("file", "data/validation-00000-of-00001.parquet", "not a data file"),
        ("split", "../evil", "unknown split"),
    ],
)
def test_names_in_a_manifest_are_checked_before_they_become_paths(demo_benchmark, tmp_path, key, value, message):
    folder = tmp_path / "hostile"
    shutil.copytree(demo_benchmark, folder)
    m = json.loads((folder / "manifest.json").read_text())
    if key == "name":
        m["recipe"]["name"] = value
    elif key == "fingerprint":
        m["fingerprint"] = value
    elif key == "file":
        m["splits"]["test"]["files"] = [value]
    else:
        m["splits"][value] = m["splits"].pop("test")
    (folder / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(BenchmarkError, match=message):
        open_benchmark(folder)


def test_duplicate_query_candidate_rows_are_refused():
    rows = RAGGED + [("q1", "first", "a2", "bb", 0, 0.2, "test")]
    with pytest.raises(BenchmarkError, match="query_id 'q1' lists candidate_id 'a2' 2 times"):
        lists_from_table(_table(rows), split="test")
    # the same candidate id under two queries is fine
    ok = RAGGED + [("q2", "second", "a1", "aa", 1, 0.5, "test")]
    assert lists_from_table(_table(ok)).mask.sum() == 6


def test_extra_columns_are_optional(demo_benchmark, tmp_path):
    """A benchmark with only the core columns (no tier) reads the same lists."""
    core = tmp_path / "core"
    shutil.copytree(demo_benchmark, core)
    for f in (core / "data").glob("*.parquet"):
        pq.write_table(pq.read_table(f, columns=list(CORE_COLUMNS)), f)
    redigest(core)
    full = open_benchmark(demo_benchmark).lists("test")
    lists = open_benchmark(core).lists("test")
    assert lists.extra == {}
    assert lists.candidates.tolist() == full.candidates.tolist()
    np.testing.assert_array_equal(lists.relevance, full.relevance)
    json.loads((core / "manifest.json").read_text())
