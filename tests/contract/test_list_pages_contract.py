"""Pages of ``Memories.list`` past a position on every back-end (issue 46, finding 5): a bulk ingest
gives its whole batch one created_at, and a page past (created_at, id) must list every memory once
in a stable order, and read only its own rows through the index on (created_at, id) — at any depth,
for a position no page ever returned (that time, id 1) too, with a user pinned and the shared
memories as well."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from remem.backends.local.store import LocalBackend
from remem.core.memories import Memories
from remem.embedders.catalog import ModelCatalog
from remem.errors import InvalidInputError
from remem.testing import FakeEmbedder
from remem.types import Filters, Memory, NewMemory

if TYPE_CHECKING:
    from remem.backends.base import Backend

#: The one created_at of a bulk ingest's batch.
BATCH = "2026-05-01T12:00:00.000Z"
#: How many memories share it (more than a page's worth many times over).
SHARED_TIME = 1500
#: Memories of their own, older times, after the batch in the list.
OLDER = 12
USERS = ("alice", None, "bob")


@pytest.fixture
def memories(backend: Backend, tmp_path: Path) -> Memories:
    """A store of one bulk batch (users alice, none and bob in turn) and a few older memories."""
    store = Memories(backend, ModelCatalog(tmp_path / "models"), embedder=FakeEmbedder())
    batch = [NewMemory(f"batch {n}", user=USERS[n % 3], created_at=BATCH) for n in range(SHARED_TIME)]
    older = [
        NewMemory(f"older {n}", user=USERS[n % 3], created_at=f"2026-04-{n + 1:02d}T00:00:00.000Z")
        for n in range(OLDER)
    ]
    store.add_many([*older[:5], *batch, *older[5:]])
    return store


def _pages(store: Memories, limit: int, **filters: Any) -> Iterator[list[Memory]]:
    after = None
    while page := store.list(limit=limit, after=after, **filters):
        yield page
        after = (page[-1].created_at, page[-1].id)


def _expected(store: Memories, **filters: Any) -> list[int]:
    everything = list(store.iter(**filters))
    return [m.id for m in sorted(everything, key=lambda m: (m.created_at, m.id), reverse=True)]


@pytest.mark.parametrize("filters", [{}, {"user": "alice"}, {"user": "alice", "shared": True}])
def test_pages_past_a_shared_created_at_list_every_memory_once_in_order(
    memories: Memories, filters: dict[str, Any]
) -> None:
    pages = list(_pages(memories, 97, **filters))
    listed = [m.id for page in pages for m in page]
    assert listed == _expected(memories, **filters)
    assert all(len(page) == 97 for page in pages[:-1])


def test_a_position_past_the_end_or_before_the_start(memories: Memories) -> None:
    assert [m.id for m in memories.list(limit=50, after=(BATCH, 1))] == _expected(memories)[-OLDER:]
    assert [m.id for m in memories.list(limit=3, after=("2026-04-06", 1))] == _expected(memories)[-5:-2]
    assert memories.list(limit=2, after=("9999", 1)) == memories.list(limit=2)
    assert memories.list(after=("2026-04-01T00:00:00.000Z", 1)) == []


def _plans_local(store: LocalBackend, run: Any) -> list[str]:
    """What SQLite's plan of each statement ``run`` makes says about the memories table ``m``."""
    conn = store.records.conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    (listing,) = [sql for sql in statements if "ORDER BY m.created_at DESC" in sql]
    return [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {listing}") if " m " in f"{row[3]} "]


def _scans_postgres(store: Any, filters: Filters, after: tuple[str, int] | None) -> list[dict[str, Any]]:
    """The plan nodes (EXPLAIN ANALYZE) that read the memories table for a page past ``after``."""
    from remem.backends.postgres import records

    class Explaining:  # the real query, run under EXPLAIN ANALYZE
        def __init__(self, cursor: Any) -> None:
            self.cursor, self.plan = cursor, None

        def execute(self, sql: str, params: Any) -> None:
            self.cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
            self.plan = self.cursor.fetchone()[0]

        def fetchall(self) -> list[Any]:
            return []

    with store.session.transaction() as cursor:
        cursor.execute(f"ANALYZE {store.s}.memories")
        explaining = Explaining(cursor)
        records.newest(explaining, store.s, filters, 20, after)  # type: ignore[arg-type]
    nodes, found = [json.loads(json.dumps(explaining.plan))[0]["Plan"]], []
    while nodes:
        node = nodes.pop()
        nodes.extend(node.get("Plans", []))
        if node.get("Relation Name") == "memories":
            found.append(node)
    return found


@pytest.mark.parametrize("filters", [{}, {"user": "alice"}, {"user": "alice", "shared": True}])
@pytest.mark.parametrize("forged", [(BATCH, 1 + SHARED_TIME // 2), (BATCH, 1), None])
def test_a_page_past_a_made_up_position_reads_only_its_rows(
    memories: Memories, filters: dict[str, Any], forged: tuple[str, int] | None
) -> None:
    where, store = Filters.of(**filters), memories.backend
    if isinstance(store, LocalBackend):
        plans = _plans_local(store, lambda: memories.list(limit=20, where=where, after=forged))
        index = "memories_user (user=?" if filters else "memories_created ("
        place = " AND created_at=? AND id<?)" if filters else "created_at=? AND id<?)"
        wanted = f"SEARCH m USING INDEX {index}{place if forged else ')'}"
        assert wanted in plans or (
            not filters and not forged and "SCAN m USING INDEX memories_created" in plans
        )
        assert not [plan for plan in plans if plan.startswith("SCAN m") and "USING INDEX" not in plan], plans
        assert not [plan for plan in plans if "MULTI-INDEX OR" in plan], plans
        return
    scans = _scans_postgres(store, where, forged)  # the planner picks the index; each scan stops early
    shown = [
        (n["Node Type"], n.get("Index Name"), n["Actual Rows"], n.get("Rows Removed by Filter"))
        for n in scans
    ]
    assert not [scan for scan in scans if scan["Node Type"] == "Seq Scan"], shown
    read = sum(scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0) for scan in scans)
    # About a page a branch (a third of the batch is alice's, a third the team's), never the 500 to
    # 750 memories past the position.
    assert read <= 6 * 21, shown


def test_a_bad_position_is_refused(memories: Memories) -> None:
    for bad in ((BATCH, 0), (BATCH, 2**63), ("2026\x00", 5)):
        with pytest.raises(InvalidInputError, match="after must be a memory's"):
            memories.list(after=bad)
    for wrong in ([BATCH, 5], (BATCH,), (BATCH, "5"), (5, 5), (BATCH, True)):
        with pytest.raises(TypeError):
            memories.list(after=wrong)  # type: ignore[arg-type]
