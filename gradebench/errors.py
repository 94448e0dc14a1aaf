"""Typed errors: every failure a user can cause carries *where* and *how to fix it*.

The CLI maps any :class:`GradebenchError` to a single line on stderr and exit code 2
(``gradebench.cli``); tracebacks appear only with ``--debug``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class GradebenchError(Exception):
    """Base class of every error gradebench raises on purpose.

    Args:
        message: what is wrong, in one sentence.
        hint: how to fix it (shown after ``hint:``).
        path: the file or folder concerned, if any.
        line: 1-based line number inside ``path``, if known.
        key: the recipe/config key concerned, if any (dotted path).
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        path: str | Path | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        self.message = message
        self.hint = hint
        self.path = None if path is None else str(path)
        self.line = line
        self.key = key
        super().__init__(self.one_line())

    def where(self) -> str:
        parts = []
        if self.path is not None:
            parts.append(self.path if self.line is None else f"{self.path}:{self.line}")
        if self.key is not None:
            parts.append(f"key '{self.key}'")
        return ", ".join(parts)

    def one_line(self) -> str:
        where = self.where()
        text = f"{where}: {self.message}" if where else self.message
        if self.hint:
            text += f" (hint: {self.hint})"
        return " ".join(text.split("\n"))


class InvalidArgumentError(GradebenchError, ValueError):
    """A function argument has a bad value, shape or type (NaN scores, k <= 0, ...)."""


class UnknownNameError(GradebenchError, KeyError):
    """A name (recipe, metric, loss, scorer, split) is not registered."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.one_line()


class DuplicateNameError(GradebenchError):
    """Two components were registered under the same name."""


class RecipeError(GradebenchError):
    """A recipe file is malformed: unknown key, bad type, min > max, ..."""


class SourceFormatError(GradebenchError):
    """An input file is not in the format it claims (wrong header, truncated, bad bytes)."""


class SourceNotFoundError(GradebenchError):
    """An input file or folder does not exist."""


class ChecksumError(GradebenchError):
    """A downloaded or cached file does not match the checksum in its recipe."""


class DownloadError(GradebenchError):
    """A source could not be downloaded."""


class BenchmarkError(GradebenchError):
    """A benchmark folder is missing, incomplete or of an unsupported format version."""


class RunError(GradebenchError):
    """A training run folder is missing, incomplete, corrupt or belongs to another benchmark."""


class RecordError(GradebenchError):
    """A result record is missing, unreadable, of another schema version, or ambiguous."""


class GradebenchWarning(UserWarning):
    """Base class of the warnings gradebench issues; the CLI prints each as one line
    (``gradebench: warning: <what>``)."""


class RecordWarning(GradebenchWarning):
    """A record that failed its checks (:mod:`gradebench.experiments.verify`) was left out."""


class QueryError(GradebenchError):
    """A SQL query failed (syntax, unknown column, ...)."""


class RewardError(GradebenchError):
    """A reward folder is missing, incomplete or of another schema version, or a run cannot be exported."""


class HubError(GradebenchError):
    """The Hub could not be reached or refused the request (no token, offline, no permission, not found)."""


class NotRedistributableError(GradebenchError):
    """A benchmark whose source license forbids republishing was about to be published."""


class InvarianceError(GradebenchError):
    """``--check-invariance`` found scores that depend on the batch (exit code 1: a finding, not bad input)."""

    exit_code = 1


class RemoteCodeError(InvalidArgumentError):
    """The model folder asks to run its own code and ``trust_remote_code`` was not given."""


class ModelTextError(ValueError):
    """What is wrong with a LightGBM model string (the caller names the file).

    A plain ``ValueError``, not a :class:`GradebenchError`: the caller turns it into the error
    of its own file (a run's model, a reward's model).
    """


class Busy(Exception):
    """The lock is held by another process (``pid``, None if it has not written it yet).

    Raised by :mod:`gradebench.locks`; a plain ``Exception``, since the run-folder code turns it
    into :class:`RunInUse`, the error a user sees.
    """

    def __init__(self, path: Path, pid: int | None) -> None:
        self.path, self.pid = path, pid
        super().__init__(f"{path} is locked by {'another process' if pid is None else f'pid {pid}'}")


class _Described(Protocol):
    what: str


class RunInUse(RunError):
    """Another live process holds the run folder's lock (``pid``: its process id, if known)."""

    def __init__(self, run_dir: Path, pid: int | None, layout: _Described) -> None:
        self.pid = pid
        who = "another process" if pid is None else f"pid {pid}"
        super().__init__(f"the {layout.what} folder is in use by {who}", path=run_dir,
                         hint="wait until it ends, then run the same command again (or choose another --out)")
