"""The e-SNLI readers hash each input file once: the build engine hashes it for the fingerprint and
the builder's path (``parse_esnli_*``) hashes nothing; ``read_esnli_*`` (standalone) still lists
every file with its sha256."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import gradebench.datasets.esnli.reader as reader
import gradebench.hashing as hashing
from gradebench.datasets.esnli.builder import ESNLIBuilder
from gradebench.recipes import load_recipe
from tests.conftest import FIXTURES

CSV = FIXTURES / "esnli" / "csv"
PRE = FIXTURES / "esnli" / "preproc"


@pytest.fixture
def no_hashing(monkeypatch):
    """Any sha256 in the reader module fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("the e-SNLI reader hashed a file the engine has hashed already")

    monkeypatch.setattr(reader, "sha256_file", refuse)
    monkeypatch.setattr(hashlib, "sha256", refuse)


@pytest.mark.parametrize("source", [CSV, PRE])
def test_the_builder_reads_without_hashing(source, no_hashing):
    b = ESNLIBuilder(load_recipe("esnli"))
    records = b.read(b.locate(source))
    assert sorted(records) == (["test", "train", "validation"] if source == CSV else ["train", "validation"])
    assert records == (reader.parse_esnli_csv({s: [f.path for f in b.locate(source) if f.split == s]
                                               for s in records})
                       if source == CSV else reader.parse_esnli_preprocessed(source))


@pytest.mark.parametrize("source", [CSV, PRE])
def test_standalone_readers_still_hash_every_file(source):
    data = reader.read_esnli(source)
    assert data.files and data.examples == (
        reader.parse_esnli_csv({"train": [CSV / "esnli_train_1.csv", CSV / "esnli_train_2.csv"],
                                "validation": [CSV / "esnli_dev.csv"], "test": [CSV / "esnli_test.csv"]})
        if source == CSV else reader.parse_esnli_preprocessed(PRE))
    for f in data.files:
        assert f.sha256 == hashlib.sha256(Path(f.path).read_bytes()).hexdigest()


def test_a_build_hashes_each_input_once(tmp_path, monkeypatch):
    calls: list[str] = []
    real = hashing.sha256_file

    def counting(path):
        calls.append(Path(path).name)  # list.append holds in threads (the engine hashes the files at once)
        return real(path)

    monkeypatch.setattr(hashing, "sha256_file", counting)  # what the engine's sha256_files calls
    monkeypatch.setattr(reader, "sha256_file", counting)
    from gradebench.experiments.build import build

    build("esnli", source=CSV, out=tmp_path, progress=False, workers=1, validate=False, validity=False)
    inputs = [name for name in calls if not name.endswith(".parquet")]  # (the data files' digests: the manifest)
    assert sorted(inputs) == sorted(p.name for p in CSV.glob("*.csv"))  # the engine's one pass, nothing more
