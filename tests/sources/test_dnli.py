"""The δ-NLI JSON Lines reader: locating files, every quirk of the release, every bad-input case,
and (marked integration) the real dev/test files in ../shared/data/dnli."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from gradebench.datasets.dnli.reader import (
    DNLIRow,
    clean_text,
    locate_dnli,
    parse_role,
    read_dnli,
    read_dnli_file,
)
from gradebench.datasets.records import InputFile
from gradebench.errors import SourceFormatError, SourceNotFoundError
from tests.conftest import FIXTURES, shared_data
from tests.input_files import jsonl_text, write_file

DNLI = FIXTURES / "dnli"


def _roles(files: list[InputFile]) -> list[str]:
    return [f.role for f in files]


def _snli_row(**over) -> dict:
    row = {
        "DataSource": "SNLI", "AssignmentIdAnon": 1, "WorkerIdAnon": 2, "Premise": "A cat sleeps.",
        "Hypothesis": "The cat is tired.", "SNLIPairId": "1.jpg#0r1n", "Update": "It ran all day.",
        "UpdateType": "strengthener", "UpdateTypeImpossible": False, "UpdateTypeImpossibleReason": "{}",
    }
    row.update(over)
    return row


# --------------------------------------------------------------------------- locate


def test_locate_release_folder_in_subset_then_split_order():
    files = locate_dnli(DNLI)
    assert _roles(files) == [
        "dnli-jsonl:atomic:validation",
        "dnli-jsonl:snli:validation",
        "dnli-jsonl:snli:test",
        "dnli-jsonl:social:validation",
    ]
    assert [f.split for f in files] == ["validation", "validation", "test", "validation"]
    assert Path(files[2].path) == DNLI / "defeasible-snli" / "test.jsonl"


def test_locate_subsets_filter():
    assert _roles(locate_dnli(DNLI, ["snli"])) == ["dnli-jsonl:snli:validation", "dnli-jsonl:snli:test"]
    assert _roles(locate_dnli(DNLI, ["social", "atomic"])) == [
        "dnli-jsonl:atomic:validation", "dnli-jsonl:social:validation"
    ]


def test_locate_subset_folder_and_single_file():
    assert _roles(locate_dnli(DNLI / "defeasible-snli")) == ["dnli-jsonl:snli:validation", "dnli-jsonl:snli:test"]
    path = DNLI / "defeasible-social" / "dev.jsonl"
    assert locate_dnli(path) == [InputFile(str(path), "dnli-jsonl:social:validation", "validation")]


def test_roles_do_not_depend_on_location(tmp_path):
    """A clone of the repository (data/defeasible-nli/...) and a renamed file give the same roles."""
    clone = tmp_path / "defeasible-nli-main" / "data" / "defeasible-nli"
    shutil.copytree(DNLI, clone)
    assert _roles(locate_dnli(tmp_path / "defeasible-nli-main")) == _roles(locate_dnli(DNLI))
    # subset folders may drop the defeasible- prefix
    short = tmp_path / "short"
    shutil.copytree(DNLI / "defeasible-snli", short / "snli")
    assert _roles(locate_dnli(short)) == ["dnli-jsonl:snli:validation", "dnli-jsonl:snli:test"]
    dev = DNLI / "defeasible-snli" / "dev.jsonl"
    named = write_file(tmp_path / "anywhere" / "defeasible-snli-dev.jsonl", dev.read_bytes())
    assert _roles(locate_dnli(named)) == ["dnli-jsonl:snli:validation"]
    assert read_dnli(locate_dnli(named)) == read_dnli(locate_dnli(DNLI / "defeasible-snli" / "dev.jsonl"))


def test_locate_ignores_other_files(tmp_path):
    root = tmp_path / "defeasible-atomic"
    shutil.copytree(DNLI / "defeasible-atomic", root)
    write_file(root / "README.md", "notes")
    write_file(root / "dev.jsonl.bak", "x")
    assert _roles(locate_dnli(root)) == ["dnli-jsonl:atomic:validation"]


def test_locate_errors(tmp_path):
    with pytest.raises(SourceNotFoundError, match="not found"):
        locate_dnli(tmp_path / "missing")
    with pytest.raises(SourceFormatError, match="no δ-NLI files here") as e:
        locate_dnli(tmp_path)
    assert "defeasible-<subset>" in e.value.hint
    with pytest.raises(SourceFormatError, match="cannot tell the δ-NLI subset"):
        locate_dnli(write_file(tmp_path / "x" / "dev.jsonl", "{}\n"))
    with pytest.raises(SourceFormatError, match="cannot tell"):
        locate_dnli(write_file(tmp_path / "defeasible-snli" / "extra.jsonl", "{}\n"))
    with pytest.raises(SourceFormatError, match="holds no train.jsonl"):
        locate_dnli(tmp_path / "defeasible-snli")
    with pytest.raises(SourceFormatError, match="reads only subsets") as e:
        locate_dnli(DNLI / "defeasible-social" / "dev.jsonl", ["atomic", "snli"])
    assert "subsets" in e.value.hint
    with pytest.raises(SourceFormatError, match="reads only subsets"):
        locate_dnli(DNLI / "defeasible-social", ["atomic"])
    only_social = tmp_path / "only-social"
    shutil.copytree(DNLI / "defeasible-social", only_social / "defeasible-social")
    with pytest.raises(SourceFormatError, match=r"holds δ-NLI subsets \['social'\]"):
        locate_dnli(only_social, ["snli"])


def test_parse_role():
    assert parse_role("dnli-jsonl:social:test") == ("social", "test")
    for bad in ("dnli-jsonl:snli:dev", "dnli-jsonl:mnli:test", "esnli-csv:validation", "dnli-jsonl:snli"):
        with pytest.raises(SourceFormatError, match="not a δ-NLI file role"):
            parse_role(bad)


# --------------------------------------------------------------------------- read: fixtures


def test_atomic_record_and_quirks():
    rows = read_dnli_file(DNLI / "defeasible-atomic" / "dev.jsonl", "atomic", "validation")
    assert len(rows) == 8
    assert rows[0] == DNLIRow(
        subset="atomic",
        split="validation",
        row=0,
        source_id="atomic/dev.jsonl:1",
        premise="PersonX bakes a cake for PersonY",
        hypothesis="As a result, PersonX wants to see PersonY smile",
        update="PersonY has been sad all week.",
        update_type="strengthener",
        impossible=False,
        impossible_reason=None,
        assignment_id=101,
        worker_id=7,
        pair_id="fxRel01==",
        situation=None,
        meta=(
            ("AtomicEventId", "fxEvent01=="),
            ("AtomicEventRelationId", "fxRel01=="),
            ("AtomicRelationType", "xWant"),
            ("AtomicInference", "to see PersonY smile"),
        ),
    )
    # double spaces inside the hypothesis and an update are collapsed
    assert rows[2].hypothesis == "PersonX feels annoyed"
    assert rows[5].update == "PersonX was told to do it as a punishment."
    # impossible rows are kept, with an empty update; "{}" means no reason
    assert (rows[3].impossible, rows[3].update, rows[3].impossible_reason) == (True, "", None)
    assert (rows[6].impossible, rows[6].impossible_reason) == (True, "Hypothesis makes no sense")
    # a reason on a possible row is kept as written
    assert (rows[5].impossible, rows[5].impossible_reason) == (False, "Premise makes no sense")
    assert [r.row for r in rows] == list(range(8))


def test_snli_duplicates_kept_and_pair_id():
    rows = read_dnli_file(DNLI / "defeasible-snli" / "dev.jsonl", "snli", "validation")
    assert len(rows) == 8
    assert rows[2].update == rows[4].update == "The dog's tail is wagging."  # an exact duplicate, kept
    assert {r.pair_id for r in rows} == {"1000001.jpg#0r1n", "1000002.jpg#1r1n"}
    assert rows[5].source_id == "snli/dev.jsonl:6"
    assert rows[0].meta == (("SNLIPairId", "1000001.jpg#0r1n"),)


def test_social_has_no_premise():
    rows = read_dnli_file(DNLI / "defeasible-social" / "dev.jsonl", "social", "validation")
    assert len(rows) == 4
    r = rows[0]
    assert r.premise == ""
    assert r.situation == "asking my sister to help pay for our father's funeral"
    assert r.hypothesis == "You should help your family with funeral expenses."
    assert r.pair_id == "fx-sit-0001"
    assert r.meta == (
        ("SocialChemSituationUID", "fx-sit-0001"),
        ("SocialChemROT", "You should help your family with funeral expenses."),
        ("UpdateTypeOption", ""),
    )
    assert rows[3].impossible and rows[3].impossible_reason == "Nothing could make this acceptable."
    assert dict(rows[2].meta)["UpdateTypeOption"] == "stereotyped"


def test_social_update_type_option_is_optional(tmp_path):
    row = json.loads((DNLI / "defeasible-social" / "dev.jsonl").read_text().splitlines()[0])
    del row["UpdateTypeOption"]
    p = write_file(tmp_path / "defeasible-social" / "test.jsonl", jsonl_text([row]))
    [r] = read_dnli(locate_dnli(p))["test"]
    assert r.split == "test" and "UpdateTypeOption" not in dict(r.meta)


def test_read_dnli_orders_splits():
    data = read_dnli(list(reversed(locate_dnli(DNLI))))
    assert list(data) == ["validation", "test"]
    assert [r.subset for r in data["validation"]] == ["social"] * 4 + ["snli"] * 8 + ["atomic"] * 8
    assert len(data["test"]) == 2


def test_bom_crlf_blank_lines_and_no_final_newline(tmp_path):
    a, b = _snli_row(), _snli_row(Update="  It  ran\tall day. ", UpdateType="weakener")
    text = "\ufeff" + json.dumps(a) + "\r\n\r\n   \n" + json.dumps(b)
    rows = read_dnli_file(write_file(tmp_path / "dev.jsonl", text), "snli", "validation")
    assert [r.update for r in rows] == ["It ran all day.", "It ran all day."]
    assert [r.source_id for r in rows] == ["snli/dev.jsonl:1", "snli/dev.jsonl:4"]
    assert [r.row for r in rows] == [0, 1]


@pytest.mark.parametrize("reason", ["{}", "", " {} ", None, {}])
def test_no_reason_spellings(tmp_path, reason):
    p = write_file(tmp_path / "dev.jsonl", jsonl_text([_snli_row(UpdateTypeImpossibleReason=reason)]))
    assert read_dnli_file(p, "snli", "validation")[0].impossible_reason is None


def test_unknown_update_type_and_extra_keys_are_kept(tmp_path):
    p = write_file(tmp_path / "dev.jsonl", jsonl_text([_snli_row(UpdateType="neutralizer", Extra=[1, 2])]))
    assert read_dnli_file(p, "snli", "validation")[0].update_type == "neutralizer"


def test_empty_file_reads_as_no_rows(tmp_path):
    assert read_dnli_file(write_file(tmp_path / "dev.jsonl", "\n\n"), "snli", "validation") == []


def test_clean_text():
    assert clean_text("  a  b\t c\n") == "a b c"
    assert clean_text("") == ""


# --------------------------------------------------------------------------- read: bad input

_GOOD = json.dumps(_snli_row())


@pytest.mark.parametrize(
    ("text", "line", "match"),
    [
        (_GOOD + "\n{\"DataSource\": \"SNLI\",\n" + _GOOD + "\n", 2, "not valid JSON"),
        (_GOOD + "\n" + _GOOD[:40], 2, "last line is cut off"),
        (_GOOD + "\n[1, 2]\n", 2, "holds a list, expected a JSON object"),
        ("\n\n" + json.dumps({k: v for k, v in _snli_row().items() if k != "Update"}) + "\n", 3,
         "missing key.*Update"),
        (json.dumps({k: v for k, v in _snli_row().items() if k != "Premise"}) + "\n", 1, "missing key.*Premise"),
        (json.dumps(_snli_row(Update=7)) + "\n", 1, "'Update' holds a number, expected a string"),
        (json.dumps(_snli_row(Hypothesis=None)) + "\n", 1, "'Hypothesis' holds null"),
        (json.dumps(_snli_row(SNLIPairId=["x"])) + "\n", 1, "'SNLIPairId' holds a list"),
        (json.dumps(_snli_row(WorkerIdAnon="12")) + "\n", 1, "'WorkerIdAnon' holds a string, expected an integer"),
        (json.dumps(_snli_row(AssignmentIdAnon=True)) + "\n", 1, "'AssignmentIdAnon' holds a boolean"),
        (json.dumps(_snli_row(AssignmentIdAnon=1.5)) + "\n", 1, "'AssignmentIdAnon' holds a number"),
        (json.dumps(_snli_row(UpdateTypeImpossible="false")) + "\n", 1, "expected true or false"),
        (json.dumps(_snli_row(UpdateTypeImpossibleReason=["x"])) + "\n", 1, "'UpdateTypeImpossibleReason' holds a list"),
        (json.dumps(_snli_row(UpdateTypeImpossibleReason={"why": "x"})) + "\n", 1, "Reason' holds an object"),
        (json.dumps(_snli_row(DataSource="ATOMIC")) + "\n", 1, "DataSource is 'ATOMIC'"),
    ],
)
def test_bad_lines(tmp_path, text, line, match):
    p = write_file(tmp_path / "defeasible-snli" / "dev.jsonl", text)
    with pytest.raises(SourceFormatError, match=match) as e:
        read_dnli(locate_dnli(p))
    assert e.value.path == str(p)
    assert e.value.line == line
    assert e.value.hint


def test_atomic_file_in_snli_folder(tmp_path):
    p = write_file(tmp_path / "defeasible-snli" / "dev.jsonl", (DNLI / "defeasible-atomic" / "dev.jsonl").read_bytes())
    with pytest.raises(SourceFormatError, match="missing key.*SNLIPairId") as e:
        read_dnli(locate_dnli(p))
    assert e.value.line == 1


def test_not_utf8(tmp_path):
    p = write_file(tmp_path / "dev.jsonl", (_GOOD + "\n").encode() + b'{"Premise": "caf\xe9"}\n')
    with pytest.raises(SourceFormatError, match=r"not valid UTF-8: byte 0xe9 at column 17") as e:
        read_dnli_file(p, "snli", "validation")
    assert e.value.line == 2


def test_compressed_and_binary(tmp_path):
    gz = write_file(tmp_path / "dev.jsonl", gzip.compress(_GOOD.encode()))
    with pytest.raises(SourceFormatError, match="is a gzip file") as e:
        read_dnli_file(gz, "snli", "validation")
    assert "decompress" in e.value.hint
    binary = write_file(tmp_path / "test.jsonl", (_GOOD + "\n").encode() + b"\x00\x01")
    with pytest.raises(SourceFormatError, match="NUL byte") as e:
        read_dnli_file(binary, "snli", "test")
    assert e.value.line == 2


def test_missing_file_folder_and_unknown_subset(tmp_path):
    with pytest.raises(SourceNotFoundError):
        read_dnli_file(tmp_path / "dev.jsonl", "snli", "validation")
    with pytest.raises(SourceFormatError, match="is a folder"):
        read_dnli_file(tmp_path, "snli", "validation")
    with pytest.raises(SourceFormatError, match="unknown δ-NLI subset"):
        read_dnli_file(DNLI / "defeasible-snli" / "dev.jsonl", "mnli", "validation")


# --------------------------------------------------------------------------- real data

REAL_COUNTS = {
    # (subset, file): rows, impossible, impossible with "{}" reason, possible rows with a reason, strengtheners
    ("atomic", "dev"): (4310, 470, 341, 0, 2155),
    ("atomic", "test"): (4654, 516, 360, 2, 2327),
    ("snli", "dev"): (1888, 103, 73, 1, 944),
    ("snli", "test"): (1972, 135, 87, 0, 986),
}


@pytest.mark.integration
@pytest.mark.parametrize(("subset", "stem"), list(REAL_COUNTS))
def test_real_counts(subset, stem):
    path = shared_data("dnli", f"defeasible-{subset}", f"{stem}.jsonl")
    split = {"dev": "validation", "test": "test"}[stem]
    rows = read_dnli_file(path, subset, split)
    n, impossible, no_reason, reason_possible, strong = REAL_COUNTS[(subset, stem)]
    assert len(rows) == n
    assert sum(r.impossible for r in rows) == impossible
    assert all((r.update == "") == r.impossible for r in rows)
    assert sum(r.impossible and r.impossible_reason is None for r in rows) == no_reason
    assert sum(not r.impossible and r.impossible_reason is not None for r in rows) == reason_possible
    assert Counter(r.update_type for r in rows) == {"strengthener": strong, "weakener": n - strong}
    assert not any("  " in t for r in rows for t in (r.premise, r.hypothesis, r.update))
    assert [r.row for r in rows] == list(range(n))


@pytest.mark.integration
def test_real_locate_and_pinned_records():
    files = locate_dnli(shared_data("dnli"))
    assert _roles(files) == [
        "dnli-jsonl:atomic:validation", "dnli-jsonl:atomic:test", "dnli-jsonl:snli:validation", "dnli-jsonl:snli:test"
    ]
    data = read_dnli(files)
    assert {k: len(v) for k, v in data.items()} == {"validation": 6198, "test": 6626}
    snli = [r for r in data["validation"] if r.subset == "snli"]
    assert snli[0] == DNLIRow(
        subset="snli", split="validation", row=0, source_id="snli/dev.jsonl:1",
        premise="Old man crafting something in his workshop.", hypothesis="An old man is working.",
        update="The man is wearing pajamas and is chuckling.", update_type="weakener", impossible=False,
        impossible_reason=None, assignment_id=9613, worker_id=123, pair_id="4530729176.jpg#3r1e",
        meta=(("SNLIPairId", "4530729176.jpg#3r1e"),),
    )
    assert (snli[9].source_id, snli[9].update, snli[9].update_type, snli[9].pair_id) == (
        "snli/dev.jsonl:10", "The man in shorts is tanning.", "strengthener", "2692396013.jpg#4r1c"
    )
    last = data["test"][-1]
    assert (last.source_id, last.premise, last.hypothesis, last.update, last.update_type) == (
        "snli/test.jsonl:1972",
        "Young boy wearing pajamas lying down in bed and sleeping on a colorful striped pillow.",
        "A young boy is sleeping at a sleep over.",
        "The bed is at his best friend's house.",
        "strengthener",
    )
    atomic = data["validation"][0]
    assert (atomic.premise, atomic.hypothesis, atomic.update, atomic.update_type, atomic.worker_id) == (
        "PersonX is best friends", "Before, PersonX needed meet someone",
        "PersonX has been best friends since grade school.", "weakener", 40,
    )
    assert dict(atomic.meta)["AtomicRelationType"] == "xNeed"
    assert snli[1050].impossible_reason == "The premise states the man is wearing a suit so he can’t be playing"
    assert not snli[1050].impossible
