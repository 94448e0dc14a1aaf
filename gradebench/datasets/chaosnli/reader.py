"""Reader for ChaosNLI v1.0 (Nie, Zhou & Bansal, EMNLP 2020): 100 new annotator votes per item.

The release is three JSON Lines files, one object per line:

* ``chaosNLI_snli.jsonl`` (1,514 rows) and ``chaosNLI_mnli_m.jsonl`` (1,599 rows): ``uid``,
  ``label_counter`` ({label: votes}, zero-vote labels omitted), ``majority_label``,
  ``label_dist`` and ``label_count`` (in the order [e, n, c]), ``entropy`` (base 2),
  ``example`` {``uid``, ``premise``, ``hypothesis``, ``source``}, ``old_label`` and
  ``old_labels`` (the original 5 (sometimes 4) annotators' full-word labels).
* ``chaosNLI_alphanli.jsonl`` (1,532 rows): the same vote fields over the labels ``1``/``2``
  (``majority_label`` and ``old_label`` are JSON ints while ``label_counter``'s keys are
  strings), ``example`` {``uid``, ``obs1``, ``obs2``, ``hyp1``, ``hyp2``, ``source``} and no
  ``old_labels``. Its ``uid`` is the αNLI ``story_id`` plus an instance digit, written
  ``-1``/``-2`` or appended with no hyphen: :func:`split_alpha_uid` normalises both.

The reader checks structure only (JSON syntax and the type of every field it keeps) and
raises :class:`~gradebench.errors.SourceFormatError` naming the file and 1-based line. It does
not judge values: unknown labels, vote fields that disagree, or empty texts are kept as read
so the builders can skip them with a counted reason. Labels are kept as strings (``1`` -> ``"1"``).
Blank lines are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gradebench.io.textio import JsonFields, iter_jsonl, json_kind

__all__ = [
    "ALPHA_LABELS",
    "NLI_LABELS",
    "SUBSET_FILES",
    "AlphaItem",
    "NLIItem",
    "VoteFields",
    "Votes",
    "read_chaosnli_alphanli",
    "read_chaosnli_nli",
    "split_alpha_uid",
    "vote_problem",
]

#: file name of each ChaosNLI subset in the release folder ``chaosNLI_v1.0/``
SUBSET_FILES: dict[str, str] = {
    "snli": "chaosNLI_snli.jsonl",
    "mnli": "chaosNLI_mnli_m.jsonl",
    "alphanli": "chaosNLI_alphanli.jsonl",
}
#: label order of ``label_count`` / ``label_dist`` in the SNLI and MNLI subsets
NLI_LABELS: tuple[str, ...] = ("e", "n", "c")
#: label order of ``label_count`` / ``label_dist`` in the αNLI subset
ALPHA_LABELS: tuple[str, ...] = ("1", "2")

_ALPHA_UID = re.compile(r"^([0-9a-f-]{36})-?([12])$")
_VOTE_KEYS = ("uid", "label_counter", "majority_label", "label_dist", "label_count", "entropy", "example", "old_label")
_HINT = "pass an unmodified file of the ChaosNLI v1.0 release (chaosNLI_v1.0/{})"


@dataclass(frozen=True, slots=True)
class Votes:
    """The annotation fields every ChaosNLI row has, as read.

    Attributes:
        uid: the row's ``uid``; ``example_uid``: ``example.uid`` (equal in the release).
        label_count: votes per label in the subset's label order (:data:`NLI_LABELS` or
            :data:`ALPHA_LABELS`).
        label_counter: ``label_counter`` as ``(label, votes)`` pairs in file order (keys as
            strings; zero-vote labels are absent in the release).
        label_dist: ``label_dist`` (``label_count / 100`` in the release).
        majority_label, old_label: as strings (αNLI's ints become ``"1"``/``"2"``).
        entropy: base-2 entropy of the vote distribution, as given.
        source: ``example.source`` (``snli_agree_3``, ``mnli_agree_3``, ``abdnli_dev``).
    """

    uid: str
    example_uid: str
    label_count: tuple[int, ...]
    label_counter: tuple[tuple[str, int], ...]
    label_dist: tuple[float, ...]
    majority_label: str
    old_label: str
    entropy: float
    source: str


@dataclass(frozen=True, slots=True)
class NLIItem:
    """One row of the SNLI or MNLI subset: a premise/hypothesis pair and its votes.

    ``line`` is the 1-based line in the file, ``row`` the 0-based index among its rows.
    ``old_labels`` are the original annotators' labels (5, or 4 for a few SNLI rows).
    """

    row: int
    line: int
    votes: Votes
    premise: str
    hypothesis: str
    old_labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AlphaItem:
    """One row of the αNLI subset: two observations, two hypotheses and the votes between them."""

    row: int
    line: int
    votes: Votes
    obs1: str
    obs2: str
    hyp1: str
    hyp2: str


def split_alpha_uid(uid: str) -> tuple[str, int] | None:
    """``(story_id, instance)`` of a ChaosNLI αNLI uid, or ``None`` when it is neither form.

    The release writes the instance digit both ways: ``<story_id>-1`` and ``<story_id>1``.

    >>> split_alpha_uid("066eff23-d80a-4fc3-adf2-794948d7926a-1")
    ('066eff23-d80a-4fc3-adf2-794948d7926a', 1)
    >>> split_alpha_uid("58090d3f-8a91-4c89-83ef-2b4994de9d242")
    ('58090d3f-8a91-4c89-83ef-2b4994de9d24', 2)
    """
    m = _ALPHA_UID.match(uid)
    return None if m is None else (m.group(1), int(m.group(2)))


# --------------------------------------------------------------------------- vote fields


class VoteFields(JsonFields):
    """:class:`~gradebench.io.textio.JsonFields` plus ChaosNLI's label and vote-count shapes."""

    def label(self, key: str) -> str:
        """A label: a string or an integer (αNLI), kept as a string."""
        v = self.get(key)
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise self._bad(key, f"must be a label (string or integer), got {json_kind(v)}")
        return str(v)

    def counts(self, key: str, n: int, labels: tuple[str, ...]) -> tuple[int, ...]:
        """``n`` non-negative vote counts in the order of ``labels``."""
        v = self.get(key)
        order = "[" + ", ".join(labels) + "]"
        if not isinstance(v, list) or len(v) != n:
            got = f"{len(v)} entries" if isinstance(v, list) else json_kind(v)
            raise self._bad(key, f"must be a list of {n} vote counts in the order {order}, got {got}")
        if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in v):
            raise self._bad(key, f"must hold non-negative integers, got {v!r}"[:120])
        return tuple(v)

    def counter(self, key: str) -> tuple[tuple[str, int], ...]:
        """An object of label -> non-negative vote count, as ``(label, votes)`` pairs in file order."""
        v = self.get(key)
        if not isinstance(v, dict) or any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in v.values()):
            raise self._bad(key, f"must be an object of label -> non-negative vote count, got {v!r}"[:120])
        return tuple((str(k), c) for k, c in v.items())


def _votes(f: VoteFields, ex: JsonFields, labels: tuple[str, ...]) -> Votes:
    for key in _VOTE_KEYS:  # report the first missing key in a fixed order
        f.get(key)
    n = len(labels)
    return Votes(
        uid=f.text("uid"),
        example_uid=ex.text("uid"),
        label_count=f.counts("label_count", n, labels),
        label_counter=f.counter("label_counter"),
        label_dist=f.numbers("label_dist", n),
        majority_label=f.label("majority_label"),
        old_label=f.label("old_label"),
        entropy=f.number("entropy"),
        source=ex.text("source"),
    )


def _rows(
    path: str | Path, what: str, hint: str, labels: tuple[str, ...]
) -> Iterator[tuple[int, int, Votes, VoteFields, JsonFields]]:
    """``(row, line, votes, fields, example fields)`` of each object of a ChaosNLI file (it must hold one)."""
    p = Path(path)
    for row, (line, obj) in enumerate(iter_jsonl(p, what, allow_empty=False)):
        f = VoteFields(obj, p, line, hint)
        ex = f.sub("example")
        yield row, line, _votes(f, ex, labels), f, ex


def read_chaosnli_nli(path: str | Path) -> list[NLIItem]:
    """Read ``chaosNLI_snli.jsonl`` or ``chaosNLI_mnli_m.jsonl`` (texts kept as in the file).

    Raises:
        SourceNotFoundError: no such file.
        SourceFormatError: a line that is not a JSON object, a missing key, or a key of the
            wrong type (e.g. ``label_count`` not three non-negative integers, which is the
            case for the αNLI file); names the file and the 1-based line.
    """
    what = "a ChaosNLI SNLI/MNLI JSON Lines file"
    hint = _HINT.format("chaosNLI_snli.jsonl or chaosNLI_mnli_m.jsonl") + "; the αNLI file is read by the anli recipe"
    return [
        NLIItem(
            row=row,
            line=line,
            votes=votes,
            premise=ex.text("premise"),
            hypothesis=ex.text("hypothesis"),
            old_labels=f.texts("old_labels"),
        )
        for row, line, votes, f, ex in _rows(path, what, hint, NLI_LABELS)
    ]


def read_chaosnli_alphanli(path: str | Path) -> list[AlphaItem]:
    """Read ``chaosNLI_alphanli.jsonl`` (texts kept as in the file).

    Raises:
        SourceNotFoundError: no such file.
        SourceFormatError: a line that is not a JSON object, a missing key, or a key of the
            wrong type (e.g. ``label_count`` not two non-negative integers); names the file and
            the 1-based line.
    """
    what = "a ChaosNLI αNLI JSON Lines file"
    hint = _HINT.format(SUBSET_FILES["alphanli"])
    return [
        AlphaItem(
            row=row,
            line=line,
            votes=votes,
            obs1=ex.text("obs1"),
            obs2=ex.text("obs2"),
            hyp1=ex.text("hyp1"),
            hyp2=ex.text("hyp2"),
        )
        for row, line, votes, _, ex in _rows(path, what, hint, ALPHA_LABELS)
    ]


def vote_problem(v: Votes, labels: tuple[str, ...]) -> str | None:
    """A skip reason when a row's annotation fields are unusable or disagree, else ``None``.

    - ``unknown_label``: ``majority_label``, ``old_label`` or a ``label_counter`` key is not
      one of ``labels``.
    - ``inconsistent_votes``: ``label_counter`` (zero-vote labels may be absent) or
      ``label_dist`` (``label_count / total``, to 1e-6) disagrees with ``label_count``.
    - ``uid_mismatch``: ``uid`` differs from ``example.uid``.
    - ``no_votes``: ``label_count`` sums to zero.
    """
    known = set(labels)
    if v.majority_label not in known or v.old_label not in known or any(k not in known for k, _ in v.label_counter):
        return "unknown_label"
    total = sum(v.label_count)
    if total == 0:
        return "no_votes"
    counter = dict(v.label_counter)
    if any(counter.get(lab, 0) != c for lab, c in zip(labels, v.label_count, strict=True)):
        return "inconsistent_votes"
    if any(abs(d - c / total) > 1e-6 for d, c in zip(v.label_dist, v.label_count, strict=True)):
        return "inconsistent_votes"
    if v.uid != v.example_uid:
        return "uid_mismatch"
    return None
