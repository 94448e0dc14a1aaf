"""Generated artefacts stay in sync with the code: README tables and the versioned schema."""

from __future__ import annotations

import json

from gradebench.benchmark.format import COLUMNS, SCHEMA_VERSION, arrow_schema, render_schema_json, schema_file
from gradebench.datasets.tiers.builder import TIERED_COLUMNS
from gradebench.docs import render
from tests.conftest import REPO


def test_readme_tables_are_current():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert render(text) == text, "README.md is out of date: run `python -m gradebench.docs`"


def test_schema_file_matches_code():
    path = schema_file(REPO / "schemas")
    assert path.read_text(encoding="utf-8") == render_schema_json(), "regenerate schemas/ from gradebench.benchmark.format"
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert tuple(f["name"] for f in data["fields"]) == COLUMNS + tuple(c.name for c in TIERED_COLUMNS)
    assert arrow_schema().metadata[b"gradebench.schema_version"] == str(SCHEMA_VERSION).encode()
