"""The WinoWhy reader: structure, text normalisation, categories, typed errors, real data."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from gradebench.datasets.winowhy.reader import read_categories, read_winowhy
from gradebench.errors import SourceFormatError, SourceNotFoundError
from tests.conftest import FIXTURES, shared_data
from tests.input_files import read_error

FIX = FIXTURES / "winowhy"


def _fixture() -> list[dict]:
    return json.loads((FIX / "winowhy.json").read_text(encoding="utf-8"))


def _write(tmp_path: Path, data, name: str = "winowhy.json", indent: int | None = 1) -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data, indent=indent), encoding="utf-8")
    return p


# --------------------------------------------------------------------------- fixture


def test_reads_questions_in_file_order():
    qs = read_winowhy(FIX / "winowhy.json")
    assert [q.wsc_id for q in qs] == [0, 1, 2]
    assert [len(q.reasons) for q in qs] == [7, 7, 4]
    assert [r.index for r in qs[0].reasons] == list(range(7))
    assert qs[0].answers == ("The dog", "The cat")
    assert qs[0].reasons[0].source == "human" and qs[0].reasons[0].plausibility == 1.0
    assert qs[0].reasons[0].label == "Valid"
    assert all(q.categories == () for q in qs)  # no category file given


def test_correct_answer_kept_as_in_file():
    # "B." is normalised by the builder, not the reader
    assert [q.correct_answer for q in read_winowhy(FIX / "winowhy.json")] == ["A", "B.", "B"]


def test_reason_texts_stripped_gpt_leading_space():
    q = read_winowhy(FIX / "winowhy.json")[0]
    assert q.reasons[3].text == "it had not eaten since the morning."
    assert q.reasons[4].text == "of the weather in the park.<|endoftext|>"  # the GPT-2 marker is kept


def test_sentence_whitespace_collapsed_and_joined():
    qs = read_winowhy(FIX / "winowhy.json")
    assert qs[0].before == "The dog chased the cat up the tree because"  # double space in the file
    assert qs[0].sentence == "The dog chased the cat up the tree because it was hungry."
    assert qs[0].marked_sentence == "The dog chased the cat up the tree because *it* was hungry."
    # txt2 == "." joins without a space
    assert qs[2].sentence == "The bell rang while the teacher was talking, so nobody heard her."
    assert qs[2].marked_sentence.endswith("heard *her*.")


def test_provenance_newline_collapsed():
    assert read_winowhy(FIX / "winowhy.json")[0].wsc_source == "Invented for the gradebench tests"


def test_duplicate_reason_texts_kept():
    q = read_winowhy(FIX / "winowhy.json")[1]
    dup = [r for r in q.reasons if r.text == "cats climb trees to escape dogs"]
    assert [(r.index, r.plausibility) for r in dup] == [(1, 0.8), (2, 0.6)]


def test_categories_attached_in_file_order():
    qs = read_winowhy(FIX / "winowhy.json", FIX / "cat_ref.json")
    assert [q.categories for q in qs] == [("Property", "Temporal"), ("Object",), ("Object", "Temporal")]


def test_read_categories_empty_category_and_integers():
    cats = read_categories(FIX / "cat_ref.json", 3)
    assert cats == {0: ("Property", "Temporal"), 1: ("Object",), 2: ("Object", "Temporal")}
    assert all("Causal" not in v for v in cats.values())  # empty in the release too


def test_integer_plausibility_accepted(tmp_path):
    data = _fixture()
    data[0]["reasons"][0][2] = 1
    q = read_winowhy(_write(tmp_path, data))[0]
    assert q.reasons[0].plausibility == 1.0 and isinstance(q.reasons[0].plausibility, float)


def test_utf8_bom_accepted(tmp_path):
    p = tmp_path / "winowhy.json"
    p.write_bytes(b"\xef\xbb\xbf" + (FIX / "winowhy.json").read_bytes())
    assert len(read_winowhy(p)) == 3


def test_single_line_file_reports_column(tmp_path):
    data = _fixture()
    del data[2]["reasons"]
    p = _write(tmp_path, data, indent=None)
    text = p.read_text()
    with pytest.raises(SourceFormatError) as e:
        read_winowhy(p)
    col = text.index('{"text"', text.index('"Invented"') - 300) + 1
    assert e.value.line == 1
    assert f"question 2 (the element starting at column {col})" in e.value.message
    assert "missing key 'reasons'" in e.value.message


# --------------------------------------------------------------------------- errors


def test_missing_file(tmp_path):
    with pytest.raises(SourceNotFoundError):
        read_winowhy(tmp_path / "winowhy.json")


def test_folder_instead_of_file(tmp_path):
    with pytest.raises(SourceFormatError, match="is a folder"):
        read_winowhy(tmp_path)


def _raw_error(tmp_path: Path, data: bytes, match: str) -> SourceFormatError:
    """The error of reading ``data``, written as it is, as winowhy.json."""
    return read_error(read_winowhy, tmp_path / "winowhy.json", match, data=data)


def test_gzip_rejected(tmp_path):
    e = _raw_error(tmp_path, gzip.compress((FIX / "winowhy.json").read_bytes()), "gzip")
    assert e.line == 1 and "decompress" in e.hint


def test_binary_rejected(tmp_path):
    assert _raw_error(tmp_path, b'[\n{"text": \x00}]', "NUL byte").line == 2


def test_bad_utf8_located(tmp_path):
    raw = (FIX / "winowhy.json").read_bytes().replace(b"hungry", b"hungr\xe9", 1)
    assert _raw_error(tmp_path, raw, "not valid UTF-8: byte 0xe9").line == 2


@pytest.mark.parametrize("text", ["", "  \n\n"])
def test_empty_file(tmp_path, text):
    with pytest.raises(SourceFormatError, match="is empty") as e:
        read_winowhy(_write(tmp_path, text))
    assert e.value.line == 1


def test_truncated_json_names_line(tmp_path):
    text = (FIX / "winowhy.json").read_text()
    cut = text[: text.index("was scared.")]  # inside question 1, on line 13
    with pytest.raises(SourceFormatError, match="not valid JSON") as e:
        read_winowhy(_write(tmp_path, cut))
    assert e.value.line == 13 and "truncated" in e.value.hint


def test_truncated_between_elements(tmp_path):
    text = (FIX / "winowhy.json").read_text()
    cut = text[: text.rindex("]")].rstrip()  # the closing bracket is gone
    with pytest.raises(SourceFormatError, match="unterminated JSON array.*end of the file") as e:
        read_winowhy(_write(tmp_path, cut))
    assert e.value.line == text[: len(cut)].count("\n") + 1


def test_missing_comma_between_elements(tmp_path):
    p = _write(tmp_path, "[\n" + json.dumps(_fixture()[0]) + "\n" + json.dumps(_fixture()[1]) + "\n]")
    with pytest.raises(SourceFormatError, match="expected ',' or ']'") as e:
        read_winowhy(p)
    assert e.value.line == 3


def test_trailing_data(tmp_path):
    p = _write(tmp_path, json.dumps(_fixture()) + "\n[]\n")
    with pytest.raises(SourceFormatError, match="after the JSON array") as e:
        read_winowhy(p)
    assert e.value.line == 2


@pytest.mark.parametrize(("text", "found"), [('{"text": 1}', "a JSON object"), ("42", "a JSON number"),
                                             ("{oops", "text that is not JSON")])
def test_top_level_not_array(tmp_path, text, found):
    with pytest.raises(SourceFormatError, match="expected a JSON array") as e:
        read_winowhy(_write(tmp_path, text))
    assert found in e.value.message and e.value.line == 1


def test_empty_array(tmp_path):
    with pytest.raises(SourceFormatError, match="empty JSON array"):
        read_winowhy(_write(tmp_path, "[ ]"))


def _element_line(path: Path, k: int) -> int:
    """1-based line where the k-th top-level element of an indent=1 JSON dump starts."""
    starts = [i for i, line in enumerate(path.read_text().splitlines(), 1) if line in (" {", " [")]
    return starts[k]


def _mutated(tmp_path, mutate) -> SourceFormatError:
    data = _fixture()
    mutate(data)
    with pytest.raises(SourceFormatError) as e:
        read_winowhy(_write(tmp_path, data))
    return e.value


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d.__setitem__(1, ["not", "an", "object"]),
            "question 1 (the element starting at column 2): is a JSON array, expected a JSON object",
        ),
        (lambda d: d[1].pop("reasons"), "missing key 'reasons'"),
        (lambda d: d[1].pop("correctAnswer"), "missing key 'correctAnswer'"),
        (lambda d: d[1].pop("source"), "missing key 'source'"),
        (lambda d: d[1]["text"].pop("pron"), "missing key 'text.pron'"),
        (lambda d: d[1].__setitem__("text", "a sentence"), "'text' is a JSON string, expected a JSON object"),
        (lambda d: d[1]["text"].__setitem__("txt2", None), "'text.txt2' is null, expected a JSON string"),
        (lambda d: d[1].__setitem__("answers", "The dog"), "'answers' is a JSON string, expected a JSON array"),
        (lambda d: d[1]["answers"].__setitem__(1, 2), "answers[1] is a JSON number, expected a JSON string"),
        (lambda d: d[1].__setitem__("correctAnswer", True), "'correctAnswer' is a JSON boolean, expected"),
        (lambda d: d[1].__setitem__("reasons", {}), "'reasons' is a JSON object, expected a JSON array"),
        (lambda d: d[1]["reasons"][3].pop(), "reasons[3] is 3 items, expected a list [text, source, plausibility"),
        (lambda d: d[1]["reasons"].__setitem__(3, "text"), "reasons[3] is a JSON string, expected a list"),
        (lambda d: d[1]["reasons"][3].__setitem__(0, None), "reasons[3] text is null, expected a JSON string"),
        (lambda d: d[1]["reasons"][3].__setitem__(1, 7), "reasons[3] source is a JSON number"),
        (lambda d: d[1]["reasons"][3].__setitem__(3, ["Valid"]), "reasons[3] label is a JSON array"),
        (lambda d: d[1]["reasons"][3].__setitem__(2, "0.6"), "reasons[3] plausibility is a JSON string, expected a"),
        (lambda d: d[1]["reasons"][3].__setitem__(2, True), "reasons[3] plausibility is a JSON boolean"),
        (lambda d: d[1]["reasons"][3].__setitem__(2, float("nan")), "reasons[3] plausibility is nan"),
    ],
)
def test_bad_question_named_with_line(tmp_path, mutate, message):
    err = _mutated(tmp_path, mutate)
    assert message in err.message
    assert err.line == _element_line(tmp_path / "winowhy.json", 1)
    assert err.path.endswith("winowhy.json") and err.hint


def test_question_line_is_its_own(tmp_path):
    data = _fixture()
    data[2]["answers"] = None
    p = _write(tmp_path, data)
    with pytest.raises(SourceFormatError) as e:
        read_winowhy(p)
    assert e.value.line == _element_line(p, 2) > _element_line(p, 1) > 1
    assert "question 2" in e.value.message


# --------------------------------------------------------------------------- categories


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("[0, 1]", "is a JSON array, expected a JSON object", 1),
        ('{"Property": [0],\n "Object": "1, 2"}', "category 'Object' is not a list of integer indexes", 2),
        ('{"Property": [0, 1.5]}', "category 'Property' is not a list of integer indexes", 1),
        ('{"Property": [0],\n "Object": [1, 3]}', "category 'Object' lists question 3, but winowhy.json has 3", 2),
        ('{"Property": [-1]}', "lists question -1", 1),
        ('{"Property": [0', "not valid JSON", 1),
    ],
)
def test_bad_categories(tmp_path, text, message, line):
    p = _write(tmp_path, text, name="cat_ref.json")
    with pytest.raises(SourceFormatError) as e:
        read_winowhy(FIX / "winowhy.json", p)
    assert message in e.value.message and e.value.line == line
    assert e.value.path.endswith("cat_ref.json")


def test_missing_categories_file(tmp_path):
    with pytest.raises(SourceNotFoundError):
        read_winowhy(FIX / "winowhy.json", tmp_path / "cat_ref.json")


# --------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def real():
    data = shared_data("winowhy", "winowhy.json")
    return read_winowhy(data, data.parent / "cat_ref.json")


def test_real_counts(real):
    assert len(real) == 273
    reasons = [r for q in real for r in q.reasons]
    assert len(reasons) == 4095 and all(len(q.reasons) == 15 for q in real)
    assert Counter(r.source for r in reasons) == {"human": 1365, "reverse": 1365, "gpt": 1365}
    assert Counter(r.plausibility for r in reasons) == {0.0: 792, 0.2: 803, 0.4: 610, 0.6: 620, 0.8: 743, 1.0: 527}
    assert Counter(r.label for r in reasons) == {"Valid": 1270, "Invalid": 1595, "Undecided": 1230}
    assert Counter(q.correct_answer for q in real) == {"A": 125, "B": 124, "A.": 12, "B.": 12}


def test_real_quirks(real):
    assert all(r.text == r.text.strip() and r.text for q in real for r in q.reasons)  # 1,348 had a leading space
    dups = sum(len(q.reasons) - len({r.text for r in q.reasons}) for q in real)
    assert dups == 17
    assert sum("<|endoftext|>" in r.text for q in real for r in q.reasons) == 2
    assert all("  " not in q.sentence for q in real)
    assert sum(q.after == "." for q in real) == 18
    cats = Counter(c for q in real for c in q.categories)
    assert "Causal" not in cats and cats["Temporal"] == 88
    assert all(q.categories for q in real)


def test_real_records(real):
    q0, q9, last = real[0], real[9], real[-1]
    assert q0.sentence == "The city councilmen refused the demonstrators a permit because they feared violence."
    assert (q0.answers, q0.correct_answer, q0.wsc_source) == (("The city councilmen", "The demonstrators"), "A",
                                                               "(Winograd1972)")
    assert q0.reasons[0].text == "city councilmen are administrative so they are more likely to fear"
    assert q0.reasons[8].text == "they are under the command of Mayor James B. Gray."
    assert (q0.reasons[8].source, q0.reasons[8].plausibility, q0.reasons[8].label) == ("gpt", 0.2, "Invalid")
    assert q0.categories == ("Property", "Quantity", "Others")
    assert q9.wsc_id == 9 and q9.pronoun and len(q9.answers) == 2
    assert last.wsc_id == 272 and last.wsc_source == "LeoraMorgenstern"
    assert real[2].correct_answer == "A."
    assert real[62].sentence.endswith("couldn't hear it.")
