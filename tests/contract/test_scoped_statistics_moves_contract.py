"""A long-lived store's scoped statistics stay exact while its memories change: after any mix of
adds, edits, forgets and supersedes by several users, a pinned search scores every memory as a store
opened afresh on the same data does (N, each term's holders, the mean length: bit for bit), so what
a back-end keeps from one search to the next never drifts from a fresh count. On PostgreSQL the
scores agree to 1e-9, not to the last bit (the server's float sums), so memories of equal scores may
come in another order: there they are compared rounded, in a stable order."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from remem.core.memories import Memories
from remem.embedders.catalog import ModelCatalog
from remem.testing import FakeEmbedder
from remem.types import Filters

if TYPE_CHECKING:
    from remem.backends.base import Backend

USERS = ("alice", "bob", None)
SCOPES = (
    Filters.of(user="alice", shared=True),
    Filters.of(user="bob"),
    Filters.of(user="alice", conversation="c1", shared=True),
    Filters.of(conversation="c2"),
)
WORDS = ("zebra", "giraffe", "drawer", "deploy", "review", "noon", "blue", "key", "note", "team")
QUERIES = ("zebra giraffe", "drawer key note", "team review deploy blue", "noon")


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(1, 12))) + f" n{rng.randrange(10**9)}"


def _step(store: Memories, rng: random.Random, ids: list[int]) -> None:
    """One random write: an add (sometimes superseding one), an edit or a forget, by anyone."""
    what = rng.choice(("add", "add", "supersede", "edit", "forget")) if ids else "add"
    if what in ("add", "supersede"):
        user, conversation = rng.choice(USERS), rng.choice(("c1", "c2"))
        current = [mid for mid in ids if store.get(mid).superseded_by is None]
        supersedes = rng.choice(current) if what == "supersede" and current else None
        if supersedes is not None:  # a newer version stays with its memory's user and conversation
            old = store.get(supersedes)
            user, conversation = old.user, old.conversation
        ids.append(store.add(_text(rng), user=user, conversation=conversation, supersedes=supersedes).id)
    elif what == "edit":
        store.edit(rng.choice(ids), _text(rng))
    else:
        gone = rng.choice(ids)
        store.forget([gone])
        ids.remove(gone)


def _scores(store: Memories, exact: bool) -> dict[tuple[Filters, str, str], list[tuple[object, ...]]]:
    """Every scope's hits for every query and mode: (id, score, keyword lane) bit for bit when
    ``exact``, else (score, keyword score) rounded to 1e-9 with the id, in that order."""
    found = {
        (scope, query, mode): store.search(query, k=50, mode=mode, dates=False, scope=scope)  # type: ignore[arg-type]
        for scope in SCOPES
        for query in QUERIES
        for mode in ("keyword", "hybrid")
    }
    if exact:
        return {key: [(hit.memory.id, hit.score, hit.keyword) for hit in hits] for key, hits in found.items()}
    return {
        key: sorted(
            (
                -round(hit.score, 9),
                -1.0 if hit.keyword is None else round(hit.keyword.score, 9),
                hit.memory.id,
            )
            for hit in hits
        )
        for key, hits in found.items()
    }


def test_kept_scoped_statistics_equal_a_fresh_count_after_every_write(
    open_backend: Callable[..., Backend], tmp_path: Path
) -> None:
    catalog = ModelCatalog(tmp_path / "models")
    store = Memories(open_backend(), catalog, embedder=FakeEmbedder())
    exact = type(store.backend).__name__ == "LocalBackend"
    rng, ids = random.Random(46), []
    for _ in range(12):
        _step(store, rng, ids)
    for n in range(40):
        _scores(store, exact)  # the long-lived store keeps what it counted ...
        for _ in range(rng.randint(1, 3)):
            _step(store, rng, ids)  # ... others write ...
        fresh = Memories(open_backend(), catalog, embedder=FakeEmbedder())
        assert _scores(store, exact) == _scores(fresh, exact), n  # ... and it ranks as a fresh count does
        fresh.close()
