"""A benchmark folder's manifest: read it back with its shape checked, and verify the cache.

The manifest records the size and sha256 of every data file, so a cached folder whose files
were deleted, truncated or edited is detected before it is trusted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gradebench._version import DATA_FORMAT_VERSION
from gradebench.benchmark.format import MANIFEST
from gradebench.errors import BenchmarkError
from gradebench.hashing import sha256_file

_FIX = "rebuild with `gradebench build ... --force`"


def file_digests(root: Path, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{relative name: {"bytes": size, "sha256": hex}}`` of the files ``names`` under ``root``."""
    return {n: {"bytes": (root / n).stat().st_size, "sha256": sha256_file(root / n)} for n in sorted(names)}


def _need(cond: bool, what: str, path: Path) -> None:
    if not cond:
        raise BenchmarkError(f"malformed manifest: {what}", path=path, hint=_FIX)


def check_manifest(m: Any, path: Path) -> dict[str, Any]:
    """Check the keys and types every reader relies on; one-line BenchmarkError otherwise."""
    _need(isinstance(m, dict), "not a JSON object", path)
    version = m.get("data_format_version")
    if version != DATA_FORMAT_VERSION:
        raise BenchmarkError(
            f"data format v{version} is not supported (this gradebench reads v{DATA_FORMAT_VERSION})", path=path,
            hint="rebuild the benchmark with this gradebench version",
        )
    _need(isinstance(m.get("fingerprint"), str), "'fingerprint' must be a string", path)
    recipe = m.get("recipe")
    _need(isinstance(recipe, dict) and isinstance(recipe.get("name"), str), "'recipe.name' must be a string", path)
    splits = m.get("splits")
    _need(isinstance(splits, dict), "'splits' must be an object", path)
    for s, v in splits.items():
        _need(
            isinstance(v, dict)
            and isinstance(v.get("queries"), int)
            and isinstance(v.get("candidates"), int)
            and isinstance(v.get("files"), list)
            and all(isinstance(f, str) for f in v["files"]),
            f"'splits.{s}' needs integer queries/candidates and a list of files",
            path,
        )
    _need(isinstance(m.get("skipped"), dict), "'skipped' must be an object", path)
    _need(isinstance(m.get("stats"), dict), "'stats' must be an object", path)
    digests = m.get("file_digests")
    _need(digests is None or isinstance(digests, dict), "'file_digests' must be an object", path)
    return m


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The checked manifest of a complete benchmark folder."""
    p = Path(folder)
    m = p / MANIFEST
    if not m.is_file():
        raise BenchmarkError(
            "not a complete benchmark folder (no manifest.json)", path=p,
            hint="an interrupted build leaves no manifest; run `gradebench build` again",
        )
    try:
        data = json.loads(m.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise BenchmarkError(f"manifest is not valid JSON ({e})", path=m, hint=_FIX) from None
    except OSError as e:
        raise BenchmarkError(f"cannot read the manifest ({e.strerror})", path=m, hint=_FIX) from None
    return check_manifest(data, m)


def cached_problem(folder: Path) -> str | None:
    """Why a complete-looking folder cannot be trusted (missing/changed files), or None if intact.

    Folders built before file digests were recorded are checked by row counts instead.
    """
    try:
        m = read_manifest(folder)
    except BenchmarkError as e:
        return e.message
    digests = m.get("file_digests")
    if digests is not None:
        for name, d in digests.items():
            f = folder / name
            if not f.is_file():
                return f"{name} is missing"
            if f.stat().st_size != d.get("bytes"):
                return f"{name} has {f.stat().st_size} bytes, the manifest records {d.get('bytes')}"
            if sha256_file(f) != d.get("sha256"):
                return f"{name} does not match its recorded sha256"
        return None
    import pyarrow.parquet as pq

    for s, v in m["splits"].items():
        rows = 0
        for name in v["files"]:
            f = folder / name
            if not f.is_file():
                return f"{name} is missing"
            try:
                rows += pq.ParquetFile(f).metadata.num_rows
            except Exception as e:  # noqa: BLE001 - any unreadable file means rebuild
                return f"{name} is unreadable ({type(e).__name__})"
        if rows != v["candidates"]:
            return f"split {s} has {rows} rows, the manifest records {v['candidates']}"
    return None
