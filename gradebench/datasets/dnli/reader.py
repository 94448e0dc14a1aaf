"""Reader for δ-NLI / Defeasible NLI (Rudinger et al., Findings of EMNLP 2020), JSON Lines release.

The release (https://github.com/rudinger/defeasible-nli, ``data/defeasible-nli/``) has three
subsets, each a folder of ``train.jsonl``, ``dev.jsonl`` and ``test.jsonl`` with one JSON object
per line: a premise/hypothesis pair (no premise in ``defeasible-social``) and one human-written
``Update`` that makes the hypothesis more likely (``strengthener``) or less likely (``weakener``).

Keys every row has: ``DataSource``, ``AssignmentIdAnon``, ``WorkerIdAnon``, ``Hypothesis``,
``Update``, ``UpdateType``, ``UpdateTypeImpossible``, ``UpdateTypeImpossibleReason``; then per subset
(``DataSource`` value in brackets):

* atomic (``ATOMIC``): ``Premise``, ``AtomicEventId``, ``AtomicEventRelationId``,
  ``AtomicRelationType``, ``AtomicInference``
* snli (``SNLI``): ``Premise``, ``SNLIPairId``
* social (``SOCIAL-CHEM-101``): ``SocialChemSituationUID``, ``SocialChemSituation``,
  ``SocialChemROT`` (the hypothesis again), optionally ``UpdateTypeOption``

Quirks handled here (see ``../shared/data/dnli/SOURCE.md``):

* ``UpdateTypeImpossibleReason`` is the literal string ``"{}"`` when there is no reason (also
  accepted: ``""``, ``null`` and an empty object); all become ``None``.
* "Impossible" rows (the annotator could not write an update; ``Update == ""``) are kept with
  ``impossible=True``: readers do not filter, builders skip them as Rudinger et al. do.
* Runs of whitespace inside text fields (double spaces in some updates and hypotheses) are
  collapsed to one space, and surrounding whitespace is stripped.
* Exact duplicate rows are kept (builders count them).

``dev`` becomes the ``validation`` split. A row's ``source_id`` is ``"<subset>/<split>.jsonl:<line>"``
(the release's own names and the 1-based line), whatever the file is called locally. Anything that
is not the documented format raises a typed error naming the file and the 1-based line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradebench.datasets.records import SPLITS, InputFile
from gradebench.errors import SourceFormatError, SourceNotFoundError
from gradebench.io.textio import JsonLinesWording, iter_jsonl

__all__ = [
    "DATA_SOURCES",
    "FORMAT",
    "SUBSETS",
    "DNLIRow",
    "clean_text",
    "locate_dnli",
    "parse_role",
    "read_dnli",
    "read_dnli_file",
    "role",
]

FORMAT = "dnli-jsonl"
SUBSETS = ("atomic", "snli", "social")
#: ``DataSource`` value of each subset's rows
DATA_SOURCES = {"atomic": "ATOMIC", "snli": "SNLI", "social": "SOCIAL-CHEM-101"}
#: the release's split names (file stems) -> output split names, and back
SOURCE_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
RELEASE_SPLITS = {v: k for k, v in SOURCE_SPLITS.items()}

SHARED_KEYS = (
    "DataSource",
    "AssignmentIdAnon",
    "WorkerIdAnon",
    "Hypothesis",
    "Update",
    "UpdateType",
    "UpdateTypeImpossible",
    "UpdateTypeImpossibleReason",
)
#: required text keys of each subset (besides SHARED_KEYS), in the release's order
SUBSET_KEYS = {
    "atomic": ("Premise", "AtomicEventId", "AtomicEventRelationId", "AtomicRelationType", "AtomicInference"),
    "snli": ("Premise", "SNLIPairId"),
    "social": ("SocialChemSituationUID", "SocialChemSituation", "SocialChemROT"),
}
#: optional text keys of each subset
OPTIONAL_KEYS = {"atomic": (), "snli": (), "social": ("UpdateTypeOption",)}
#: the key holding the source's id of the premise/hypothesis pair
PAIR_ID_KEY = {"atomic": "AtomicEventRelationId", "snli": "SNLIPairId", "social": "SocialChemSituationUID"}
#: how the release writes "no reason given"
NO_REASON = "{}"

_REDOWNLOAD = "re-download the file from https://github.com/rudinger/defeasible-nli (data/defeasible-nli/)"
_SUBSET_NAME = re.compile(r"^(?:defeasible[-_])?(atomic|snli|social)$", re.IGNORECASE)
_FILE_NAME = re.compile(r"^(?:defeasible[-_])?(atomic|snli|social)[-_.](train|dev|test)\.jsonl$", re.IGNORECASE)
_NAME_HINT = (
    "keep the release's layout: <folder>/defeasible-<subset>/<split>.jsonl with subset atomic, snli or "
    "social and split train, dev or test (or name a single file defeasible-<subset>-<split>.jsonl)"
)
#: folders searched, in order, for subset folders when the given folder holds none itself
SUBFOLDERS = (".", "data/defeasible-nli", "defeasible-nli")


@dataclass(frozen=True, slots=True)
class DNLIRow:
    """One line of a δ-NLI file, as read (nothing filtered; texts whitespace-normalised).

    Attributes:
        subset: ``atomic``, ``snli`` or ``social``.
        split: output split (``train``/``validation``/``test``).
        row: 0-based index of the row in its file (blank lines not counted).
        source_id: ``"<subset>/<release split>.jsonl:<line>"``, e.g. ``"snli/dev.jsonl:12"``.
        premise: ``Premise``; ``""`` for social, which has none (see ``situation``).
        hypothesis: ``Hypothesis`` (for social, the rule of thumb).
        update: ``Update``; ``""`` on impossible rows.
        update_type: ``UpdateType`` as written (``strengthener``/``weakener`` in the release).
        impossible: ``UpdateTypeImpossible``.
        impossible_reason: ``UpdateTypeImpossibleReason``, ``None`` when the release says ``"{}"``.
        assignment_id, worker_id: ``AssignmentIdAnon``, ``WorkerIdAnon``.
        pair_id: the source's id of the pair (``SNLIPairId``, ``AtomicEventRelationId``,
            ``SocialChemSituationUID``); not unique per pair in atomic.
        situation: ``SocialChemSituation`` for social rows, else ``None``.
        meta: the subset's own keys (except ``Premise`` and ``SocialChemSituation``) as
            ``(key, text)`` in the release's order, then ``UpdateTypeOption`` when present.
    """

    subset: str
    split: str
    row: int
    source_id: str
    premise: str
    hypothesis: str
    update: str
    update_type: str
    impossible: bool
    impossible_reason: str | None
    assignment_id: int
    worker_id: int
    pair_id: str
    situation: str | None = None
    meta: tuple[tuple[str, str], ...] = ()


def clean_text(text: str) -> str:
    """Collapse whitespace runs to one space and strip the ends (``"a  b "`` -> ``"a b"``)."""
    return " ".join(text.split())


# --------------------------------------------------------------------------- locating files


def role(subset: str, split: str) -> str:
    """The role of a file: ``"dnli-jsonl:<subset>:<output split>"`` (names only, never folders)."""
    return f"{FORMAT}:{subset}:{split}"


def parse_role(text: str) -> tuple[str, str]:
    """``(subset, output split)`` of a role made by :func:`role`."""
    parts = text.split(":")
    if len(parts) != 3 or parts[0] != FORMAT or parts[1] not in SUBSETS or parts[2] not in SPLITS:
        raise SourceFormatError(
            f"not a δ-NLI file role: {text!r}",
            hint=f"roles look like '{FORMAT}:snli:validation'; locate the files with this builder",
        )
    return parts[1], parts[2]


def _subset_of_folder(folder: Path) -> str | None:
    m = _SUBSET_NAME.match(folder.name)
    return m.group(1).lower() if m else None


def _subset_files(folder: Path, subset: str) -> list[InputFile]:
    """The train/dev/test.jsonl files of one subset folder, in split order."""
    out = []
    for stem, split in SOURCE_SPLITS.items():
        p = folder / f"{stem}.jsonl"
        if p.is_file():
            out.append(InputFile(str(p), role(subset, split), split))
    return out


def _locate_file(path: Path, subsets: Sequence[str]) -> list[InputFile]:
    m = _FILE_NAME.match(path.name)
    if m:
        subset, stem = m.group(1).lower(), m.group(2).lower()
    else:
        stem = path.name[: -len(".jsonl")] if path.name.lower().endswith(".jsonl") else ""
        subset = _subset_of_folder(path.parent)
        if stem not in SOURCE_SPLITS or subset is None:
            raise SourceFormatError(
                "cannot tell the δ-NLI subset and split of this file from its name", path=path, hint=_NAME_HINT
            )
    if subset not in subsets:
        raise SourceFormatError(
            f"is a defeasible-{subset} file but the recipe reads only subsets {list(subsets)}",
            path=path,
            hint=f"add {subset!r} to the recipe's subsets: list, or pass another file",
        )
    split = SOURCE_SPLITS[stem]
    return [InputFile(str(path), role(subset, split), split)]


def locate_dnli(source: str | Path, subsets: Sequence[str] = SUBSETS) -> list[InputFile]:
    """The δ-NLI files ``source`` holds for ``subsets``, from names alone, in subset then split order.

    ``source`` may be: the release folder (holding ``defeasible-<subset>/`` folders; also found
    under ``data/defeasible-nli/`` of a clone of the repository), one subset folder
    (``defeasible-snli/``), or one file (``defeasible-snli/dev.jsonl``, or a file named
    ``defeasible-snli-dev.jsonl``). Roles are ``"dnli-jsonl:<subset>:<split>"``.

    Raises:
        SourceNotFoundError: ``source`` does not exist.
        SourceFormatError: no file of the chosen subsets is there, or a file's subset or split
            cannot be told from its name.
    """
    path = Path(source)
    if not path.exists():
        raise SourceNotFoundError("not found", path=path, hint="check the path to the δ-NLI data")
    if path.is_file():
        return _locate_file(path, subsets)
    own = _subset_of_folder(path)
    if own is not None:
        if own not in subsets:
            raise SourceFormatError(
                f"is the defeasible-{own} folder but the recipe reads only subsets {list(subsets)}",
                path=path,
                hint=f"add {own!r} to the recipe's subsets: list, or pass the release folder",
            )
        found = _subset_files(path, own)
        if not found:
            raise SourceFormatError(
                "holds no train.jsonl, dev.jsonl or test.jsonl", path=path, hint=_NAME_HINT
            )
        return found
    present: list[str] = []
    for sub in SUBFOLDERS:
        root = path / sub
        if not root.is_dir():
            continue
        out: list[InputFile] = []
        for subset in SUBSETS:
            for name in (f"defeasible-{subset}", subset):
                folder = root / name
                if folder.is_dir() and _subset_files(folder, subset):
                    present.append(subset)
                    if subset in subsets:
                        out += _subset_files(folder, subset)
                    break
        if present:
            if not out:
                raise SourceFormatError(
                    f"holds δ-NLI subsets {present} but the recipe reads only {list(subsets)}",
                    path=path,
                    hint="change the recipe's subsets: list, or pass another folder",
                )
            return out
    raise SourceFormatError("no δ-NLI files here", path=path, hint=_NAME_HINT)


# --------------------------------------------------------------------------- reading


class _Wording(JsonLinesWording):
    """How the δ-NLI reader words JSON Lines errors."""

    def bad_json(self, path: Path, line: int, err: json.JSONDecodeError, last: bool) -> SourceFormatError:
        return SourceFormatError(
            ("the last line is cut off (the file looks truncated): " if last else "not valid JSON: ")
            + f"{err.msg} at column {err.colno}",
            path=path,
            line=line,
            hint="each line must hold one complete JSON object; " + _REDOWNLOAD,
        )

    def not_object(self, path: Path, line: int, value: Any, what: str) -> SourceFormatError:
        return SourceFormatError(
            f"line holds {_json_type(value)}, expected a JSON object", path=path, line=line, hint=_REDOWNLOAD
        )


_WORDING = _Wording()


def _wrong_type(key: str, value: object, expected: str, path: Path, line: int) -> SourceFormatError:
    return SourceFormatError(
        f"key {key!r} holds {_json_type(value)}, expected {expected}",
        path=path,
        line=line,
        hint="the file is not in the δ-NLI format or was edited; " + _REDOWNLOAD,
    )


def _text(obj: dict, key: str, path: Path, line: int) -> str:
    value = obj[key]
    if not isinstance(value, str):
        raise _wrong_type(key, value, "a string", path, line)
    return value


def _int(obj: dict, key: str, path: Path, line: int) -> int:
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong_type(key, value, "an integer", path, line)
    return value


def _reason(obj: dict, path: Path, line: int) -> str | None:
    """``UpdateTypeImpossibleReason``: ``None`` for ``"{}"``, ``""``, ``null`` or ``{}``."""
    value = obj["UpdateTypeImpossibleReason"]
    if value is None or value == {}:
        return None
    if not isinstance(value, str):
        raise SourceFormatError(
            f"key 'UpdateTypeImpossibleReason' holds {_json_type(value)}, expected a string",
            path=path,
            line=line,
            hint="the release writes the reason as a string, '{}' when there is none",
        )
    text = clean_text(value)
    return None if text in ("", NO_REASON) else text


def _json_type(value: object) -> str:
    """The JSON type of a parsed value with its article: ``"a number"``, ``"an object"``, ``"null"``."""
    if value is None:
        return "null"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _row(obj: dict, subset: str, split: str, row: int, line: int, path: Path) -> DNLIRow:
    """One parsed JSON object -> :class:`DNLIRow`, checking keys, types and ``DataSource``."""
    required = SHARED_KEYS + SUBSET_KEYS[subset]
    missing = [k for k in required if k not in obj]
    if missing:
        raise SourceFormatError(
            f"missing key(s) {', '.join(missing)} of a defeasible-{subset} row",
            path=path,
            line=line,
            hint=f"a defeasible-{subset} row needs {', '.join(required)}; check that the file sits in the "
            "folder of its subset, or " + _REDOWNLOAD,
        )
    source = _text(obj, "DataSource", path, line)
    if source != DATA_SOURCES[subset]:
        raise SourceFormatError(
            f"DataSource is {source!r} but this is a defeasible-{subset} file (expected {DATA_SOURCES[subset]!r})",
            path=path,
            line=line,
            hint="put the file in the folder of its own subset (defeasible-atomic, defeasible-snli, defeasible-social)",
        )
    impossible = obj["UpdateTypeImpossible"]
    if not isinstance(impossible, bool):
        raise _wrong_type("UpdateTypeImpossible", impossible, "true or false", path, line)
    texts = {k: clean_text(_text(obj, k, path, line)) for k in SUBSET_KEYS[subset]}
    for k in OPTIONAL_KEYS[subset]:
        if k in obj:
            texts[k] = clean_text(_text(obj, k, path, line))
    return DNLIRow(
        subset=subset,
        split=split,
        row=row,
        source_id=f"{subset}/{RELEASE_SPLITS[split]}.jsonl:{line}",
        premise=texts.pop("Premise", ""),
        hypothesis=clean_text(_text(obj, "Hypothesis", path, line)),
        update=clean_text(_text(obj, "Update", path, line)),
        update_type=clean_text(_text(obj, "UpdateType", path, line)),
        impossible=impossible,
        impossible_reason=_reason(obj, path, line),
        assignment_id=_int(obj, "AssignmentIdAnon", path, line),
        worker_id=_int(obj, "WorkerIdAnon", path, line),
        pair_id=texts[PAIR_ID_KEY[subset]],
        situation=texts.pop("SocialChemSituation", None),
        meta=tuple(texts.items()),
    )


def read_dnli_file(path: str | Path, subset: str, split: str) -> list[DNLIRow]:
    """Read one δ-NLI JSON Lines file of ``subset`` whose rows belong to output split ``split``.

    Blank lines are ignored; a final line without a newline is read like any other.

    Raises:
        SourceNotFoundError: the file is missing.
        SourceFormatError: a compressed/binary file, bytes that are not UTF-8, a line that is not
            JSON (a truncated last line says so), not an object, lacks a key, has a value of the
            wrong JSON type, or a ``DataSource`` of another subset; naming the file and line.
    """
    p = Path(path)
    if subset not in SUBSETS:
        raise SourceFormatError(f"unknown δ-NLI subset {subset!r}", path=p, hint=f"use one of {', '.join(SUBSETS)}")
    lines = iter_jsonl(
        p, "a JSON Lines file", hint="δ-NLI files are UTF-8; " + _REDOWNLOAD, wording=_WORDING, expected="a .jsonl file"
    )
    return [_row(obj, subset, split, row, line, p) for row, (line, obj) in enumerate(lines)]


def read_dnli(files: Sequence[InputFile]) -> dict[str, list[DNLIRow]]:
    """Read located files (roles from :func:`locate_dnli`) into rows per output split.

    Splits come in train/validation/test order; within a split, files in the given order.
    """
    by_split: dict[str, list[DNLIRow]] = {}
    for f in files:
        subset, split = parse_role(f.role)
        by_split.setdefault(split, []).extend(read_dnli_file(f.path, subset, split))
    return {s: by_split[s] for s in SPLITS if s in by_split}
