"""The embedded demo source parses as an e-SNLI CSV with the documented content."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import gradebench
from gradebench.datasets.esnli.reader import read_esnli

DEMO = Path(gradebench.__file__).parent / "data" / "demo"


def test_demo_parses_to_50_rows():
    data = read_esnli(DEMO)
    assert data.format == "esnli-csv"
    assert list(data.examples) == ["validation"]
    rows = data.examples["validation"]
    assert len(rows) == 50
    assert [r.source_id for r in rows] == [f"demo-{i:03d}" for i in range(1, 51)]
    assert Counter(r.label for r in rows) == {"entailment": 17, "neutral": 16, "contradiction": 16, "-": 1}
    usable = [r for r in rows if r.label != "-" and r.explanations[0]]
    assert Counter(r.label for r in usable) == {"entailment": 16, "neutral": 16, "contradiction": 16}
    assert rows[48].label == "-" and rows[49].explanations[0] == ""


def test_demo_rows_are_complete_and_distinct():
    rows = read_esnli(DEMO).examples["validation"]
    for r in rows:
        assert r.premise and r.hypothesis and len(r.explanations) == 3
        assert len(set(r.explanations)) == 3
    assert len({(r.premise, r.hypothesis) for r in rows}) == 50
    assert len({e for r in rows for e in r.explanations if e}) == 149


def test_demo_is_small_and_documented():
    assert (DEMO / "esnli_dev.csv").stat().st_size < 32_000
    assert "Apache-2.0" in (DEMO / "SOURCE.md").read_text(encoding="utf-8")
