"""Memories that change, in the core: "a similar memory exists" after an add, the same text added
again (current, it is a duplicate; retired, it is current again), a memory's history (the chain of
memories that superseded one another), expired memories, and the supersede links an import carries
(the rules of a link are ``remem.backends.links``). Letting the newer of two near-duplicates win
near ties was measured and not kept (the retired bench/newer_ties.py: on the update set the newer
fact's hit@1 0.158 → 0.158 with a tie margin of 0.008, 0.632 always; the memory set's hybrid hit@1
0.907 → 0.884 / 0.744).

**The similar-memory notice.** After a memory is added and embedded, its vectors are compared with
the store once (the vector lane's top, no extra model call): stored memories of the same user (and
conversation, when it has one) whose best window has a cosine of at least ``SIMILAR_THRESHOLD``
with one of its windows come back in ``AddResult.similar``, best first, so the assistant that wrote
it can supersede one in one more call. The memory is stored either way. A turn of a conversation is
embedded with the turns just before it (``turns``), so those are never named: it holds their lines.

``SIMILAR_THRESHOLD`` is measured on ``tests/data/update_set.json`` (38 update pairs, 36 related but
distinct pairs, 46 background memories; a third held out) with the bundled model
(retired ``bench/updates.py``): on the two thirds it was calibrated on, 0.64 gave the best F1 (0.73:
it named the old memory for 0.73 of updates and fired for 0.29 of related memories), 0.69 fired for
0.17 at recall 0.65. Updates reworded from scratch ("my manager is Sophie" → "after the reorg I
report to Daniel": 0.20) sit below related memories of one template ("the partner API allows 1000
requests/min" against the public API's limit: 0.90), so no cosine separates them: the notice says
"similar", never "replaces", and the assistant decides.

A model may bring its own threshold (an embedder's ``similar_threshold``): multilingual-e5-small's
cosines are squeezed together (unrelated memories score about 0.85), so it names memories from 0.91
(``embedders.registry``, with its measurement).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from remem.backends.links import Link
from remem.core import turns
from remem.errors import InvalidInputError
from remem.types import AddResult, Filters, Memory, NewMemory, Similar, text_sha256, utc_now_iso

if TYPE_CHECKING:
    from remem.backends.base import Backend
    from remem.embedders.base import Embedder
    from remem.ingest import Entry

#: A stored memory this similar (cosine of best windows) to an added one is named in its result.
SIMILAR_THRESHOLD = 0.69
#: How many duplicates of a batch are read at a time to count the retired ones.
RETIRED_CHUNK = 1_000
#: At most this many similar memories are named.
MAX_SIMILAR = 3
#: How many of the vector lane's best are looked at (the added memory itself among them; memories of
#: other users or conversations are passed over when the filters cannot leave them out).
SIMILAR_FETCH = 12


class Given(NamedTuple):
    """The fields of a memory to add that it may take from the memory it supersedes: None is not
    given."""

    user: str | None
    conversation: str | None
    tags: Sequence[str] | None
    meta: Mapping[str, str] | None


def inherited(backend: Backend, supersedes: int | None, given: Given) -> Given:
    """``given`` with each field not given taken from memory ``supersedes`` (its user,
    conversation, tags and meta: a memory that replaces another keeps what it was filed under);
    as given without ``supersedes``, or when it names no memory (the link's check says so)."""
    if supersedes is None:
        return given
    old = backend.get_many([supersedes]).get(supersedes)
    if old is None:
        return given
    return Given(
        user=old.user if given.user is None else given.user,
        conversation=old.conversation if given.conversation is None else given.conversation,
        tags=old.tags if given.tags is None else given.tags,
        meta=old.meta if given.meta is None else given.meta,
    )


def similar(backend: Backend, embedder: Embedder, memory: NewMemory, new_id: int) -> tuple[Similar, ...]:
    """The stored memories of ``memory``'s user (and conversation) at least ``SIMILAR_THRESHOLD`` (or
    the embedder's own ``similar_threshold``) similar to it, best first (at most ``MAX_SIMILAR``),
    from its stored vectors; () when it has none."""
    stored = backend.vectors_of_memories([new_id]).get(new_id)
    if not stored or backend.model is None:
        return ()
    import numpy as np  # noqa: PLC0415 - only after an add that embedded

    lane = backend.vector_lane(embedder.info)
    threshold = getattr(embedder, "similar_threshold", None) or SIMILAR_THRESHOLD
    where = Filters(user=memory.user, conversation=memory.conversation)
    stored_memory = backend.get_many([new_id]).get(new_id)
    skip = {new_id, *(turns.context_ids(backend, stored_memory) if stored_memory else [])}
    best: dict[int, float] = {}
    for blob in stored:
        for mid, score in lane.top(np.frombuffer(blob, dtype="<f4"), SIMILAR_FETCH + len(skip), where):
            if mid not in skip and score >= threshold and score > best.get(mid, -2.0):
                best[mid] = score
    found = backend.get_many(sorted(best))
    same = [
        Similar(mid, round(score, 4))
        for mid, score in best.items()
        if mid in found and (found[mid].user, found[mid].conversation) == (memory.user, memory.conversation)
    ]
    return tuple(sorted(same, key=lambda s: (-s.score, s.id))[:MAX_SIMILAR])


def retired(memory: Memory, now: str) -> bool:
    """Whether ``memory`` is out of every read unless included: superseded, or expired at ``now``."""
    return memory.superseded_by is not None or memory.expired(now)


def add_again(backend: Backend, memory: NewMemory, existing: int) -> AddResult | None:
    """``memory``'s text added again, stored already as ``existing``: a current memory is a duplicate
    (nothing written, unless ``supersedes`` asks for a link); a retired one (superseded, or expired)
    is made current again (``Backend.revive``: it takes ``memory``'s expiry and supersedes what had
    replaced it). None when ``existing`` was forgotten meanwhile: the text is to be stored anew."""
    now = utc_now_iso()
    if memory.supersedes is None:
        stored = backend.get_many([existing]).get(existing)
        if stored is None:
            return None
        if not retired(stored, now):
            return AddResult(id=existing, duplicate=True)
    plan = backend.revive(existing, memory.supersedes, memory.expires_at, now)
    if plan is None:
        return None
    asked = () if memory.supersedes is None else (memory.supersedes,)
    superseded = tuple(sorted({*plan.supersedes, *asked}))
    return AddResult(id=existing, duplicate=True, current_again=plan.retired, superseded=superseded)


def retired_note(backend: Backend, duplicates: Sequence[int]) -> list[str]:
    """A note when some of a batch's ``duplicates`` (stored ids) are retired memories: a batch
    leaves them so (the same text added alone makes one current again); [] when none is."""
    now, count = utc_now_iso(), 0
    for start in range(0, len(duplicates), RETIRED_CHUNK):
        found = backend.get_many(duplicates[start : start + RETIRED_CHUNK]).values()
        count += sum(retired(memory, now) for memory in found)
    if not count:
        return []
    which = "1 duplicate is a memory" if count == 1 else f"{count:,} duplicates are memories"
    return [f"{which} superseded or expired, left so by a batch: `remem add TEXT` makes one current again"]


def history(backend: Backend, memory: Memory) -> list[Memory]:
    """Every memory of ``memory``'s chain, oldest first: those it superseded (and they theirs),
    itself, and those that superseded it in turn."""
    chain = {memory.id: memory}
    frontier = [memory.id]
    while frontier:  # back: the memories each one superseded
        found = backend.get_many(backend.superseded_of(frontier))
        frontier = [mid for mid in found if mid not in chain]
        chain.update(found)
    after = memory.superseded_by
    while after is not None and after not in chain:  # forward: what superseded it
        newer = backend.get_many([after]).get(after)
        if newer is None:
            break
        chain[after] = newer
        after = newer.superseded_by
    return [chain[mid] for mid in sorted(chain)]


#: What an import finds a memory by: its text's hash, user and conversation.
Key = tuple[str, "str | None", "str | None"]
#: How many of an import's last entries are remembered (by key) for a link back to one of them.
RECENT_KEYS = 100_000


class ImportLinks:
    """The supersede links of an import, collected as its entries stream past, by what finds each
    memory in the store (its text's hash, user and conversation), never its text. A link's new
    memory is most often read after its old one (an export lists memories by id); one current
    again is read before the later memory it superseded: the keys of the last ``RECENT_KEYS``
    entries are kept for those (memory stays bounded). Links whose new memory is not found in the
    import are counted, not kept."""

    def __init__(self) -> None:
        """Nothing collected yet."""
        self._waiting: dict[int, list[tuple[Key, str | None]]] = {}  # new memory's export id → links
        self._recent: dict[int, Key] = {}  # export id → key of the last RECENT_KEYS entries read
        self._pairs: list[tuple[Key, Key, str | None]] = []  # old, new, when

    def watch(self, entries: Iterable[Entry]) -> Iterator[Entry]:
        """The entries, unchanged, noting the links they carry."""
        for entry in entries:
            memory = entry.memory
            key = (text_sha256(memory.text), memory.user, memory.conversation)
            if memory.id is not None:
                self._pairs.extend((old, key, at) for old, at in self._waiting.pop(memory.id, []))
                self._recent[memory.id] = key
                if len(self._recent) > RECENT_KEYS:
                    del self._recent[next(iter(self._recent))]
            by = entry.superseded_by
            if by is not None and by in self._recent:  # a memory read before: one current again
                self._pairs.append((key, self._recent[by], entry.superseded_at))
            elif by is not None:
                self._waiting.setdefault(by, []).append((key, entry.superseded_at))
            yield entry

    def apply(self, backend: Backend) -> list[str]:
        """Write the links between the memories as stored (found by text, user and conversation,
        whatever ids they were given); notes on links that could not be kept. A link the store's
        own links refuse (the old memory superseded otherwise, or a loop: the store's chain retired
        the new memory) is not written, so an import never makes current what the store retired."""
        notes, pairs = [], self._pairs
        if self._waiting:
            unlinked = sum(map(len, self._waiting.values()))
            notes.append(
                f"{unlinked} imported memories were superseded by memories not in the import; "
                "they were imported as current"
            )
        if not pairs:
            return notes
        olds = backend.find_keys([old for old, _, _ in pairs])
        news = backend.find_keys([new for _, new, _ in pairs])
        wanted = [
            Link(old_id, new_id, new[1], new[2], at or utc_now_iso())
            for (_, new, at), old_id, new_id in zip(pairs, olds, news, strict=True)
            if old_id is not None and new_id is not None
        ]
        try:
            backend.supersede(wanted)
        except InvalidInputError:  # one the store refuses (superseded otherwise, a loop): one by one
            refused = 0
            for link in wanted:
                try:
                    backend.supersede([link])
                except InvalidInputError:
                    refused += 1
            notes.append(
                f"{refused} supersede links of the import were not kept: "
                "the store links those memories otherwise"
            )
        return notes


def expired_ids(backend: Backend) -> list[int]:
    """The ids of the memories whose ``expires_at`` has passed, ascending."""
    return backend.expired_ids(utc_now_iso())
