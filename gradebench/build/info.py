"""``info()``: read a built benchmark's manifest and stats back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gradebench._version import DATA_FORMAT_VERSION
from gradebench.build.writer import MANIFEST
from gradebench.errors import BenchmarkError


def info(path: str | Path) -> dict[str, Any]:
    """The manifest of the benchmark folder at ``path`` (recipe, fingerprint, splits, skipped, stats)."""
    p = Path(path)
    if not p.is_dir():
        raise BenchmarkError("no such benchmark folder", path=p, hint="give the folder that `gradebench build` printed")
    m = p / MANIFEST
    if not m.is_file():
        raise BenchmarkError(
            "not a complete benchmark folder (no manifest.json)", path=p,
            hint="an interrupted build leaves no manifest; run `gradebench build` again",
        )
    try:
        manifest = json.loads(m.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise BenchmarkError(f"manifest is not valid JSON ({e})", path=m, hint="rebuild with --force") from None
    if not isinstance(manifest, dict):
        raise BenchmarkError("manifest is not a JSON object", path=m, hint="rebuild with --force")
    version = manifest.get("data_format_version")
    if version != DATA_FORMAT_VERSION:
        raise BenchmarkError(
            f"data format v{version} is not supported (this gradebench reads v{DATA_FORMAT_VERSION})", path=m,
            hint="rebuild the benchmark with this gradebench version",
        )
    return {"path": str(p), **manifest}
