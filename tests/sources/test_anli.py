"""The ART (αNLI) reader: line-aligned JSON Lines + labels files, and bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gradebench.datasets.anli.reader import ART_SPLITS, ARTItem, labels_file_for, read_art
from gradebench.errors import SourceFormatError, SourceNotFoundError
from tests.conftest import FIXTURES
from tests.input_files import write_file, write_jsonl

FIX = FIXTURES / "anli"


def _row(i: int = 0, **over) -> dict:
    row = {
        "story_id": f"00000000-0000-4000-8000-{i:012d}",
        "obs1": "Sam lost his wallet.",
        "obs2": "Sam got his wallet back the next day.",
        "hyp1": "A stranger mailed the wallet to Sam.",
        "hyp2": "Sam bought a new wallet.",
    }
    row.update(over)
    return row


def _split(tmp_path: Path, rows: list, labels: list[str], stem: str = "train") -> tuple[Path, Path]:
    j = write_jsonl(tmp_path / f"{stem}.jsonl", rows)
    return j, write_file(tmp_path / f"{stem}-labels.lst", "".join(x + "\n" for x in labels))


def test_labels_file_for():
    assert labels_file_for("x/train.jsonl") == Path("x/train-labels.lst")
    assert labels_file_for(Path("dev.jsonl")).name == "dev-labels.lst"
    assert ART_SPLITS == {"train": "train", "dev": "validation"}


def test_reads_fixture_aligned_by_line():
    items = read_art(FIX / "train.jsonl", FIX / "train-labels.lst", "train")
    assert len(items) == 9
    assert [i.label for i in items] == ["1", "2", "1", "1", "1", "2", "3", "1", "2"]
    assert [i.line for i in items] == list(range(1, 10))
    assert items[0] == ARTItem(
        split="train",
        row=0,
        line=1,
        story_id="1f0e0000-0000-4000-8000-000000000001",
        obs1="Kim bought seeds at the market.",
        obs2="By summer Kim's garden was full of tomatoes.",
        hyp1="Kim planted the seeds and watered them daily.",
        hyp2="Kim threw the seeds away.",
        label="1",
    )
    assert items[3].obs1 == "Kim  bought seeds at the market. "  # texts kept as read
    assert items[8].hyp1 == ""
    dev = read_art(FIX / "dev.jsonl", FIX / "dev-labels.lst", "validation")
    assert [(i.split, i.label) for i in dev] == [("validation", "1"), ("validation", "2")]


def test_labels_are_stripped_and_kept_as_read(tmp_path):
    j, lab = _split(tmp_path, [_row(0), _row(1), _row(2)], [" 1", "2\r", "x"])
    assert [i.label for i in read_art(j, lab, "train")] == ["1", "2", "x"]


def test_extra_keys_are_ignored(tmp_path):
    j, lab = _split(tmp_path, [_row(0, note="extra")], ["1"])
    assert read_art(j, lab, "train")[0].hyp1 == "A stranger mailed the wallet to Sam."


@pytest.mark.parametrize(("n_rows", "n_labels"), [(3, 2), (2, 3), (1, 0)])
def test_label_count_mismatch_names_both_files(tmp_path, n_rows, n_labels):
    j, lab = _split(tmp_path, [_row(i) for i in range(n_rows)], ["1"] * n_labels)
    with pytest.raises(SourceFormatError) as e:
        read_art(j, lab, "train")
    msg = e.value.message
    assert f"train-labels.lst has {n_labels} label line" in msg and f"train.jsonl has {n_rows} line" in msg
    assert e.value.path == str(lab) and e.value.line == min(n_rows, n_labels) + 1
    assert "train.jsonl" in e.value.hint and "train-labels.lst" in e.value.hint


def test_trailing_blank_lines_are_not_lines(tmp_path):
    j, lab = _split(tmp_path, [_row(0), _row(1)], ["1", "2"])
    j.write_text(j.read_text() + "\n\n", encoding="utf-8")
    lab.write_text(lab.read_text() + "\n", encoding="utf-8")
    assert len(read_art(j, lab, "train")) == 2


def test_blank_line_inside_jsonl_is_an_error(tmp_path):
    j, lab = _split(tmp_path, [_row(0), "", _row(1)], ["1", "2"])
    with pytest.raises(SourceFormatError, match="blank line") as e:
        read_art(j, lab, "train")
    assert e.value.line == 2 and e.value.path == str(j)


@pytest.mark.parametrize("key", ["story_id", "obs1", "obs2", "hyp1", "hyp2"])
def test_missing_key(tmp_path, key):
    row = _row(1)
    del row[key]
    j, lab = _split(tmp_path, [_row(0), row], ["1", "2"])
    with pytest.raises(SourceFormatError) as e:
        read_art(j, lab, "train")
    assert e.value.line == 2 and f"key '{key}' is missing" in e.value.message
    assert "ART release" in e.value.hint


def test_wrong_type(tmp_path):
    j, lab = _split(tmp_path, [_row(0, hyp2=["a", "b"])], ["1"])
    with pytest.raises(SourceFormatError, match="key 'hyp2' must be a string, got a list") as e:
        read_art(j, lab, "train")
    assert e.value.line == 1


def test_garbled_line(tmp_path):
    j, lab = _split(tmp_path, [_row(0), json.dumps(_row(1))[:-9]], ["1", "2"])
    with pytest.raises(SourceFormatError, match="not valid JSON") as e:
        read_art(j, lab, "train")
    assert e.value.line == 2


def test_missing_files(tmp_path):
    j, lab = _split(tmp_path, [_row(0)], ["1"])
    lab.unlink()
    with pytest.raises(SourceNotFoundError):
        read_art(j, lab, "train")
    with pytest.raises(SourceNotFoundError):
        read_art(tmp_path / "dev.jsonl", lab, "validation")


def test_compressed_labels_file(tmp_path):
    j, lab = _split(tmp_path, [_row(0)], ["1"])
    lab.write_bytes(gzip.compress(b"1\n"))
    with pytest.raises(SourceFormatError, match="is a gzip file") as e:
        read_art(j, lab, "train")
    assert e.value.path == str(lab)


def test_labels_not_utf8(tmp_path):
    j, lab = _split(tmp_path, [_row(0), _row(1)], ["1"])
    lab.write_bytes(b"1\n\xff\n")
    with pytest.raises(SourceFormatError, match="not valid UTF-8") as e:
        read_art(j, lab, "train")
    assert e.value.line == 2
