"""Readers for the two e-SNLI releases (Camburu et al., 2018).

* The original CSV release (``esnli-csv``): ``esnli_train_1.csv`` + ``esnli_train_2.csv``
  (concatenated, 9 columns: one explanation), ``esnli_dev.csv`` and ``esnli_test.csv``
  (19 columns: three explanations). Parsed with the stdlib :mod:`csv` module in strict mode.
* The authors' preprocessed release (``esnli-preprocessed``): line-aligned plain-text files
  ``s1.X``, ``s2.X``, ``labels.X``, ``preproc1_expl_{1,2,3}.X`` for X in train/dev/test.

e-SNLI's ``dev`` split becomes ``validation``. Readers do not filter (see :class:`NLIExample`);
they strip surrounding whitespace from every text field. Anything that is not the claimed format
raises a typed error naming the file and the 1-based line.

Two entry points per release: ``parse_esnli_*`` returns the examples per split and hashes
nothing (the builder's path: the build engine has already hashed every input file for the
fingerprint); ``read_esnli_*`` (standalone use) also lists every file read in
:attr:`SourceData.files` with its sha256, in split order (train, validation, test) and then
reading order.

Why not ``pyarrow.csv``: it is 2-3x faster but silently accepts text after a closing quote
(``"x"y`` -> ``xy``) and an unterminated quote in the last field at end of file (a truncated
download), which must be errors here.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from itertools import repeat
from pathlib import Path

from gradebench.datasets.esnli.detect import (
    FORMAT_CSV,
    FORMAT_PREPROCESSED,
    SOURCE_SPLITS,
    detect_esnli,
    preprocessed_splits_in,
)
from gradebench.datasets.records import SPLITS, NLIExample, SourceData, SourceFile
from gradebench.errors import GradebenchError, InvalidArgumentError, SourceFormatError, SourceNotFoundError
from gradebench.hashing import sha256_file
from gradebench.io.gcpause import gc_paused
from gradebench.io.lineindex import LineSlice, LineStarts, index_lines, read_slice
from gradebench.io.textio import BOM, HEAD_BYTES, check_head, decode_utf8, open_binary, read_bytes, split_lines
from gradebench.threads import available_cores, ordered_map

__all__ = [
    "FORMAT_CSV",
    "FORMAT_PREPROCESSED",
    "csv_header",
    "parse_esnli_csv",
    "parse_esnli_preprocessed",
    "read_esnli",
    "read_esnli_csv",
    "read_esnli_preprocessed",
]

BASE_COLUMNS = ("pairID", "gold_label", "Sentence1", "Sentence2")
GROUP_COLUMNS = (
    "Explanation_{k}",
    "Sentence1_marked_{k}",
    "Sentence2_marked_{k}",
    "Sentence1_Highlighted_{k}",
    "Sentence2_Highlighted_{k}",
)
#: Explanation groups in the release's two CSV layouts: train (9 columns), dev/test (19 columns).
LAYOUT_GROUPS = (1, 3)
MAX_GROUPS = max(LAYOUT_GROUPS)

_UTF8_HINT = "e-SNLI files are UTF-8; re-download the file or convert it (e.g. iconv -f latin1 -t utf-8)"
_REDOWNLOAD = "re-download the file (it may be truncated or corrupted) or pass a good local copy with --source PATH"


def csv_header(groups: int) -> tuple[str, ...]:
    """The exact header of an e-SNLI CSV with ``groups`` explanation groups (1: train, 3: dev/test)."""
    cols = list(BASE_COLUMNS)
    for k in range(1, groups + 1):
        cols += [c.format(k=k) for c in GROUP_COLUMNS]
    return tuple(cols)


_LAYOUTS = {len(csv_header(g)): g for g in LAYOUT_GROUPS}


# --------------------------------------------------------------------------- helpers

# NLIExample is a frozen slots dataclass: its generated __init__ sets every field through
# object.__setattr__, about 1.2 us per record, which alone caps a reader near 800k rows/s.
# _FastExample has the same slots and a plain __init__, then turns itself into an NLIExample
# by __class__ assignment (allowed between classes with identical slot layouts): the result is
# an ordinary NLIExample (same type, ==, hash, frozen), built in half the time. A self-check at
# import falls back to the real constructor if NLIExample's layout ever changes.
_FIELDS = ("split", "row", "source_id", "premise", "hypothesis", "label", "explanations")


class _FastExample:
    __slots__ = _FIELDS

    def __init__(self, split, row, source_id, premise, hypothesis, label, explanations):  # noqa: PLR0913
        self.split = split
        self.row = row
        self.source_id = source_id
        self.premise = premise
        self.hypothesis = hypothesis
        self.label = label
        self.explanations = explanations
        self.__class__ = NLIExample  # type: ignore[assignment]


def _example_constructor():
    """``_FastExample`` if it builds records indistinguishable from ``NLIExample(...)``, else NLIExample."""
    args = ("validation", 0, "id", "p", "h", "neutral", ("e",))
    try:
        same_layout = (
            tuple(f.name for f in dataclass_fields(NLIExample)) == _FIELDS
            and getattr(NLIExample, "__slots__", None) == _FIELDS
        )
        if same_layout:
            fast, slow = _FastExample(*args), NLIExample(*args)
            if type(fast) is NLIExample and fast == slow and hash(fast) == hash(slow):
                return _FastExample
    except TypeError:  # __class__ assignment refused: the layouts differ
        pass
    return NLIExample


_new_example = _example_constructor()



def _locate_utf8_error(path: Path) -> SourceFormatError:
    """Find the first non-UTF-8 byte of a file (only called once decoding already failed)."""
    try:
        decode_utf8(path, path.read_bytes(), hint=_UTF8_HINT)
    except SourceFormatError as e:
        return e
    return SourceFormatError("could not be decoded as UTF-8", path=path, hint=_REDOWNLOAD)  # pragma: no cover


def _check_header(path: Path, header: list[str]) -> int:
    """Validate an e-SNLI CSV header; return its number of explanation groups."""
    names = [h.strip() for h in header]
    groups = _LAYOUTS.get(len(names))
    expected = csv_header(groups or MAX_GROUPS)
    hint = (
        "pass an original e-SNLI CSV (esnli_train_1.csv, esnli_dev.csv, ...), whose header starts "
        "'pairID,gold_label,Sentence1,Sentence2,Explanation_1'"
    )
    for i, (got, want) in enumerate(zip(names, expected, strict=False)):
        if got != want:
            raise SourceFormatError(
                f"not an e-SNLI CSV header: column {i + 1} is {got[:40]!r}, expected {want!r}",
                path=path,
                line=1,
                hint=hint,
            )
    if groups is None:
        raise SourceFormatError(
            f"not an e-SNLI CSV header: {len(names)} columns, expected 9 (train) or 19 (dev/test)",
            path=path,
            line=1,
            hint=hint,
        )
    return groups


# --------------------------------------------------------------------------- CSV release


def _read_csv_file(path: Path, split: str, first_row: int) -> list[NLIExample]:
    with open_binary(path) as fb:
        head = fb.read(HEAD_BYTES)
    check_head(path, head, "an e-SNLI CSV")
    if not head.strip(BOM + b" \t\r\n"):
        raise SourceFormatError(
            "is empty, expected an e-SNLI CSV with a header line", path=path, line=1, hint=_REDOWNLOAD
        )
    out: list[NLIExample] = []
    append = out.append
    example = _new_example
    first: dict[str, str] = {}  # one string per distinct premise and label (see _shared)
    shared = first.setdefault
    last_line = 0
    try:
        with open(path, encoding="utf-8-sig", errors="strict", newline="") as f, gc_paused():
            reader = csv.reader(f, strict=True)
            groups = _check_header(path, next(reader))
            ncols = len(csv_header(groups))
            e1, e2, e3 = 4, 9, 14
            row = first_row
            last_line = reader.line_num
            for fields in reader:
                n = len(fields)
                if n != ncols:
                    if n == 0:  # a blank line
                        last_line = reader.line_num
                        continue
                    raise SourceFormatError(
                        f"row has {n} fields but the header has {ncols}",
                        path=path,
                        line=last_line + 1,
                        hint="the file looks truncated, or a field with a comma is not quoted; " + _REDOWNLOAD,
                    )
                if groups == 3:
                    expl = (fields[e1].strip(), fields[e2].strip(), fields[e3].strip())
                else:
                    expl = (fields[e1].strip(),)
                pid, label, premise, hypothesis = fields[0], fields[1], fields[2], fields[3]
                premise, label = premise.strip(), label.strip()
                append(example(split, row, pid.strip(), shared(premise, premise), hypothesis.strip(),
                               shared(label, label), expl))
                row += 1
                last_line = reader.line_num
    except csv.Error as e:
        if "end of data" in str(e):
            msg = "unterminated quoted field at end of file (the record starting on this line)"
        else:
            msg = f"malformed CSV in the record starting on this line: {e}"
        raise SourceFormatError(
            msg,
            path=path,
            line=last_line + 1,
            hint="a field holding commas, quotes or newlines must be wrapped in double quotes, "
            'with inner quotes doubled (""); ' + _REDOWNLOAD,
        ) from None
    except UnicodeDecodeError:
        raise _locate_utf8_error(path) from None
    except StopIteration:  # only blank lines
        raise SourceFormatError(
            "is empty, expected an e-SNLI CSV with a header line", path=path, line=1, hint=_REDOWNLOAD
        ) from None
    return out


def parse_esnli_csv(files: Mapping[str, Sequence[str | Path]]) -> dict[str, list[NLIExample]]:
    """Parse the original e-SNLI CSV release into examples per split (no file is hashed).

    Args:
        files: CSV paths per output split (``train``/``validation``/``test``), in reading
            order; e.g. ``{"train": [train_1, train_2], "validation": [dev]}``. The parts of
            a split are concatenated and ``row`` counts on across them.

    Returns:
        ``{split: [NLIExample, ...]}`` in split order, with ``source_id`` = ``pairID`` and
        explanations = the ``Explanation_k`` columns present, in order.

    Raises:
        InvalidArgumentError: a key is not an output split name.
        SourceNotFoundError: a file is missing.
        SourceFormatError: a wrong header, a row with the wrong number of fields, bad
            quoting, an unterminated quote at end of file, bytes that are not UTF-8, or a
            binary/compressed file; the message names the file and the 1-based line.
    """
    unknown = [k for k in files if k not in SPLITS]
    if unknown:
        raise InvalidArgumentError(
            f"unknown split name(s) {', '.join(map(repr, unknown))}",
            hint=f"use {', '.join(SPLITS)} (e-SNLI's dev split is 'validation')",
        )
    examples: dict[str, list[NLIExample]] = {}
    for split in SPLITS:
        if split not in files:
            continue
        rows: list[NLIExample] = []
        for p in files[split]:
            rows += _read_csv_file(Path(p), split, len(rows))
        examples[split] = rows
    return examples


def read_esnli_csv(files: Mapping[str, Sequence[str | Path]]) -> SourceData:
    """Read the original e-SNLI CSV release: :func:`parse_esnli_csv` plus the sha256 of every file.

    Returns:
        ``SourceData(format="esnli-csv")`` with each file's sha256 under the role
        ``esnli-csv:<split>``.

    Raises:
        The errors of :func:`parse_esnli_csv`.
    """
    examples = parse_esnli_csv(files)
    source_files = [
        SourceFile(str(Path(p)), sha256_file(p), f"{FORMAT_CSV}:{split}") for split in examples for p in files[split]
    ]
    return SourceData(format=FORMAT_CSV, examples=examples, files=source_files)


# --------------------------------------------------------------------------- preprocessed release


def _read_lines(path: Path) -> list[str]:
    """A line file's stripped lines (split on ``\\n``; a final newline ends the last line)."""
    data = read_bytes(path)
    check_head(path, data[:HEAD_BYTES], "an e-SNLI line file")
    lines = split_lines(decode_utf8(path, data, hint=_UTF8_HINT))
    return list(map(str.strip, lines))


def _shared(values: list[str]) -> list[str]:
    """``values`` with equal strings made one object (the memory of a repeated text is held once)."""
    first: dict[str, str] = {}
    return [first.setdefault(v, v) for v in values]


def read_esnli_preprocessed(folder: str | Path) -> SourceData:
    """Read the preprocessed release: :func:`parse_esnli_preprocessed` plus the sha256 of every file.

    Returns:
        ``SourceData(format="esnli-preprocessed")`` with each file's sha256 under the role
        ``esnli-preproc:<file name>``.
    """
    examples, read = _parse_preprocessed(Path(folder))
    files = [SourceFile(str(p), sha256_file(p), f"esnli-preproc:{p.name}") for p in read]
    return SourceData(format=FORMAT_PREPROCESSED, examples=examples, files=files)


def parse_esnli_preprocessed(folder: str | Path) -> dict[str, list[NLIExample]]:
    """Parse the authors' preprocessed, line-aligned e-SNLI release from ``folder`` (no file is hashed).

    For each e-SNLI split X in train/dev/test with files present, reads ``s1.X`` (premise),
    ``s2.X`` (hypothesis), ``labels.X`` and ``preproc1_expl_1.X`` (required), then
    ``preproc1_expl_2.X`` and ``preproc1_expl_3.X`` when present (the train release has only
    the first). Line *i* of every file is example *i*; ``source_id`` is ``"s1.X:<line>"``.

    Raises:
        SourceNotFoundError: ``folder`` or a required file of a present split is missing.
        SourceFormatError: no split found, ``preproc1_expl_3.X`` without ``_2``, files of
            a split with different line counts (naming both files and counts), bytes that
            are not UTF-8, or a binary file.
    """
    return _parse_preprocessed(Path(folder))[0]


def _parse_preprocessed(root: Path) -> tuple[dict[str, list[NLIExample]], list[Path]]:
    """The examples per split and the files read, in reading order."""
    examples: dict[str, list[NLIExample]] = {}
    read: list[Path] = []
    for suffix, split, stems in _preprocessed_layout(root):
        columns: list[list[str]] = []
        for stem in stems:
            path = root / f"{stem}.{suffix}"
            lines = _read_lines(path)
            if columns:
                _check_aligned(path, len(lines), f"s1.{suffix}", len(columns[0]))
            columns.append(lines)
            read.append(path)
        s1, s2, labels, *expl = columns
        with gc_paused():
            # a premise comes with each of its hypotheses, a label with every pair: one string each
            examples[split] = _examples(split, f"s1.{suffix}:", 0, _shared(s1), s2, _shared(labels), expl)
    return examples, read


def _examples(split: str, prefix: str, first: int, s1: list[str], s2: list[str], labels: list[str],
              expl: list[list[str]]) -> list[NLIExample]:
    """The examples of lines ``first``, ``first + 1``, ... of a split's files (stripped lines)."""
    n = len(s1)
    ids = [prefix + str(i) for i in range(first + 1, first + n + 1)]
    return list(map(_new_example, repeat(split, n), range(first, first + n), ids, s1, s2, labels,
                    zip(*expl, strict=True)))


def _check_aligned(path: Path, n: int, ref_name: str, n_ref: int) -> None:
    if n != n_ref:
        raise SourceFormatError(
            f"{path.name} has {n} lines but {ref_name} has {n_ref}; the files of a split must be line-aligned",
            path=path,
            line=min(n, n_ref) + 1,
            hint=f"re-copy both {path.name} and {ref_name} from the same release",
        )


def _preprocessed_layout(root: Path) -> Iterator[tuple[str, str, list[str]]]:
    """``(suffix, split, file stems)`` of each split present, checked one split at a time (a reader
    reads a split's files before the next split's layout is checked)."""
    if not root.is_dir():
        if root.exists():
            raise SourceFormatError(
                "expected a folder holding s1.X, s2.X, labels.X, preproc1_expl_k.X", path=root, hint="pass the folder"
            )
        raise SourceNotFoundError("folder not found", path=root, hint="check the path")
    suffixes = preprocessed_splits_in(root)
    if not suffixes:
        raise SourceFormatError(
            "no preprocessed e-SNLI files here: expected s1.X, s2.X, labels.X, preproc1_expl_k.X "
            "for X in train/dev/test",
            path=root,
            hint="pass the folder that holds them (dataset/eSNLI in the e-SNLI repository)",
        )
    for suffix in suffixes:
        stems = ["s1", "s2", "labels", "preproc1_expl_1"]
        for k in (2, 3):
            if (root / f"preproc1_expl_{k}.{suffix}").is_file():
                if len(stems) != 2 + k:
                    raise SourceFormatError(
                        f"preproc1_expl_{k}.{suffix} is present but preproc1_expl_{k - 1}.{suffix} is not",
                        path=root / f"preproc1_expl_{k}.{suffix}",
                        hint=f"add preproc1_expl_{k - 1}.{suffix} or remove this file",
                    )
                stems.append(f"preproc1_expl_{k}")
        for stem in stems:
            if not (root / f"{stem}.{suffix}").is_file():
                raise SourceNotFoundError(
                    f"{stem}.{suffix} is missing: the {suffix} split needs s1, s2, labels and preproc1_expl_1",
                    path=root / f"{stem}.{suffix}",
                    hint="copy the complete split from dataset/eSNLI of the e-SNLI repository",
                )
        yield suffix, SOURCE_SPLITS[suffix], stems


# --------------------------------------------------------------------------- the preprocessed release in slices


@dataclass(frozen=True)
class PreprocessedSplit:
    """One split of the preprocessed release, indexed (:func:`index_esnli_preprocessed`): a
    :class:`~gradebench.datasets.tiers.builder.SourcePart`."""

    split: str
    suffix: str
    files: tuple[LineStarts, ...]  # s1, s2, labels, then the explanation files
    n: int  # its lines, or the first ``limit`` of them

    @property
    def key(self) -> tuple[str, str]:
        """What a worker needs besides a slice to read it (:func:`read_esnli_slice`)."""
        return self.split, self.suffix

    def slice(self, a: int, b: int) -> LineSlice:
        """Lines ``a`` to ``b - 1`` of every file of the split."""
        return LineSlice.of(self.files, a, b)


def index_esnli_preprocessed(folder: str | Path, *, limit: int | None = None) -> list[PreprocessedSplit]:
    """Check the preprocessed release as :func:`parse_esnli_preprocessed` does (the same errors, in the
    same order) and index its lines instead of parsing them; ``limit``: the first lines of each split."""
    root = Path(folder)

    def indexed(path: Path) -> LineStarts | GradebenchError:
        try:
            return index_lines(path, "an e-SNLI line file", hint=_UTF8_HINT)
        except GradebenchError as e:  # raised below, in file order, after the checks of the files before
            return e

    out = []
    for suffix, split, stems in _preprocessed_layout(root):
        # a split's files at once (reading and NumPy let go of the GIL), checked in order after; each is
        # read whole, so as many at once as fit in INDEX_AT_ONCE bytes (one at a time if none does)
        paths = [root / f"{stem}.{suffix}" for stem in stems]
        found = ordered_map(indexed, paths, threads=min(available_cores(), INDEX_AT_ONCE // max(1, *map(_size, paths))))
        files: list[LineStarts] = []
        for stem, index in zip(stems, found):
            path = root / f"{stem}.{suffix}"
            if isinstance(index, GradebenchError):
                raise index
            if files:
                _check_aligned(path, index.n_lines, f"s1.{suffix}", files[0].n_lines)
            files.append(index)
        n = files[0].n_lines
        out.append(PreprocessedSplit(split, suffix, tuple(files), n if limit is None else min(n, limit)))
    return out


#: bytes of line files :func:`index_esnli_preprocessed` may hold at once (each file is read whole)
INDEX_AT_ONCE = 1 << 29


def _size(path: Path) -> int:
    """The file's size, 0 where it cannot be read (indexing it then raises the error that says why)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_esnli_slice(split: str, suffix: str, s: LineSlice) -> list[NLIExample]:
    """The examples of a slice of a split's files: equal to those :func:`parse_esnli_preprocessed` reads there."""
    s1, s2, labels, *expl = (list(map(str.strip, lines)) for lines in read_slice(s, hint=_UTF8_HINT))
    return _examples(split, f"s1.{suffix}:", s.first, s1, s2, labels, expl)


# --------------------------------------------------------------------------- entry point


def read_esnli(path: str | Path, *, format: str | None = None) -> SourceData:
    """Read an e-SNLI source, detecting its release from the path (see :mod:`gradebench.datasets.esnli.detect`).

    Args:
        path: a folder with ``esnli_*.csv`` (CSV release), a folder with ``s1.X``/``labels.X``
            (preprocessed release), either one under ``dataset/`` or ``eSNLI/``, or a single
            ``.csv`` file whose name gives its split (``esnli_dev.csv`` -> ``validation``).
        format: ``esnli-csv`` or ``esnli-preprocessed`` to skip the guessing (e.g. the
            formats a recipe allows).

    Raises:
        SourceNotFoundError: ``path`` does not exist.
        SourceFormatError: nothing e-SNLI-like at ``path``, or a file is malformed.
    """
    found = detect_esnli(path, format=format)
    if found.format == FORMAT_CSV:
        return read_esnli_csv(found.csv_files)
    return read_esnli_preprocessed(found.root)
