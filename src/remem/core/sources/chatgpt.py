"""ChatGPT's data export: conversations.json, a JSON array of conversations, each a tree of message
nodes (``mapping``: node id → {message, parent, children}) whose ``current_node`` is the last
message of the branch the ChatGPT page shows. That branch is followed from ``current_node`` up to
the root and read oldest first; a message edited or regenerated left other branches, which are
not imported.

Kept: the words of user and assistant messages (``text`` and ``multimodal_text`` parts, a voice
message's transcription), each a turn of the conversation (its id), with the message's own time,
as the page shows them: the private-use markers ChatGPT writes into an answer (a citation
``\ue200cite\ue202turn0search0\ue201``, an entity link, the bounds of a cited passage) are read
as the page does (an entity is its name, a link its text, a citation nothing).
Skipped and counted: system and tool messages, hidden messages, code and tool output, browsing,
reasoning, images and files, empty nodes; a content type this module does not know is skipped with
a note naming the file and the JSON path of its message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from remem.core.sources.arrays import conversations, epoch_time, key, text
from remem.core.sources.shape import Item, Tally
from remem.errors import InvalidInputError

#: The roles whose messages are imported, as remem names them.
ROLES = ("user", "assistant")
#: Content types whose parts are the message's words.
TEXT_TYPES = ("text", "multimodal_text")
#: Content types that are not a person's or the assistant's words, by what they are counted as.
NOT_WORDS = {
    "code": "code and tool calls",
    "execution_output": "tool output",
    "computer_output": "tool output",
    "tether_browsing_display": "browsing",
    "tether_quote": "browsing",
    "sonic_webpage": "browsing",
    "system_error": "system errors",
    "thoughts": "reasoning",
    "reasoning_recap": "reasoning",
    "user_editable_context": "custom instructions",
    "model_editable_context": "memory updates",
    "app_pairing_context": "app context",
}
#: A marked span in ChatGPT's text, ``\ue200KIND\ue202ARGS\ue201``, with the white space before it.
_SPAN = re.compile("(\\s*)\ue200([a-z_]*)\ue202([^\ue200\ue201]*)\ue201")
#: ChatGPT's private-use markers (what is left of them once the spans are read).
_MARKERS = re.compile("[\ue200-\ue2ff]")
#: The tag every imported turn gets.
TAG = "source:chatgpt"


def read(path: Path, given: str, tally: Tally) -> Iterator[Item]:
    """The turns of every conversation in the export at ``path``, conversation after conversation,
    each oldest first (see the module docstring); ``given`` names the file in notes and errors."""
    for index, conversation in conversations(path, given, "ChatGPT"):
        yield from _turns(conversation, f"{given}: [{index}]", tally)


def _turns(conversation: Mapping[str, Any], where: str, tally: Tally) -> Iterator[Item]:
    mapping = conversation.get("mapping")
    if not isinstance(mapping, dict):
        raise InvalidInputError(
            f"{where} has no mapping of messages: not a ChatGPT export (a Claude export is read "
            "with source claude)",
            mentions=("source",),
        )
    ident = text(conversation.get("conversation_id")) or text(conversation.get("id"))
    if not ident.strip():
        raise InvalidInputError(f"{where} has no id or conversation_id: not a ChatGPT export")
    title = text(conversation.get("title")).strip()
    started = epoch_time(conversation.get("create_time"))
    for node_id in _branch(mapping, conversation.get("current_node"), where):
        node = mapping[node_id]
        message: Any = node.get("message") if isinstance(node, dict) else None
        at = f"{where}.mapping{key(node_id)}.message"
        found = _turn(message, at, tally)
        if found is not None:
            role, words = found
            meta = {"source_id": text(message.get("id")) or node_id, **({"title": title} if title else {})}
            created = tally.timed(epoch_time(message.get("create_time")) or started, at)
            yield Item(words, at, ident, role, created, (TAG,), meta)


def _branch(mapping: Mapping[str, Any], current: Any, where: str) -> list[str]:
    """The node ids of the shown branch, root first: from ``current`` (else the last child at
    every step from the root) up through the parents."""
    node_id = current if isinstance(current, str) and current in mapping else _last_leaf(mapping)
    branch: list[str] = []
    seen: set[str] = set()
    while isinstance(node_id, str) and node_id in mapping:
        if node_id in seen:
            raise InvalidInputError(f"{where}.mapping{key(node_id)}: its parents make a loop")
        seen.add(node_id)
        branch.append(node_id)
        node = mapping[node_id]
        node_id = node.get("parent") if isinstance(node, dict) else None
    return branch[::-1]


def _last_leaf(mapping: Mapping[str, Any]) -> str | None:
    """Without a current node: from the root, the last child at every step."""
    roots = [
        n for n, node in mapping.items() if not isinstance(node, dict) or node.get("parent") not in mapping
    ]
    node_id, seen = (roots[0] if roots else None), set()
    while node_id is not None and node_id not in seen:
        seen.add(node_id)
        node = mapping.get(node_id)
        children = node.get("children") if isinstance(node, dict) else None
        last = children[-1] if isinstance(children, list) and children else None
        if not isinstance(last, str) or last not in mapping:
            return node_id
        node_id = last
    return node_id


def _turn(message: Any, where: str, tally: Tally) -> tuple[str, str] | None:
    """(role, text) of a message to import, or None when it is skipped (and counted)."""
    if not isinstance(message, dict):
        tally.skip("empty nodes")
        return None
    author, metadata, content = (message.get(name) for name in ("author", "metadata", "content"))
    role = author.get("role") if isinstance(author, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    content = content if isinstance(content, dict) else {}
    attached = metadata.get("attachments")
    tally.skip("attachments", len(attached) if isinstance(attached, list) else 0)
    kind = content.get("content_type")
    left_out = _left_out(role, metadata, kind)
    if left_out is None and kind not in TEXT_TYPES:
        left_out = "messages of unknown content types"
        tally.note(f"{where}.content.content_type: {kind!r} is not a content type remem knows; skipped")
    words = "" if left_out else _words(content.get("parts"), tally)
    if not left_out and not words:
        left_out = "empty messages"
    if left_out:
        tally.skip(left_out)
        return None
    return str(role), words


def _left_out(role: Any, metadata: dict[str, Any], kind: Any) -> str | None:
    """What a message is counted as when its role, visibility or content type leave it out."""
    if role not in ROLES:
        return f"{role} messages" if isinstance(role, str) else "messages without a role"
    if metadata.get("is_visually_hidden_from_conversation"):
        return "hidden messages"
    return NOT_WORDS.get(kind) if isinstance(kind, str) else None


def _words(parts: Any, tally: Tally) -> str:
    """The text parts of a message, joined; images and files among them are counted."""
    words: list[str] = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, str):
            words.append(_shown(part))
        elif isinstance(part, dict) and part.get("content_type") == "audio_transcription":
            words.append(text(part.get("text")))
        else:
            tally.skip("images and files")
    return "\n\n".join(word for word in words if word.strip())


def _shown(words: str) -> str:
    """``words`` as the ChatGPT page shows them: a marked entity is its name, a marked link its
    text, a citation (or another marked span) nothing, and the remaining markers are removed."""
    if not _MARKERS.search(words):
        return words
    return _MARKERS.sub("", _SPAN.sub(_span, words))


def _span(match: re.Match[str]) -> str:
    """What the page shows of one marked span (see ``_shown``)."""
    space, kind, args = match.groups()
    if kind == "url":  # \ue200url\ue202TEXT\ue202ADDRESS\ue201
        return space + args.split("\ue202")[0]
    if kind != "entity":  # cite, navlist, filecite, ...: the page shows a chip or nothing
        return ""
    try:  # ["kind", "Name", "description"], or the name bare
        value = json.loads(args)
    except ValueError:
        return space + args
    name = value[1] if isinstance(value, list) and len(value) > 1 else value
    return space + name if isinstance(name, str) else space
