"""A store that has outgrown its exact index: under ``auto`` a local store builds HNSW only at a
reindex, so past the size where ``auto`` chooses HNSW it keeps searching every vector until one runs.

remem says so rather than switching by itself in a write: building the graph holds the writers' lock
for as long as it takes — 32 s at 50,000 vectors, 109 s at 100,000 (two cores), 741 s at a million —
and every other write waits (the retired ``bench/auto_index.py``, in git history). A write that takes the
store across that size, or across twice, four times … that size, adds the advice to the notes: a
script adding a memory at a time hears it a handful of times up to a million, not at every add.
``stats`` and ``doctor`` say it whenever it applies.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from remem.errors import StoreError

if TYPE_CHECKING:
    from remem.backends.base import Backend
    from remem.backends.shapes import IndexState


def advice(state: IndexState | None) -> str | None:
    """One line saying that the store's index is still exact though ``auto`` would build HNSW at
    its size, and the command that builds it; None when there is nothing to do (a store asked to be
    exact, or to be HNSW, or already HNSW, or below the size, or a back-end that never waits)."""
    if state is None or state.requested != "auto" or state.kind != "exact" or state.vectors < state.hnsw_from:
        return None
    return (
        f"The store holds {state.vectors:,} vectors: from {state.hnsw_from:,} up `auto` builds an HNSW "
        "index, but only at a reindex, so every search still reads every vector; `remem reindex` builds "
        "it (minutes on a big store; writes wait meanwhile)."
    )


def marks(vectors: int, first: int) -> int:
    """How many of ``first``, 2 × ``first``, 4 × ``first`` … are at most ``vectors``."""
    passed, mark = 0, max(first, 1)
    while vectors >= mark:
        passed, mark = passed + 1, mark * 2
    return passed


def crossed(before: IndexState | None, after: IndexState | None) -> str | None:
    """The advice (``advice(after)``) when the store went from ``before`` to ``after`` across the
    size where ``auto`` builds HNSW or one of its doublings; None otherwise."""
    said = advice(after)
    if said is None or after is None:
        return None
    was = 0 if before is None else marks(before.vectors, before.hnsw_from)
    return said if marks(after.vectors, after.hnsw_from) > was else None


def state_of(backend: Backend) -> IndexState | None:
    """The back-end's ``index_state()``, or None when it cannot be read (a damaged store: the write
    or the doctor says what is wrong; advice is never worth an error)."""
    try:
        return backend.index_state()
    except StoreError:
        return None


@contextlib.contextmanager
def watching(backend: Backend, notes: list[str]) -> Iterator[None]:
    """A block that writes to ``backend``: when it ends without an error, the advice is added to
    ``notes`` if the block took the store across a size where it is due (``crossed``)."""
    before = state_of(backend)
    yield
    said = crossed(before, state_of(backend))
    if said is not None:
        notes.append(said)
