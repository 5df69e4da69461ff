"""Conversation turns in context: what both lanes see of a memory of a conversation.

A chat turn ("Yeah, it was great!", "I just got back from a trip in my new Prius") leans on the
turns before it and rarely names its speaker, so its own text is a poor vector. A memory with a
``conversation`` therefore has a *context*: the lines (``role: text``, or the text alone without a
role) of the ``CONTEXT_TURNS`` turns before it in the same conversation (same user) made within
``CONTEXT_GAP`` before it, oldest first. "Before" is by (created_at, id); a memory added without
created_at comes after every stored one. It is embedded as its *document* (its own line, then its
context), and the back-ends index its context's words for the keyword lane at a lower weight. The
stored text and every output are unchanged. Memories outside a conversation are embedded as their
text and have no context.

Measured on LoCoMo (bench/locomo.py, bundled model): vector evidence recall@10 0.31 with the text
alone, 0.44 with the speaker, 0.54 with the speaker and the two turns before it in its session (one
turn after as well adds nothing; three before or two after dilute it).

A Doc (document and context) depends on the turns before it, so the core updates and re-embeds the
memories whose earlier turns change: those after a memory added out of order, edited or forgotten
(``followers``, ``refresh``); ``restore_contexts`` rewrites every context that differs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, NamedTuple

from remem.times import from_utc_iso, utc_iso
from remem.types import Filters

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.base import Backend, EmbedFn
    from remem.core.arguments import Change
    from remem.embedders.base import Embedder
    from remem.types import Memory, NewMemory

#: How many earlier turns of its conversation a memory's document holds.
CONTEXT_TURNS = 2
#: ... and only those made at most this long before it: a turn after a pause starts a new session
#: and does not lean on the last one (LoCoMo, vector recall@10: 0.522 without the limit, 0.536).
CONTEXT_GAP = timedelta(hours=1)
#: Sorts after every stored created_at: where a memory added without one goes.
_NOW = "\uffff"
#: Added to a new memory's place in its batch: it sorts after every stored id of the same time.
_NEW = 1 << 62
#: Memories re-embedded per transaction by ``refresh``.
_REFRESH_CHUNK = 256
#: Extra earlier memories read when looking for the turns before one (ties of created_at).
_SLACK = 8


@dataclass(frozen=True)
class Turn:
    """One memory as a turn of its conversation: where it sorts, its line, its id if stored."""

    key: tuple[str, int]
    line: str
    id: int | None = None

    @classmethod
    def stored(cls, memory: Memory, text: str | None = None) -> Turn:
        """A stored memory (with ``text`` instead of its own, for an edit)."""
        line = _line(memory.role, memory.text if text is None else text)
        return cls((memory.created_at, memory.id), line, memory.id)

    @classmethod
    def new(cls, memory: NewMemory, place: int) -> Turn:
        """A memory about to be added, ``place``-th of its batch (after every stored id)."""
        return cls((memory.created_at or _NOW, _NEW + place), _line(memory.role, memory.text))


def _line(role: str | None, text: str) -> str:
    return f"{role}: {text}" if role else text


def thread(memory: Memory | NewMemory) -> tuple[str, str | None] | None:
    """The conversation (and user) a memory is a turn of, or None outside a conversation."""
    return None if memory.conversation is None else (memory.conversation, memory.user)


class Doc(NamedTuple):
    """What the core stores for a memory besides its text: the document its vectors are made from,
    and its context (the lines of the turns before it, "" for none) for the keyword lane."""

    document: str
    context: str


def document(turn: Turn, before: Sequence[Turn]) -> Doc:
    """``turn``'s Doc: its line, then those of the last CONTEXT_TURNS of ``before`` (sorted, all
    earlier than ``turn``) made within CONTEXT_GAP before it, oldest first."""
    start = _moment(turn.key[0]) - CONTEXT_GAP
    context = "\n".join(t.line for t in before[-CONTEXT_TURNS:] if _moment(t.key[0]) >= start)
    return Doc(f"{turn.line}\n{context}" if context else turn.line, context)


def alone(text: str) -> Doc:
    """The Doc of a memory outside a conversation: its text, no context."""
    return Doc(text, "")


def _moment(created_at: str) -> datetime:
    """A stored created_at as a datetime (now for a memory about to be added without one)."""
    if created_at == _NOW:
        return datetime.now(timezone.utc)
    return from_utc_iso(created_at)


def _sorted(turns: Iterable[Turn]) -> list[Turn]:
    return sorted(turns, key=lambda t: t.key)


def _filters(key: tuple[str, str | None], until: str | None = None, since: str | None = None) -> Filters:
    # every turn, superseded or expired too: a turn's context does not change when another is hidden
    return Filters(
        conversation=key[0],
        user=key[1],
        until=until,
        since=since,
        include_superseded=True,
        include_expired=True,
    )


def _just_after(created_at: str) -> str:
    """The next millisecond (``until`` is exclusive; ties are broken by id here)."""
    return utc_iso(_moment(created_at) + timedelta(milliseconds=1))


def stored_before(backend: Backend, key: tuple[str, str | None], turn: Turn) -> list[Turn]:
    """The stored turns of thread ``key`` just before ``turn`` (at most CONTEXT_TURNS), oldest first."""
    until = None if turn.key[0] == _NOW else _just_after(turn.key[0])
    newest = backend.newest(_filters(key, until=until), CONTEXT_TURNS + _SLACK)
    return _sorted(t for t in _turns_of(key, newest) if t.key < turn.key)[-CONTEXT_TURNS:]


def context_ids(backend: Backend, memory: Memory) -> list[int]:
    """The ids of the stored turns whose lines a stored memory's document holds (the turns just
    before it in its thread); [] outside a conversation."""
    key = thread(memory)
    if key is None:
        return []
    return [t.id for t in stored_before(backend, key, Turn.stored(memory)) if t.id is not None]


def _stored_from(backend: Backend, key: tuple[str, str | None], since: str) -> list[Turn]:
    """Every stored turn of thread ``key`` created at or after ``since``, sorted."""
    if since == _NOW:
        return []
    return _sorted(_turns_of(key, backend.iter_all(_filters(key, since=since))))


def _turns_of(key: tuple[str, str | None], memories: Iterable[Memory]) -> Iterator[Turn]:
    """The memories of thread ``key`` as turns (a filter without a user also selects other users')."""
    return (Turn.stored(m) for m in memories if m.user == key[1])


def _by_thread(memories: Iterable[Memory | NewMemory]) -> dict[tuple[str, str | None], list[int]]:
    """Thread → the positions of its memories (memories outside a conversation are left out)."""
    groups: dict[tuple[str, str | None], list[int]] = defaultdict(list)
    for place, memory in enumerate(memories):
        key = thread(memory)
        if key is not None:
            groups[key].append(place)
    return groups


def _after(merged: Sequence[Turn], changed: Sequence[bool]) -> list[int]:
    """Ids of the unchanged stored turns of ``merged`` with a changed one among the CONTEXT_TURNS
    before them (``changed[i]`` says whether ``merged[i]`` changed)."""
    return [
        t.id
        for n, t in enumerate(merged)
        if t.id is not None and not changed[n] and any(changed[max(0, n - CONTEXT_TURNS) : n])
    ]


def for_new(backend: Backend, memories: Sequence[NewMemory]) -> tuple[list[Doc], list[int]]:
    """The Docs of memories about to be added (in order), and the ids of stored memories whose Docs
    they change (``refresh`` those after adding)."""
    docs = [alone(m.text) for m in memories]
    followers: list[int] = []
    for key, places in _by_thread(memories).items():
        new = {place: Turn.new(memories[place], place) for place in places}
        first = min(new.values(), key=lambda t: t.key)
        merged = _sorted(
            [*stored_before(backend, key, first), *_stored_from(backend, key, first.key[0]), *new.values()]
        )
        at = {t.key: n for n, t in enumerate(merged)}
        for place, turn in new.items():
            docs[place] = document(turn, merged[: at[turn.key]])
        followers += _after(merged, [t.id is None for t in merged])
    return docs, followers


def for_stored(backend: Backend, memories: Sequence[Memory], texts: Sequence[str] | None = None) -> list[Doc]:
    """The Docs of stored memories as the store holds them now (each with ``texts[i]`` instead of
    its own text when given: an edit)."""
    docs = []
    for n, memory in enumerate(memories):
        text = memory.text if texts is None else texts[n]
        key = thread(memory)
        if key is None:
            docs.append(alone(text))
        else:
            turn = Turn.stored(memory, text)
            docs.append(document(turn, stored_before(backend, key, turn)))
    return docs


def for_rows(backend: Backend, rows: Sequence[tuple[int, str]]) -> list[str]:
    """The documents of stored memories given as (id, text); the text as given for a memory the
    store no longer holds."""
    stored = backend.get_many([mid for mid, _ in rows])
    held = [(stored[mid], text) for mid, text in rows if mid in stored]
    docs = iter(for_stored(backend, [memory for memory, _ in held], [text for _, text in held]))
    return [next(docs).document if mid in stored else text for mid, text in rows]


def followers(backend: Backend, memories: Sequence[Memory]) -> list[int]:
    """Ids of the stored memories (not among ``memories``) whose Docs hold one of these: the ones to
    ``refresh`` after they are edited or forgotten."""
    found: list[int] = []
    for key, places in _by_thread(memories).items():
        changed = {memories[p].id for p in places}
        since = min(memories[p].created_at for p in places)
        merged = _stored_from(backend, key, since)
        found += _after(merged, [t.id in changed for t in merged])
    return found


def for_store(backend: Backend) -> dict[int, tuple[str, Doc]]:
    """Memory id → (its text, its Doc) for every memory of a conversation in the store."""
    threads: dict[tuple[str, str | None], list[Turn]] = defaultdict(list)
    texts: dict[int, str] = {}
    for memory in backend.iter_all():
        key = thread(memory)
        if key is not None:
            threads[key].append(Turn.stored(memory))
            texts[memory.id] = memory.text
    docs = {}
    for turns in threads.values():
        ordered = _sorted(turns)
        for n, turn in enumerate(ordered):
            assert turn.id is not None
            docs[turn.id] = (texts[turn.id], document(turn, ordered[:n]))
    return docs


def whole_store(backend: Backend, embedder: Embedder) -> EmbedFn:
    """What a re-embed of the whole store embeds with: each (id, text) as its document, read from
    the store once, now (a text changed since is embedded as it is)."""
    docs = for_store(backend)

    def embed(rows: Sequence[tuple[int, str]]) -> Sequence[FloatArray]:
        known = [docs.get(mid) for mid, _ in rows]
        texts = [
            found[1].document if found and found[0] == text else text
            for (_, text), found in zip(rows, known, strict=True)
        ]
        return embedder.embed_documents(texts).windows

    return embed


def restore_contexts(backend: Backend) -> int:
    """Give every memory of a conversation its context as the store holds it now (a store made before
    contexts were kept, or after a crash between an add and its ``refresh``); how many."""
    items = [(mid, text, doc.context) for mid, (text, doc) in for_store(backend).items()]
    for start in range(0, len(items), _REFRESH_CHUNK):
        backend.set_contexts(items[start : start + _REFRESH_CHUNK])
    return len(items)


def refresh(backend: Backend, embedder: Embedder | None, memory_ids: Sequence[int]) -> None:
    """Give these memories (whose earlier turns changed) their contexts and, with an ``embedder``,
    their vectors as the store holds them now; a memory deleted or edited meanwhile is skipped."""
    memories = sorted(backend.get_many(memory_ids).values(), key=lambda m: m.id)
    for start in range(0, len(memories), _REFRESH_CHUNK):
        chunk = memories[start : start + _REFRESH_CHUNK]
        docs = for_stored(backend, chunk)
        backend.set_contexts([(m.id, m.text, doc.context) for m, doc in zip(chunk, docs, strict=True)])
        if embedder is not None:
            windows = embedder.embed_documents([doc.document for doc in docs]).windows
            items = [(m.id, m.text, rows) for m, rows in zip(chunk, windows, strict=True)]
            backend.attach_vectors(items, embedder.info, replace=True)


def edit(backend: Backend, embedder: Callable[[], Embedder], before: Memory, change: Change) -> Memory:
    """Give a stored memory (as read: ``before``) a new text, re-embedded with its context (the
    turns after it refreshed), then new tags, meta or user (``Backend.refile``, after the text: a text
    the store refuses changes nothing); see ``Backend.edit`` for the errors. ``embedder`` is called only
    for a new text."""
    edited = before
    if change.text is not None:
        model = embedder()
        (doc,) = for_stored(backend, [before], [change.text])
        vectors = model.embed_documents([doc.document]).windows[0]
        edited = backend.edit(
            before.id, change.text, vectors, model.info, expected_sha256=before.sha256, context=doc.context
        )
        refresh(backend, model, followers(backend, [edited]))
    owner = None if change.owner is None or change.owner[0] == before.user else change.owner
    if change.tags is None and change.meta is None and owner is None:
        return edited
    return backend.refile(before.id, change.tags, change.meta, expected_sha256=edited.sha256, owner=owner)


def forget(backend: Backend, embedder: Callable[[], Embedder], memories: Sequence[Memory]) -> list[int]:
    """Delete these memories; the turns after them are refreshed (re-embedded only when the store has
    a model: ``embedder`` is called then). Returns the ids that existed."""
    after = followers(backend, memories)
    deleted = backend.forget([m.id for m in memories])
    if after:
        refresh(backend, embedder() if backend.model is not None else None, after)
    return deleted
