"""A benchmark changed after its build never yields results, and its names never escape a folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.cli.conftest import assert_one_line_error


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from gradebench.experiments.build import build

    return build("demo", out=tmp_path_factory.mktemp("b"), progress=False, validity=False).path


def _copy(built, tmp_path):
    folder = tmp_path / "bench"
    shutil.copytree(built, folder)
    return folder


def test_eval_refuses_data_edited_after_the_build(built, tmp_path, cli):
    folder = _copy(built, tmp_path)
    f = folder / "data" / "test-00000-of-00001.parquet"
    t = pq.read_table(f)
    rel = pa.array([4 - v for v in t.column("relevance").to_pylist()], t.schema.field("relevance").type)
    pq.write_table(t.set_column(t.schema.get_field_index("relevance"), "relevance", rel), f)
    results = tmp_path / "results"
    code, out, err = cli("eval", "--benchmark", str(folder), "--scorer", "bm25", "--results-dir", str(results))
    assert code == 2 and out == ""
    assert_one_line_error(err, "test-00000-of-00001.parquet", "does not match", "--force")
    assert not results.exists() or not any(results.rglob("*.json"))


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/absolute-escape"])
def test_eval_never_writes_outside_the_results_dir(built, tmp_path, cli, name):
    folder = _copy(built, tmp_path)
    m = json.loads((folder / "manifest.json").read_text())
    m["recipe"]["name"] = name
    (folder / "manifest.json").write_text(json.dumps(m))
    results = tmp_path / "a" / "b" / "results"
    before = set(tmp_path.rglob("*"))
    code, _, err = cli("eval", "--benchmark", str(folder), "--scorer", "bm25", "--results-dir", str(results))
    assert code == 2
    assert_one_line_error(err, "recipe.name", "not a valid name")
    assert set(tmp_path.rglob("*")) == before
    assert not (tmp_path / "escaped").exists()
    assert not any(Path("/tmp/absolute-escape").glob("*.json"))


def _reverse_relevance(folder):
    f = folder / "data" / "test-00000-of-00001.parquet"
    t = pq.read_table(f)
    rel = pa.array([4 - v for v in t.column("relevance").to_pylist()], t.schema.field("relevance").type)
    pq.write_table(t.set_column(t.schema.get_field_index("relevance"), "relevance", rel), f)


def test_a_manifest_without_file_digests_is_refused(built, tmp_path, cli):
    """Dropping ``file_digests`` from the manifest made the check fall back to row counts, which the
    edited data (same rows, relevance reversed) passed: results under the genuine fingerprint."""
    folder = _copy(built, tmp_path)
    _reverse_relevance(folder)
    m = json.loads((folder / "manifest.json").read_text())
    del m["file_digests"]
    (folder / "manifest.json").write_text(json.dumps(m))
    results = tmp_path / "results"
    code, out, err = cli("eval", "--benchmark", str(folder), "--scorer", "bm25", "--results-dir", str(results))
    assert code == 2 and out == ""
    assert_one_line_error(err, "manifest.json", "file_digests")
    assert not results.exists() or not any(results.rglob("*.json"))


def test_validate_verifies_the_data_files(built, tmp_path, cli):
    """``gradebench validate`` ran its suites on data edited after the build, never saying so."""
    folder = _copy(built, tmp_path)
    _reverse_relevance(folder)
    code, out, err = cli("validate", str(folder))
    assert code == 2 and out == ""
    assert_one_line_error(err, "test-00000-of-00001.parquet", "does not match")
