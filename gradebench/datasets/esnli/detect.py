"""Recognise which e-SNLI release a path holds, from file names and CSV header lines only.

Rules (first match wins), for a folder ``P``:

1. ``P`` holds ``esnli_*.csv`` files, or other ``*.csv`` files whose first line is the release's
   header (``pairID,gold_label,Sentence1,Sentence2,...``) -> the original CSV release
   (``esnli-csv``). The release's names give the splits (``esnli_train_1.csv`` and
   ``esnli_train_2.csv`` are train, read in that order); another file's split comes from its
   name (``my-dev-sample.csv`` -> ``validation``) or, where the name names none, is ``train``.
   CSV files without the header are not e-SNLI files and are left alone.
2. ``P`` holds ``s1.X``/``s2.X``/``labels.X``/``preproc1_expl_k.X`` files (X in train/dev/test)
   -> the authors' preprocessed release (``esnli-preprocessed``).
3. Otherwise the same two checks in ``P/dataset``, ``P/eSNLI`` and ``P/dataset/eSNLI`` (the
   layouts of a clone of the e-SNLI repository and of its ``dataset`` folder), in that order.

A single ``.csv`` file is read as the CSV release, its split found as in a folder. Anything else
is a :class:`SourceFormatError`.
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
    "(preprocessed release), or CSV files with the release's header (pairID,gold_label,...), "
    "in a folder or one by one"
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
            hint="rename it so that its name holds one of train, dev or test (a name with none is read as "
                 "train), e.g. esnli_dev.csv",
        )
    return found.pop()


#: the first columns of the release's CSV header (the reader checks the whole header)
CSV_HEADER_START = ("pairID", "gold_label", "Sentence1", "Sentence2")


def has_esnli_header(path: Path) -> bool:
    """Whether the first line of ``path`` starts with the release's CSV header (only that line is read)."""
    try:
        with open(path, "rb") as f:
            first = f.readline(4096)
    except OSError:
        return False
    names = [n.strip().strip('"') for n in first.decode("utf-8-sig", errors="replace").strip().split(",")]
    return tuple(names[: len(CSV_HEADER_START)]) == CSV_HEADER_START


def csv_split(path: Path) -> str:
    """The output split of an e-SNLI CSV file: from its name where the name says
    (:func:`csv_split_from_name`), ``train`` where it names no split.

    Raises:
        SourceFormatError: the name names several splits (``train_vs_test.csv``).
    """
    words = re.split(r"[^a-z]+", path.stem.lower())
    if not any(w in _SPLIT_WORDS for w in words):
        return "train"
    return csv_split_from_name(path)


def _csv_files_in(folder: Path) -> dict[str, list[Path]] | None:
    """The e-SNLI CSV files of a folder (the release's names, or any ``*.csv`` with its header)
    grouped by split, or None when there are none."""
    names = sorted(p.name for p in folder.glob("*.csv")
                   if p.is_file() and (_CSV_NAME.match(p.name) or has_esnli_header(p)))
    if not names:
        return None
    train: list[tuple[int, Path]] = []
    out: dict[str, list[Path]] = {}
    for name in names:
        m = _CSV_NAME.match(name)
        if m is not None and m.group(1):
            train.append((int(m.group(2) or 0), folder / name))
            continue
        split = _SPLIT_WORDS[m.group(3)] if m is not None else csv_split(folder / name)
        if split in out or (split == "train" and train):
            first = out[split][0].name if split in out else train[0][1].name
            raise SourceFormatError(
                f"two CSV files for split {split!r}: {first} and {name}",
                path=folder,
                hint=f"keep one of them, or name each by its split (a name without train, dev or test is "
                f"{split!r} when it says no split); esnli_dev.csv is the validation split",
            )
        out[split] = [folder / name]
    if train and "train" in out:
        raise SourceFormatError(
            f"two CSV files for split 'train': {train[0][1].name} and {out['train'][0].name}",
            path=folder, hint="keep the release's train parts, or the one other train file")
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
            return Detected(FORMAT_CSV, p, {csv_split(p): [p]})
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
    wanted = {FORMAT_CSV: "*.csv files with the e-SNLI header", FORMAT_PREPROCESSED: "s1.X/s2.X/labels.X files"}
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
