"""Recognise which e-SNLI release a path holds, from file names only (no content is read).

Rules (first match wins), for a folder ``P``:

1. ``P`` holds ``esnli_*.csv`` files -> the original CSV release (``esnli-csv``).
2. ``P`` holds ``s1.X``/``s2.X``/``labels.X``/``preproc1_expl_k.X`` files (X in train/dev/test)
   -> the authors' preprocessed release (``esnli-preprocessed``).
3. Otherwise the same two checks in ``P/dataset``, ``P/eSNLI`` and ``P/dataset/eSNLI`` (the
   layouts of a clone of the e-SNLI repository and of its ``dataset`` folder), in that order.

A single ``.csv`` file is read as the CSV release; its split comes from its name
(``esnli_dev.csv`` -> ``validation``). Anything else is a :class:`SourceFormatError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gradebench.datasets.records import SPLITS
from gradebench.errors import SourceFormatError, SourceNotFoundError

FORMAT_CSV = "esnli-csv"
FORMAT_PREPROCESSED = "esnli-preprocessed"
FORMATS = (FORMAT_CSV, FORMAT_PREPROCESSED)

#: e-SNLI's own split names in file names, mapped onto output split names.
SOURCE_SPLITS = {"train": "train", "dev": "validation", "test": "test"}

#: Sub-folders searched when the given folder holds no e-SNLI files itself.
SUBFOLDERS = ("dataset", "eSNLI", "dataset/eSNLI")

#: Files of the preprocessed release that ``read_esnli_preprocessed`` reads, per split.
PREPROC_STEMS = ("s1", "s2", "labels", "preproc1_expl_1", "preproc1_expl_2", "preproc1_expl_3")

_CSV_NAME = re.compile(r"^esnli_(?:(train)(?:_(\d+))?|(dev|validation|test))\.csv$")
_SPLIT_WORDS = {"train": "train", "dev": "validation", "validation": "validation", "val": "validation", "test": "test"}

EXPECTED = (
    "a folder with esnli_{train_1,train_2,dev,test}.csv (original release), "
    "a folder with s1.X, s2.X, labels.X, preproc1_expl_k.X for X in train/dev/test "
    "(preprocessed release), or a single esnli_<split>.csv file"
)


@dataclass(frozen=True)
class Detected:
    """What :func:`detect_esnli` found.

    Attributes:
        format: ``esnli-csv`` or ``esnli-preprocessed``.
        root: the folder (or, for a single CSV, the file) the files were found in.
        csv_files: for ``esnli-csv``, the files per output split in reading order (train_1
            before train_2); empty for the preprocessed release.
    """

    format: str
    root: Path
    csv_files: dict[str, list[Path]] = field(default_factory=dict)


def csv_split_from_name(path: Path) -> str:
    """The output split of a CSV file named like ``esnli_dev.csv`` or ``my-train-part2.csv``."""
    words = re.split(r"[^a-z]+", path.stem.lower())
    found = {_SPLIT_WORDS[w] for w in words if w in _SPLIT_WORDS}
    if len(found) != 1:
        what = "no split name" if not found else f"several split names ({', '.join(sorted(found))})"
        raise SourceFormatError(
            f"cannot tell the split of this CSV from its name: it has {what}",
            path=path,
            hint="name it esnli_train_1.csv, esnli_dev.csv or esnli_test.csv, or pass the folder holding it",
        )
    return found.pop()


def _csv_files_in(folder: Path) -> dict[str, list[Path]] | None:
    """The ``esnli_*.csv`` files of a folder grouped by split, or None when there are none."""
    names = sorted(p.name for p in folder.glob("esnli_*.csv") if p.is_file())
    if not names:
        return None
    train: list[tuple[int, Path]] = []
    out: dict[str, list[Path]] = {}
    for name in names:
        m = _CSV_NAME.match(name)
        if m is None:
            raise SourceFormatError(
                f"unexpected e-SNLI CSV name {name!r}",
                path=folder / name,
                hint="the original release names its files esnli_train_1.csv, esnli_train_2.csv, "
                "esnli_dev.csv and esnli_test.csv; rename or move this file",
            )
        if m.group(1):
            train.append((int(m.group(2) or 0), folder / name))
        else:
            split = _SPLIT_WORDS[m.group(3)]
            if split in out:
                raise SourceFormatError(
                    f"two CSV files for split {split!r}: {out[split][0].name} and {name}",
                    path=folder,
                    hint="keep one of them (esnli_dev.csv is the validation split)",
                )
            out[split] = [folder / name]
    if train:
        train.sort()
        numbers = [n for n, _ in train]
        if numbers != [0] and numbers != list(range(1, len(numbers) + 1)):
            raise SourceFormatError(
                "the train CSV parts are not numbered 1, 2, ...: "
                + ", ".join(p.name for _, p in train),
                path=folder,
                hint="the release has esnli_train_1.csv and esnli_train_2.csv (read in that order); "
                "keep both, or a single esnli_train.csv",
            )
        out["train"] = [p for _, p in train]
    return {s: out[s] for s in SPLITS if s in out}


def preprocessed_splits_in(folder: Path) -> list[str]:
    """The e-SNLI split suffixes (``train``/``dev``/``test``) with preprocessed files in ``folder``."""
    present = []
    for suffix in SOURCE_SPLITS:
        if any((folder / f"{stem}.{suffix}").is_file() for stem in PREPROC_STEMS):
            present.append(suffix)
    return present


def _detect_folder(folder: Path) -> Detected | None:
    csv_files = _csv_files_in(folder)
    if csv_files is not None:
        # A folder with both releases side by side reads the CSVs: they are the original,
        # richer release (pairIDs, untokenized text). Pass the format explicitly to override.
        return Detected(FORMAT_CSV, folder, csv_files)
    if preprocessed_splits_in(folder):
        return Detected(FORMAT_PREPROCESSED, folder)
    return None


def detect_esnli(path: str | Path, *, format: str | None = None) -> Detected:
    """Find an e-SNLI release at ``path`` (see the module docstring for the rules).

    Args:
        path: a folder or a single ``.csv`` file.
        format: force ``esnli-csv`` or ``esnli-preprocessed`` instead of guessing.

    Raises:
        SourceNotFoundError: ``path`` does not exist.
        SourceFormatError: nothing e-SNLI-like is there, or not in the forced format.
    """
    p = Path(path)
    if format is not None and format not in FORMATS:
        raise SourceFormatError(
            f"unknown e-SNLI format {format!r}", path=p, hint=f"use one of: {', '.join(FORMATS)}"
        )
    if not p.exists():
        raise SourceNotFoundError(
            "e-SNLI source not found", path=p, hint="check the path; expected " + EXPECTED
        )
    if p.is_file():
        if p.suffix.lower() == ".csv" and format in (None, FORMAT_CSV):
            return Detected(FORMAT_CSV, p, {csv_split_from_name(p): [p]})
        hint = "pass the folder that holds it" if p.name.split(".")[0] in PREPROC_STEMS else None
        raise SourceFormatError(
            f"not an e-SNLI source file; expected {EXPECTED}", path=p, hint=hint or "check the path"
        )
    candidates = [p, *(p / sub for sub in SUBFOLDERS)]
    for folder in candidates:
        if not folder.is_dir():
            continue
        if format == FORMAT_PREPROCESSED:
            if preprocessed_splits_in(folder):
                return Detected(FORMAT_PREPROCESSED, folder)
            continue
        found = _detect_folder(folder)
        if found is not None and format in (None, found.format):
            return found
    wanted = {FORMAT_CSV: "esnli_*.csv files", FORMAT_PREPROCESSED: "s1.X/s2.X/labels.X files"}
    msg = (
        f"no e-SNLI files found; expected {EXPECTED}"
        if format is None
        else f"no {format} source found here: expected {wanted[format]}"
    )
    raise SourceFormatError(
        msg,
        path=p,
        hint="pass the folder that holds the files (also searched: " + ", ".join(SUBFOLDERS) + ")",
    )
