"""A benchmark folder's manifest: read it back with its shape checked, and verify the cache.

The manifest records the size and sha256 of every data file, so a cached folder whose files
were deleted, truncated or edited is detected before it is trusted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gradebench._version import DATA_FORMAT_VERSION
from gradebench.benchmark.format import MANIFEST
from gradebench.errors import BenchmarkError
from gradebench.hashing import sha256_files
from gradebench.names import SPLITS, check_data_file, check_fingerprint, check_name

_FIX = "rebuild with `gradebench build ... --force`"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def file_digests(root: Path, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{relative name: {"bytes": size, "sha256": hex}}`` of the files ``names`` under ``root``."""
    names = sorted(names)
    digests = sha256_files([root / n for n in names])  # the data files of a split at once
    return {n: {"bytes": (root / n).stat().st_size, "sha256": d} for n, d in zip(names, digests)}


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
    check_fingerprint(m.get("fingerprint"), what="manifest fingerprint", path=path)
    recipe = m.get("recipe")
    _need(isinstance(recipe, dict), "'recipe' must be an object", path)
    # names read from a file become parts of paths (records, publish folders): checked here
    check_name(recipe.get("name"), what="manifest recipe.name", path=path)
    splits = m.get("splits")
    _need(isinstance(splits, dict), "'splits' must be an object", path)
    listed: list[str] = []
    for s, v in splits.items():
        _need(s in SPLITS, f"unknown split {s!r} (a benchmark has {', '.join(SPLITS)})", path)
        _need(
            isinstance(v, dict)
            and isinstance(v.get("queries"), int)
            and isinstance(v.get("candidates"), int)
            and isinstance(v.get("files"), list),
            f"'splits.{s}' needs integer queries/candidates and a list of files",
            path,
        )
        listed += [check_data_file(f, split=s, path=path) for f in v["files"]]
    _need(len(set(listed)) == len(listed), "a data file is listed twice", path)
    _need(isinstance(m.get("skipped"), dict), "'skipped' must be an object", path)
    _need(isinstance(m.get("stats"), dict), "'stats' must be an object", path)
    # every manifest since data format v1 records them: without them the data cannot be verified
    digests = m.get("file_digests")
    _need(isinstance(digests, dict), "'file_digests' must be an object (each data file's bytes and sha256)", path)
    _need(sorted(digests) == sorted(listed), "'file_digests' must name exactly the listed data files", path)
    for name, d in digests.items():
        _need(
            isinstance(d, dict) and _is_int(d.get("bytes")) and d["bytes"] >= 0
            and isinstance(d.get("sha256"), str) and _SHA256.match(d["sha256"]) is not None,
            f"'file_digests.{name}' needs integer bytes and a sha256", path,
        )
    return m


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The checked manifest of a complete benchmark folder.

    A recipe folder or an output root (no manifest, builds inside) is answered with the builds
    it holds (:func:`refuse_builds_inside`), so every command that reads a benchmark says which
    folder to pass rather than suggesting an interrupted build.
    """
    p = Path(folder)
    m = p / MANIFEST
    if not m.is_file():
        refuse_builds_inside(p)
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


#: (real path, size, mtime_ns, inode) of data files whose sha256 matched in this process
_VERIFIED: set[tuple[str, int, int, int]] = set()


def verify_data(folder: Path, m: dict[str, Any]) -> None:
    """Check a benchmark's data files against its manifest before they are read.

    Sizes are checked on every call; the sha256 of each file once per process (a file whose
    size, mtime or inode changes is hashed again). A mismatch is a one-line :class:`BenchmarkError`:
    results under the benchmark's fingerprint must come from the data that fingerprint describes.
    """
    problem = data_problem(folder, m, once=True)
    if problem is not None:
        raise BenchmarkError(
            f"the data does not match the manifest: {problem}", path=folder,
            hint="the folder was changed after it was built; rebuild it with `gradebench build ... --force`",
        )


def data_problem(folder: Path, m: dict[str, Any], *, once: bool) -> str | None:
    """Why ``folder``'s data files do not match manifest ``m`` (None when they do).

    ``once``: skip the sha256 of a file already verified in this process (same size, mtime and
    inode); otherwise every file is hashed.
    """
    digests = m["file_digests"]  # required by check_manifest
    found: list[tuple[str, str | None, Path, tuple | None]] = []  # (name, problem, file, key to hash)
    for name, d in sorted(digests.items()):
        f = folder / name
        try:
            st = f.stat()
        except OSError:
            found.append((name, f"{name} is missing", f, None))
            break
        if st.st_size != d["bytes"]:
            found.append((name, f"{name} has {st.st_size} bytes, the manifest records {d['bytes']}", f, None))
            break
        key = (str(f.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
        found.append((name, None, f, None if once and key in _VERIFIED else key))
    # the files before the first size problem hashed at once; the first problem in name order wins
    hashed = iter(sha256_files([f for _, problem, f, key in found if problem is None and key is not None]))
    for name, problem, _, key in found:
        if problem is not None:
            return problem
        if key is not None:
            if next(hashed) != digests[name]["sha256"]:
                return f"{name} does not match its recorded sha256"
            _VERIFIED.add(key)
    return None


def cached_problem(folder: Path) -> str | None:
    """Why a complete-looking folder cannot be trusted (missing/changed files), or None if intact.

    Every file is hashed (the build cache must never reuse changed data).
    """
    try:
        m = read_manifest(folder)
    except BenchmarkError as e:
        return e.message
    return data_problem(folder, m, once=False)


#: builds named in full in the message of :func:`refuse_builds_inside` (the rest are counted)
LISTED_BUILDS = 5


def refuse_builds_inside(p: Path) -> None:
    """Nothing, unless ``p`` holds builds instead of being one: then a :class:`BenchmarkError` listing them.

    ``gradebench build`` writes ``<out>/<recipe>/<fingerprint[:12]>/``. The recipe folder above a
    build (``gradebench-out/esnli-human``) and the output root (``gradebench-out``) have no manifest
    of their own; given one of them, this names the builds inside (complete ones, with a manifest)
    so the message says which folder to pass, instead of suggesting an interrupted build. Anything
    else (a build, a missing or truly incomplete folder) is left to the benchmark reader.

    Raises:
        BenchmarkError: ``path`` is a recipe folder or an output root holding builds.
    """
    if not p.is_dir() or (p / MANIFEST).exists():
        return

    def builds(folder: Path) -> list[Path]:
        return sorted(d for d in folder.iterdir() if d.is_dir() and (d / MANIFEST).is_file())

    found, kind = builds(p), "a recipe folder"
    if not found:
        found = [b for d in sorted(p.iterdir()) if d.is_dir() for b in builds(d)]
        kind = "an output folder"
    if not found:
        return
    names = [b.relative_to(p).as_posix() for b in found]
    listed = ", ".join(names[:LISTED_BUILDS]) + (f" and {len(names) - LISTED_BUILDS} more" if len(names) > LISTED_BUILDS
                                                   else "")
    what = f"holds {len(names)} builds: {listed}; pass one of them" if len(names) > 1 else \
        f"holds 1 build: {listed}; pass it"
    raise BenchmarkError(f"{kind} of `gradebench build`, not a benchmark: it {what}", path=p,
                         hint=f"e.g. {p / names[0]}")
