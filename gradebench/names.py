"""Names that become parts of paths: checked before use, wherever they were read from.

A recipe name, a benchmark name in a manifest or a record, a fingerprint and a split name all end
up in file paths (``<out>/<recipe>/<fp12>``, ``<results>/<benchmark>/<id>.json``). A manifest or
record read from disk (or downloaded) is untrusted input, so every such name is checked here,
with the same rule a recipe's name has, before it is joined to a path.
"""

from __future__ import annotations

import re
from pathlib import Path

from gradebench.errors import BenchmarkError, GradebenchError

#: recipe and benchmark names: lower-case letters, digits, '-' and '_', starting with a letter
NAME_PATTERN = r"^[a-z][a-z0-9_-]*$"
#: a full fingerprint (sha256 hex)
FINGERPRINT_PATTERN = r"^[0-9a-f]{64}$"
SPLITS = ("train", "validation", "test")
#: a benchmark's data files, relative to its folder
DATA_FILE_PATTERN = r"^data/(train|validation|test)-[0-9]{5}-of-[0-9]{5}\.parquet$"

#: a publish folder's data files, relative to it (``data/<config>/<split>-NNNNN-of-NNNNN.parquet``)
PUBLISHED_FILE_PATTERN = r"^data/([a-z][a-z0-9_-]*)/(train|validation|test)-[0-9]{5}-of-[0-9]{5}\.parquet$"

_NAME = re.compile(NAME_PATTERN)
_FINGERPRINT = re.compile(FINGERPRINT_PATTERN)
_DATA_FILE = re.compile(DATA_FILE_PATTERN)
_PUBLISHED_FILE = re.compile(PUBLISHED_FILE_PATTERN)


def check_name(
    value: object, *, what: str, path: str | Path | None = None, error: type[GradebenchError] = BenchmarkError
) -> str:
    """``value`` if it is a safe name (:data:`NAME_PATTERN`), else a one-line ``error`` naming ``what``."""
    if not isinstance(value, str) or not _NAME.match(value) or len(value) > 128:
        raise error(
            f"{what} {value!r} is not a valid name (lower-case letters, digits, '-' and '_', starting with a letter)",
            path=path, hint="the file was edited or comes from elsewhere; rebuild it or fix the name",
        )
    return value


def check_fingerprint(value: object, *, what: str = "fingerprint", path: str | Path | None = None,
                      error: type[GradebenchError] = BenchmarkError) -> str:
    if not isinstance(value, str) or not _FINGERPRINT.match(value):
        raise error(f"{what} {value!r} is not a sha256 hex digest", path=path,
                    hint="the file was edited or comes from elsewhere; rebuild it")
    return value


def check_data_file(value: object, *, split: str, path: str | Path | None = None) -> str:
    """A data file name of split ``split`` as a manifest lists it (``data/<split>-NNNNN-of-NNNNN.parquet``)."""
    m = _DATA_FILE.match(value) if isinstance(value, str) else None
    if m is None or m.group(1) != split:
        raise BenchmarkError(
            f"split {split!r} lists the file {value!r}, not a data file of that split", path=path,
            hint="the manifest was edited; rebuild with `gradebench build ... --force`",
        )
    return value


def check_published_file(value: object, *, config: str, path: str | Path | None = None) -> str:
    """A data file name of config ``config`` as a publish folder's ``gradebench.json`` lists it
    (``data/<config>/<split>-NNNNN-of-NNNNN.parquet``)."""
    m = _PUBLISHED_FILE.match(value) if isinstance(value, str) else None
    if m is None or m.group(1) != config:
        raise BenchmarkError(
            f"{value!r} is not a data file of config {config!r} (data/{config}/<split>-NNNNN-of-NNNNN.parquet)",
            path=path, hint="the index was edited; publish the folder again (or download it again)",
        )
    return value
