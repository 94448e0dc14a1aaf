"""The generic NLI table reader: four formats, column mapping, splits, value types, and bad input.

Fixtures: tests/fixtures/nli_table/folder/ holds one invented file per text format (columns
pair_id, sentence1, sentence2, gold, why) and nested.jsonl nests the texts under ``example``
with integer labels; Parquet files are written in each test's temp dir.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gradebench.datasets.nli_table.reader import ColumnRoles, locate_table, read_nli_table, split_from_name
from gradebench.datasets.records import InputFile, NLIExample
from gradebench.errors import SourceFormatError, SourceNotFoundError
from tests.conftest import FIXTURES, shared_data
from tests.input_files import jsonl_text, read_error

TABLE = FIXTURES / "nli_table"
FOLDER = TABLE / "folder"
ROLES = ColumnRoles("sentence1", "sentence2", "gold", ("why",), "pair_id")
NESTED = ColumnRoles("example.premise", "example.hypothesis", "majority", (), "uid", "split")
PLAIN = ColumnRoles("premise", "hypothesis", "label")
NUMBERS = {"0": "entailment", "1": "neutral", "2": "contradiction"}


def _read(source: Path, roles: ColumnRoles = ROLES, label_values=None) -> dict[str, list[NLIExample]]:
    return read_nli_table(locate_table(source, split_column=roles.split is not None), roles, label_values)


def _one(path: Path, roles: ColumnRoles = ROLES, split: str = "test", label_values=None) -> list[NLIExample]:
    return read_nli_table([InputFile(str(path), "x", split)], roles, label_values).get(split, [])


def _refused(path: Path, match: str | None, roles: ColumnRoles = PLAIN, *, data: str | bytes | None = None):
    """The SourceFormatError (message matching ``match``) of reading ``path`` alone, written with
    ``data`` first if given."""
    return read_error(lambda p: _one(p, roles), path, match, data=data)


# --------------------------------------------------------------------------- locating and splits


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("pairs_train.csv", "train"),
        ("snli_1.0_dev.jsonl", "validation"),
        ("Validation.PARQUET", "validation"),
        ("val.tsv", "validation"),
        ("mnli-test-matched.tsv", "test"),
        ("training_data.csv", "train"),
        ("testing.csv", None),
        ("chaosNLI_mnli_m.jsonl", None),
        ("devices.csv", None),
    ],
)
def test_split_from_name(name, split):
    assert split_from_name(name) == split


def test_split_from_name_ambiguous():
    with pytest.raises(SourceFormatError, match="names several splits"):
        split_from_name("train_test.csv")


def test_locate_folder(tmp_path):
    files = locate_table(FOLDER)
    assert [(Path(f.path).name, f.role, f.split) for f in files] == [
        ("pairs_dev.tsv", "nli-tsv:pairs_dev.tsv:validation", "validation"),
        ("pairs_test.jsonl", "nli-jsonl:pairs_test.jsonl:test", "test"),
        ("pairs_train.csv", "nli-csv:pairs_train.csv:train", "train"),
    ]
    # roles do not depend on the folder
    assert [f.role for f in locate_table(FOLDER / "pairs_dev.tsv")] == ["nli-tsv:pairs_dev.tsv:validation"]
    only = locate_table(FOLDER, formats=("nli-csv",))
    assert [Path(f.path).name for f in only] == ["pairs_train.csv"]
    by_column = locate_table(TABLE / "nested.jsonl", split_column=True)
    assert by_column[0].role == "nli-jsonl:nested.jsonl:split-column"


def test_locate_ignores_hidden_and_other_files(tmp_path):
    (tmp_path / ".hidden.csv").write_text("premise,hypothesis,label\n")
    (tmp_path / "README.md").write_text("x")
    (tmp_path / "data.CSV").write_text("premise,hypothesis,label\na,b,neutral\n")
    assert [Path(f.path).name for f in locate_table(tmp_path)] == ["data.CSV"]


def test_locate_errors(tmp_path):
    with pytest.raises(SourceNotFoundError):
        locate_table(tmp_path / "nope.csv")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(SourceFormatError, match=r"no \.csv/\.tsv/\.jsonl/\.parquet file in this folder \(it holds: notes.txt\)"):
        locate_table(tmp_path)
    with pytest.raises(SourceFormatError, match="unsupported file suffix '.txt'"):
        locate_table(tmp_path / "notes.txt")
    with pytest.raises(SourceFormatError, match="unsupported file suffix '.tsv'"):
        locate_table(FOLDER / "pairs_dev.tsv", formats=("nli-csv",))


# --------------------------------------------------------------------------- the three text formats


def test_folder_reads_every_format():
    out = _read(FOLDER)
    assert {k: len(v) for k, v in out.items()} == {"train": 7, "validation": 3, "test": 3}
    assert out["train"][0] == NLIExample(
        "train", 0, "t1", "A girl feeds the ducks at the pond.", "A child is near water.", "entailment",
        ("A pond is water and the girl is a child.",),
    )
    assert out["validation"][1] == NLIExample(
        "validation", 1, "d2", "A woman paints a fence white.", "A fence is being painted.", "entailment",
        ("Painting a fence means the fence is being painted.",),
    )


def test_csv_quoting_empty_fields_and_dash():
    rows = {r.source_id: r for r in _read(FOLDER)["train"]}
    assert rows["t4"].premise == "Two men carry a sofa, slowly, up the stairs."
    assert rows["t5"].premise == 'A sign reads "closed" on the shop door.'
    assert rows["t5"].explanations == ('A "closed" sign means the shop is not open.',)
    assert rows["t6"].hypothesis == "" and rows["t6"].explanations == ("",)
    assert rows["t7"].label == "-"


def test_tsv_is_read_without_quoting_and_crlf_blank_lines_are_fine():
    rows = _read(FOLDER)["validation"]
    assert rows[0].premise == 'A dog runs on the "wet" sand.'
    assert rows[1].explanations == ("Painting a fence means the fence is being painted.",)  # \r dropped
    assert [r.row for r in rows] == [0, 1, 2]


def test_jsonl_null_explanation_and_unknown_label_are_kept():
    rows = _read(FOLDER)["test"]
    assert rows[1].explanations == ("",)
    assert rows[2].label == "maybe"  # the builder skips it as unknown_label


def test_dotted_paths_integer_labels_and_split_column():
    out = _read(TABLE / "nested.jsonl", NESTED, NUMBERS)
    assert {k: [r.source_id for r in v] for k, v in out.items()} == {
        "train": ["101"], "validation": ["102", "104"], "test": ["103", "105"],
    }
    assert out["validation"][0] == NLIExample(
        "validation", 0, "102", "A cat sleeps on the warm windowsill.", "The cat is chasing a mouse.", "contradiction"
    )
    assert out["validation"][1].row == 1
    assert out["test"][1].label == "-1"  # unmapped integer: kept as text, skipped later


def test_exact_key_wins_over_dotted_path(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"a.b": "exact", "a": {"b": "nested"}, "h": "H", "l": "neutral"}) + "\n")
    assert _one(p, ColumnRoles("a.b", "h", "l"))[0].premise == "exact"


def test_id_fallback_and_multiple_explanations(tmp_path):
    p = tmp_path / "dev.csv"
    p.write_text("id,p,h,l,e1,e2\n,P1,H1,neutral,x,y\n7,P2,H2,neutral,,z\n")
    rows = read_nli_table(locate_table(p), ColumnRoles("p", "h", "l", ("e1", "e2"), "id"))["validation"]
    assert [r.source_id for r in rows] == ["dev.csv:2", "7"]
    assert [r.explanations for r in rows] == [("x", "y"), ("", "z")]
    rows = read_nli_table(locate_table(p), ColumnRoles("p", "h", "l"))["validation"]
    assert [r.source_id for r in rows] == ["dev.csv:2", "dev.csv:3"]


def test_rows_count_on_across_files_of_a_split(tmp_path):
    for name in ("a_train.csv", "b_train.csv"):
        (tmp_path / name).write_text("premise,hypothesis,label\nP,H,neutral\nQ,R,entailment\n")
    rows = _read(tmp_path, ColumnRoles("premise", "hypothesis", "label"))["train"]
    assert [(r.row, r.source_id) for r in rows] == [(0, "a_train.csv:2"), (1, "a_train.csv:3"),
                                                   (2, "b_train.csv:2"), (3, "b_train.csv:3")]


def test_line_separator_inside_a_text(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(json.dumps({"premise": "a\u2028b", "hypothesis": "h", "label": "x"}, ensure_ascii=False).encode() + b"\n")
    assert _one(p, ColumnRoles("premise", "hypothesis", "label"))[0].premise == "a\u2028b"
    t = tmp_path / "t.tsv"
    t.write_bytes("premise\thypothesis\tlabel\na\u2028b\x0cc\th\tx\n".encode())
    assert _one(t, ColumnRoles("premise", "hypothesis", "label"))[0].premise == "a\u2028b\x0cc"


# --------------------------------------------------------------------------- parquet


def _parquet(path: Path, data: dict) -> Path:
    pq.write_table(pa.table(data), path)
    return path


def test_parquet(tmp_path):
    p = _parquet(tmp_path / "train.parquet", {
        "sentence1": ["P1", None, "P3"],
        "sentence2": ["H1", "H2", "H3"],
        "gold": pa.array([0, 2, None], pa.int64()),
        "pair_id": pa.array([11, 12, 13], pa.int32()),
    })
    rows = read_nli_table(locate_table(p), ColumnRoles("sentence1", "sentence2", "gold", (), "pair_id"), NUMBERS)["train"]
    assert rows == [
        NLIExample("train", 0, "11", "P1", "H1", "entailment"),
        NLIExample("train", 1, "12", "", "H2", "contradiction"),
        NLIExample("train", 2, "13", "P3", "H3", ""),
    ]


def test_parquet_float_labels_dictionary_text_and_row_ids(tmp_path):
    p = _parquet(tmp_path / "t.parquet", {
        "p": pa.array(["P1", "P2"]).dictionary_encode(),
        "h": ["H1", "H2"],
        "l": [1.0, float("nan")],
        "s": ["dev", "test"],
    })
    out = read_nli_table(locate_table(p, split_column=True), ColumnRoles("p", "h", "l", split="s"), NUMBERS)
    assert out == {
        "validation": [NLIExample("validation", 0, "t.parquet:1", "P1", "H1", "neutral")],
        "test": [NLIExample("test", 0, "t.parquet:2", "P2", "H2", "")],
    }


def test_parquet_missing_column_and_wrong_type(tmp_path):
    p = _parquet(tmp_path / "t.parquet", {"p": ["a"], "h": [1], "l": ["neutral"]})
    e = _refused(p, "has no column 'label' .*its columns are: 'p', 'h', 'l'", ColumnRoles("p", "h", "label"))
    assert e.path == str(p)
    _refused(p, "column 'h' \\(hypothesis\\) has type int64, expected string", ColumnRoles("p", "h", "l"))


def test_parquet_bad_files(tmp_path):
    _refused(tmp_path / "t.parquet", "not a Parquet file", ROLES, data="premise,hypothesis\n")
    good = _parquet(tmp_path / "g.parquet", {"p": ["a"], "h": ["b"], "l": ["neutral"]})
    _refused(tmp_path / "cut.parquet", "truncated", ColumnRoles("p", "h", "l"), data=good.read_bytes()[:-10])
    bad_split = _parquet(tmp_path / "s.parquet", {"p": ["a"], "h": ["b"], "l": ["neutral"], "s": ["holdout"]})
    _refused(bad_split, "split column 's' holds 'holdout' on row 1", ColumnRoles("p", "h", "l", split="s"))


# --------------------------------------------------------------------------- errors in text formats


def test_missing_column_names_file_column_and_existing_columns():
    roles = ColumnRoles("premise", "sentence2", "gold")
    with pytest.raises(SourceFormatError) as e:
        _one(FOLDER / "pairs_train.csv", roles)
    assert e.value.path == str(FOLDER / "pairs_train.csv")
    assert e.value.line == 1
    assert "has no column 'premise' (mapped as premise)" in e.value.message
    assert "'pair_id', 'sentence1', 'sentence2', 'gold', 'why'" in e.value.message
    assert "--map premise=COLUMN" in e.value.hint
    assert _refused(FOLDER / "pairs_dev.tsv", "has no column 'premise'", roles).line == 1


def test_jsonl_missing_key_on_one_line(tmp_path):
    text = '{"premise": "a", "hypothesis": "b", "label": "neutral"}\n{"premise": "a", "label": "neutral"}\n'
    match = "has no column 'hypothesis' .*keys on this line are: 'premise', 'label'"
    assert _refused(tmp_path / "t.jsonl", match, data=text).line == 2
    roles = ColumnRoles("example.premise", "example.hypothesis", "majority", ("example.why",))
    e = _refused(TABLE / "nested.jsonl", None, roles)
    assert e.line == 1
    assert e.message == (
        "has no column 'example.why' (mapped as explanation); its keys on this line are: 'uid', 'example', "
        "'majority', 'split', 'example.premise', 'example.hypothesis'"
    )


def test_duplicate_header_column(tmp_path):
    text = "premise,premise,hypothesis,label\na,b,c,neutral\n"
    _refused(tmp_path / "t.csv", "names column 'premise' .* 2 times", data=text)


@pytest.mark.parametrize(
    ("record", "match"),
    [
        ({"premise": 3, "hypothesis": "b", "label": "neutral"}, "column 'premise' \\(premise\\) holds a int"),
        ({"premise": "a", "hypothesis": ["b"], "label": "neutral"}, "holds a list"),
        ({"premise": "a", "hypothesis": "b", "label": True}, "label column 'label' holds a bool"),
        ({"premise": "a", "hypothesis": "b", "label": 0.5}, "label column 'label' holds a float"),
        ({"premise": "a", "hypothesis": "b", "label": {"x": 1}}, "holds a dict"),
        ({"premise": "a", "hypothesis": "b", "label": "n", "id": [1]}, "id column 'id' holds a list"),
        ({"premise": "a", "hypothesis": "b", "label": "n", "split": "holdout"}, "split column 'split' holds 'holdout' on line 2"),
        ({"premise": "a", "hypothesis": "b", "label": "n", "split": None}, "split column 'split' holds None"),
    ],
)
def test_jsonl_wrong_types(tmp_path, record, match):
    ok = {"premise": "a", "hypothesis": "b", "label": "neutral", "id": "1", "split": "train"}
    roles = ColumnRoles("premise", "hypothesis", "label", (), "id", "split")
    assert _refused(tmp_path / "t.jsonl", match, roles, data=jsonl_text([ok, {**ok, **record}])).line == 2


def test_jsonl_malformed_lines(tmp_path):
    p = tmp_path / "t.jsonl"
    text = '{"premise": "a", "hypothesis": "b", "label": "neutral"}\n{"premise": "a",, }\n'
    assert _refused(p, "malformed JSON at column 17", data=text).line == 2
    assert _refused(p, "JSON str, expected an object", data='"just a string"\n').line == 1


@pytest.mark.parametrize(
    ("text", "line", "match"),
    [
        ("premise,hypothesis,label\na,b,neutral\na,b\n", 3, "row has 2 fields but the header has 3"),
        ('premise,hypothesis,label\na,b,neutral\n"a,b,neutral\n', 3, "unterminated quoted field"),
        ('premise,hypothesis,label\na,b,neutral\n"a"x,b,neutral\n', 3, "malformed CSV"),
        ("", 1, "is empty"),
    ],
)
def test_csv_errors(tmp_path, text, line, match):
    assert _refused(tmp_path / "t.csv", match, data=text).line == line


def test_csv_multiline_quoted_field_keeps_line_numbers(tmp_path):
    p = tmp_path / "t.csv"
    assert _refused(p, "row has 2 fields", data='premise,hypothesis,label\n"two\nlines",b,neutral\na,b\n').line == 4
    p.write_text('premise,hypothesis,label\n"two\nlines",b,neutral\n')
    assert _one(p, PLAIN)[0].premise == "two\nlines"


def test_tsv_errors(tmp_path):
    p = tmp_path / "t.tsv"
    text = "premise\thypothesis\tlabel\na\tb\tneutral\na\tb\n"
    assert _refused(p, "row has 2 tab-separated fields but the header has 3", data=text).line == 3
    _refused(p, "is empty", data="")


def test_bad_bytes(tmp_path):
    data = b"premise,hypothesis,label\na,b,neutral\ncaf\xe9,b,neutral\n"
    assert _refused(tmp_path / "t.csv", "not valid UTF-8: byte 0xe9 at column 4", data=data).line == 3
    _refused(tmp_path / "t.jsonl", "gzip", data=gzip.compress(b'{"premise": "a"}\n'))
    with pytest.raises(SourceFormatError, match="unsupported file suffix"):
        read_nli_table([InputFile(str(tmp_path / "x.xlsx"), "x", "test")], ROLES)


# --------------------------------------------------------------------------- real data


def test_real_chaosnli_mnli_table():
    """ChaosNLI's MultiNLI file read as a generic table (nested keys, one-letter labels, no split in the name)."""
    src = shared_data("chaosnli", "chaosNLI_v1.0", "chaosNLI_mnli_m.jsonl")
    roles = ColumnRoles("example.premise", "example.hypothesis", "majority_label", (), "uid")
    out = _read(src, roles, {"e": "entailment", "n": "neutral", "c": "contradiction"})
    rows = out["test"]
    assert list(out) == ["test"] and len(rows) == 1599
    assert rows[0].source_id == "50830c" and rows[0].label == "neutral"
    assert rows[0].hypothesis == "We don't loan a lot of money."
    assert rows[-1].row == 1598
    labels = [r.label for r in rows]
    assert (labels.count("entailment"), labels.count("neutral"), labels.count("contradiction")) == (741, 583, 275)


def test_real_chaosnli_snli_table():
    src = shared_data("chaosnli", "chaosNLI_v1.0", "chaosNLI_snli.jsonl")
    roles = ColumnRoles("example.premise", "example.hypothesis", "old_label", (), "example.uid")
    rows = _read(src, roles, {"e": "entailment", "n": "neutral", "c": "contradiction"})["test"]
    assert len(rows) == 1514
    assert rows[0].source_id == "2407214681.jpg#0r1n"
