"""What the local back-end reads of a hybrid pool's memories in one statement where its primitives
take two (``pooling.Shortcuts``): their turns (``Records.turn_times``) and the texts the search
asks for (``Records.texts``), one look-up of each memory's row instead of two. On the 10k bench
store (``bench/search.py``; 170 pooled memories, their texts asked for the query's word order) the
two took 0.9-1.1 ms of CPU and the one 0.55-0.7 ms.

And the BM25 of the vector top's memories beyond the keyword top: where FTS5's ``bm25()`` scores
every match of the keyword lane's statement anyway (``keywords.top_and_rest``: a store under
``heads.PRUNE_FROM`` memories), that statement returns up to ``REST`` further matches, and
when they are all, the missing memories' scores are among them (or they match nothing), instead of
a second statement walking the terms' doclists again (≈0.2 ms on the 10k bench store, where a
query matches 160 memories at the median and under 500 at most). In a bigger store, where the
heads find the keyword top (``heads.top_scoring``), the vector lane goes first and the heads'
statement scores its top too (``pooling.Shortcuts.keyword_scoring``): at 1,000,000 memories
(bench/scale.py) that second statement took 3 ms of a 20 ms hybrid search.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from remem.backends import pooling
from remem.backends.base import PoolRequest, Scored, TurnTime
from remem.backends.local import keywords

if TYPE_CHECKING:
    from remem.backends.local.records import Records

#: How many matches past the keyword lane's top its statement may return (``top_and_rest``).
REST = 400

_SQL = (
    "SELECT m.id, m.user, m.conversation, m.created_at, m.role, m.text FROM memories m "
    "WHERE m.id IN (SELECT value FROM json_each(?))"
)


def turns_and_texts(
    records: Records, ids: Sequence[int], texts_of: Sequence[int]
) -> tuple[dict[int, TurnTime], dict[int, str]]:
    """The turns among ``ids`` (those in a conversation, as ``Records.turn_times``) and the texts of
    ``texts_of`` (as ``Records.texts``; they must be among ``ids``): missing ids are absent."""
    wanted = set(texts_of)
    turns: dict[int, TurnTime] = {}
    texts: dict[int, str] = {}
    for mid, user, conversation, created_at, role, text in records.conn.execute(
        _SQL, (json.dumps(list(ids)),)
    ):
        if conversation is not None:
            turns[int(mid)] = TurnTime(user, conversation, created_at, role)
        if mid in wanted:
            texts[int(mid)] = str(text)
    return turns, texts


class _KeywordRest:
    """The keyword lane's tops of one pool, and the matches past its top when its statement read
    them all (``keywords.top_and_rest``)."""

    def __init__(self, records: Records) -> None:
        self.records = records
        self.rest: list[Scored] | None = None

    def tops(
        self, request: PoolRequest, among: Sequence[int] | None, scoring: Sequence[int] = ()
    ) -> tuple[pooling.Tops, None]:
        """The keyword lane's ``Tops`` of the request's depth (as ``Records.keyword_search``), the
        matches past its top (or those of ``scoring``, the vector top) kept in a hybrid pool where
        its statement read them; no turns read."""
        records, text, depth, scope = self.records, request.text, request.depth, request.scope
        more = REST if request.hybrid else 0
        found, self.rest = keywords.top_and_rest(
            records.conn, records.keyword_counts, text, request.filters, depth, among, scope, more, scoring
        )
        window = request.window
        inside = None if window is None else records.keyword_search(text, window, depth, among, scope)
        return (found, inside), None

    def beyond(self, missing: Sequence[int]) -> list[Scored] | None:
        """The BM25 of ``missing`` (none in the top) as ``keyword_top`` among them ranks them, when
        every match past the top, or every one of them (``scoring``), was read."""
        if self.rest is None:
            return None
        wanted = set(missing)
        return [item for item in self.rest if item[0] in wanted]


def shortcuts(records: Records) -> pooling.Shortcuts:
    """The steps of a pool the local back-end reads in fewer statements than by its primitives."""
    rest = _KeywordRest(records)
    return pooling.Shortcuts(
        keyword=rest.tops,
        turns_and_texts=functools.partial(turns_and_texts, records),
        beyond=rest.beyond,
        keyword_scoring=rest.tops,
    )
