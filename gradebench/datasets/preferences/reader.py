"""Reader for pairwise preferences: a prompt, a chosen and a rejected response per row.

Layouts (column names are the defaults; ``--map`` renames any of them):

- **TRL** (``trl`` preference datasets): ``prompt``, ``chosen``, ``rejected``. *Standard*: three
  strings. *Conversational*: lists of ``{role, content}`` messages (``prompt`` the user turns,
  ``chosen``/``rejected`` the assistant turns, or the whole conversation repeated). *Implicit
  prompt*: no ``prompt`` column; ``chosen`` and ``rejected`` are whole conversations and the prompt
  is what they share up to the last user turn (see
  :mod:`gradebench.datasets.responses.conversation`). Optional ``score_chosen`` and
  ``score_rejected`` (e.g. ``trl-lib/ultrafeedback_binarized``).
- **RewardBench** (``allenai/reward-bench``): ``prompt``, ``chosen``, ``rejected`` (strings),
  ``chosen_model``, ``rejected_model``, ``subset`` and ``id``.

Optional roles (``prompt``, ``subset``, ``id``, ``chosen_model``, ``rejected_model``,
``score_chosen``, ``score_rejected``) left at their default names are read where a file has them
(see :class:`~gradebench.datasets.responses.table.ColumnMapBase`). Readers do not filter:
empty texts and ties are returned as they are and the builder counts them; a malformed value
raises a :class:`SourceFormatError` naming the file and the 1-based line (Parquet: row).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from gradebench.datasets.records import InputFile
from gradebench.datasets.responses.conversation import Conversation, MessagesMode, parse_value
from gradebench.datasets.responses.table import (
    ChosenRejectedColumns,
    RoleRow,
    id_value,
    number_value,
    read_rows,
    subset_value,
)

__all__ = ["PairColumns", "PairRow", "read_pairs"]


class PairColumns(ChosenRejectedColumns):
    """The source table's column for each role of a preference pair (JSON Lines: a dotted path may reach inside)."""

    OPTIONAL: ClassVar[tuple[str, ...]] = (
        *ChosenRejectedColumns.OPTIONAL, "chosen_model", "rejected_model", "score_chosen", "score_rejected",
    )

    chosen_model: str = "chosen_model"
    rejected_model: str = "rejected_model"
    score_chosen: str = "score_chosen"
    score_rejected: str = "score_rejected"
    split: str | None = None


@dataclass(frozen=True)
class PairRow:
    """One row as read: ``prompt`` is ``None`` when the file has no prompt column (implicit prompt)."""

    split: str
    source_id: str
    subset: str | None
    prompt: Conversation | None
    chosen: Conversation
    rejected: Conversation
    chosen_model: str | None
    rejected_model: str | None
    score_chosen: float | None
    score_rejected: float | None


def _model(value, place, column: str) -> str | None:
    if value is None or isinstance(value, str):
        return (value or "").strip() or None
    raise place.error(f"column {column!r} holds a {type(value).__name__}, expected a model name",
                      "map the model roles to text columns, or leave them at their defaults")


def read_pairs(files: Sequence[InputFile], columns: PairColumns, mode: MessagesMode) -> Mapping[str, list[PairRow]]:
    """The pairs of ``files`` per output split, in file order.

    Raises:
        SourceFormatError: a missing required column, a value of the wrong type, a malformed
            chat message, or a chat-less row without a prompt column (implicit prompts need
            messages), each naming the file and line; and those of
            :func:`~gradebench.datasets.responses.table.read_role_rows`.
    """

    def row(r: RoleRow, col: dict[str, str]) -> PairRow:
        v, place = r.values, r.place
        has_prompt = "prompt" in r.present
        chosen = parse_value(v["chosen"], mode, place, col["chosen"])
        rejected = parse_value(v["rejected"], mode, place, col["rejected"])
        prompt = parse_value(v["prompt"], mode, place, col["prompt"]) if has_prompt else None
        if prompt is None and (isinstance(chosen, str) or isinstance(rejected, str)):
            raise place.error(
                f"has no prompt column ({col['prompt']!r}) and {col['chosen']!r}/{col['rejected']!r} hold plain "
                "text, so the prompt cannot be told from the responses",
                "map the prompt (--map prompt=COLUMN), or give chosen/rejected as chat messages (TRL's implicit "
                "prompt layout)",
            )
        return PairRow(
            split=r.split,
            source_id=id_value(v["id"], place, col["id"]),
            subset=subset_value(v["subset"], place, col["subset"]),
            prompt=prompt,
            chosen=chosen,
            rejected=rejected,
            chosen_model=_model(v["chosen_model"], place, col["chosen_model"]),
            rejected_model=_model(v["rejected_model"], place, col["rejected_model"]),
            score_chosen=number_value(v["score_chosen"], place, f"column {col['score_chosen']!r}"),
            score_rejected=number_value(v["score_rejected"], place, f"column {col['score_rejected']!r}"),
        )

    return read_rows(files, columns, row, what="a preference-pairs table")
