"""Reader for WinoWhy (Zhang, Zhao & Song, ACL 2020): WSC questions with 15 graded reasons each.

The release (github.com/HKUST-KnowComp/WinoWhy) holds ``winowhy.json``, a JSON array of 273
Winograd Schema Challenge questions. Each element is::

    {"text": {"txt1": <before>, "pron": <pronoun>, "txt2": <after>},
     "answers": [<option A>, <option B>], "correctAnswer": "A" | "B" | "A." | "B.",
     "source": <WSC provenance>,
     "reasons": [[<reason text>, "human"|"reverse"|"gpt", <plausibility 0..1>, <label>], ... x15]}

and ``cat_ref.json`` maps a knowledge category (``Property``, ``Object``, ...) to the 0-based
indexes of the questions in it (a question may have several; ``Causal`` is empty in the release).

The reader checks types and structure only, and does no filtering (:mod:`gradebench.datasets.winowhy.builder`
decides what to skip). It strips surrounding whitespace from every text (1,348 GPT-2 reasons
start with a space) and collapses runs of whitespace inside the sentence parts and the
provenance (32 sentences hold a double space; provenance strings hold newlines). The file is
a single line, so errors name line 1 and the column and question index where the bad value starts.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gradebench.errors import SourceFormatError
from gradebench.io.textio import read_text

__all__ = [
    "CATEGORY_FILE",
    "DATA_FILE",
    "FORMAT_JSON",
    "REASON_SOURCES",
    "WinoWhyQuestion",
    "WinoWhyReason",
    "read_categories",
    "read_winowhy",
]

FORMAT_JSON = "winowhy-json"
DATA_FILE = "winowhy.json"
CATEGORY_FILE = "cat_ref.json"
#: who produced a reason: ``human`` = an annotator explaining this question's answer; ``reverse`` =
#: an annotator's reason for the question's WSC twin (the same sentence with the other answer),
#: reused verbatim; ``gpt`` = a GPT-2 continuation of "<sentence> because".
REASON_SOURCES = ("human", "reverse", "gpt")

_REDOWNLOAD = "re-download winowhy.json from github.com/HKUST-KnowComp/WinoWhy or pass a good local copy with --source"


@dataclass(frozen=True, slots=True)
class WinoWhyReason:
    """One reason of a question, as read (text stripped; nothing filtered).

    Attributes:
        index: 0-based position in its question's ``reasons`` list.
        text: the reason text, surrounding whitespace stripped (may be empty).
        source: who produced it, as in the file (normally one of :data:`REASON_SOURCES`).
        plausibility: the annotators' plausibility in [0, 1] as in the file (normally a multiple of 0.2).
        label: ``Valid`` / ``Undecided`` / ``Invalid`` as in the file (a threshold on plausibility).
    """

    index: int
    text: str
    source: str
    plausibility: float
    label: str


@dataclass(frozen=True, slots=True)
class WinoWhyQuestion:
    """One WSC question with its reasons, as read.

    Attributes:
        wsc_id: 0-based position in ``winowhy.json`` (the index ``cat_ref.json`` and the
            release's ``dataset.csv`` ``wsc_num`` use).
        line, column: 1-based position where the question's JSON element starts.
        before, pronoun, after: ``text.txt1``, ``text.pron``, ``text.txt2`` (whitespace normalised).
        answers: the answer options in order (A, B, ...), stripped.
        correct_answer: ``correctAnswer`` as in the file, stripped (``A``, ``B.``, ...).
        wsc_source: the question's WSC provenance (``source``), whitespace collapsed.
        reasons: the reasons in file order.
        categories: the ``cat_ref.json`` categories listing this question, in that file's order
            (empty when no category file was read).
    """

    wsc_id: int
    line: int
    column: int
    before: str
    pronoun: str
    after: str
    answers: tuple[str, ...]
    correct_answer: str
    wsc_source: str
    reasons: tuple[WinoWhyReason, ...]
    categories: tuple[str, ...] = ()

    @property
    def sentence(self) -> str:
        """The full WSC sentence: ``before pronoun after`` (no space before ``after``'s leading punctuation)."""
        return _join(self.before, self.pronoun, self.after)

    @property
    def marked_sentence(self) -> str:
        """The sentence with the pronoun to resolve wrapped in asterisks (``because *they* feared``)."""
        return _join(self.before, f"*{self.pronoun}*", self.after)


def _join(before: str, pronoun: str, after: str) -> str:
    text = " ".join(p for p in (before, pronoun) if p)
    if after:
        text += after if after[0] in ".,;:!?'\")" else " " + after
    return text


def _squash(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------- low-level JSON


def _load_text(path: Path, what: str) -> str:
    """A JSON file's text, rejecting compressed/binary files and locating bytes that are not UTF-8."""
    text = read_text(path, what, hint="WinoWhy files are UTF-8 JSON; " + _REDOWNLOAD)
    if not text.strip():
        raise SourceFormatError(f"is empty, expected {what}", path=path, line=1, hint=_REDOWNLOAD)
    return text


class _Positions:
    """1-based (line, column) of offsets in a text, for increasing offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._offset = 0
        self._line = 1
        self._line_start = 0

    def at(self, offset: int) -> tuple[int, int]:
        if offset < self._offset:  # pragma: no cover - offsets only grow
            self._offset, self._line, self._line_start = 0, 1, 0
        self._line += self.text.count("\n", self._offset, offset)
        nl = self.text.rfind("\n", self._offset, offset)
        if nl >= 0:
            self._line_start = nl + 1
        self._offset = offset
        return self._line, offset - self._line_start + 1


def _json_error(path: Path, e: json.JSONDecodeError) -> SourceFormatError:
    return SourceFormatError(
        f"is not valid JSON: {e.msg} (column {e.colno})", path=path, line=e.lineno, hint="the file looks truncated or "
        "edited by hand; " + _REDOWNLOAD
    )


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _array_elements(text: str, path: Path) -> list[tuple[int, Any]]:
    """The elements of a top-level JSON array with the offset where each one starts."""
    decoder = json.JSONDecoder()
    pos = _skip_ws(text, 0)
    if text[pos] != "[":
        try:
            value, _ = decoder.raw_decode(text, pos)
            kind = _kind(value)
        except json.JSONDecodeError:
            kind = "text that is not JSON"
        raise SourceFormatError(
            f"expected a JSON array of WSC questions, found {kind} at the start",
            path=path,
            line=text.count("\n", 0, pos) + 1,
            hint="pass winowhy.json from the WinoWhy release (a list of {text, answers, correctAnswer, reasons})",
        )
    out: list[tuple[int, Any]] = []
    pos = _skip_ws(text, pos + 1)
    if pos < len(text) and text[pos] == "]":
        end = pos + 1
    else:
        while True:
            try:
                value, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as e:
                raise _json_error(path, e) from None
            out.append((pos, value))
            pos = _skip_ws(text, end)
            if pos < len(text) and text[pos] == ",":
                pos = _skip_ws(text, pos + 1)
                continue
            if pos < len(text) and text[pos] == "]":
                end = pos + 1
                break
            line, col = _Positions(text).at(pos)
            found = "the end of the file" if pos >= len(text) else repr(text[pos])
            raise SourceFormatError(
                f"unterminated JSON array: expected ',' or ']' at column {col}, found {found}",
                path=path,
                line=line,
                hint="the file looks truncated; " + _REDOWNLOAD,
            )
    rest = _skip_ws(text, end)
    if rest < len(text):
        line, col = _Positions(text).at(rest)
        raise SourceFormatError(
            f"unexpected data after the JSON array at column {col}", path=path, line=line,
            hint="the file holds more than one JSON value; " + _REDOWNLOAD,
        )
    return out


# --------------------------------------------------------------------------- questions


class _Element:
    """Type checks of one question element, raising errors that point at it."""

    def __init__(self, path: Path, index: int, line: int, column: int) -> None:
        self.path, self.index, self.line, self.column = path, index, line, column

    def fail(self, what: str, hint: str | None = None) -> SourceFormatError:
        return SourceFormatError(
            f"question {self.index} (the element starting at column {self.column}): {what}",
            path=self.path,
            line=self.line,
            hint=hint or "each element needs text{txt1,pron,txt2}, answers, correctAnswer, source and reasons; "
            + _REDOWNLOAD,
        )

    def get(self, obj: dict, key: str, kind: type | tuple[type, ...], where: str) -> Any:
        if key not in obj:
            raise self.fail(f"missing key '{where}{key}'")
        value = obj[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise self.fail(f"'{where}{key}' is {_kind(value)}, expected {_kind_name(kind)}")
        return value


def _kind(value: Any) -> str:
    return "null" if value is None else f"a JSON {_PY_TO_JSON.get(type(value), type(value).__name__)}"


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return "a JSON " + " or ".join(dict.fromkeys(_PY_TO_JSON.get(k, k.__name__) for k in kinds))


_PY_TO_JSON = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def _question(path: Path, index: int, line: int, column: int, obj: Any) -> WinoWhyQuestion:
    el = _Element(path, index, line, column)
    if not isinstance(obj, dict):
        raise el.fail(f"is {_kind(obj)}, expected a JSON object")
    text = el.get(obj, "text", dict, "")
    before = el.get(text, "txt1", str, "text.")
    pronoun = el.get(text, "pron", str, "text.")
    after = el.get(text, "txt2", str, "text.")
    answers = el.get(obj, "answers", list, "")
    for k, a in enumerate(answers):
        if not isinstance(a, str):
            raise el.fail(f"answers[{k}] is {_kind(a)}, expected a JSON string")
    correct = el.get(obj, "correctAnswer", str, "")
    provenance = el.get(obj, "source", str, "")
    raw_reasons = el.get(obj, "reasons", list, "")
    reasons = []
    for k, r in enumerate(raw_reasons):
        shape = "[text, source, plausibility, label]"
        if not isinstance(r, list) or len(r) != 4:
            got = f"{len(r)} items" if isinstance(r, list) else _kind(r)
            raise el.fail(f"reasons[{k}] is {got}, expected a list {shape}")
        rtext, rsource, plaus, label = r
        for name, v in (("text", rtext), ("source", rsource), ("label", label)):
            if not isinstance(v, str):
                raise el.fail(f"reasons[{k}] {name} is {_kind(v)}, expected a JSON string ({shape})")
        if isinstance(plaus, bool) or not isinstance(plaus, (int, float)) or not math.isfinite(plaus):
            shown = repr(plaus) if isinstance(plaus, float) else _kind(plaus)
            raise el.fail(f"reasons[{k}] plausibility is {shown}, expected a number in [0, 1] ({shape})")
        reasons.append(WinoWhyReason(k, rtext.strip(), rsource.strip(), float(plaus), label.strip()))
    return WinoWhyQuestion(
        wsc_id=index,
        line=line,
        column=column,
        before=_squash(before),
        pronoun=_squash(pronoun),
        after=_squash(after),
        answers=tuple(_squash(a) for a in answers),
        correct_answer=correct.strip(),
        wsc_source=_squash(provenance),
        reasons=tuple(reasons),
    )


def read_categories(path: str | Path, n_questions: int | None = None) -> dict[int, tuple[str, ...]]:
    """Read ``cat_ref.json``: question index -> the categories listing it, in the file's key order.

    Raises:
        SourceNotFoundError: the file is missing.
        SourceFormatError: not a JSON object of category -> list of integer indexes, or an index
            outside ``range(n_questions)`` (the category file belongs to another release).
    """
    p = Path(path)
    text = _load_text(p, "a JSON object of category -> question indexes")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise _json_error(p, e) from None
    hint = 'cat_ref.json maps each category to a list of 0-based question indexes, e.g. {"Property": [0, 2]}'
    if not isinstance(data, dict):
        raise SourceFormatError(f"is {_kind(data)}, expected a JSON object", path=p, line=1, hint=hint)
    out: dict[int, list[str]] = {}
    for name, idxs in data.items():
        if not isinstance(idxs, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in idxs):
            raise SourceFormatError(
                f"category {name!r} is not a list of integer indexes", path=p, line=_line_of_key(text, name), hint=hint
            )
        for i in idxs:
            if i < 0 or (n_questions is not None and i >= n_questions):
                raise SourceFormatError(
                    f"category {name!r} lists question {i}, but winowhy.json has {n_questions} questions "
                    f"(indexes 0-{(n_questions or 1) - 1})",
                    path=p,
                    line=_line_of_key(text, name),
                    hint="use the cat_ref.json of the same WinoWhy release as winowhy.json",
                )
            if name not in out.setdefault(i, []):
                out[i].append(name)
    return {i: tuple(names) for i, names in out.items()}


def _line_of_key(text: str, key: str) -> int:
    pos = text.find(json.dumps(key))
    return 1 if pos < 0 else text.count("\n", 0, pos) + 1


def read_winowhy(path: str | Path, categories: str | Path | None = None) -> list[WinoWhyQuestion]:
    """Read ``winowhy.json`` (and optionally ``cat_ref.json``) into questions in file order.

    Args:
        path: the ``winowhy.json`` file.
        categories: the release's ``cat_ref.json``, or ``None`` (then every question's
            ``categories`` is empty).

    Raises:
        SourceNotFoundError: a file is missing.
        SourceFormatError: invalid JSON, not an array, an empty array, a question with a
            missing key or a value of the wrong JSON type, a reason that is not
            ``[text, source, plausibility, label]``, a non-numeric or non-finite plausibility,
            bytes that are not UTF-8, or a compressed/binary file. The message names the file,
            the 1-based line and the question's index and column.
    """
    p = Path(path)
    text = _load_text(p, "a WinoWhy JSON array")
    elements = _array_elements(text, p)
    if not elements:
        raise SourceFormatError("holds an empty JSON array, expected WSC questions", path=p, line=1, hint=_REDOWNLOAD)
    pos = _Positions(text)
    questions = []
    for index, (offset, obj) in enumerate(elements):
        line, column = pos.at(offset)
        questions.append(_question(p, index, line, column, obj))
    if categories is not None:
        cats = read_categories(categories, len(questions))
        questions = [replace(q, categories=cats.get(q.wsc_id, ())) for q in questions]
    return questions
