"""read_esnli's format detection: which release a path holds, and the errors when none."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gradebench.errors import SourceFormatError, SourceNotFoundError
from gradebench.datasets.esnli.detect import csv_split_from_name, detect_esnli
from gradebench.datasets.esnli.reader import read_esnli
from tests.conftest import FIXTURES

CSV = FIXTURES / "esnli" / "csv"
PRE = FIXTURES / "esnli" / "preproc"


def test_csv_folder():
    found = detect_esnli(CSV)
    assert found.format == "esnli-csv"
    assert {s: [p.name for p in ps] for s, ps in found.csv_files.items()} == {
        "train": ["esnli_train_1.csv", "esnli_train_2.csv"],
        "validation": ["esnli_dev.csv"],
        "test": ["esnli_test.csv"],
    }
    data = read_esnli(CSV)
    assert {s: len(v) for s, v in data.examples.items()} == {"train": 5, "validation": 12, "test": 2}


def test_preprocessed_folder():
    data = read_esnli(PRE)
    assert data.format == "esnli-preprocessed"
    assert {s: len(v) for s, v in data.examples.items()} == {"train": 2, "validation": 5}


@pytest.mark.parametrize("sub", ["dataset", "eSNLI", "dataset/eSNLI"])
def test_searches_repository_subfolders(tmp_path, sub):
    shutil.copytree(PRE, tmp_path / sub)
    assert read_esnli(tmp_path).format == "esnli-preprocessed"


def test_repository_layout_prefers_dataset_csvs(tmp_path):
    shutil.copytree(CSV, tmp_path / "dataset")
    shutil.copytree(PRE, tmp_path / "dataset" / "eSNLI")
    assert read_esnli(tmp_path).format == "esnli-csv"
    assert read_esnli(tmp_path, format="esnli-preprocessed").format == "esnli-preprocessed"


def test_single_csv_file_split_from_name():
    data = read_esnli(CSV / "esnli_dev.csv")
    assert list(data.examples) == ["validation"] and len(data.examples["validation"]) == 12
    assert read_esnli(CSV / "esnli_train_2.csv").examples["train"][0].row == 0


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("esnli_dev.csv", "validation"),
        ("esnli_train_1.csv", "train"),
        ("my-test-copy.csv", "test"),
        ("VAL.csv", "validation"),
    ],
)
def test_csv_split_from_name(name, split):
    assert csv_split_from_name(Path(name)) == split


@pytest.mark.parametrize("name", ["data.csv", "train_vs_test.csv"])
def test_csv_split_from_name_unclear(name):
    with pytest.raises(SourceFormatError, match="cannot tell the split"):
        csv_split_from_name(Path(name))


def test_missing_path(tmp_path):
    with pytest.raises(SourceNotFoundError) as info:
        read_esnli(tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in str(info.value) and "esnli_" in str(info.value)


def test_folder_without_esnli_files(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(SourceFormatError, match="no e-SNLI files found; expected a folder with esnli_"):
        read_esnli(tmp_path)


def test_other_file(tmp_path):
    with pytest.raises(SourceFormatError, match="pass the folder that holds it"):
        read_esnli(PRE / "s1.dev")
    (tmp_path / "data.parquet").write_bytes(b"PAR1")
    with pytest.raises(SourceFormatError, match="not an e-SNLI source file"):
        read_esnli(tmp_path / "data.parquet")


def test_two_csv_files_of_one_split_in_a_folder(tmp_path):
    shutil.copy(CSV / "esnli_dev.csv", tmp_path / "esnli_dev.csv")
    shutil.copy(CSV / "esnli_dev.csv", tmp_path / "esnli_dev_backup.csv")
    with pytest.raises(SourceFormatError, match="two CSV files for split 'validation': esnli_dev.csv and "
                                                "esnli_dev_backup.csv"):
        read_esnli(tmp_path)
    (tmp_path / "esnli_dev_backup.csv").unlink()
    shutil.copy(CSV / "esnli_train_1.csv", tmp_path / "esnli_train_1.csv")
    shutil.copy(CSV / "esnli_train_1.csv", tmp_path / "sample.csv")  # no split named: train
    with pytest.raises(SourceFormatError, match="two CSV files for split 'train'"):
        read_esnli(tmp_path)


@pytest.mark.parametrize("name, split", [("esnli_train_sample.csv", "train"), ("my-dev-rows.csv", "validation"),
                                         ("sample.csv", "train")])
def test_any_csv_with_the_release_header_is_read_from_a_folder_as_by_path(tmp_path, name, split):
    """A real e-SNLI CSV under another name: read from its folder as it is by its path (issue 31; the
    folder refused it as an 'unexpected e-SNLI CSV name'), its split from its name, else train."""
    shutil.copy(CSV / "esnli_dev.csv", tmp_path / name)
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")  # a CSV without the header is no e-SNLI file
    by_folder, by_path = read_esnli(tmp_path), read_esnli(tmp_path / name)
    assert list(by_folder.examples) == list(by_path.examples) == [split]
    assert by_folder.examples == by_path.examples and len(by_folder.examples[split]) == 12


def test_a_folder_of_other_csv_files_is_no_esnli_source(tmp_path):
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")
    with pytest.raises(SourceFormatError, match="no e-SNLI files found"):
        read_esnli(tmp_path)


def test_train_parts_must_start_at_one(tmp_path):
    shutil.copy(CSV / "esnli_train_2.csv", tmp_path / "esnli_train_2.csv")
    with pytest.raises(SourceFormatError, match="not numbered 1, 2"):
        read_esnli(tmp_path)


def test_forced_format_mismatch():
    with pytest.raises(SourceFormatError, match="no esnli-preprocessed source found"):
        read_esnli(CSV, format="esnli-preprocessed")
    with pytest.raises(SourceFormatError, match="unknown e-SNLI format"):
        read_esnli(CSV, format="jsonl")
