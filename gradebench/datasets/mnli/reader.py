"""Readers for MultiNLI 1.0 (Williams, Nangia & Bowman, NAACL 2018): the ``.jsonl`` and ``.txt`` files.

The release (``multinli_1.0.zip``, unpacking to ``multinli_1.0/``) holds, per part
``train``, ``dev_matched`` and ``dev_mismatched``, the same records twice:

* ``multinli_1.0_<part>.jsonl``: one JSON object per line with ``gold_label``, ``sentence1``,
  ``sentence2``, ``pairID``, ``promptID``, ``genre``, ``annotator_labels`` (5 labels in dev,
  mostly 1 in train) and four parse strings (not read).
* ``multinli_1.0_<part>.txt``: tab-separated with the header :data:`TXT_HEADER`; no quoting
  (``"`` is text), annotator labels in ``label1``..``label5`` (empty when absent).

Parts map onto output splits as :data:`PART_SPLITS`: ``train`` -> train, ``dev_matched`` ->
validation, ``dev_mismatched`` -> test (MultiNLI's own test sets were never released with labels).
Records keep ``gold_label`` ``-`` (no annotator consensus) as it is; the builder skips it.
A null ``sentence1``/``sentence2`` is read as ``""`` (skipped later as empty); any other wrong
type, a missing key, a malformed line or a wrong header raises :class:`SourceFormatError`
naming the file and the 1-based line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradebench.datasets.records import NLIExample
from gradebench.errors import SourceFormatError, SourceNotFoundError
from gradebench.io.tables import iter_table_jsonl, iter_tsv

__all__ = [
    "FORMAT_JSONL",
    "FORMAT_TXT",
    "PART_SPLITS",
    "TXT_HEADER",
    "MNLIExample",
    "find_mnli_files",
    "read_mnli_file",
    "read_mnli_jsonl",
    "read_mnli_txt",
]

FORMAT_JSONL = "mnli-jsonl"
FORMAT_TXT = "mnli-txt"
#: MultiNLI part (in file names) -> output split
PART_SPLITS = {"train": "train", "dev_matched": "validation", "dev_mismatched": "test"}
TXT_HEADER = (
    "gold_label", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse", "sentence2_parse",
    "sentence1", "sentence2", "promptID", "pairID", "genre", "label1", "label2", "label3", "label4", "label5",
)
#: keys every JSON line must have (parse strings and promptID are not read)
JSONL_KEYS = ("gold_label", "sentence1", "sentence2", "pairID", "genre", "annotator_labels")

#: ``multinli_1.0_dev_matched.jsonl``, ``dev_mismatched.txt``, ``mnli_train.jsonl``, ...
_NAME = re.compile(r"(?:^|_)(train|dev_matched|dev_mismatched)\.(jsonl|txt)$")
_EXT_FORMAT = {"jsonl": FORMAT_JSONL, "txt": FORMAT_TXT}
_LABEL_COLUMNS = TXT_HEADER.index("label1")
_REDOWNLOAD = "re-download multinli_1.0.zip (https://cims.nyu.edu/~sbowman/multinli/) or pass a good copy with --source"


@dataclass(frozen=True, slots=True)
class MNLIExample(NLIExample):
    """An :class:`NLIExample` with MultiNLI's genre and annotator labels (``explanations`` is empty).

    Attributes:
        genre: the text genre (``fiction``, ``government``, ``slate``, ``telephone``, ``travel``
            in train and dev_matched; ``facetoface``, ``letters``, ``nineeleven``, ``oup``,
            ``verbatim`` in dev_mismatched).
        annotator_labels: the individual annotators' labels in source order (the first is the
            pair author's own label); empty ones are dropped.
    """

    genre: str = ""
    annotator_labels: tuple[str, ...] = ()

    def agreement(self) -> float | None:
        """Share of the annotator labels equal to the gold label; ``None`` when there are none."""
        if not self.annotator_labels:
            return None
        return sum(lab == self.label for lab in self.annotator_labels) / len(self.annotator_labels)


# --------------------------------------------------------------------------- locating


def find_mnli_files(source: str | Path) -> dict[str, dict[str, Path]]:
    """MultiNLI files at ``source`` by format then part, from names alone.

    ``source`` is one file (``multinli_1.0_dev_matched.jsonl``), or a folder holding such files
    directly or in ``multinli_1.0/`` (the layout of the unzipped release). Other files are ignored.

    Raises:
        SourceNotFoundError: ``source`` does not exist.
        SourceFormatError: a single file whose name names no part, two files for the same
            part and format, or a folder without MultiNLI files.
    """
    root = Path(source)
    if not root.exists():
        raise SourceNotFoundError("source not found", path=root, hint="check the path")
    expected = "multinli_1.0_{train,dev_matched,dev_mismatched}.{jsonl,txt}"
    if root.is_file():
        m = _NAME.search(root.name)
        if m is None:
            raise SourceFormatError(
                f"the file name names no MultiNLI part: expected {expected}",
                path=root,
                hint="rename the file after its part (e.g. multinli_1.0_dev_matched.jsonl) or pass its folder",
            )
        return {_EXT_FORMAT[m.group(2)]: {m.group(1): root}}
    for folder in (root, root / "multinli_1.0"):
        found: dict[str, dict[str, Path]] = {}
        if not folder.is_dir():
            continue
        for p in sorted(folder.iterdir()):
            m = _NAME.search(p.name)
            if m is None or not p.is_file():
                continue
            fmt, part = _EXT_FORMAT[m.group(2)], m.group(1)
            if part in found.get(fmt, {}):
                raise SourceFormatError(
                    f"two {m.group(2)} files for the MultiNLI part {part!r}: {found[fmt][part].name} and {p.name}",
                    path=folder,
                    hint="keep one copy of each file in the folder",
                )
            found.setdefault(fmt, {})[part] = p
        if found:
            return found
    raise SourceFormatError(
        f"no MultiNLI files here: expected {expected}, here or in multinli_1.0/",
        path=root,
        hint="pass the unzipped multinli_1.0 folder (https://cims.nyu.edu/~sbowman/multinli/)",
    )


# --------------------------------------------------------------------------- reading


def _bad_type(path: Path, line: int, key: str, value: Any, want: str) -> SourceFormatError:
    got = "null" if value is None else type(value).__name__
    return SourceFormatError(
        f"key {key!r} holds a {got} ({str(value)[:40]!r}), expected {want}", path=path, line=line, hint=_REDOWNLOAD
    )


def _jsonl_records(path: Path) -> Iterator[tuple[int, str, str, str, str, str, tuple[str, ...]]]:
    """(line, pairID, sentence1, sentence2, gold_label, genre, annotator_labels) per JSON line."""
    for n, obj in iter_table_jsonl(path, "a MultiNLI .jsonl file"):
        for key in JSONL_KEYS:
            if key not in obj:
                raise SourceFormatError(
                    f"the record has no key {key!r} (its keys: {', '.join(sorted(obj))})",
                    path=path,
                    line=n,
                    hint="every MultiNLI record has " + ", ".join(JSONL_KEYS) + "; " + _REDOWNLOAD,
                )
        texts = []
        for key in ("sentence1", "sentence2"):
            v = obj[key]
            if v is not None and not isinstance(v, str):
                raise _bad_type(path, n, key, v, "text")
            texts.append("" if v is None else v.strip())
        for key in ("pairID", "gold_label", "genre"):
            if not isinstance(obj[key], str):
                raise _bad_type(path, n, key, obj[key], "a string")
        labels = obj["annotator_labels"]
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            raise _bad_type(path, n, "annotator_labels", labels, "a list of label strings")
        yield (n, obj["pairID"].strip(), texts[0], texts[1], obj["gold_label"].strip(), obj["genre"].strip(),
               tuple(x.strip() for x in labels if x.strip()))


def _txt_records(path: Path) -> Iterator[tuple[int, str, str, str, str, str, tuple[str, ...]]]:
    """(line, pairID, sentence1, sentence2, gold_label, genre, annotator_labels) per TSV row."""
    header, rows = iter_tsv(path, "a MultiNLI .txt file")
    names = tuple(h.strip() for h in header)
    if names != TXT_HEADER:
        diff = next((i for i, (a, b) in enumerate(zip(names, TXT_HEADER)) if a != b), min(len(names), len(TXT_HEADER)))
        got = names[diff] if diff < len(names) else "(end of line)"
        want = TXT_HEADER[diff] if diff < len(TXT_HEADER) else "(end of line)"
        raise SourceFormatError(
            f"not a MultiNLI .txt header: column {diff + 1} is {got[:40]!r}, expected {want!r}",
            path=path,
            line=1,
            hint="pass multinli_1.0_<part>.txt, whose header is the 15 tab-separated names "
            + " ".join(TXT_HEADER),
        )
    ncols = len(TXT_HEADER)
    i_gold, i_s1, i_s2, i_pair, i_genre = (TXT_HEADER.index(k) for k in
                                           ("gold_label", "sentence1", "sentence2", "pairID", "genre"))
    for n, fields in rows:
        if not _LABEL_COLUMNS < len(fields) <= ncols:
            raise SourceFormatError(
                f"row has {len(fields)} tab-separated fields, expected {ncols} "
                f"(or at least {_LABEL_COLUMNS + 1} when trailing annotator labels are left out)",
                path=path,
                line=n,
                hint="the file looks truncated or a text holds a tab; " + _REDOWNLOAD,
            )
        yield (n, fields[i_pair].strip(), fields[i_s1].strip(), fields[i_s2].strip(), fields[i_gold].strip(),
               fields[i_genre].strip(), tuple(x.strip() for x in fields[_LABEL_COLUMNS:] if x.strip()))


def _read(path: Path, records: Iterator[tuple], split: str, first_row: int) -> list[MNLIExample]:
    out = [
        MNLIExample(split, first_row + i, pid, s1, s2, gold, (), genre, labels)
        for i, (_, pid, s1, s2, gold, genre, labels) in enumerate(records)
    ]
    if not out:
        raise SourceFormatError("holds no records", path=path, line=1, hint=_REDOWNLOAD)
    return out


def read_mnli_jsonl(path: str | Path, split: str, first_row: int = 0) -> list[MNLIExample]:
    """The records of a MultiNLI ``.jsonl`` file, ``row`` counting from ``first_row``.

    Raises:
        SourceNotFoundError: the file is missing.
        SourceFormatError: a malformed JSON line, a line that is not an object, a missing key
            (:data:`JSONL_KEYS`), a value of the wrong type, bad bytes, or a compressed file.
    """
    return _read(Path(path), _jsonl_records(Path(path)), split, first_row)


def read_mnli_txt(path: str | Path, split: str, first_row: int = 0) -> list[MNLIExample]:
    """The records of a MultiNLI ``.txt`` (TSV) file, ``row`` counting from ``first_row``.

    Raises:
        SourceNotFoundError: the file is missing.
        SourceFormatError: an empty file, a header other than :data:`TXT_HEADER`, a row with
            the wrong number of fields, bad bytes, or a compressed file.
    """
    return _read(Path(path), _txt_records(Path(path)), split, first_row)


def read_mnli_file(path: str | Path, split: str, first_row: int = 0) -> list[MNLIExample]:
    """Read one MultiNLI file, its format from its suffix (``.jsonl`` or ``.txt``)."""
    p = Path(path)
    if p.suffix == ".jsonl":
        return read_mnli_jsonl(p, split, first_row)
    if p.suffix == ".txt":
        return read_mnli_txt(p, split, first_row)
    raise SourceFormatError(f"unsupported suffix {p.suffix!r}", path=p, hint="pass a .jsonl or .txt MultiNLI file")
