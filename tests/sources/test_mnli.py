"""The MultiNLI readers on invented fixtures in the release's two formats, and every bad-input case.

The fixtures (tests/fixtures/mnli/multinli_1.0/) hold the same invented records as ``.jsonl``
and ``.txt``: several genres per part, 5 annotator labels in dev and 1 (once 2) in train, a
``-`` gold label in each dev part, parse columns, quotes, non-ASCII text and a telephone-style
disfluent premise. No MultiNLI file is staged in ../shared/data/mnli, so the real-text test
rewrites ChaosNLI's MultiNLI dev-matched items into the MultiNLI formats.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gradebench.datasets.mnli.reader import (
    TXT_HEADER,
    MNLIExample,
    find_mnli_files,
    read_mnli_file,
    read_mnli_jsonl,
    read_mnli_txt,
)
from gradebench.errors import SourceFormatError, SourceNotFoundError
from tests.conftest import FIXTURES, shared_data
from tests.input_files import jsonl_text, read_error, write_jsonl

RELEASE = FIXTURES / "mnli" / "multinli_1.0"
PARTS = ("train", "dev_matched", "dev_mismatched")


def _jsonl(part: str) -> Path:
    return RELEASE / f"multinli_1.0_{part}.jsonl"


def _txt(part: str) -> Path:
    return RELEASE / f"multinli_1.0_{part}.txt"


def _record(**over) -> dict:
    rec = {
        "annotator_labels": ["neutral", "neutral", "neutral", "entailment", "neutral"],
        "genre": "travel",
        "gold_label": "neutral",
        "pairID": "1n",
        "promptID": "1",
        "sentence1": "A bus leaves the station at noon.",
        "sentence1_binary_parse": "( A bus ( leaves ( the station ) ) )",
        "sentence1_parse": "(ROOT (S (NP A bus) (VP leaves)))",
        "sentence2": "The bus is late.",
        "sentence2_binary_parse": "( The bus ( is late ) )",
        "sentence2_parse": "(ROOT (S (NP The bus) (VP is late)))",
    }
    rec.update(over)
    return rec


def _txt_row(gold="neutral", s1="A bus leaves.", s2="The bus is late.", pair="1n", genre="travel", labels=("neutral",) * 5):
    return "\t".join([gold, "( a )", "( b )", "(ROOT a)", "(ROOT b)", s1, s2, pair[:-1], pair, genre, *labels])


def _write_txt(path: Path, rows: list[str], header: str = "\t".join(TXT_HEADER)) -> Path:
    path.write_text(header + "\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the fixture release


def test_dev_matched_jsonl_records():
    rows = read_mnli_jsonl(_jsonl("dev_matched"), "validation")
    assert len(rows) == 8
    assert [r.row for r in rows] == list(range(8))
    assert rows[0] == MNLIExample(
        split="validation",
        row=0,
        source_id="90001e",
        premise="The old lighthouse keeper climbed the stairs every night to light the lamp.",
        hypothesis="The keeper lit the lamp at night.",
        label="entailment",
        explanations=(),
        genre="fiction",
        annotator_labels=("entailment", "entailment", "entailment", "neutral", "entailment"),
    )
    assert isinstance(rows[0], MNLIExample)
    assert {r.genre for r in rows} == {"fiction", "government", "slate", "telephone", "travel"}
    assert all(len(r.annotator_labels) == 5 for r in rows)


def test_gold_dash_is_kept_by_the_reader():
    by_id = {r.source_id: r for r in read_mnli_jsonl(_jsonl("dev_matched"), "validation")}
    assert by_id["90003n"].label == "-"
    assert by_id["90003n"].agreement() == 0.0
    mism = {r.source_id: r for r in read_mnli_jsonl(_jsonl("dev_mismatched"), "test")}
    assert mism["80004e"].label == "-"


def test_non_ascii_and_quotes():
    by_id = {r.source_id: r for r in read_mnli_txt(_txt("dev_matched"), "validation")}
    assert by_id["90003n"].premise == "Critics called the café's new menu “ambitious but uneven” — a familiar verdict."
    # the .txt has no quoting: double quotes are text
    assert by_id["90002c"].premise == 'The agency will publish the revised "clean water" rules in March.'
    mism = {r.source_id: r for r in read_mnli_txt(_txt("dev_mismatched"), "test")}
    assert mism["80004e"].premise == 'and uh so I said well "why not" and we just went'


@pytest.mark.parametrize("part", PARTS)
def test_jsonl_and_txt_hold_the_same_records(part):
    assert read_mnli_jsonl(_jsonl(part), "x") == read_mnli_txt(_txt(part), "x")


def test_train_has_one_annotator_label_and_empty_txt_labels_are_dropped():
    rows = read_mnli_txt(_txt("train"), "train")
    assert [len(r.annotator_labels) for r in rows] == [1, 1, 1, 1, 1, 2]
    assert rows[0].annotator_labels == ("entailment",)
    assert rows[0].agreement() == 1.0


def test_agreement():
    by_id = {r.source_id: r for r in read_mnli_jsonl(_jsonl("dev_matched"), "validation")}
    assert by_id["90001e"].agreement() == pytest.approx(0.8)
    assert by_id["90001c"].agreement() == 1.0
    assert by_id["90004e"].agreement() == pytest.approx(0.6)
    assert MNLIExample("test", 0, "x", "p", "h", "neutral").agreement() is None


def test_first_row_and_read_mnli_file():
    rows = read_mnli_file(_txt("dev_mismatched"), "test", first_row=10)
    assert [r.row for r in rows] == [10, 11, 12, 13, 14]
    assert {r.genre for r in rows} == {"letters", "oup", "nineeleven", "facetoface", "verbatim"}
    with pytest.raises(SourceFormatError, match="unsupported suffix"):
        read_mnli_file(RELEASE.parent / "x.csv", "test")


# --------------------------------------------------------------------------- locating


def test_find_in_release_folder_and_its_parent():
    for source in (RELEASE, RELEASE.parent):
        found = find_mnli_files(source)
        assert set(found) == {"mnli-jsonl", "mnli-txt"}
        assert set(found["mnli-jsonl"]) == set(PARTS)
        assert found["mnli-txt"]["dev_mismatched"] == _txt("dev_mismatched")


def test_find_single_file_and_short_names(tmp_path):
    assert find_mnli_files(_jsonl("dev_matched")) == {"mnli-jsonl": {"dev_matched": _jsonl("dev_matched")}}
    short = write_jsonl(tmp_path / "dev_mismatched.jsonl", [_record()])
    assert find_mnli_files(short) == {"mnli-jsonl": {"dev_mismatched": short}}
    # the unlabeled 0.9 test files and other names are ignored in a folder
    (tmp_path / "multinli_0.9_test_matched_unlabeled.jsonl").write_text("{}\n")
    assert find_mnli_files(tmp_path) == {"mnli-jsonl": {"dev_mismatched": short}}


def test_find_errors(tmp_path):
    with pytest.raises(SourceNotFoundError):
        find_mnli_files(tmp_path / "nope")
    with pytest.raises(SourceFormatError, match="no MultiNLI files"):
        find_mnli_files(tmp_path)
    other = tmp_path / "mnli.jsonl"
    other.write_text("{}\n")
    with pytest.raises(SourceFormatError, match="names no MultiNLI part"):
        find_mnli_files(other)
    write_jsonl(tmp_path / "dev_matched.jsonl", [_record()])
    write_jsonl(tmp_path / "multinli_1.0_dev_matched.jsonl", [_record()])
    with pytest.raises(SourceFormatError, match="two jsonl files for the MultiNLI part 'dev_matched'"):
        find_mnli_files(tmp_path)


# --------------------------------------------------------------------------- jsonl quirks and errors


def test_jsonl_blank_lines_crlf_and_line_separator(tmp_path):
    p = tmp_path / "dev_matched.jsonl"
    a = json.dumps(_record(pairID="1e", sentence1="A line\u2028separator and a \x0c form feed stay."), ensure_ascii=False)
    b = json.dumps(_record(pairID="2e"))
    p.write_bytes((a + "\r\n\r\n" + b + "\r\n").encode("utf-8"))
    rows = read_mnli_jsonl(p, "validation")
    assert [r.source_id for r in rows] == ["1e", "2e"]
    assert rows[0].premise == "A line\u2028separator and a \x0c form feed stay."


def test_jsonl_null_sentence_is_empty(tmp_path):
    p = write_jsonl(tmp_path / "train.jsonl", [_record(sentence2=None)])
    assert read_mnli_jsonl(p, "train")[0].hypothesis == ""


def _train_error(tmp_path: Path, data: str | bytes, match: str) -> SourceFormatError:
    """The error of reading ``data`` as the jsonl train file."""
    return read_error(lambda p: read_mnli_jsonl(p, "train"), tmp_path / "train.jsonl", match, data=data)


def test_jsonl_malformed_line(tmp_path):
    e = _train_error(tmp_path, json.dumps(_record()) + "\n" + '{"gold_label": "neutral", "sentence1": "x\n',
                     "malformed JSON")
    assert e.line == 2
    assert e.path == str(tmp_path / "train.jsonl")


def test_jsonl_truncated_last_line(tmp_path):
    assert _train_error(tmp_path, json.dumps(_record()) + "\n" + json.dumps(_record())[:50], "truncated").line == 2


def test_jsonl_not_an_object(tmp_path):
    assert _train_error(tmp_path, json.dumps(_record()) + "\n[1, 2]\n", "JSON list, expected an object").line == 2


@pytest.mark.parametrize("key", ["gold_label", "sentence1", "sentence2", "pairID", "genre", "annotator_labels"])
def test_jsonl_missing_key(tmp_path, key):
    rec = _record()
    del rec[key]
    e = _train_error(tmp_path, jsonl_text([_record(), _record(), rec]), f"no key '{key}'")
    assert e.line == 3
    assert "its keys: " in e.message


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"sentence1": 17}, "'sentence1' holds a int"),
        ({"sentence2": ["a"]}, "'sentence2' holds a list"),
        ({"gold_label": None}, "'gold_label' holds a null"),
        ({"pairID": 5}, "'pairID' holds a int"),
        ({"genre": {"x": 1}}, "'genre' holds a dict"),
        ({"annotator_labels": "neutral"}, "'annotator_labels' holds a str"),
        ({"annotator_labels": ["neutral", 1]}, "'annotator_labels' holds a list"),
    ],
)
def test_jsonl_wrong_types(tmp_path, over, match):
    assert _train_error(tmp_path, jsonl_text([_record(), _record(**over)]), match).line == 2


def test_jsonl_not_utf8(tmp_path):
    data = json.dumps(_record()).encode() + b"\n" + json.dumps(_record()).encode().replace(b"bus", b"b\xe9s")
    assert _train_error(tmp_path, data, "not valid UTF-8: byte 0xe9").line == 2


def test_gzip_and_empty_files(tmp_path):
    _train_error(tmp_path, gzip.compress(b"{}\n"), "gzip")
    read_error(lambda p: read_mnli_jsonl(p, "validation"), tmp_path / "dev_matched.jsonl", "holds no records",
               data="\n\n")
    with pytest.raises(SourceNotFoundError):
        read_mnli_jsonl(tmp_path / "missing.jsonl", "train")


# --------------------------------------------------------------------------- txt quirks and errors


def test_txt_trailing_label_columns_may_be_left_out(tmp_path):
    row = _txt_row(labels=("neutral",))
    p = _write_txt(tmp_path / "train.txt", [row, _txt_row(pair="2n", labels=("neutral", "", "", "", ""))])
    rows = read_mnli_txt(p, "train")
    assert [r.annotator_labels for r in rows] == [("neutral",), ("neutral",)]


def test_txt_crlf_bom_and_blank_lines(tmp_path):
    p = tmp_path / "train.txt"
    text = "\ufeff" + "\t".join(TXT_HEADER) + "\r\n" + _txt_row() + "\r\n\r\n" + _txt_row(pair="2n") + "\r\n"
    p.write_bytes(text.encode("utf-8"))
    rows = read_mnli_txt(p, "train")
    assert [(r.source_id, r.annotator_labels[-1]) for r in rows] == [("1n", "neutral"), ("2n", "neutral")]


def test_txt_wrong_header(tmp_path):
    header = "\t".join(TXT_HEADER).replace("sentence1\t", "premise\t")
    p = _write_txt(tmp_path / "train.txt", [_txt_row()], header=header)
    with pytest.raises(SourceFormatError, match="column 6 is 'premise', expected 'sentence1'") as e:
        read_mnli_txt(p, "train")
    assert e.value.line == 1
    short = _write_txt(tmp_path / "dev_matched.txt", [], header="\t".join(TXT_HEADER[:10]))
    with pytest.raises(SourceFormatError, match="column 11 is '\\(end of line\\)', expected 'label1'"):
        read_mnli_txt(short, "validation")


def test_txt_wrong_field_count(tmp_path):
    p = _write_txt(tmp_path / "train.txt", [_txt_row(), _txt_row(labels=()), _txt_row()])
    with pytest.raises(SourceFormatError, match="row has 10 tab-separated fields, expected 15") as e:
        read_mnli_txt(p, "train")
    assert e.value.line == 3
    tab = _write_txt(tmp_path / "dev_matched.txt", [_txt_row(s1="a\ttab inside")])
    with pytest.raises(SourceFormatError, match="row has 16") as e:
        read_mnli_txt(tab, "validation")
    assert e.value.line == 2


def test_txt_empty_and_not_utf8(tmp_path):
    empty = tmp_path / "train.txt"
    empty.write_text("")
    with pytest.raises(SourceFormatError, match="is empty"):
        read_mnli_txt(empty, "train")
    header_only = _write_txt(tmp_path / "dev_matched.txt", [])
    with pytest.raises(SourceFormatError, match="holds no records"):
        read_mnli_txt(header_only, "validation")
    bad = tmp_path / "dev_mismatched.txt"
    bad.write_bytes(("\t".join(TXT_HEADER) + "\n" + _txt_row() + "\n").encode() + b"\xff\xfe\n")
    with pytest.raises(SourceFormatError, match="not valid UTF-8") as e:
        read_mnli_txt(bad, "test")
    assert e.value.line == 3


# --------------------------------------------------------------------------- real text


def test_real_mnli_text_from_chaosnli(tmp_path):
    """ChaosNLI's 1,599 MultiNLI dev-matched items (real MultiNLI text, pairIDs and 5 original
    labels) rewritten into both MultiNLI formats; genre is not in ChaosNLI, so it is a constant."""
    src = shared_data("chaosnli", "chaosNLI_v1.0", "chaosNLI_mnli_m.jsonl")
    full = {"e": "entailment", "n": "neutral", "c": "contradiction"}
    items = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines()]
    records = [
        _record(pairID=it["uid"], promptID=it["uid"][:-1], sentence1=it["example"]["premise"],
                sentence2=it["example"]["hypothesis"], gold_label=full[it["old_label"]],
                annotator_labels=it["old_labels"], genre="unknown")
        for it in items
    ]
    jl = write_jsonl(tmp_path / "multinli_1.0_dev_matched.jsonl", records)
    rows = [_txt_row(r["gold_label"], r["sentence1"], r["sentence2"], r["pairID"], r["genre"], r["annotator_labels"])
            for r in records]
    tx = _write_txt(tmp_path / "multinli_1.0_dev_matched.txt", rows)
    a, b = read_mnli_jsonl(jl, "validation"), read_mnli_txt(tx, "validation")
    assert len(a) == 1599
    # texts with quotes and stray whitespace survive the unquoted TSV unchanged (stripped)
    assert a == b
    assert sum('"' in r.premise or '"' in r.hypothesis for r in a) > 0
    assert a[0].source_id == "50830c"
    assert a[0].hypothesis == "We don't loan a lot of money."
    assert a[0].label == "neutral"
    assert a[0].annotator_labels == ("contradiction", "neutral", "contradiction", "neutral", "neutral")
    # ChaosNLI keeps only items where at most 3 of the 5 original labels agree
    assert {r.agreement() for r in a} == {0.6}


def test_records_pickle_and_compare_as_mnli_examples():
    import pickle

    rows = read_mnli_jsonl(_jsonl("dev_matched"), "validation")
    back = pickle.loads(pickle.dumps(rows))
    assert back == rows and type(back[0]) is MNLIExample and back[0].genre == "fiction"
    assert hash(back[0]) == hash(rows[0])
