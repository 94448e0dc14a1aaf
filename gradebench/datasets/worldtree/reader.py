"""Reader for WorldTree V2.1 as distributed for the TextGraphs-2021 shared task (``worldtree-tsv``).

A release folder (``data/`` in the task's zip) holds:

* ``tables/*.tsv``: the tablestore, one table per file. The header names the table's columns;
  columns whose name starts with ``[SKIP]`` are metadata (``[SKIP] UID`` is the fact id,
  ``[SKIP] DEP`` marks a deprecated row, ``[SKIP] COMMENTS`` holds annotator notes). A fact's
  text is the join, with single spaces, of its non-empty cells in all other columns.
* ``questions.{train,dev,test}.tsv``: the questions in the AI2 ARC layout plus an
  ``explanation`` column of space-separated ``UID|ROLE`` tokens.
* ``wt-expert-ratings.{train,dev,test}.json``: ``{"rankingProblems": [{"qid", "questionText",
  "answerText", "qClass", "documents": [{"uuid", "docText", "relevance", "isGoldWT21",
  "goldRole"}]}]}``, the expert relevance ratings (the test file ships with empty documents).

Quirks handled here: every table header ends with a tab (an unnamed, empty last column; two
tables also have an unnamed column holding text), a row may be shorter than its header (padded
with empty cells), UIDs repeat across and within tables (:func:`build_tablestore` keeps one row
per UID, deterministically), answer keys are letters or digits, and files may start with a BOM
or use CRLF line ends. The source's ``dev`` split becomes ``validation``. Readers do not filter:
an empty explanation, an unknown role or a repeated question id is kept and left to the builder
to skip. Anything that is not the format raises a typed error naming the file and the 1-based
line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gradebench.errors import SourceFormatError, SourceNotFoundError
from gradebench.io.textio import check_head, decode_utf8, read_bytes, split_lines

FORMAT = "worldtree-tsv"
#: WorldTree's split names in file names, mapped onto output split names.
SOURCE_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
#: folders under a given path that may hold the release (practice zip, eval-period zip)
RELEASE_FOLDERS = ("data", "data-evalperiod")
#: columns a questions file must have
QUESTION_COLUMNS = ("QuestionID", "AnswerKey", "explanation", "question")

_REFETCH = "re-extract the file from the TextGraphs-2021 data zip (tg2021-alldata-*.zip)"
_OPTION = re.compile(r"\(([A-Z]|[0-9])\)")
_UID_COL = "[SKIP] UID"
_DEP_COL = "[SKIP] DEP"


@dataclass(frozen=True, slots=True)
class Fact:
    """One tablestore row.

    Attributes:
        uid: the ``[SKIP] UID`` cell.
        table: the table's file name without ``.tsv`` (``KINDOF``).
        text: the row read as a sentence: its non-empty non-``[SKIP]`` cells joined by spaces.
        deprecated: the ``[SKIP] DEP`` cell is non-empty (the row should not be used any more).
        line: 1-based line of the row in its table file.
    """

    uid: str
    table: str
    text: str
    deprecated: bool
    line: int


@dataclass(frozen=True)
class TableStore:
    """The facts of all tables, one per UID.

    Attributes:
        facts: UID -> the kept row, in table-name then line order.
        duplicates: ``(uid, kept "TABLE:line", dropped "TABLE:line")`` for every row dropped
            because an earlier-preferred row has the same UID.
    """

    facts: dict[str, Fact]
    duplicates: tuple[tuple[str, str, str], ...] = ()

    def tables(self) -> list[str]:
        """The table names, sorted."""
        return sorted({f.table for f in self.facts.values()})


@dataclass(frozen=True, slots=True)
class RatedFact:
    """One expert-rated document of a ranking problem (``wt-expert-ratings.*.json``)."""

    uid: str
    text: str
    relevance: int
    is_gold: bool
    role: str | None


@dataclass(frozen=True, slots=True)
class Question:
    """One question, from a questions TSV, a ratings JSON, or both (joined on the question id).

    Attributes:
        split: output split (train/validation/test).
        row: 0-based position of the record within its split, in reading order.
        qid: the source's ``QuestionID`` / ``qid``.
        path, line: where the record was read (the TSV's when there is one), for messages.
        stem: the question without its answer options.
        choices: ``(label, text)`` of the options in source order (empty when only the JSON has it).
        answer_key: ``AnswerKey`` as in the source (``B`` or ``3``), ``None`` without a TSV row.
        answer: the correct option's text (the JSON's ``answerText`` without a TSV row); ``None``
            when the key names no option.
        topic: question classes, comma-separated (``topic`` column or the JSON's ``qClass``).
        flags: the TSV's curation ``flags`` column ("" without one).
        explanation: ``(uid, role)`` tokens in source order; ``None`` without a TSV row.
        ratings: the expert-rated documents; ``None`` when no ratings file has this question.
    """

    split: str
    row: int
    qid: str
    path: str
    line: int | None
    stem: str
    choices: tuple[tuple[str, str], ...]
    answer_key: str | None
    answer: str | None
    topic: str
    flags: str
    explanation: tuple[tuple[str, str], ...] | None
    ratings: tuple[RatedFact, ...] | None = None

    @property
    def choices_text(self) -> str:
        """The options as in the source: ``(A) ... (B) ...``."""
        return " ".join(f"({label}) {text}" for label, text in self.choices)


@dataclass(frozen=True)
class Release:
    """The files of one release folder, found from names alone."""

    root: Path
    tables: list[Path]
    questions: dict[str, Path]
    ratings: dict[str, Path]


# --------------------------------------------------------------------------- locating


def _is_release(p: Path) -> bool:
    return (p / "tables").is_dir() or any((p / f"questions.{s}.tsv").is_file() for s in SOURCE_SPLITS)


def find_release(source: str | Path) -> Release:
    """The release at ``source``: the folder holding ``tables/`` and ``questions.*.tsv``, or its parent.

    Raises:
        SourceNotFoundError: ``source`` does not exist.
        SourceFormatError: ``source`` is a file, holds no release, or holds two (``data/`` and
            ``data-evalperiod/``), or the release has no tables or no questions/ratings file.
    """
    src = Path(source)
    if not src.exists():
        raise SourceNotFoundError("path not found", path=src, hint="check the path")
    if not src.is_dir():
        raise SourceFormatError(
            "expected the WorldTree release folder, not a file",
            path=src,
            hint="pass the folder that holds tables/ and questions.train.tsv (data/ in the TextGraphs-2021 zip)",
        )
    if _is_release(src):
        root = src
    else:
        found = [src / name for name in RELEASE_FOLDERS if _is_release(src / name)]
        if not found:
            raise SourceFormatError(
                "no WorldTree release here: expected tables/*.tsv and questions.{train,dev}.tsv, "
                f"in this folder or in {' or '.join(n + '/' for n in RELEASE_FOLDERS)}",
                path=src,
                hint="pass the data/ folder of the TextGraphs-2021 zip (or the folder holding it)",
            )
        if len(found) > 1:
            raise SourceFormatError(
                f"two WorldTree releases here ({', '.join(p.name + '/' for p in found)})",
                path=src,
                hint="pass the one to read",
            )
        root = found[0]
    tables = sorted((root / "tables").glob("*.tsv")) if (root / "tables").is_dir() else []
    if not tables:
        raise SourceFormatError(
            "no tablestore: expected tables/*.tsv", path=root, hint="extract the whole data/ folder of the zip"
        )
    questions = {
        out: root / f"questions.{s}.tsv" for s, out in SOURCE_SPLITS.items() if (root / f"questions.{s}.tsv").is_file()
    }
    ratings = {
        out: root / f"wt-expert-ratings.{s}.json"
        for s, out in SOURCE_SPLITS.items()
        if (root / f"wt-expert-ratings.{s}.json").is_file()
    }
    if not questions and not ratings:
        raise SourceFormatError(
            "no questions: expected questions.{train,dev}.tsv or wt-expert-ratings.{train,dev,test}.json",
            path=root,
            hint="extract the whole data/ folder of the zip",
        )
    return Release(root=root, tables=tables, questions=questions, ratings=ratings)


# --------------------------------------------------------------------------- text files


def _read_text(path: Path, what: str) -> str:
    """A UTF-8 file's text without BOM, with CRLF turned into LF; compressed/binary files rejected.

    The whole file is searched for a NUL byte (the tables are small).
    """
    data = read_bytes(path)
    check_head(path, data, what, hint="decompress it first")
    return decode_utf8(path, data, hint="WorldTree files are UTF-8; " + _REFETCH).replace("\r\n", "\n")


def normalize_space(text: str) -> str:
    """``text`` with runs of whitespace turned into single spaces, stripped."""
    return " ".join(text.split())


# --------------------------------------------------------------------------- tables


def read_table(path: str | Path) -> list[Fact]:
    """Every row of one table file, in file order (duplicates and deprecated rows included).

    Every column whose name does not start with ``[SKIP]`` is text, unnamed ones included
    (DURING and PROP-COUNTRY-HEMISPHERE have an unnamed column holding words).

    Raises:
        SourceFormatError: no ``[SKIP] UID`` column, a row longer than the header with text in
            the extra cells, an empty UID, a row with no fact text, bytes that are not UTF-8,
            or a binary file.
    """
    path = Path(path)
    lines = split_lines(_read_text(path, "a WorldTree table"))
    if not lines or not lines[0].strip():
        raise SourceFormatError("is empty, expected a table header line", path=path, line=1, hint=_REFETCH)
    header = [h.strip() for h in lines[0].split("\t")]
    if _UID_COL not in header:
        raise SourceFormatError(
            f"not a WorldTree table: the header has no {_UID_COL!r} column",
            path=path,
            line=1,
            hint="pass the tables/ folder of the WorldTree release",
        )
    uid_at = header.index(_UID_COL)
    dep_at = header.index(_DEP_COL) if _DEP_COL in header else None
    text_cols = [i for i, h in enumerate(header) if not h.startswith("[SKIP]")]
    table = path.stem
    out: list[Fact] = []
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) > len(header):
            extra = [c for c in cells[len(header) :] if c.strip()]
            if extra:
                raise SourceFormatError(
                    f"row has {len(cells)} fields but the header has {len(header)}",
                    path=path,
                    line=lineno,
                    hint="a cell holds a tab, or the header is missing a column name; " + _REFETCH,
                )
        cells += [""] * (len(header) - len(cells))  # short rows: the missing trailing cells are empty
        uid = cells[uid_at].strip()
        if not uid:
            raise SourceFormatError("row has an empty [SKIP] UID cell", path=path, line=lineno, hint=_REFETCH)
        text = normalize_space(" ".join(cells[i] for i in text_cols))
        if not text:
            raise SourceFormatError(f"row {uid} has no fact text", path=path, line=lineno, hint=_REFETCH)
        deprecated = dep_at is not None and bool(cells[dep_at].strip())
        out.append(Fact(uid=uid, table=table, text=text, deprecated=deprecated, line=lineno))
    return out


def build_tablestore(rows: Iterable[Fact]) -> TableStore:
    """One fact per UID: a current row beats a deprecated one, then the first in (table, line) order."""
    ordered = sorted(rows, key=lambda f: (f.table, f.line))
    kept: dict[str, Fact] = {}
    dropped: list[tuple[str, str, str]] = []
    for f in ordered:
        old = kept.get(f.uid)
        if old is None:
            kept[f.uid] = f
        elif old.deprecated and not f.deprecated:
            kept[f.uid] = f
            dropped.append((f.uid, f"{f.table}:{f.line}", f"{old.table}:{old.line}"))
        else:
            dropped.append((f.uid, f"{old.table}:{old.line}", f"{f.table}:{f.line}"))
    facts = {f.uid: f for f in sorted(kept.values(), key=lambda f: (f.table, f.line))}
    return TableStore(facts=facts, duplicates=tuple(dropped))


def read_tablestore(paths: Sequence[str | Path]) -> TableStore:
    """Read and deduplicate the tables (see :func:`build_tablestore`)."""
    rows: list[Fact] = []
    for p in paths:
        rows += read_table(p)
    return build_tablestore(rows)


# --------------------------------------------------------------------------- questions


def split_choices(question: str) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """Split ARC question text into its stem and ``(label, text)`` options.

    Options are ``(A) ... (B) ...`` or ``(1) ... (2) ...``: from the first ``(A)``/``(1)`` such
    that every later ``(X)`` mark continues the sequence without a gap (at least two options),
    the marks are the options. ``None`` when there is no such run or an option is empty.
    """
    marks = list(_OPTION.finditer(question))
    for i, m in enumerate(marks):
        if m.group(1) not in ("A", "1"):
            continue
        run = marks[i:]
        if len(run) < 2 or any(ord(b.group(1)) != ord(a.group(1)) + 1 for a, b in zip(run, run[1:])):
            continue
        choices = []
        for k, mk in enumerate(run):
            end = run[k + 1].start() if k + 1 < len(run) else len(question)
            choices.append((mk.group(1), normalize_space(question[mk.end() : end])))
        if all(text for _, text in choices):
            return normalize_space(question[: m.start()]), tuple(choices)
    return None


def _parse_explanation(path: Path, lineno: int, field: str) -> tuple[tuple[str, str], ...]:
    out = []
    for token in field.split():
        uid, sep, role = token.partition("|")
        if not sep or not uid or not role or "|" in role:
            raise SourceFormatError(
                f"explanation token {token[:60]!r} is not UID|ROLE",
                path=path,
                line=lineno,
                hint="the explanation column holds space-separated UID|ROLE tokens; " + _REFETCH,
            )
        out.append((uid, role))
    return tuple(out)


def read_questions(path: str | Path, split: str) -> list[Question]:
    """The questions of one ``questions.<split>.tsv`` in file order (nothing filtered).

    Raises:
        SourceFormatError: a missing required column (:data:`QUESTION_COLUMNS`), a row with
            another number of fields than the header, an empty ``QuestionID``, a garbled
            explanation token, bytes that are not UTF-8, or a binary file.
    """
    path = Path(path)
    lines = split_lines(_read_text(path, "a WorldTree questions TSV"))
    if not lines or not lines[0].strip():
        raise SourceFormatError("is empty, expected a header line", path=path, line=1, hint=_REFETCH)
    header = [h.strip() for h in lines[0].split("\t")]
    missing = [c for c in QUESTION_COLUMNS if c not in header]
    if missing:
        raise SourceFormatError(
            f"not a WorldTree questions file: no column {', '.join(map(repr, missing))}",
            path=path,
            line=1,
            hint="pass questions.{train,dev}.tsv of the WorldTree release, header "
            "'QuestionID<TAB>originalQuestionID<TAB>...<TAB>explanation<TAB>question<TAB>flags<TAB>arcset'",
        )
    col = {name: i for i, name in reversed(list(enumerate(header)))}
    get = {name: col.get(name) for name in ("topic", "flags")}
    out: list[Question] = []
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != len(header):
            raise SourceFormatError(
                f"row has {len(cells)} fields but the header has {len(header)}",
                path=path,
                line=lineno,
                hint="the file looks truncated or a text holds a tab; " + _REFETCH,
            )
        qid = cells[col["QuestionID"]].strip()
        if not qid:
            raise SourceFormatError("row has an empty QuestionID", path=path, line=lineno, hint=_REFETCH)
        text = cells[col["question"]]
        key = cells[col["AnswerKey"]].strip()
        parsed = split_choices(text)
        stem, choices = parsed if parsed is not None else (normalize_space(text), ())
        answer = dict(choices).get(key)
        out.append(
            Question(
                split=split,
                row=len(out),
                qid=qid,
                path=str(path),
                line=lineno,
                stem=stem,
                choices=choices,
                answer_key=key,
                answer=answer,
                topic="" if get["topic"] is None else normalize_space(cells[get["topic"]]),
                flags="" if get["flags"] is None else normalize_space(cells[get["flags"]]),
                explanation=_parse_explanation(path, lineno, cells[col["explanation"]]),
            )
        )
    return out


# --------------------------------------------------------------------------- ratings


_QID_KEY = re.compile(r'"qid"\s*:\s*("(?:[^"\\]|\\.)*")')


def _qid_lines(text: str) -> dict[str, int]:
    """qid -> 1-based line of its first ``"qid": "..."`` in a JSON text (for messages)."""
    out: dict[str, int] = {}
    line, pos = 1, 0
    for m in _QID_KEY.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        try:
            qid = json.loads(m.group(1))
        except json.JSONDecodeError:  # pragma: no cover - the text already parsed as JSON
            continue
        out.setdefault(qid, line)
    return out


def _as_bool(v: object) -> bool | None:
    """A JSON flag (true/false, 0/1, "0"/"1", "true"/"false", "") as a bool; ``None`` if it is none of these."""
    if isinstance(v, bool):
        return v
    if v in (0, 1) and isinstance(v, int):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("0", "1", "true", "false", ""):
        return v.strip().lower() in ("1", "true")
    return None


def _as_int(v: object) -> int | None:
    """A JSON whole number (int, integral float, or digit string) as an int; ``None`` otherwise (bools too)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"\s*-?\d+\s*", v):
        return int(v)
    return None


def _rated_fact(doc: object, where: str, err: Callable[[str], SourceFormatError]) -> RatedFact:
    """One ``documents`` entry, checked; ``err`` makes the error (it knows the file and line)."""
    if not isinstance(doc, Mapping):
        raise err(f"{where} is a {type(doc).__name__}, expected an object")
    uid = doc.get("uuid")
    if not isinstance(uid, str) or not uid.strip():
        raise err(f"{where} has no string 'uuid'")
    relevance = _as_int(doc.get("relevance"))
    if relevance is None or relevance < 0:
        raise err(f"{where} ({uid}) has 'relevance' {doc.get('relevance')!r}, expected a whole number >= 0")
    text = doc.get("docText", "")
    if not isinstance(text, str):
        raise err(f"{where} ({uid}) has a non-string 'docText'")
    is_gold = _as_bool(doc.get("isGoldWT21", False))
    if is_gold is None:
        raise err(f"{where} ({uid}) has 'isGoldWT21' {doc.get('isGoldWT21')!r}, expected 0/1 or true/false")
    role = doc.get("goldRole")
    if role is not None and not isinstance(role, str):
        raise err(f"{where} ({uid}) has a non-string 'goldRole'")
    return RatedFact(uid=uid.strip(), text=normalize_space(text), relevance=relevance, is_gold=is_gold,
                     role=(role.strip() or None) if isinstance(role, str) else None)


def read_ratings(path: str | Path, split: str) -> list[Question]:
    """The ranking problems of one ``wt-expert-ratings.<split>.json`` in file order (nothing filtered).

    Each becomes a :class:`Question` with ``ratings`` set (empty when ``documents`` is empty, as
    in the released test file), ``stem``/``answer`` from ``questionText``/``answerText`` and
    ``topic`` from ``qClass``.

    Raises:
        SourceFormatError: invalid JSON (with its line), no ``rankingProblems`` list, a problem
            or document of the wrong JSON type or missing a key, a relevance that is not a
            whole number >= 0; messages name the question id and, when found, its line.
    """
    path = Path(path)
    text = _read_text(path, "a WorldTree ratings JSON")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SourceFormatError(
            f"is not valid JSON: {e.msg} (column {e.colno})", path=path, line=e.lineno, hint=_REFETCH
        ) from None
    hint = 'expected {"rankingProblems": [{"qid", "questionText", "answerText", "qClass", "documents": [...]}]}'
    problems = data.get("rankingProblems") if isinstance(data, dict) else None
    if not isinstance(problems, list):
        raise SourceFormatError("has no 'rankingProblems' list", path=path, line=1, hint=hint)
    lines = _qid_lines(text)
    out: list[Question] = []
    for k, p in enumerate(problems):
        qid = p.get("qid") if isinstance(p, dict) else None
        line = lines.get(qid) if isinstance(qid, str) else None

        def err(msg: str, _line: int | None = line) -> SourceFormatError:
            return SourceFormatError(msg, path=path, line=_line, hint=hint)

        where = f"rankingProblems[{k}]"
        if not isinstance(p, dict):
            raise err(f"{where} is a {type(p).__name__}, expected an object")
        if not isinstance(qid, str) or not qid.strip():
            raise err(f"{where} has no string 'qid'")
        where += f" ({qid})"
        for key in ("questionText", "answerText"):
            if not isinstance(p.get(key), str):
                raise err(f"{where} has no string {key!r}")
        qclass = p.get("qClass", [])
        if not isinstance(qclass, list) or not all(isinstance(c, str) for c in qclass):
            raise err(f"{where} has 'qClass' that is not a list of strings")
        docs = p.get("documents", [])
        if not isinstance(docs, list):
            raise err(f"{where} has 'documents' that is not a list")
        rated = tuple(_rated_fact(d, f"{where} documents[{j}]", err) for j, d in enumerate(docs))
        out.append(
            Question(
                split=split,
                row=len(out),
                qid=qid.strip(),
                path=str(path),
                line=line,
                stem=normalize_space(p["questionText"]),
                choices=(),
                answer_key=None,
                answer=normalize_space(p["answerText"]),
                topic=", ".join(normalize_space(c) for c in qclass),
                flags="",
                explanation=None,
                ratings=rated,
            )
        )
    return out


def join_ratings(questions: Sequence[Question], rated: Sequence[Question]) -> list[Question]:
    """TSV questions with their ratings attached (first rated problem per id), then the rated
    problems no TSV row took (including repeats of an id), renumbered in that order."""
    by_qid: dict[str, int] = {}
    for i, q in enumerate(questions):
        by_qid.setdefault(q.qid, i)
    merged = list(questions)
    extra: list[Question] = []
    for r in rated:
        i = by_qid.pop(r.qid, None)
        if i is None:
            extra.append(r)
        else:
            merged[i] = replace(merged[i], ratings=r.ratings)
    return [replace(q, row=k) for k, q in enumerate(merged + extra)]
