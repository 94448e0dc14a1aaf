"""The record every NLI source reader yields, whatever its on-disk format."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Output split names (Hugging Face convention). Readers map source names onto these
#: (e-SNLI's ``dev`` becomes ``validation``).
SPLITS = ("train", "validation", "test")


@dataclass(frozen=True, slots=True)
class NLIExample:
    """One premise/hypothesis pair with its label and human explanations, as read.

    Readers do no filtering: rows with an empty explanation, label ``-`` or an empty
    premise are yielded as they are, and the builder counts them in ``skipped``.

    Attributes:
        split: output split name (``train``/``validation``/``test``).
        row: 0-based row index of this example within its split, in file order.
        source_id: the source's own id (e-SNLI ``pairID``) or ``"<file>:<line>"`` when the
            format has none.
        premise, hypothesis: text as in the source (surrounding whitespace stripped).
        label: gold label as in the source (``entailment``, ``neutral``, ``contradiction``, ``-``, ...).
        explanations: the human explanations in source order (empty strings kept).
    """

    split: str
    row: int
    source_id: str
    premise: str
    hypothesis: str
    label: str
    explanations: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class SourceFile:
    """A file a build read: its path as given and the sha256 of its bytes."""

    path: str
    sha256: str
    role: str  # e.g. "esnli-csv:validation", "esnli-preproc:s1.dev"


@dataclass
class SourceData:
    """What a reader returns: examples per split plus the files (and hashes) it read."""

    format: str
    examples: dict[str, list[NLIExample]]
    files: list[SourceFile]


@dataclass(frozen=True)
class InputFile:
    """A file a builder will read, found from names alone (no content parsed yet).

    ``role`` names the file's part in the source (``"dnli-jsonl:atomic:validation"``); it enters
    the benchmark fingerprint with the file's sha256, so it must not depend on where the file lies.
    ``split`` is the output split (train/validation/test) the file's records belong to.
    """

    path: str
    role: str
    split: str
