"""Reader for best-of-N lists: a prompt, its chosen response(s) and several rejected ones per row.

Layout (column names are the defaults; ``--map`` renames any of them): **RewardBench 2**
(``allenai/reward-bench-2``): ``prompt`` (text), ``chosen`` (a list of responses: one, or several
in its Ties subset), ``rejected`` (a list of responses), ``subset`` and ``id``; its other columns
(``num_correct``, ``num_rejected``, ``total_completions``, ``models``, ``additional_metadata``)
are not read.

A list-valued column holds a list of responses, each plain text or a conversation (a list of
``{role, content}`` messages); a CSV field holds the list as JSON text; a single response (a
string, or one conversation) counts as a list of one. Without a prompt column (``prompt`` left at
its default and missing from the file) every response must be a conversation, and the prompt is
the first chosen conversation's messages up to its last user turn (TRL's implicit prompt).
Readers do not filter; a malformed value raises a :class:`SourceFormatError` naming the file and
the 1-based line (Parquet: row).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradebench.datasets.records import InputFile
from gradebench.datasets.responses.conversation import Conversation, MessagesMode, looks_like_messages, parse_value
from gradebench.datasets.responses.table import (
    ChosenRejectedColumns,
    RoleRow,
    id_value,
    list_value,
    read_rows,
    subset_value,
)
from gradebench.io.table_rows import RowPlace

__all__ = ["BestOfNColumns", "BestOfNRow", "read_best_of_n", "responses"]


class BestOfNColumns(ChosenRejectedColumns):
    """The source table's column for each role of a best-of-N row (JSON Lines: a dotted path may reach inside)."""

    split: str | None = None


@dataclass(frozen=True)
class BestOfNRow:
    """One row as read: ``prompt`` is ``None`` when the file has no prompt column (implicit prompt)."""

    split: str
    source_id: str
    subset: str | None
    prompt: Conversation | None
    chosen: tuple[Conversation, ...]
    rejected: tuple[Conversation, ...]


def responses(value: Any, mode: MessagesMode, place: RowPlace, column: str, role: str) -> tuple[Conversation, ...]:
    """The responses of a list-valued column (a list of messages is one conversation, not several responses)."""
    if mode != "text" and looks_like_messages(value):
        return (parse_value(value, mode, place, column),)
    items = list_value(value, place, column, role)
    if mode != "text" and looks_like_messages(items):
        return (parse_value(items, mode, place, column),)
    return tuple(parse_value(item, mode, place, column) for item in items)


def read_best_of_n(files: Sequence[InputFile], columns: BestOfNColumns,
                   mode: MessagesMode) -> Mapping[str, list[BestOfNRow]]:
    """The rows of ``files`` per output split, in file order.

    Raises:
        SourceFormatError: a missing required column, a value of the wrong type, a malformed chat
            message, or plain-text responses without a prompt column, each naming the file and line.
    """

    def row(r: RoleRow, col: dict[str, str]) -> BestOfNRow:
        v, place = r.values, r.place
        chosen = responses(v["chosen"], mode, place, col["chosen"], "chosen")
        rejected = responses(v["rejected"], mode, place, col["rejected"], "rejected")
        prompt = parse_value(v["prompt"], mode, place, col["prompt"]) if "prompt" in r.present else None
        if prompt is None and any(isinstance(c, str) for c in chosen + rejected):
            raise place.error(
                f"has no prompt column ({col['prompt']!r}) and its responses hold plain text, so the prompt "
                "cannot be told from the responses",
                "map the prompt (--map prompt=COLUMN), or give the responses as chat conversations",
            )
        return BestOfNRow(split=r.split, source_id=id_value(v["id"], place, col["id"]),
                          subset=subset_value(v["subset"], place, col["subset"]), prompt=prompt, chosen=chosen,
                          rejected=rejected)

    return read_rows(files, columns, row, what="a best-of-N table")
