"""Memories that change, in the core: "a similar memory exists" after an add, a memory's history
(the chain of memories that superseded one another), expired memories, and the supersede links an
import carries (the rules of a link are ``remem.backends.links``).

**The similar-memory notice.** After a memory is added and embedded, its vectors are compared with
the store once (the vector lane's top, no extra model call): stored memories of the same user (and
conversation, when it has one) whose best window has a cosine of at least ``SIMILAR_THRESHOLD``
with one of its windows come back in ``AddResult.similar``, best first, so the assistant that wrote
it can supersede one in one more call. The memory is stored either way. A turn of a conversation is
embedded with the turns just before it (``turns``), so those are never named: it holds their lines.

``SIMILAR_THRESHOLD`` is measured on ``tests/data/update_set.json`` (38 update pairs, 36 related but
distinct pairs, 46 background memories; a third held out) with the bundled model
(``bench/updates.py``): on the two thirds it was calibrated on, 0.64 gave the best F1 (0.73: it
named the old memory for 0.73 of updates and fired for 0.29 of related memories), 0.69 fired for
0.17 at recall 0.65. Updates reworded from scratch ("my manager is Sophie" → "after the reorg I
report to Daniel": 0.20) sit below related memories of one template ("the partner API allows 1000
requests/min" against the public API's limit: 0.90), so no cosine separates them: the notice says
"similar", never "replaces", and the assistant decides.

A model may bring its own threshold (an embedder's ``similar_threshold``): multilingual-e5-small's
cosines are squeezed together (unrelated memories score about 0.85), so it names memories from 0.91
(``embedders.registry``, with its measurement).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from remem.backends.links import Link
from remem.core import turns
from remem.errors import RememError
from remem.types import Filters, Memory, NewMemory, Similar, utc_now_iso

if TYPE_CHECKING:
    from remem.backends.base import Backend
    from remem.embedders.base import Embedder
    from remem.ingest import Entry

#: A stored memory this similar (cosine of best windows) to an added one is named in its result.
SIMILAR_THRESHOLD = 0.69
#: At most this many similar memories are named.
MAX_SIMILAR = 3
#: How many of the vector lane's best are looked at (the added memory itself among them; memories of
#: other users or conversations are passed over when the filters cannot leave them out).
SIMILAR_FETCH = 12


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


class ImportLinks:
    """The supersede links of an import, collected as its entries stream past: an export lists
    memories by id and a memory is always superseded by a later one, so each link's old memory is
    read before its new one. Links whose new memory is not in the import are counted, not kept."""

    def __init__(self) -> None:
        """Nothing collected yet."""
        self._waiting: dict[int, list[tuple[NewMemory, str | None]]] = {}  # one may replace several
        self._pairs: list[tuple[NewMemory, NewMemory, str | None]] = []

    def watch(self, entries: Iterable[Entry]) -> Iterator[Entry]:
        """The entries, unchanged, noting the links they carry."""
        for entry in entries:
            memory = entry.memory
            if memory.id is not None and memory.id in self._waiting:
                self._pairs.extend((old, memory, at) for old, at in self._waiting.pop(memory.id))
            if entry.superseded_by is not None:
                self._waiting.setdefault(entry.superseded_by, []).append((memory, entry.superseded_at))
            yield entry

    def apply(self, backend: Backend) -> list[str]:
        """Write the links between the memories as stored (found by text, user and conversation,
        whatever ids they were given); notes on links that could not be kept."""
        notes = []
        if self._waiting:
            unlinked = sum(map(len, self._waiting.values()))
            notes.append(
                f"{unlinked} imported memories were superseded by memories not in the import; "
                "they were imported as current"
            )
        if not self._pairs:
            return notes
        olds = backend.find_duplicates([old for old, _, _ in self._pairs])
        news = backend.find_duplicates([new for _, new, _ in self._pairs])
        wanted = [
            Link(old_id, new_id, new.user, new.conversation, at or utc_now_iso())
            for (_, new, at), old_id, new_id in zip(self._pairs, olds, news, strict=True)
            if old_id is not None and new_id is not None
        ]
        try:
            backend.supersede(wanted)
        except RememError:  # one the store refuses (superseded otherwise already): the others, one by one
            refused = 0
            for link in wanted:
                try:
                    backend.supersede([link])
                except RememError:
                    refused += 1
            notes.append(
                f"{refused} supersede links of the import were not kept: "
                "the store links those memories otherwise"
            )
        return notes


def expired_ids(backend: Backend) -> list[int]:
    """The ids of the memories whose ``expires_at`` has passed, ascending."""
    return backend.expired_ids(utc_now_iso())
