"""The ChaosNLI v1.0 reader: fixtures, every format quirk, bad input, and the real release's counts."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from gradebench.datasets.chaosnli.reader import (
    ALPHA_LABELS,
    NLI_LABELS,
    Votes,
    read_chaosnli_alphanli,
    read_chaosnli_nli,
    split_alpha_uid,
    vote_problem,
)
from gradebench.errors import SourceFormatError, SourceNotFoundError
from tests.conftest import FIXTURES, shared_data
from tests.input_files import read_error, write_jsonl

FIX = FIXTURES / "chaosnli" / "chaosNLI_v1.0"


def _nli_row(**over) -> dict:
    row = {
        "uid": "5000000001.jpg#0r1n",
        "label_counter": {"n": 60, "e": 40},
        "majority_label": "n",
        "label_dist": [0.4, 0.6, 0.0],
        "label_count": [40, 60, 0],
        "entropy": 0.97,
        "example": {
            "uid": "5000000001.jpg#0r1n",
            "premise": "A dog runs on a beach.",
            "hypothesis": "An animal is outside.",
            "source": "snli_agree_3",
        },
        "old_label": "n",
        "old_labels": ["neutral", "neutral", "neutral", "entailment", "entailment"],
    }
    row.update(over)
    return row


def _write(tmp_path: Path, *lines: str | dict, name: str = "chaosNLI_snli.jsonl") -> Path:
    return write_jsonl(tmp_path / name, lines)


def _votes(**over) -> Votes:
    base = dict(
        uid="u", example_uid="u", label_count=(30, 70, 0), label_counter=(("n", 70), ("e", 30)),
        label_dist=(0.3, 0.7, 0.0), majority_label="n", old_label="n", entropy=0.88, source="snli_agree_3",
    )
    base.update(over)
    return Votes(**base)


# --------------------------------------------------------------------------- fixtures


def test_reads_snli_fixture():
    items = read_chaosnli_nli(FIX / "chaosNLI_snli.jsonl")
    assert [i.row for i in items] == [0, 1, 2, 3]
    assert [i.line for i in items] == [1, 2, 3, 4]
    first = items[0]
    assert first.votes.uid == "1000000001.jpg#0r1n" == first.votes.example_uid
    assert first.votes.label_count == (30, 70, 0)
    assert first.votes.label_dist == (0.3, 0.7, 0.0)
    assert first.premise == "A girl in a red coat feeds ducks at a frozen pond."
    assert first.hypothesis == "The girl is at a park."
    assert first.votes.source == "snli_agree_3"


def test_label_counter_omits_zero_vote_labels():
    items = read_chaosnli_nli(FIX / "chaosNLI_snli.jsonl")
    assert items[2].votes.label_counter == (("e", 100),)
    assert items[2].votes.label_count == (100, 0, 0)
    assert vote_problem(items[2].votes, NLI_LABELS) is None


def test_four_old_labels_are_kept():
    items = read_chaosnli_nli(FIX / "chaosNLI_snli.jsonl")
    assert [len(i.old_labels) for i in items] == [5, 5, 4, 5]


def test_alphanli_int_labels_become_strings():
    items = read_chaosnli_alphanli(FIX / "chaosNLI_alphanli.jsonl")
    v = items[0].votes
    assert v.majority_label == "1" and v.old_label == "1"
    assert v.label_counter == (("2", 12), ("1", 88))  # keys are strings in the file, order kept
    assert vote_problem(v, ALPHA_LABELS) is None
    assert items[0].obs1 == "Mia wanted to learn the violin."
    assert items[0].hyp2 == "Mia sold her violin to a neighbor."


@pytest.mark.parametrize(
    ("uid", "expected"),
    [
        ("0a1b2c3d-0000-4000-8000-00000000000a-1", ("0a1b2c3d-0000-4000-8000-00000000000a", 1)),
        ("0a1b2c3d-0000-4000-8000-00000000000b1", ("0a1b2c3d-0000-4000-8000-00000000000b", 1)),
        ("0a1b2c3d-0000-4000-8000-00000000000b2", ("0a1b2c3d-0000-4000-8000-00000000000b", 2)),
        ("0a1b2c3d-0000-4000-8000-00000000000b-3", None),
        ("0a1b2c3d-0000-4000-8000-00000000000b", None),
        ("1000000001.jpg#0r1n", None),
    ],
)
def test_split_alpha_uid_both_forms(uid, expected):
    assert split_alpha_uid(uid) == expected


def test_blank_lines_and_bom_are_accepted(tmp_path):
    p = tmp_path / "chaosNLI_snli.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps(_nli_row()).encode() + b"\n\n  \n" + json.dumps(_nli_row()).encode())
    items = read_chaosnli_nli(p)
    assert [i.line for i in items] == [1, 4]


# --------------------------------------------------------------------------- vote_problem


@pytest.mark.parametrize(
    ("over", "reason"),
    [
        ({}, None),
        ({"majority_label": "x"}, "unknown_label"),
        ({"old_label": "entailment"}, "unknown_label"),
        ({"label_counter": (("n", 70), ("e", 30), ("?", 0))}, "unknown_label"),
        ({"label_counter": (("n", 69), ("e", 30))}, "inconsistent_votes"),
        ({"label_counter": (("n", 70),)}, "inconsistent_votes"),
        ({"label_dist": (0.4, 0.6, 0.0)}, "inconsistent_votes"),
        ({"example_uid": "other"}, "uid_mismatch"),
        ({"label_count": (0, 0, 0), "label_counter": (), "label_dist": (0.0, 0.0, 0.0)}, "no_votes"),
    ],
)
def test_vote_problem(over, reason):
    assert vote_problem(_votes(**over), NLI_LABELS) == reason


def test_vote_problem_uses_the_row_total_not_100():
    v = _votes(label_count=(1, 3, 0), label_counter=(("e", 1), ("n", 3)), label_dist=(0.25, 0.75, 0.0))
    assert vote_problem(v, NLI_LABELS) is None


# --------------------------------------------------------------------------- bad input


def _error(tmp_path, *lines, reader=read_chaosnli_nli, name="chaosNLI_snli.jsonl") -> SourceFormatError:
    e = read_error(reader, _write(tmp_path, *lines, name=name))
    assert e.path == str(tmp_path / name)
    return e


def test_truncated_line(tmp_path):
    e = _error(tmp_path, _nli_row(), json.dumps(_nli_row())[:70])
    assert e.line == 2
    assert "not valid JSON" in e.message and "column" in e.message
    assert e.hint


def test_line_not_an_object(tmp_path):
    e = _error(tmp_path, _nli_row(), "[1, 2, 3]")
    assert e.line == 2 and "expected a JSON object, got a list" in e.message


@pytest.mark.parametrize("key", ["uid", "label_counter", "majority_label", "label_dist", "label_count", "entropy",
                                 "example", "old_label", "old_labels"])
def test_missing_key(tmp_path, key):
    row = _nli_row()
    del row[key]
    e = _error(tmp_path, _nli_row(), _nli_row(), row)
    assert e.line == 3
    assert f"key '{key}' is missing" in e.message


@pytest.mark.parametrize("key", ["uid", "premise", "hypothesis", "source"])
def test_missing_example_key(tmp_path, key):
    row = _nli_row()
    del row["example"][key]
    e = _error(tmp_path, row)
    assert e.line == 1 and f"key 'example.{key}' is missing" in e.message


@pytest.mark.parametrize(
    ("over", "words"),
    [
        ({"uid": 5}, "key 'uid' must be a string, got an integer"),
        ({"label_count": ["40", "60", "0"]}, "non-negative integers"),
        ({"label_count": [40, -60, 0]}, "non-negative integers"),
        ({"label_count": [40, 60]}, "list of 3 vote counts in the order [e, n, c], got 2 entries"),
        ({"label_count": {"e": 40}}, "got an object"),
        ({"label_dist": [0.4, "0.6", 0.0]}, "finite numbers"),
        ({"label_counter": ["n", 60]}, "label -> non-negative vote count"),
        ({"label_counter": {"n": 60.5}}, "label -> non-negative vote count"),
        ({"majority_label": True}, "must be a label"),
        ({"majority_label": None}, "must be a label"),
        ({"entropy": "0.9"}, "must be a finite number"),
        ({"entropy": float("nan")}, "must be a finite number"),
        ({"example": "A dog runs."}, "key 'example' must be an object, got a string"),
        ({"old_labels": "neutral"}, "key 'old_labels' must be a list of strings"),
    ],
)
def test_wrong_types(tmp_path, over, words):
    e = _error(tmp_path, _nli_row(**over))
    assert e.line == 1
    assert words in e.message


def test_alphanli_file_read_as_nli(tmp_path):
    src = (FIX / "chaosNLI_alphanli.jsonl").read_text(encoding="utf-8")
    p = tmp_path / "x.jsonl"
    p.write_text(src, encoding="utf-8")
    with pytest.raises(SourceFormatError) as e:
        read_chaosnli_nli(p)
    assert e.value.line == 1 and "label_count" in e.value.message and "anli recipe" in e.value.hint


def test_nli_file_read_as_alphanli(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text((FIX / "chaosNLI_snli.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(SourceFormatError) as e:
        read_chaosnli_alphanli(p)
    assert e.value.line == 1 and "list of 2 vote counts in the order [1, 2]" in e.value.message


def test_alphanli_missing_hypothesis(tmp_path):
    row = json.loads((FIX / "chaosNLI_alphanli.jsonl").read_text(encoding="utf-8").splitlines()[1])
    del row["example"]["hyp2"]
    e = _error(tmp_path, row, reader=read_chaosnli_alphanli, name="chaosNLI_alphanli.jsonl")
    assert e.line == 1 and "key 'example.hyp2' is missing" in e.message


def _raw_error(tmp_path, data: str | bytes, match: str | None = None) -> SourceFormatError:
    """The error of reading ``data``, written as it is, as chaosNLI_snli.jsonl."""
    return read_error(read_chaosnli_nli, tmp_path / "chaosNLI_snli.jsonl", match, data=data)


def test_not_utf8(tmp_path):
    e = _raw_error(tmp_path, json.dumps(_nli_row()).encode() + b"\n" + b'{"uid": "caf\xe9"}\n')
    assert e.line == 2 and "not valid UTF-8: byte 0xe9 at column 13" in e.message


def test_gzip_file(tmp_path):
    e = _raw_error(tmp_path, gzip.compress(json.dumps(_nli_row()).encode()), "is a gzip file")
    assert e.line == 1 and "decompress" in e.hint


def test_binary_file(tmp_path):
    assert _raw_error(tmp_path, json.dumps(_nli_row()).encode() + b"\n\0\0\0", "binary file").line == 2


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_empty_file(tmp_path, content):
    _raw_error(tmp_path, content, "is empty")


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(SourceNotFoundError):
        read_chaosnli_nli(tmp_path / "nope.jsonl")
    with pytest.raises(SourceFormatError, match="is a folder"):
        read_chaosnli_nli(tmp_path)


# --------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def real():
    root = shared_data("chaosnli", "chaosNLI_v1.0")
    return {
        "snli": read_chaosnli_nli(root / "chaosNLI_snli.jsonl"),
        "mnli": read_chaosnli_nli(root / "chaosNLI_mnli_m.jsonl"),
        "alphanli": read_chaosnli_alphanli(root / "chaosNLI_alphanli.jsonl"),
    }


def _ties(items) -> int:
    return sum(sorted(i.votes.label_count)[-1] == sorted(i.votes.label_count)[-2] for i in items)


@pytest.mark.integration
def test_real_counts_and_quirks(real):
    snli, mnli, alpha = real["snli"], real["mnli"], real["alphanli"]
    assert (len(snli), len(mnli), len(alpha)) == (1514, 1599, 1532)
    for items, labels, source in ((snli, NLI_LABELS, "snli_agree_3"), (mnli, NLI_LABELS, "mnli_agree_3"),
                                  (alpha, ALPHA_LABELS, "abdnli_dev")):
        assert all(sum(i.votes.label_count) == 100 for i in items)
        assert all(vote_problem(i.votes, labels) is None for i in items)  # dist == count/100, uid == example.uid
        assert {i.votes.source for i in items} == {source}
        assert len({i.votes.uid for i in items}) == len(items)
    # label_counter omits zero-vote labels
    assert sum(len(i.votes.label_counter) < 3 for i in snli) == 546
    assert sum(len(i.votes.label_counter) < 3 for i in mnli) == 174
    assert sum(len(i.votes.label_counter) < 2 for i in alpha) == 114
    # majority ties
    assert (_ties(snli), _ties(mnli), _ties(alpha)) == (14, 14, 8)
    # 7 SNLI rows have only 4 original labels
    assert Counter(len(i.old_labels) for i in snli) == {5: 1507, 4: 7}
    assert Counter(len(i.old_labels) for i in mnli) == {5: 1599}
    # αNLI uid: story id + "-1"/"-2" (1,338) or a bare digit (194); 1,435 stories
    forms = Counter("hyphen" if i.votes.uid[-2] == "-" else "bare" for i in alpha)
    assert forms == {"hyphen": 1338, "bare": 194}
    parts = [split_alpha_uid(i.votes.uid) for i in alpha]
    assert None not in parts
    assert len({p[0] for p in parts}) == 1435
    assert Counter(p[1] for p in parts) == {1: 1435, 2: 97}
    assert Counter(i.votes.majority_label for i in alpha) == {"2": 774, "1": 758}


@pytest.mark.integration
def test_real_pinned_records(real):
    snli, mnli, alpha = real["snli"], real["mnli"], real["alphanli"]
    s0 = snli[0]
    assert s0.votes.uid == "2407214681.jpg#0r1n"
    assert s0.votes.label_count == (30, 70, 0) and s0.votes.label_counter == (("n", 70), ("e", 30))
    assert s0.votes.majority_label == "n" and s0.votes.old_label == "n"
    assert s0.hypothesis == "Two kids at a ballgame wash their hands."
    assert s0.old_labels == ("neutral", "neutral", "neutral", "entailment", "entailment")
    assert s0.votes.entropy == pytest.approx(0.8812908992306927)
    assert snli[9].votes.uid == "3261712960.jpg#0r1n" and snli[9].votes.label_count == (3, 65, 32)
    assert snli[9].hypothesis == "A crowd is dancing"
    assert snli[-1].votes.uid == "4805835848.jpg#0r1n" and snli[-1].line == 1514
    assert mnli[0].votes.uid == "50830c" and mnli[0].hypothesis == "We don't loan a lot of money."
    assert mnli[9].votes.uid == "131261n" and mnli[9].votes.label_count == (55, 40, 5)
    assert mnli[-1].votes.uid == "11879n"
    assert (mnli[-1].votes.majority_label, mnli[-1].votes.old_label) == ("e", "n")
    a0 = alpha[0]
    assert a0.votes.uid == "58090d3f-8a91-4c89-83ef-2b4994de9d241"
    assert split_alpha_uid(a0.votes.uid) == ("58090d3f-8a91-4c89-83ef-2b4994de9d24", 1)
    assert a0.votes.label_count == (97, 3) and a0.votes.majority_label == "1"
    assert a0.obs2 == "Ron is immediately fired for insubordination."
    assert alpha[9].votes.uid == "6395a2c4-3d82-438d-b72e-c437a0094f28-1"
    assert (alpha[9].votes.majority_label, alpha[9].votes.old_label) == ("2", "1")
    assert alpha[-1].votes.uid == "c4b3fee7-d153-40c9-af18-c8c593691a88-1"
