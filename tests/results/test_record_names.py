"""Names read from a record never become a path outside its folder (issue 16.4, through records).

A record read from disk is untrusted input: its benchmark name becomes the folder it is written
to (``<results>/<benchmark>/``), its split a filter, and its ``files`` the Parquet files that
``plot`` and ``leaderboard`` open. Each is checked when the record is read.
"""

from __future__ import annotations

import json
import shutil

import pytest

from gradebench.errors import RecordError
from gradebench.experiments.evaluate import evaluate_scorer
from gradebench.experiments.store import read_record, record_dir
from tests.cli.conftest import assert_one_line_error
from tests.results.conftest import Noisy, Oracle


@pytest.fixture(scope="module")
def two_records(demo_bench, tmp_path_factory):
    res = tmp_path_factory.mktemp("res")
    return (evaluate_scorer(demo_bench, Oracle(), results_dir=res, n_resamples=20),
            evaluate_scorer(demo_bench, Noisy(seed=3), results_dir=res, n_resamples=20))


def _edited(records, tmp_path, edit):
    """A copy of the results folder with the first record's JSON passed through ``edit``."""
    res = tmp_path / "res"
    shutil.copytree(records[0].path.parent.parent, res)
    path = res / records[0].path.parent.name / records[0].path.name
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    return res, path


@pytest.mark.parametrize("edit, key", [
    (lambda d: d["benchmark"].update(name="../../../escaped"), "benchmark.name"),
    (lambda d: d["benchmark"].update(name="/tmp/absolute"), "benchmark.name"),
    (lambda d: d["benchmark"].update(split="../x"), "benchmark.split"),
    (lambda d: d.update(split="nosuch"), "split"),
    (lambda d: d["files"].update(predictions="/etc/hostname"), "files"),
    (lambda d: d["files"].update(predictions="../other/x.predictions.parquet"), "files"),
])
def test_a_record_with_an_unsafe_name_is_refused(two_records, tmp_path, edit, key):
    _, path = _edited(two_records, tmp_path, edit)
    with pytest.raises(RecordError, match="invalid result record") as e:
        read_record(path)
    assert (e.value.key or "").startswith(key), e.value.key


def test_plot_never_opens_a_file_a_record_points_outside_its_folder(two_records, tmp_path, cli):
    """``files.predictions="/etc/hostname"`` was opened by ``plot --record``."""
    res, path = _edited(two_records, tmp_path, lambda d: d["files"].update(predictions="/etc/hostname"))
    code, out, err = cli("plot", "--record", str(path), "--out", str(tmp_path / "p.png"), "--results-dir", str(res))
    assert code == 2 and out == ""
    assert_one_line_error(err, str(path), "files")
    assert not (tmp_path / "p.png").exists()


def test_leaderboard_never_reads_another_records_per_query_file(two_records, tmp_path, cli):
    """``files.per_query`` naming another record's table was read (and credited to this one); the record
    is named in one line and left out (issue 28: the leaderboard ranks only records that pass their checks)."""
    other = two_records[1]
    res, path = _edited(two_records, tmp_path, lambda d: d["files"].update(per_query=other.files.per_query))
    code, out, err = cli("leaderboard", "--results-dir", str(res), "--json")
    assert code == 0
    assert err.count("\n") == 1 and err.startswith("gradebench: warning: ") and str(path) in err and "files" in err
    rows = [r for b in json.loads(out)["boards"] for r in b["rows"]]
    assert [r["record_ids"] for r in rows] == [[other.id]]


@pytest.mark.parametrize("name", ["../escaped", "/tmp/abs", "", "a/b", "Demo"])
def test_record_dir_refuses_a_name_that_is_not_one(tmp_path, name):
    with pytest.raises(RecordError, match="not a valid name"):
        record_dir(tmp_path, name)
    assert record_dir(tmp_path, "esnli-contrast") == tmp_path / "esnli-contrast"
