"""What the response-ranking builders share: the recipe keys, the base builder and list assembly.

Each family (``preferences``, ``best-of-n``, ``ratings``) turns the rows of a user's table into
graded lists: one query (the prompt) and its responses as candidates. Ids come from content:
the query id from the subset, the prompt (text and messages) and, where rows are lists of their
own (pairs, best-of-N), the responses; a candidate's id from the query id and its text and
messages, so the same rows give the same ids and bytes in any process, folder or file order of
columns. Candidates are ordered by a content digest when ``shuffle_candidates`` is on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
from pydantic import Field

from gradebench.datasets.base import Builder, Column, GradedList, Selection
from gradebench.datasets.common import shuffled_order
from gradebench.datasets.records import InputFile
from gradebench.datasets.responses.conversation import Conversation, MessagesMode, messages_json, render
from gradebench.datasets.responses.table import locate_tables, suffix_formats
from gradebench.hashing import short_id
from gradebench.strict import StrictModel

__all__ = [
    "CANDIDATE_MESSAGES",
    "PROMPT_MESSAGES",
    "SUBSET",
    "Candidate",
    "ResponseBuilder",
    "ResponseSection",
    "assemble",
    "query_key",
    "response_key",
]

SUBSET = Column("subset", pa.string(), True, "the source's subset/category of the prompt (null: none); "
                "per-subset reports group by it", "query", dictionary=True)
PROMPT_MESSAGES = Column("prompt_messages", pa.string(), True,
                         "the prompt's chat messages as JSON ([{role, content}, ...]); null for plain text", "query")
CANDIDATE_MESSAGES = Column("candidate_messages", pa.string(), True,
                            "the response's chat messages as JSON; null for plain text", "candidate")
#: the row's id (chosen/rejected layouts: one list per row)
ROW_ID = Column("source_id", pa.string(), False, "the row's id column, else <file name>:<line or row>", "query")
PREFERENCE = Column("preference", pa.string(), False, "chosen or rejected", "candidate", dictionary=True)


class ResponseSection(StrictModel):
    """Recipe keys every response-ranking builder has (its ``columns`` come from the family)."""

    messages: MessagesMode = Field(
        default="auto",
        description="how values are read: 'auto' (a list of {role, content} messages, or text holding one, is a "
        "conversation; other text is plain), 'text' (always plain text) or 'chat' (always messages)",
    )


@dataclass(frozen=True)
class Candidate:
    """One response of a list before ordering: its conversation, grade, score and extra column values."""

    conv: Conversation
    relevance: int
    score: float
    extra: tuple = ()

    @property
    def text(self) -> str:
        return render(self.conv)

    @property
    def key(self) -> tuple[str, str]:
        """What identifies the response (:func:`response_key`)."""
        return response_key(self.conv)


def response_key(conv: Conversation) -> tuple[str, str]:
    """What identifies a response: its text and its messages as JSON (``""`` for plain text)."""
    return render(conv), messages_json(conv) or ""


def query_key(subset: str | None, prompt: Conversation) -> tuple[str, str, str]:
    """What identifies a prompt: its subset (``""`` for none), its text and its messages as JSON."""
    return subset or "", render(prompt), messages_json(prompt) or ""


def assemble(
    *,
    namespace: str,
    shuffle: bool,
    query_id: str,
    prompt: Conversation,
    split: str,
    candidates: Sequence[Candidate],
    query_extra: tuple,
) -> GradedList:
    """The graded list of a prompt and its candidates (extras: each candidate's ``extra`` then its messages).

    ``query_extra`` are the values of the builder's query columns before ``prompt_messages``
    (which is appended here); the candidate columns are each candidate's ``extra`` followed by
    ``candidate_messages``.
    """
    cids = [short_id("candidate", query_id, *c.key) for c in candidates]
    order = shuffled_order(namespace, query_id, cids) if shuffle else list(range(len(candidates)))
    cs = [candidates[i] for i in order]
    n_extra = len(cs[0].extra) if cs else 0
    columns = tuple([c.extra[k] for c in cs] for k in range(n_extra)) + ([messages_json(c.conv) for c in cs],)
    return GradedList(
        query_id=query_id,
        query=render(prompt),
        split=split,
        candidate_ids=[cids[i] for i in order],
        candidates=[c.text for c in cs],
        scores=[c.score for c in cs],
        relevance=[c.relevance for c in cs],
        query_extra=(*query_extra, messages_json(prompt)),
        candidate_extra=columns,
    )


class ResponseBuilder(Builder):
    """Base of the response-ranking builders: table files found by suffix, splits from names or a column.

    A subclass names its ``format_prefix`` (its ``formats`` follow from it). :meth:`select` makes
    one list per row with ``_graded_list``; a family that groups rows (ratings) overrides it.
    """

    #: the family's format prefix (``"preferences"`` -> formats ``preferences-csv``, ...)
    format_prefix: ClassVar[str]
    #: the skip reason of a list whose query id an earlier row already gave
    duplicate_reason: ClassVar[str] = "duplicate_list"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "format_prefix" in cls.__dict__ and "formats" not in cls.__dict__:
            cls.formats = tuple(suffix_formats(cls.format_prefix).values())

    def select(self, records: Mapping[str, Sequence[Any]], *, limit: int | None) -> Selection:
        """One list per row (the first ``limit`` rows of each split); a repeated list is skipped."""
        skipped: Counter = Counter()
        units: list[GradedList] = []
        seen: set[str] = set()
        for split in records:
            for n, row in enumerate(records[split]):
                if limit is not None and n >= limit:
                    break
                drops: Counter = Counter()
                made = self._graded_list(row, drops)
                if isinstance(made, str):
                    skipped[made] += 1
                elif made.query_id in seen:
                    skipped[self.duplicate_reason] += 1
                else:
                    seen.add(made.query_id)
                    units.append(made)
                    skipped.update(drops)  # responses dropped from a list that is kept
        return Selection(units=units, skipped=skipped)

    def _graded_list(self, row: Any, drops: Counter) -> GradedList | str:
        """The row's list, or the reason it is skipped; responses dropped from it are counted in ``drops``."""
        raise NotImplementedError

    def locate(self, source: Path) -> list[InputFile]:
        return locate_tables(source, suffix_formats(self.format_prefix), self.recipe.source.formats,
                             split_column=self.recipe.columns.split is not None)

    def _mapped_line(self) -> str:
        cols = self.recipe.columns
        mapped = ", ".join(f"{rc.role} = `{rc.column}`" + ("" if rc.required else " (where present)")
                           for rc in cols.role_columns())
        how = {"auto": "plain text or chat messages, as each value holds", "text": "plain text only",
               "chat": "chat messages only"}[self.recipe.messages]
        return f"Source columns: {mapped}. Values are read as {how} (`messages: {self.recipe.messages}`)."
