"""What the local back-end reads of a hybrid pool's memories in one statement where its primitives
take two (``pooling.Shortcuts``): their turns (``Records.turn_times``) and the texts the search
asks for (``Records.texts``), one look-up of each memory's row instead of two. On the 10k bench
store (``bench/search.py``; 170 pooled memories, their texts asked for the query's word order) the
two took 0.9-1.1 ms of CPU and the one 0.55-0.7 ms.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from remem.backends import pooling
from remem.backends.base import TurnTime

if TYPE_CHECKING:
    from remem.backends.local.records import Records

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


def shortcuts(records: Records) -> pooling.Shortcuts:
    """The steps of a pool the local back-end reads in fewer statements than by its primitives."""
    return pooling.Shortcuts(turns_and_texts=functools.partial(turns_and_texts, records))
