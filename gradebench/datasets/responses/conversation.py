"""Prompts and responses as plain text or chat messages: parsing, the prompt/response split, rendering.

A value of a prompt or response column is either **plain text** (a string) or a **conversation**:
a list of messages ``{"role": ..., "content": ...}`` (the OpenAI / Hugging Face chat format, as
TRL's conversational datasets store it). Also accepted: ShareGPT's ``{"from": ..., "value": ...}``
(``human`` -> ``user``, ``gpt`` -> ``assistant``), a single message object, ``content`` as a list
of text parts (``[{"type": "text", "text": ...}]``, joined with a blank line) and ``content:
null`` (empty). Other keys of a message (``name``, ``tool_calls``) are not kept.

``messages`` (a recipe key) says how strings are read: ``auto`` reads a string holding a JSON list
of messages (a CSV field, a JSON-encoded column) as a conversation and any other string as text;
``text`` never parses a string (and a list is an error); ``chat`` requires a conversation.

How a row becomes a query and its candidates (:func:`answer_after`, :func:`implicit_prompt`):

- with a prompt column, a response that is a conversation starting with the prompt's messages
  has them removed (TRL's conversational rows repeat the prompt in ``chosen`` and ``rejected``);
- without one (TRL's *implicit prompt*), the prompt is the first response's messages up to and
  including its last ``user`` turn, and every response must start with exactly those messages;
- a response must not hold a ``user`` turn after that (``None``: the row is skipped as
  ``prompt_mismatch``).

Rendering (:func:`render`): plain text as it is; a single message as its content; several
messages as ``"<role>: <content>"`` blocks separated by a blank line. The messages themselves
are kept as JSON (:func:`messages_json`) in the builders' ``*_messages`` columns, so nothing of
the conversation is lost to the rendering.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Union

from gradebench.io.table_rows import RowPlace, json_in_text
from gradebench.io.textio import json_kind

__all__ = [
    "Conversation",
    "MessagesMode",
    "Turn",
    "answer_after",
    "as_turns",
    "implicit_prompt",
    "is_empty",
    "looks_like_messages",
    "messages_json",
    "parse_value",
    "render",
]

MessagesMode = Literal["auto", "text", "chat"]
#: ShareGPT role names -> chat roles
ROLE_ALIASES = {"human": "user", "gpt": "assistant"}
CHAT_HINT = (
    'a conversation is a list of {"role": ..., "content": ...} messages; set messages: text in the recipe to read '
    "every value as plain text"
)


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation: its role (``user``, ``assistant``, ``system``, ...) and text."""

    role: str
    content: str


#: a prompt or response: plain text, or a conversation (a tuple of turns)
Conversation = Union[str, tuple[Turn, ...]]


def _content(value: Any, place: RowPlace, column: str, k: int) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part.strip())
            elif isinstance(part, dict) and part.get("type", "text") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"].strip())
            else:
                raise place.error(
                    f"column {column!r}: message {k + 1} has a content part that is not text ({str(part)[:60]!r})",
                    "only text content is read; drop image/audio parts before building",
                )
        return "\n\n".join(p for p in parts if p)
    raise place.error(
        f"column {column!r}: message {k + 1} has content of type {json_kind(value)}, expected text",
        CHAT_HINT,
    )


def _turn(msg: Any, place: RowPlace, column: str, k: int) -> Turn:
    if not isinstance(msg, dict):
        raise place.error(f"column {column!r}: message {k + 1} is {json_kind(msg)}, expected an object", CHAT_HINT)
    if "role" in msg:
        role, content = msg["role"], msg.get("content")
    elif "from" in msg:
        role, content = msg["from"], msg.get("value")
    else:
        raise place.error(
            f"column {column!r}: message {k + 1} has no 'role' (its keys: {', '.join(map(str, msg)) or 'none'})",
            CHAT_HINT,
        )
    if not isinstance(role, str) or not role.strip():
        raise place.error(f"column {column!r}: message {k + 1} has role {role!r}, expected a role name", CHAT_HINT)
    role = role.strip().lower()
    return Turn(ROLE_ALIASES.get(role, role), _content(content, place, column, k))


def looks_like_messages(value: Any) -> bool:
    """A non-empty list of message objects (each with a ``role`` or ``from`` key)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and ("role" in m or "from" in m) for m in value)
    )


def parse_value(value: Any, mode: MessagesMode, place: RowPlace, column: str) -> Conversation:
    """A column's value as plain text (stripped) or a conversation (``None`` is empty text).

    Raises:
        SourceFormatError: a value that is neither text nor messages, a malformed message, a
            list under ``messages: text``, or text under ``messages: chat`` (at ``place``).
    """
    if value is None:
        return ""
    if isinstance(value, str):
        if mode == "text":
            return value.strip()
        stripped = value.strip()
        parsed = json_in_text(stripped) if stripped.startswith(("[", "{")) else None
        if isinstance(parsed, dict) and ("role" in parsed or "from" in parsed):
            parsed = [parsed]
        if looks_like_messages(parsed):
            return tuple(_turn(m, place, column, k) for k, m in enumerate(parsed))
        if mode == "chat":
            raise place.error(f"column {column!r} holds plain text, but the recipe reads chat messages "
                              "(messages: chat)", CHAT_HINT)
        return stripped
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, list):
        if mode == "text":
            raise place.error(f"column {column!r} holds a list, but the recipe reads plain text (messages: text)",
                              "set messages: auto (or chat) to read chat messages")
        if not value:
            return ()
        return tuple(_turn(m, place, column, k) for k, m in enumerate(value))
    raise place.error(f"column {column!r} holds {json_kind(value)}, expected text or chat messages", CHAT_HINT)


def as_turns(conv: Conversation) -> tuple[Turn, ...]:
    """A conversation's turns; plain text is one ``user`` turn (for comparing a prompt with a response)."""
    return (Turn("user", conv),) if isinstance(conv, str) else conv


def answer_after(prompt: Conversation, response: Conversation) -> Conversation | None:
    """The response without the prompt's messages it repeats; ``None`` when it holds a ``user`` turn after them."""
    if isinstance(response, str):
        return response
    head = as_turns(prompt)
    if len(response) > len(head) and response[: len(head)] == head:
        response = response[len(head):]
    if any(t.role == "user" for t in response):
        return None
    return response


def implicit_prompt(first: tuple[Turn, ...]) -> tuple[Turn, ...] | None:
    """The prompt of an implicit-prompt conversation: up to and including its last ``user`` turn (``None``: none)."""
    last = max((k for k, t in enumerate(first) if t.role == "user"), default=None)
    return None if last is None else first[: last + 1]


def is_empty(conv: Conversation) -> bool:
    """No text at all (an empty string, no messages, or only messages with empty content)."""
    return not render(conv).strip() if isinstance(conv, str) else not any(t.content for t in conv)


def render(conv: Conversation) -> str:
    """The text scorers see: plain text as it is, one message as its content, else ``role: content`` blocks."""
    if isinstance(conv, str):
        return conv
    if len(conv) == 1:
        return conv[0].content
    return "\n\n".join(f"{t.role}: {t.content}" for t in conv)


def messages_json(conv: Conversation) -> str | None:
    """The conversation as JSON (``[{"content": ..., "role": ...}, ...]``, sorted keys); ``None`` for plain text."""
    if isinstance(conv, str):
        return None
    return json.dumps([{"role": t.role, "content": t.content} for t in conv], ensure_ascii=False,
                      sort_keys=True, separators=(",", ":"))
