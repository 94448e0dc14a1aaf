"""The e-SNLI CSV reader on hand-written fixtures: layouts, quirks, and every bad-input case."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradebench.errors import InvalidArgumentError, SourceFormatError, SourceNotFoundError
from gradebench.datasets.records import NLIExample
from gradebench.datasets.esnli.reader import csv_header, read_esnli, read_esnli_csv
from tests.conftest import FIXTURES

CSV = FIXTURES / "esnli" / "csv"
BAD = FIXTURES / "esnli" / "bad"


def _dev() -> list[NLIExample]:
    return read_esnli_csv({"validation": [CSV / "esnli_dev.csv"]}).examples["validation"]


def test_dev_19_columns_three_explanations():
    rows = _dev()
    assert len(rows) == 12
    assert [r.row for r in rows] == list(range(12))
    assert rows[0] == NLIExample(
        split="validation",
        row=0,
        source_id="fx-dev-01",
        premise="A boy in a red cap rides a bicycle down the hill.",
        hypothesis="A child is on a bike.",
        label="entailment",
        explanations=(
            "A boy is a child and a bicycle is a bike.",
            "Riding a bicycle means being on a bike.",
            "The boy is young so he is a child.",
        ),
    )
    assert all(len(r.explanations) == 3 for r in rows)


def test_quoting_quirks():
    by_id = {r.source_id: r for r in _dev()}
    # doubled quotes inside a quoted field
    assert by_id["fx-dev-02"].explanations[0] == 'The sign might say "open", not "closed".'
    assert by_id["fx-dev-09"].premise == 'A man holds a sign reading "free hugs" in a park.'
    # commas inside a quoted field
    assert by_id["fx-dev-06"].explanations[0] == "Holding a kite, she could be waiting, resting, or leaving."
    # a newline inside a quoted field is kept; the next rows still line up
    assert by_id["fx-dev-07"].explanations[0] == "A kitchen with a chef in it\nis not empty."
    assert by_id["fx-dev-08"].row == 7
    # surrounding spaces are stripped
    assert by_id["fx-dev-08"].premise == "Two dogs run along the beach."
    assert by_id["fx-dev-08"].hypothesis == "Dogs are outside."
    assert by_id["fx-dev-08"].explanations[0] == "A beach is outside."
    # UTF-8 text
    assert "café" in by_id["fx-dev-11"].premise and "–" in by_id["fx-dev-11"].explanations[2]


def test_no_filtering():
    by_id = {r.source_id: r for r in _dev()}
    assert by_id["fx-dev-04"].label == "-"
    assert by_id["fx-dev-05"].explanations[0] == ""
    assert by_id["fx-dev-10"].premise == ""


def test_train_parts_concatenate_and_count_on():
    data = read_esnli_csv({"train": [CSV / "esnli_train_1.csv", CSV / "esnli_train_2.csv"]})
    rows = data.examples["train"]
    assert [r.source_id for r in rows] == ["fx-tr-01", "fx-tr-02", "fx-tr-03", "fx-tr-04", "fx-tr-05"]
    assert [r.row for r in rows] == [0, 1, 2, 3, 4]
    assert all(len(r.explanations) == 1 for r in rows)
    assert rows[2].explanations == ('The wall may not be his "own".',)
    # train_2 has a BOM, CRLF line endings and no final newline
    assert rows[4] == NLIExample(
        "train", 4, "fx-tr-05", "A baby sleeps in a stroller.", "A baby is asleep.", "entailment",
        ("Sleeps, so it is asleep.",),
    )


def test_bom_and_crlf():
    rows = read_esnli_csv({"test": [CSV / "esnli_test.csv"]}).examples["test"]
    assert [r.source_id for r in rows] == ["fx-te-01", "fx-te-02"]
    assert rows[1].premise == "A man plays guitar on a stage, smiling."
    assert rows[1].explanations[2] == '"Plays guitar" means plays music.'
    assert not any("\r" in t for r in rows for t in (r.premise, r.hypothesis, r.label, *r.explanations))


def test_files_and_hashes_in_split_order():
    files = {
        "test": [CSV / "esnli_test.csv"],
        "validation": [CSV / "esnli_dev.csv"],
        "train": [CSV / "esnli_train_1.csv", CSV / "esnli_train_2.csv"],
    }
    data = read_esnli_csv(files)
    assert data.format == "esnli-csv"
    assert list(data.examples) == ["train", "validation", "test"]
    assert [(Path(f.path).name, f.role) for f in data.files] == [
        ("esnli_train_1.csv", "esnli-csv:train"),
        ("esnli_train_2.csv", "esnli-csv:train"),
        ("esnli_dev.csv", "esnli-csv:validation"),
        ("esnli_test.csv", "esnli-csv:test"),
    ]
    for f in data.files:
        assert f.sha256 == hashlib.sha256(Path(f.path).read_bytes()).hexdigest()


def test_unknown_split_key():
    with pytest.raises(InvalidArgumentError, match="'dev'.*validation"):
        read_esnli_csv({"dev": [CSV / "esnli_dev.csv"]})


@pytest.mark.parametrize(
    ("name", "line", "text"),
    [
        ("wrong_header.csv", 1, "column 1 is 'id', expected 'pairID'"),
        ("renamed_column.csv", 1, "column 5 is 'Explanation1', expected 'Explanation_1'"),
        ("truncated_row.csv", 4, "row has 4 fields but the header has 9"),
        ("unterminated_quote.csv", 4, "unterminated quoted field at end of file"),
        ("junk_after_quote.csv", 3, "malformed CSV"),
        ("not_utf8.csv", 3, "not valid UTF-8: byte 0xe9 at column 24"),
    ],
)
def test_bad_csv_names_file_and_line(name, line, text):
    path = BAD / name
    with pytest.raises(SourceFormatError) as info:
        read_esnli_csv({"validation": [path]})
    err = info.value
    assert (err.path, err.line) == (str(path), line)
    msg = str(err)
    assert msg.startswith(f"{path}:{line}: ") and text in msg and "(hint: " in msg
    assert "\n" not in msg


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_header_with_wrong_column_count(tmp_path):
    p = _write(tmp_path, "esnli_dev.csv", (",".join(csv_header(2)[:11]) + "\n").encode())
    with pytest.raises(
        SourceFormatError, match=r":1: not an e-SNLI CSV header: 11 columns, expected 9 \(train\) or 19"
    ):
        read_esnli_csv({"validation": [p]})
    p = _write(tmp_path, "esnli_dev.csv", (",".join(csv_header(1)) + ",extra\n").encode())
    with pytest.raises(SourceFormatError, match=r"column 10 is 'extra', expected 'Explanation_2'"):
        read_esnli_csv({"validation": [p]})


def test_row_with_too_many_fields(tmp_path):
    body = ",".join(csv_header(1)) + "\na,entailment,p,h,e,,,{},{}\nb,neutral,p,h,e,,,{},{},oops\n"
    p = _write(tmp_path, "esnli_train_1.csv", body.encode())
    with pytest.raises(SourceFormatError, match=r"esnli_train_1.csv:3: row has 10 fields but the header has 9"):
        read_esnli_csv({"train": [p]})


def test_line_numbers_count_quoted_newlines(tmp_path):
    body = ",".join(csv_header(1)) + '\na,entailment,p,h,"two\nlines",,,{},{}\nb,neutral,p,h\n'
    p = _write(tmp_path, "esnli_train_1.csv", body.encode())
    with pytest.raises(SourceFormatError) as info:
        read_esnli_csv({"train": [p]})
    assert info.value.line == 4


def test_non_utf8_in_a_late_chunk(tmp_path):
    row = "a,entailment,premise text,hypothesis text,an explanation,,,{},{}\n"
    body = (",".join(csv_header(1)) + "\n" + row * 3000).encode() + b"z,neutral,caf\xc3,h,e,,,{},{}\n"
    p = _write(tmp_path, "esnli_train_1.csv", body)
    with pytest.raises(SourceFormatError) as info:
        read_esnli_csv({"train": [p]})
    assert info.value.line == 3002 and "byte 0xc3 at column 14" in str(info.value)


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (gzip.compress(b"pairID,gold_label\n", mtime=0), "is a gzip file"),
        (b"PK\x03\x04\x14\x00\x00\x00", "is a zip file"),
        (b"\x00\x01\x02binary", "is a binary file"),
        (b"", "is empty"),
        (b"\xef\xbb\xbf\r\n", "is empty"),
    ],
)
def test_binary_compressed_and_empty(tmp_path, data, text):
    p = _write(tmp_path, "esnli_dev.csv", data)
    with pytest.raises(SourceFormatError, match=text) as info:
        read_esnli_csv({"validation": [p]})
    assert info.value.path == str(p) and info.value.line == 1


def test_missing_file(tmp_path):
    with pytest.raises(SourceNotFoundError) as info:
        read_esnli_csv({"validation": [tmp_path / "esnli_dev.csv"]})
    assert str(tmp_path / "esnli_dev.csv") in str(info.value)


def test_blank_lines_are_not_rows(tmp_path):
    body = ",".join(csv_header(1)) + "\r\n\r\na,entailment,p,h,e,,,{},{}\r\n\r\nb,neutral,p2,h2,e2,,,{},{}\r\n\r\n"
    p = _write(tmp_path, "esnli_train_1.csv", body.encode())
    rows = read_esnli_csv({"train": [p]}).examples["train"]
    assert [(r.row, r.source_id) for r in rows] == [(0, "a"), (1, "b")]


def test_header_only_gives_no_rows(tmp_path):
    p = _write(tmp_path, "esnli_test.csv", (",".join(csv_header(3)) + "\n").encode())
    assert read_esnli(p).examples == {"test": []}


# Text fields with quotes, commas, spaces, newlines, any Unicode. No bare "\r": Python's
# csv.writer leaves it unquoted when the line terminator is "\n" (not valid RFC 4180 output).
_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"), max_size=30)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(_text, _text, _text, _text, st.lists(_text, min_size=3, max_size=3)), max_size=8),
    crlf=st.booleans(),
    bom=st.booleans(),
    quoting=st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]),
)
def test_round_trip_through_csv_writer(tmp_path_factory, rows, crlf, bom, quoting):
    """Whatever a CSV writer produces in the e-SNLI layout reads back field for field (stripped)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n" if crlf else "\n", quoting=quoting)
    w.writerow(csv_header(3))
    for pid, label, p, h, expl in rows:
        w.writerow([pid, label, p, h] + [x for e in expl for x in (e, "", "", "{}", "{}")])
    data = ("\ufeff" if bom else "") + buf.getvalue()
    path = tmp_path_factory.mktemp("rt") / "esnli_dev.csv"
    path.write_bytes(data.encode("utf-8"))
    got = read_esnli_csv({"validation": [path]}).examples["validation"]
    # A row whose every field is empty is written as an empty line (QUOTE_MINIMAL) and is not a row.
    want = [
        NLIExample("validation", 0, pid.strip(), p.strip(), h.strip(), label.strip(), tuple(e.strip() for e in expl))
        for pid, label, p, h, expl in rows
    ]
    assert [(g.source_id, g.premise, g.hypothesis, g.label, g.explanations) for g in got] == [
        (x.source_id, x.premise, x.hypothesis, x.label, x.explanations) for x in want
    ]
    assert [g.row for g in got] == list(range(len(got)))


def test_a_repeated_premise_or_label_is_one_string():
    """Equal premises (a premise comes with each of its hypotheses) and labels are held once."""
    dev = _dev()
    by_text = {}
    for e in dev:
        by_text.setdefault(e.premise, []).append(e.premise)
        by_text.setdefault(e.label, []).append(e.label)
    repeated = [objs for objs in by_text.values() if len(objs) > 1]
    assert repeated, "the fixture repeats a premise or a label"
    assert all(o is objs[0] for objs in repeated for o in objs)
