"""Reader for ART, the αNLI release (Bhagavatula et al., ICLR 2020, "Abductive Commonsense Reasoning").

The release (``alphanli-train-dev.zip``) holds, per split X in ``train``/``dev``:

* ``X.jsonl``: one JSON object per line with the keys ``story_id``, ``obs1``, ``obs2``,
  ``hyp1`` and ``hyp2`` (strings; other keys are ignored);
* ``X-labels.lst``: one label per line, ``1`` or ``2`` (which hypothesis is the more
  plausible explanation of the observations), line *i* labelling line *i* of ``X.jsonl``.

A labels file with more or fewer lines than its JSON Lines file is an error naming both
files and counts; a blank line inside ``X.jsonl`` is an error (it would shift the alignment).
Labels are kept as read (stripped): an unknown label is the builder's to skip. ART's ``dev``
split becomes ``validation``. The same 1,532 dev items, with 100 votes each, are ChaosNLI's αNLI
subset (:func:`gradebench.datasets.chaosnli.reader.read_chaosnli_alphanli`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gradebench.errors import SourceFormatError
from gradebench.io.textio import JsonFields, iter_jsonl, read_text

__all__ = ["ART_LABELS", "ART_SPLITS", "ARTItem", "labels_file_for", "read_art"]

#: ART's split names -> output split names
ART_SPLITS: dict[str, str] = {"train": "train", "dev": "validation"}
#: the labels ``X-labels.lst`` may hold
ART_LABELS: tuple[str, ...] = ("1", "2")
_HINT = "pass an unmodified {} from the ART release (alphanli-train-dev.zip)"


@dataclass(frozen=True, slots=True)
class ARTItem:
    """One ART instance: two observations, two hypotheses and which one is more plausible.

    ``row`` is the 0-based index in the file, ``line`` its 1-based line (the same line of the
    labels file holds ``label``, stripped, e.g. ``"1"``).
    """

    split: str
    row: int
    line: int
    story_id: str
    obs1: str
    obs2: str
    hyp1: str
    hyp2: str
    label: str


def labels_file_for(jsonl: str | Path) -> Path:
    """The labels file of an ART JSON Lines file: ``dev.jsonl`` -> ``dev-labels.lst``."""
    p = Path(jsonl)
    return p.with_name(f"{p.name.removesuffix('.jsonl')}-labels.lst")


def _read_labels(path: Path) -> list[str]:
    lines = read_text(path, "an ART labels file").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return [x.strip() for x in lines]


def read_art(jsonl: str | Path, labels: str | Path, split: str) -> list[ARTItem]:
    """Read one ART split: ``X.jsonl`` and its line-aligned ``X-labels.lst``.

    Args:
        jsonl, labels: the two files; ``split``: the output split of their items.

    Raises:
        SourceNotFoundError: a file is missing.
        SourceFormatError: a line that is not a JSON object, a missing or non-string key, a
            blank line inside ``X.jsonl``, or a labels file whose line count differs from the
            JSON Lines file's (naming both files and counts); binary, compressed or non-UTF-8
            files.
    """
    jp, lp = Path(jsonl), Path(labels)
    hint = _HINT.format(jp.name)
    texts: list[tuple[int, str, str, str, str, str]] = []
    for line, obj in iter_jsonl(jp, "an ART JSON Lines file", blank_lines="error", allow_empty=False):
        f = JsonFields(obj, jp, line, hint)
        texts.append((line, f.text("story_id"), f.text("obs1"), f.text("obs2"), f.text("hyp1"), f.text("hyp2")))
    got = _read_labels(lp)
    if len(got) != len(texts):
        n, m = len(got), len(texts)
        raise SourceFormatError(
            f"{lp.name} has {n} label line{'s' if n != 1 else ''} but {jp.name} has {m} line{'s' if m != 1 else ''}; "
            "the labels file needs one label per line of the JSON Lines file",
            path=lp,
            line=min(n, m) + 1,
            hint=f"re-copy both {jp.name} and {lp.name} from the same ART release",
        )
    return [
        ARTItem(split, row, line, sid, o1, o2, h1, h2, lab)
        for row, ((line, sid, o1, o2, h1, h2), lab) in enumerate(zip(texts, got, strict=True))
    ]
