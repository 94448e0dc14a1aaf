"""The Arrow schema of a benchmark's Parquet files (versioned; mirrored in ``schemas/``).

Core columns, shared by every benchmark: ``query_id``, ``query``, ``candidate_id``,
``candidate``, ``score``, ``relevance``, ``tier``, ``split``. Source columns record where
each row came from. ``schemas/benchmark-v<N>.json`` is generated from :data:`FIELDS` and a
test keeps the two equal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

SCHEMA_VERSION = 1

#: (name, arrow type, nullable, description)
FIELDS: tuple[tuple[str, pa.DataType, bool, str], ...] = (
    ("query_id", pa.string(), False, "content id of the query (16 hex chars of sha256)"),
    ("query", pa.string(), False, "the text a scorer sees (recipe's query_template)"),
    ("candidate_id", pa.string(), False, "content id of the candidate (16 hex chars of sha256)"),
    ("candidate", pa.string(), False, "the candidate explanation text"),
    ("score", pa.float64(), False, "graded quality in [0, 1]"),
    ("relevance", pa.int16(), False, "integer grade, higher is better"),
    ("tier", pa.string(), True, "quality tier name; null for natural grades"),
    ("split", pa.string(), False, "train / validation / test"),
    ("premise", pa.string(), False, "source premise"),
    ("hypothesis", pa.string(), False, "source hypothesis"),
    ("label", pa.string(), False, "source gold label"),
    ("source_id", pa.string(), False, "the query's id in the source (e-SNLI pairID, or file:line)"),
    ("source_row", pa.int64(), False, "0-based row of the query in its source split"),
    ("candidate_source_id", pa.string(), True, "source id of the row whose human text the candidate is"),
    ("template_id", pa.string(), True, "tier/label/index of the template used; null for human text"),
    ("origin", pa.string(), False, "'human' (written by a person) or 'template'"),
)

COLUMNS = tuple(f[0] for f in FIELDS)


def arrow_schema(metadata: dict[str, str] | None = None) -> pa.Schema:
    fields = [pa.field(n, t, nullable=nullable, metadata={"description": d}) for n, t, nullable, d in FIELDS]
    meta = {"gradebench.schema_version": str(SCHEMA_VERSION)}
    meta.update(metadata or {})
    return pa.schema(fields, metadata=meta)


def schema_json() -> dict:
    """The JSON form kept in ``schemas/benchmark-v<N>.json``."""
    return {
        "name": "gradebench.benchmark",
        "schema_version": SCHEMA_VERSION,
        "fields": [
            {"name": n, "type": str(t), "nullable": nullable, "description": d} for n, t, nullable, d in FIELDS
        ],
    }


def schema_file(root: Path) -> Path:
    return root / f"benchmark-v{SCHEMA_VERSION}.json"


def render_schema_json() -> str:
    return json.dumps(schema_json(), indent=2) + "\n"
