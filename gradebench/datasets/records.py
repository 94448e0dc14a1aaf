"""The record every NLI source reader yields, whatever its on-disk format."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

#: Output split names (Hugging Face convention). Readers map source names onto these
#: (e-SNLI's ``dev`` becomes ``validation``).
SPLITS = ("train", "validation", "test")


def compact_pickle(cls: type) -> type:
    """Pickle a dataclass (and its dataclass subclasses) as its class and field values.

    Work units cross a pipe to the build workers in their millions. A ``slots=True``
    dataclass pickles through ``dataclasses``' generic ``__getstate__``, which lists the
    fields again for every object (1.8 s of the parent's time per 100,000 e-SNLI queries);
    here each object is one tuple of its ``__init__`` arguments, in order.
    """
    by_class: dict[type, tuple[str, ...]] = {}

    def names_of(kind: type) -> tuple[str, ...]:
        names = by_class.get(kind)
        if names is None:
            if any(not f.init or f.kw_only for f in fields(kind)):
                raise TypeError(f"{kind.__name__}: every field must be a positional __init__ argument")
            names = by_class[kind] = tuple(f.name for f in fields(kind))
        return names

    def __reduce__(self):  # noqa: N807 - the pickle protocol's name
        kind = type(self)
        return kind, tuple([getattr(self, n) for n in names_of(kind)])

    names_of(cls)
    cls.__reduce__ = __reduce__
    return cls


@compact_pickle
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
