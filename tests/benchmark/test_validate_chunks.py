"""Chunked validation gives the report of one pass over the whole table, however the rows are cut.

The suites run on chunks of row groups and merge counts and examples (benchmark order); a
query whose rows straddle row groups, and so chunks, is validated with all of its rows.
"""

from __future__ import annotations

import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gradebench.benchmark import validate
from gradebench.benchmark.validate import validate_folder
from tests.benchmark.test_validate import _redigest

pytest.importorskip("great_expectations")

TRAIN = "data/train-00000-of-00001.parquet"


@pytest.fixture(scope="module")
def damaged(demo_benchmark, tmp_path_factory):
    """The demo with, in train: two scores above 1, an empty candidate, a row duplicated at the end
    (its query then spans the file), and row groups of 7 rows (queries cut across them)."""
    folder = tmp_path_factory.mktemp("chunks") / "bench"
    shutil.copytree(demo_benchmark, folder)
    table = pq.read_table(folder / TRAIN)
    df = table.to_pandas()
    df.loc[3, "score"] = 1.5
    df.loc[100, "score"] = 2.0
    df.loc[11, "candidate"] = " "
    df = pd.concat([df, df.iloc[[7]]])
    pq.write_table(pa.Table.from_pandas(df, schema=table.schema, preserve_index=False), folder / TRAIN,
                   row_group_size=7)
    return _redigest(folder)  # damaged on purpose, with a manifest that vouches for it: the suites must catch it


@pytest.mark.parametrize("chunk_rows", [7, 50])
def test_chunks_give_the_whole_table_report(damaged, monkeypatch, chunk_rows):
    whole = validate_folder(damaged).summary()  # train is one chunk at the default size
    monkeypatch.setattr(validate, "CHUNK_ROWS", chunk_rows)
    assert validate_folder(damaged).summary() == whole
    failed = {f["expectation"]: f for f in whole["failures"]}
    assert failed["score within [0, 1]"]["unexpected"] == 2
    assert [e["value"] for e in failed["score within [0, 1]"]["examples"]] == [1.5, 2.0]
    assert failed["unique (query_id, candidate_id)"]["unexpected"] == 2
    assert failed["list size within bounds"]["unexpected"] == 1
    assert whole["rows"] == 241 and whole["queries"] == 48


def test_clean_benchmark_in_small_chunks(demo_benchmark, monkeypatch):
    whole = validate_folder(demo_benchmark).summary()
    monkeypatch.setattr(validate, "CHUNK_ROWS", 20)
    assert validate_folder(demo_benchmark).summary() == whole
    assert whole["success"]


def test_read_frames_is_the_whole_table(damaged, monkeypatch):
    monkeypatch.setattr(validate, "CHUNK_ROWS", 7)
    from gradebench.benchmark.manifest import read_manifest

    frames = validate.read_frames(damaged, read_manifest(damaged))
    assert len(frames["rows"]) == 241 and len(frames["queries"]) == 48
    assert validate.ORDER not in frames["rows"].columns and validate.ORDER not in frames["queries"].columns
