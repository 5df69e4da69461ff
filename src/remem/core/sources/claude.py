"""Claude's data export: conversations.json, a JSON array of conversations ({uuid, name,
created_at, chat_messages: [{uuid, sender, text, content, created_at, attachments, files}]}),
each a list of messages in order.

Kept: the words of the human's (role ``user``) and the assistant's messages, each a turn of the
conversation (its uuid) with the message's own time: the ``text`` blocks of its ``content`` (and a
voice note's transcript), else its ``text``. Skipped and counted: tool calls and results,
reasoning, images, attachments and files, other senders, empty messages (a message of nothing but
left-out blocks, such as a tool result, is counted as those blocks only); a content block type
this module does not know is skipped with a note naming the file and its JSON path.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from remem.core.sources.arrays import conversations, iso_time, text
from remem.core.sources.shape import Item, Tally
from remem.errors import InvalidInputError

#: Claude's senders, as remem's roles.
ROLES = {"human": "user", "user": "user", "assistant": "assistant"}
#: Content blocks that are words of the conversation, and the key that holds them.
WORDS = {"text": "text", "voice_note": "transcript"}
#: Content blocks that are not words of the conversation, by what they are counted as.
NOT_WORDS = {
    "tool_use": "tool calls and results",
    "tool_result": "tool calls and results",
    "server_tool_use": "tool calls and results",
    "web_search_tool_result": "tool calls and results",
    "thinking": "reasoning",
    "redacted_thinking": "reasoning",
    "image": "images and files",
    "document": "images and files",
    "token_budget": "tool calls and results",
}
#: The tag every imported turn gets.
TAG = "source:claude"


def read(path: Path, given: str, tally: Tally) -> Iterator[Item]:
    """The turns of every conversation in the export at ``path``, in order (see the module
    docstring); ``given`` names the file in notes and errors."""
    for index, conversation in conversations(path, given, "Claude"):
        yield from _turns(conversation, f"{given}: [{index}]", tally)


def _turns(conversation: Mapping[str, Any], where: str, tally: Tally) -> Iterator[Item]:
    messages = conversation.get("chat_messages")
    if not isinstance(messages, list):
        raise InvalidInputError(
            f"{where} has no chat_messages: not a Claude export "
            "(a ChatGPT export is read with source chatgpt)",
            mentions=("source",),
        )
    ident = text(conversation.get("uuid"))
    if not ident.strip():
        raise InvalidInputError(f"{where} has no uuid: not a Claude export")
    title = text(conversation.get("name")).strip()
    started = iso_time(conversation.get("created_at"))
    for number, message in enumerate(messages):
        at = f"{where}.chat_messages[{number}]"
        found = _turn(message, at, tally)
        if found is not None:
            role, words = found
            meta = {"source_id": text(message.get("uuid")) or f"{ident}:{number}"}
            meta.update({"title": title} if title else {})
            created = tally.timed(iso_time(message.get("created_at")) or started, at)
            yield Item(words, at, ident, role, created, (TAG,), meta)


def _turn(message: Any, where: str, tally: Tally) -> tuple[str, str] | None:
    """(role, text) of a message to import, or None when it is skipped (and counted)."""
    if not isinstance(message, dict):
        tally.skip("empty messages")
        return None
    for name in ("attachments", "files"):
        held = message.get(name)
        tally.skip("attachments and files", len(held) if isinstance(held, list) else 0)
    sender = message.get("sender")
    role = ROLES.get(sender) if isinstance(sender, str) else None
    if role is None:
        tally.skip(f"{sender} messages" if isinstance(sender, str) else "messages without a sender")
        return None
    blocks = message.get("content")
    if isinstance(blocks, list) and blocks:
        words, left_out = _words(blocks, where, tally)
    else:
        words, left_out = text(message.get("text")), 0
    if not words.strip():
        if not left_out:  # nothing but left-out blocks (a tool result): counted as those
            tally.skip("empty messages")
        return None
    return role, words


def _words(blocks: list[Any], where: str, tally: Tally) -> tuple[str, int]:
    """The words of a message's content blocks, joined, and how many blocks were left out (each
    counted, or noted when of an unknown type)."""
    words: list[str] = []
    for number, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        kind = kind if isinstance(kind, str) else None  # a list or map is no type (and unhashable)
        if kind in WORDS:
            words.append(text(block.get(WORDS[kind])))
        elif kind in NOT_WORDS:
            tally.skip(NOT_WORDS[kind])
        else:
            tally.skip("content blocks of unknown types")
            tally.note(
                f"{where}.content[{number}].type: {kind!r} is not a content block remem knows; skipped"
            )
    return "\n\n".join(word for word in words if word.strip()), len(blocks) - len(words)
