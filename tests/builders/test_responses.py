"""What the response-ranking builders share: rows of any table, chat messages, column roles, locating files."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gradebench.datasets.responses.conversation import (
    Turn,
    answer_after,
    implicit_prompt,
    is_empty,
    messages_json,
    parse_value,
    render,
)
from gradebench.datasets.responses.table import (
    ColumnMapBase,
    RoleColumn,
    list_value,
    locate_tables,
    number_value,
    read_role_rows,
    suffix_formats,
)
from gradebench.errors import SourceFormatError, SourceNotFoundError
from gradebench.io.table_rows import RowPlace, read_table_rows, table_kind

PLACE = RowPlace(Path("/data/prefs.jsonl"), line=7)
ROW_PLACE = RowPlace(Path("/data/prefs.parquet"), row=3)


# --------------------------------------------------------------------------- rows of any table


def test_rows_of_the_three_kinds_are_dicts(tmp_path):
    (tmp_path / "a.csv").write_text('x, y\n1,""\n"two\nlines",b\n', encoding="utf-8")
    names, rows = read_table_rows(tmp_path / "a.csv", "csv", ["x"])
    assert names == {"x", "y"}  # header names are stripped
    assert [(p.line, r) for p, r in rows] == [(2, {"x": "1", "y": None}), (3, {"x": "two\nlines", "y": "b"})]

    (tmp_path / "a.jsonl").write_text('{"x": 1}\n\n{"y": [1, 2]}\n', encoding="utf-8")
    names, rows = read_table_rows(tmp_path / "a.jsonl", "jsonl", ["x"])
    assert names is None
    assert [(p.line, r) for p, r in rows] == [(1, {"x": 1}), (3, {"y": [1, 2]})]

    pq.write_table(pa.Table.from_pylist([{"x": "a", "meta": {"s": "q"}, "other": 1}]), tmp_path / "a.parquet")
    names, rows = read_table_rows(tmp_path / "a.parquet", "parquet", ["x", "meta.s", "absent"])
    assert names == {"x", "meta", "other"}
    assert [(p.row, r) for p, r in rows] == [(1, {"x": "a", "meta": {"s": "q"}})]  # only the wanted columns


def test_table_rows_errors(tmp_path):
    (tmp_path / "dup.csv").write_text("x,y,x\n1,2,3\n", encoding="utf-8")
    with pytest.raises(SourceFormatError, match="the header names column 'x' 2 times") as e:
        read_table_rows(tmp_path / "dup.csv", "csv", ["x"])
    assert e.value.line == 1
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(SourceFormatError, match="not a Parquet file"):
        read_table_rows(tmp_path / "bad.parquet", "parquet", ["x"])
    assert table_kind("A.PARQUET") == "parquet" and table_kind("a.tsv") is None
    assert PLACE.ref() == "prefs.jsonl:7" and ROW_PLACE.ref() == "prefs.parquet:3"
    err = ROW_PLACE.error("bad value", "fix it")
    assert err.line is None and "bad value (row 3)" in err.one_line() and "prefs.parquet" in err.one_line()


# --------------------------------------------------------------------------- conversations


def test_plain_text_and_chat_values():
    assert parse_value("  Hello  ", "auto", PLACE, "prompt") == "Hello"
    assert parse_value(None, "auto", PLACE, "prompt") == ""
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "User", "content": " Hi "}]
    conv = (Turn("system", "Be brief."), Turn("user", "Hi"))
    assert parse_value(msgs, "auto", PLACE, "prompt") == conv
    assert parse_value(json.dumps(msgs), "auto", PLACE, "prompt") == conv  # a CSV field holding the list
    assert parse_value(json.dumps(msgs), "text", PLACE, "prompt") == json.dumps(msgs)  # never parsed
    assert parse_value("[INST] not json", "auto", PLACE, "prompt") == "[INST] not json"
    assert parse_value('["a", "b"]', "auto", PLACE, "prompt") == '["a", "b"]'  # JSON, but no messages
    # ShareGPT keys and roles, a single message object, text parts, null content
    assert parse_value([{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}], "auto", PLACE, "c") == (
        Turn("user", "q"), Turn("assistant", "a"))
    assert parse_value({"role": "assistant", "content": "x"}, "auto", PLACE, "c") == (Turn("assistant", "x"),)
    parts = [{"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}]
    assert parse_value(parts, "chat", PLACE, "c") == (Turn("user", "one\n\ntwo"),)
    assert parse_value([{"role": "assistant", "content": None}], "auto", PLACE, "c") == (Turn("assistant", ""),)


@pytest.mark.parametrize(("value", "mode", "match"), [
    ([{"role": "user", "content": "x"}], "text", "holds a list, but the recipe reads plain text"),
    ("plain", "chat", "holds plain text, but the recipe reads chat messages"),
    ([{"content": "x"}], "auto", "message 1 has no 'role' \\(its keys: content\\)"),
    ([{"role": "user", "content": "x"}, "oops"], "auto", "message 2 is a string, expected an object"),
    ([{"role": "", "content": "x"}], "auto", "message 1 has role ''"),
    ([{"role": "user", "content": 3}], "auto", "message 1 has content of type an integer"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": "u"}]}], "auto", "not text"),
    (3.5, "auto", "holds a number, expected text or chat messages"),
])
def test_bad_values_name_the_file_line_and_column(value, mode, match):
    with pytest.raises(SourceFormatError, match=match) as e:
        parse_value(value, mode, PLACE, "chosen")
    assert e.value.line == 7 and e.value.path == "/data/prefs.jsonl" and "'chosen'" in e.value.message


def test_prompt_and_answer_split():
    user = Turn("user", "Q")
    a = Turn("assistant", "A")
    assert answer_after("Q", (user, a)) == (a,)  # the repeated prompt is removed
    assert answer_after((user,), (a,)) == (a,)
    assert answer_after((user,), "text") == "text"
    assert answer_after((user,), (a, Turn("user", "more?"))) is None  # a user turn after the prompt
    assert answer_after("Other", (user, a)) is None
    convo = (Turn("system", "S"), user, a, Turn("user", "Q2"), Turn("assistant", "A2"))
    assert implicit_prompt(convo) == convo[:4]
    assert implicit_prompt((a,)) is None


def test_rendering_and_json():
    assert render("plain") == "plain" and messages_json("plain") is None
    assert render((Turn("user", "Q"),)) == "Q"
    two = (Turn("system", "S"), Turn("user", "Q"))
    assert render(two) == "system: S\n\nuser: Q"
    assert json.loads(messages_json(two)) == [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}]
    assert messages_json((Turn("user", "é"),)) == '[{"content":"é","role":"user"}]'  # sorted keys, UTF-8
    assert is_empty("  ") and is_empty(()) and is_empty((Turn("assistant", ""),))
    assert not is_empty((Turn("assistant", ""), Turn("assistant", "x")))


# --------------------------------------------------------------------------- values


def test_numbers_and_lists():
    assert number_value("4", PLACE, "rating") == 4.0 and number_value(3, PLACE, "rating") == 3.0
    assert [number_value(v, PLACE, "r") for v in (None, "N/A", "", float("nan"), "null")] == [None] * 5
    for bad, match in ((True, "a boolean"), ("four", "'four', expected a number"), (float("inf"), "finite"),
                       ([1], "a list, expected a number")):
        with pytest.raises(SourceFormatError, match=match):
            number_value(bad, PLACE, "rating")
    assert list_value('["a", "b"]', PLACE, "c", "chosen") == ["a", "b"]
    assert list_value("just text", PLACE, "c", "chosen") == ["just text"]
    assert list_value(None, PLACE, "c", "chosen") == []
    with pytest.raises(SourceFormatError, match="holds an integer, expected a list"):
        list_value(5, PLACE, "c", "chosen")


# --------------------------------------------------------------------------- column roles


class _Cols(ColumnMapBase):
    OPTIONAL = ("subset",)
    prompt: str = "prompt"
    subset: str = "subset"
    split: str | None = None


def test_optional_roles_are_read_where_present_only_at_their_default_name():
    assert _Cols().role_columns() == [RoleColumn("prompt", "prompt", True), RoleColumn("subset", "subset", False)]
    assert _Cols(subset="category").role_columns()[1] == RoleColumn("subset", "category", True)
    assert _Cols(split="fold").role_columns()[2] == RoleColumn("split", "fold", True)
    with pytest.raises(ValueError, match="column 'x' is mapped to both prompt and subset"):
        _Cols(prompt="x", subset="x")
    with pytest.raises(ValueError, match="columns.subset is empty"):
        _Cols(subset="")


def test_read_role_rows(tmp_path):
    from gradebench.datasets.records import InputFile

    (tmp_path / "a.jsonl").write_text('{"prompt": "p1", "subset": "s"}\n{"prompt": "p2"}\n'
                                      '{"prompt": "p3", "fold": "dev"}\n', encoding="utf-8")
    f = InputFile(str(tmp_path / "a.jsonl"), "x", "train")
    rows = list(read_role_rows([f], _Cols().role_columns()))
    assert [(r.values, r.present, r.split) for r in rows] == [
        ({"prompt": "p1", "subset": "s"}, {"prompt", "subset"}, "train"),
        ({"prompt": "p2", "subset": None}, {"prompt"}, "train"),
        ({"prompt": "p3", "subset": None}, {"prompt"}, "train"),
    ]
    with pytest.raises(SourceFormatError, match="has no column 'category' \\(mapped as subset\\)") as e:
        list(read_role_rows([f], _Cols(subset="category").role_columns()))
    assert e.value.line == 1 and e.value.path == str(tmp_path / "a.jsonl")
    (tmp_path / "s.jsonl").write_text('{"prompt": "p", "fold": "dev"}\n{"prompt": "q", "fold": "later"}\n',
                                      encoding="utf-8")
    g = InputFile(str(tmp_path / "s.jsonl"), "x", "test")
    with pytest.raises(SourceFormatError, match="split column 'fold' holds 'later' on line 2, not a split name"):
        list(read_role_rows([g], _Cols(split="fold").role_columns(), split_role="split"))
    first = next(read_role_rows([g], _Cols(split="fold").role_columns(), split_role="split"))
    assert first.split == "validation"  # dev, from the split column (the file's own split is test)
    (tmp_path / "b.csv").write_text("promt,subset\nx,y\n", encoding="utf-8")
    with pytest.raises(SourceFormatError, match="has no column 'prompt'.*did you mean 'promt'") as e:
        list(read_role_rows([InputFile(str(tmp_path / "b.csv"), "x", "test")], _Cols().role_columns()))
    assert e.value.line == 1 and "--map prompt=COLUMN" in e.value.hint


def test_locate_tables(tmp_path):
    formats = suffix_formats("preferences")
    for name in ("a_train.jsonl", "b_dev.csv", "c.parquet", "notes.txt", ".hidden.jsonl"):
        (tmp_path / name).write_text("", encoding="utf-8")
    found = locate_tables(tmp_path, formats, list(formats.values()), split_column=False)
    assert [(Path(f.path).name, f.role, f.split) for f in found] == [
        ("a_train.jsonl", "preferences-jsonl:a_train.jsonl:train", "train"),
        ("b_dev.csv", "preferences-csv:b_dev.csv:validation", "validation"),
        ("c.parquet", "preferences-parquet:c.parquet:test", "test"),
    ]
    only = locate_tables(tmp_path, formats, ["preferences-csv"], split_column=True)
    assert [f.role for f in only] == ["preferences-csv:b_dev.csv:split-column"]
    with pytest.raises(SourceFormatError, match="unsupported file suffix '.txt'"):
        locate_tables(tmp_path / "notes.txt", formats, list(formats.values()), split_column=False)
    with pytest.raises(SourceNotFoundError):
        locate_tables(tmp_path / "missing", formats, list(formats.values()), split_column=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceFormatError, match="no .csv/.jsonl/.parquet file in this folder"):
        locate_tables(tmp_path / "empty", formats, list(formats.values()), split_column=False)
