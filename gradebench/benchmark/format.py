"""The benchmark format: the manifest's name, the core columns and the Arrow schema (versioned).

This module is the one definition of what a benchmark folder is; ``schemas/`` mirrors it.

Core columns, shared by every benchmark: ``query_id``, ``query``, ``candidate_id``,
``candidate``, ``score``, ``relevance``, ``tier`` (null for natural grades), ``split``. Each
builder appends its own extra columns (:attr:`gradebench.datasets.Builder.columns`).
``schemas/benchmark-v<N>.json`` is generated from :data:`FIELDS` (the core) and the tiered
NLI columns, and a test keeps the two equal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from gradebench.datasets.base import Column

SCHEMA_VERSION = 1
#: the file that makes a folder a benchmark (written last, atomically)
MANIFEST = "manifest.json"

#: the core columns: (name, arrow type, nullable, description)
FIELDS: tuple[tuple[str, pa.DataType, bool, str], ...] = (
    ("query_id", pa.string(), False, "content id of the query (16 hex chars of sha256)"),
    ("query", pa.string(), False, "the text a scorer sees (recipe's query_template)"),
    ("candidate_id", pa.string(), False, "content id of the candidate (16 hex chars of sha256)"),
    ("candidate", pa.string(), False, "the candidate explanation text"),
    ("score", pa.float64(), False, "graded quality in [0, 1]"),
    ("relevance", pa.int16(), False, "integer grade, higher is better"),
    ("tier", pa.string(), True, "quality tier name; null for natural grades"),
    ("split", pa.string(), False, "train / validation / test"),
)
#: core columns dictionary-encoded in Parquet (repeated across a query's candidates)
CORE_DICTIONARY = ("query_id", "query", "tier", "split")

COLUMNS = tuple(f[0] for f in FIELDS)
#: the columns a reader needs; everything else (``tier``, builder extras) is optional
REQUIRED_COLUMNS: tuple[str, ...] = ("query_id", "query", "candidate_id", "candidate", "relevance", "score", "split")


def arrow_schema(columns: Sequence[Column] = (), metadata: dict[str, str] | None = None) -> pa.Schema:
    """The core fields then ``columns`` (a builder's extra columns), with gradebench metadata."""
    fields = [pa.field(n, t, nullable=nullable, metadata={"description": d}) for n, t, nullable, d in FIELDS]
    fields += [pa.field(c.name, c.type, nullable=c.nullable, metadata={"description": c.description}) for c in columns]
    meta = {"gradebench.schema_version": str(SCHEMA_VERSION)}
    meta.update(metadata or {})
    return pa.schema(fields, metadata=meta)


def schema_json() -> dict:
    """The JSON form kept in ``schemas/benchmark-v<N>.json``: the core, then the tiered NLI columns."""
    from gradebench.datasets.tiers.builder import TIERED_COLUMNS

    return {
        "name": "gradebench.benchmark",
        "schema_version": SCHEMA_VERSION,
        "fields": [
            {"name": n, "type": str(t), "nullable": nullable, "description": d} for n, t, nullable, d in FIELDS
        ]
        + [
            {"name": c.name, "type": str(c.type), "nullable": c.nullable, "description": c.description}
            for c in TIERED_COLUMNS
        ],
    }


def schema_file(root: Path) -> Path:
    return root / f"benchmark-v{SCHEMA_VERSION}.json"


def render_schema_json() -> str:
    return json.dumps(schema_json(), indent=2) + "\n"
