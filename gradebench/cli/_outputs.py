"""``--out FILE`` of the commands that render one result in several formats (leaderboard, report).

A file's format is its name's suffix (``.md``, ``.html``, ...); ``--format`` names it for a file
without a known suffix, and must agree with a known one. Everything is checked before anything is
written, so a bad ``--out`` leaves no file behind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from gradebench.errors import InvalidArgumentError

#: file name suffix -> format
SUFFIXES: Mapping[str, str] = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".json": "json",
                               ".txt": "text"}


def out_formats(outs: Sequence[Path], fmt: str | None, allowed: Sequence[str]) -> list[tuple[Path, str]]:
    """``[(path, format)]`` of each ``--out``, by its suffix or ``fmt``.

    Raises:
        InvalidArgumentError: a suffix contradicts ``fmt``, a format is not in ``allowed``, a path is
            given twice, or its folder does not exist.
    """
    seen: set[Path] = set()
    out = []
    for path in outs:
        known = SUFFIXES.get(path.suffix.lower())
        if known is not None and fmt is not None and known != fmt:
            raise InvalidArgumentError(f"--format {fmt} conflicts with --out {path} (a {path.suffix} file)",
                                       hint="drop --format: each --out's suffix names its format")
        chosen = known or fmt
        if chosen is None:
            raise InvalidArgumentError(f"cannot tell the format of --out {path} from its name",
                                       hint="name it " + ", ".join(f".{_suffix(f)}" for f in allowed)
                                            + " or give --format")
        if chosen not in allowed:
            raise InvalidArgumentError(f"--out {path}: {chosen} is not written to a file here",
                                       hint="give a file named " + ", ".join(f".{_suffix(f)}" for f in allowed))
        resolved = path.resolve()
        if resolved in seen:
            raise InvalidArgumentError(f"--out {path} is given twice", hint="give each file once")
        seen.add(resolved)
        if not path.parent.is_dir():
            raise InvalidArgumentError(f"--out {path}: no such folder {path.parent}",
                                       hint=f"create it first (mkdir -p {path.parent})")
        out.append((path, chosen))
    return out


def _suffix(fmt: str) -> str:
    return {"text": "txt"}.get(fmt, fmt)
