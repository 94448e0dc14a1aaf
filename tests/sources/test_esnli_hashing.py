"""The e-SNLI readers hash each input file once: the build engine hashes it for the fingerprint and
the builder's path (``parse_esnli_*``) hashes nothing; ``read_esnli_*`` (standalone) still lists
every file with its sha256."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import gradebench.benchmark.engine as engine
import gradebench.datasets.esnli.reader as reader
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
    real = engine.sha256_file

    def counting(path):
        calls.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(engine, "sha256_file", counting)
    monkeypatch.setattr(reader, "sha256_file", counting)
    from gradebench.experiments.build import build

    build("esnli", source=CSV, out=tmp_path, progress=False, workers=1, validate=False, validity=False)
    assert sorted(calls) == sorted(p.name for p in CSV.glob("*.csv"))  # the engine's one pass, nothing more
