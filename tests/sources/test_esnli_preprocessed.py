"""The preprocessed (line-aligned) e-SNLI reader on hand-written fixtures."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from gradebench.errors import SourceFormatError, SourceNotFoundError
from gradebench.datasets.records import NLIExample
from gradebench.datasets.esnli.reader import read_esnli_preprocessed
from tests.conftest import FIXTURES

PRE = FIXTURES / "esnli" / "preproc"
BAD = FIXTURES / "esnli" / "bad"


def test_dev_and_train():
    data = read_esnli_preprocessed(PRE)
    assert data.format == "esnli-preprocessed"
    assert list(data.examples) == ["train", "validation"]
    dev = data.examples["validation"]
    assert len(dev) == 5
    assert dev[0] == NLIExample(
        split="validation",
        row=0,
        source_id="s1.dev:1",
        premise="A boy in a red cap rides a bicycle down the hill .",  # trailing space stripped
        hypothesis="A child is on a bike .",
        label="entailment",
        explanations=(
            "a boy is a child and a bicycle is a bike .",
            "riding a bicycle means being on a bike .",
            "the boy is young so he is a child .",
        ),
    )
    # the expl files have no final newline: their last line is still read
    assert dev[4].source_id == "s1.dev:5"
    assert dev[4].explanations[0] == "an old man feeding pigeons is a man feeding birds ."
    # an empty explanation line is kept, inner double spaces too
    assert dev[3].explanations[0] == ""
    assert dev[1].explanations[1] == "not every sign is about holidays ;  it could be about a sale ."
    train = data.examples["train"]
    assert [(r.row, r.source_id, r.label, len(r.explanations)) for r in train] == [
        (0, "s1.train:1", "entailment", 1),
        (1, "s1.train:2", "contradiction", 1),
    ]


def test_files_roles_and_hashes():
    data = read_esnli_preprocessed(PRE)
    assert [f.role for f in data.files] == [
        "esnli-preproc:s1.train",
        "esnli-preproc:s2.train",
        "esnli-preproc:labels.train",
        "esnli-preproc:preproc1_expl_1.train",
        "esnli-preproc:s1.dev",
        "esnli-preproc:s2.dev",
        "esnli-preproc:labels.dev",
        "esnli-preproc:preproc1_expl_1.dev",
        "esnli-preproc:preproc1_expl_2.dev",
        "esnli-preproc:preproc1_expl_3.dev",
    ]
    for f in data.files:
        assert f.sha256 == hashlib.sha256(Path(f.path).read_bytes()).hexdigest()


def test_misaligned_names_both_files_and_counts():
    with pytest.raises(SourceFormatError) as info:
        read_esnli_preprocessed(BAD / "misaligned")
    err = info.value
    assert err.path == str(BAD / "misaligned" / "labels.dev") and err.line == 5
    assert "labels.dev has 4 lines but s1.dev has 5" in str(err)


def test_expl_gap():
    with pytest.raises(SourceFormatError, match="preproc1_expl_3.dev is present but preproc1_expl_2.dev is not"):
        read_esnli_preprocessed(BAD / "expl_gap")


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "pre"
    shutil.copytree(PRE, dst)
    return dst


def test_missing_required_file(tmp_path):
    d = _copy(tmp_path)
    (d / "s2.dev").unlink()
    with pytest.raises(SourceNotFoundError, match="s2.dev is missing") as info:
        read_esnli_preprocessed(d)
    assert info.value.path == str(d / "s2.dev")


def test_not_utf8_line(tmp_path):
    d = _copy(tmp_path)
    (d / "s2.dev").write_bytes(b"A child is on a bike . \nThe shop is closed \xff . \n" + b"x \n" * 3)
    with pytest.raises(SourceFormatError) as info:
        read_esnli_preprocessed(d)
    assert (info.value.path, info.value.line) == (str(d / "s2.dev"), 2)
    assert "byte 0xff at column 20" in str(info.value)


def test_binary_file(tmp_path):
    d = _copy(tmp_path)
    (d / "labels.dev").write_bytes(b"entailment\n\x00\x00\x00")
    with pytest.raises(SourceFormatError, match="binary file") as info:
        read_esnli_preprocessed(d)
    assert info.value.line == 2


def test_crlf_and_bom(tmp_path):
    d = _copy(tmp_path)
    labels = ["entailment", "neutral", "contradiction", "neutral", "entailment"]
    (d / "labels.dev").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(labels).encode() + b"\r\n")
    data = read_esnli_preprocessed(d)
    assert [r.label for r in data.examples["validation"]] == labels


def test_not_a_folder(tmp_path):
    with pytest.raises(SourceNotFoundError):
        read_esnli_preprocessed(tmp_path / "nope")
    with pytest.raises(SourceFormatError, match="no preprocessed e-SNLI files"):
        read_esnli_preprocessed(tmp_path)
    with pytest.raises(SourceFormatError, match="expected a folder"):
        read_esnli_preprocessed(PRE / "s1.dev")


def test_a_repeated_premise_or_label_is_one_string(tmp_path):
    """Equal premises (a premise comes with each of its hypotheses) and labels are held once."""
    lines = {"s1": ["A dog runs .", "A dog runs .", "A cat sits ."], "s2": ["An animal moves .", "A dog sleeps .", "x"],
             "labels": ["entailment", "contradiction", "entailment"], "preproc1_expl_1": ["a", "b", "c"]}
    for stem, rows in lines.items():
        (tmp_path / f"{stem}.dev").write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    dev = read_esnli_preprocessed(tmp_path).examples["validation"]
    assert dev[0].premise == dev[1].premise and dev[0].premise is dev[1].premise
    assert dev[0].label is dev[2].label
    assert [e.premise for e in dev] == lines["s1"] and [e.label for e in dev] == lines["labels"]
