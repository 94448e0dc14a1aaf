"""gradebench.io.tables: the format-generic table iterators, on their own (the NLI table and MultiNLI
readers build on them; their error wording is pinned in test_nli_table.py and test_mnli.py)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gradebench.errors import SourceFormatError
from gradebench.io import tables


def test_csv_records_carry_the_line_they_start_on(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text('a,b\n1,"two\nlines"\n\n3,"say ""hi"""\n', encoding="utf-8")
    header, rows = tables.iter_csv(p)
    assert header == ["a", "b"]
    assert list(rows) == [(2, ["1", "two\nlines"]), (5, ["3", 'say "hi"'])]


@pytest.mark.parametrize(("text", "match", "line"), [
    ("", "is empty, expected a CSV file with a header line", 1),
    ("a,b\n1,2\n3\n", "row has 1 fields but the header has 2", 3),
    ('a,b\n1,"open\n', "unterminated quoted field at end of file", 2),
    ('a,b\n1,"x"y\n', "malformed CSV", 2),
    ('"a\n', "unterminated quoted field", 1),
])
def test_csv_errors_name_the_line(tmp_path, text, match, line):
    p = tmp_path / "t.csv"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(SourceFormatError, match=match) as e:
        header, rows = tables.iter_csv(p)
        list(rows)
    assert e.value.line == line and e.value.path == str(p)


def test_tsv_is_read_literally(tmp_path):
    p = tmp_path / "t.tsv"
    p.write_text('a\tb\r\n"x\ty\n\n1\n', encoding="utf-8")
    header, rows = tables.iter_tsv(p)
    assert header == ["a", "b"] and list(rows) == [(2, ['"x', "y"]), (4, ["1"])]  # widths are the reader's business
    (tmp_path / "e.tsv").write_text("")
    with pytest.raises(SourceFormatError, match="is empty"):
        tables.iter_tsv(tmp_path / "e.tsv")


def test_jsonl_and_dotted_paths(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"a": {"b": 1}, "a.b": 2}\n\n{"a": {"c": null}}\n[1]\n', encoding="utf-8")
    it = tables.iter_table_jsonl(p)
    (n1, o1), (n2, o2) = next(it), next(it)
    assert (n1, n2) == (1, 3)
    assert tables.lookup(o1, "a.b") == 2 and tables.lookup(o2, "a.c") is None and tables.lookup(o2, "a.b") is tables.ABSENT
    assert tables.lookup({"a": {"b": 1}}, "a.b") == 1 and tables.lookup(o2, "zzz") is tables.ABSENT
    assert tables.keys_near(o2, "a.x") == ["a", "a.c"]
    with pytest.raises(SourceFormatError, match="expected an object") as e:
        next(it)
    assert e.value.line == 4


def test_parquet_rows_and_truncation(tmp_path):
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": ["a", "b", "c"], "y": [1, 2, 3]}), p)
    pf = tables.open_parquet(p)
    assert list(tables.iter_parquet_rows(pf, p, ["y", "x", "y"])) == [(1, (1, "a", 1)), (2, (2, "b", 2)), (3, (3, "c", 3))]
    p.write_bytes(p.read_bytes()[:-10])
    with pytest.raises(SourceFormatError, match="no PAR1 magic at its end: truncated"):
        tables.open_parquet(p)
