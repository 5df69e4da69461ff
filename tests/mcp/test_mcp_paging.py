"""memory_list's cursor (issue 24, finding 8): any string a client sends as a cursor is either a
position a page can start from or the tool error "cursor is not a next_cursor from memory_list" —
never an OverflowError, a UnicodeError or "Error executing tool"."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp_support import call, fail, memories, run, server

import remem
from remem import NewMemory
from remem.errors import InvalidInputError
from remem.mcp import paging
from remem.times import utc_iso

NOT_A_CURSOR = "cursor is not a next_cursor from memory_list"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _json_cursor(value: object) -> str:
    return _b64(json.dumps(value).encode())  # floats as Infinity/NaN/1e+300 too


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=2),
    max_leaves=6,
)
TIMES = st.datetimes(timezones=st.none() | st.just(timezone.utc)).map(lambda moment: moment.isoformat())
PART = st.one_of(JSON, TIMES, st.integers(min_value=-(2**70), max_value=2**70))
CURSORS = st.one_of(
    st.text(),
    st.binary().map(_b64),
    JSON.map(_json_cursor),
    st.tuples(PART, PART, PART).map(lambda triple: _json_cursor(list(triple))),
    st.tuples(TIMES, st.integers(), st.integers()).map(lambda triple: _json_cursor(list(triple))),
    st.just(_b64(b'["x",1e400,0]')),
    st.just(_b64(b'["9999-12-31T23:59:59.999Z",1,0]')),
)


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[remem.Memories]:
    from remem.testing import FakeEmbedder

    store = remem.open(tmp_path_factory.mktemp("paging") / "store", embedder=FakeEmbedder())
    store.add_many([NewMemory(f"memory {i}", created_at=f"2026-01-0{i + 1}T00:00:00Z") for i in range(5)])
    yield store
    store.close()


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cursor=CURSORS)
def test_any_string_is_a_position_or_the_cursor_error(small_store: remem.Memories, cursor: str) -> None:
    try:
        position = paging.Position.decode(cursor)
    except InvalidInputError as exc:
        assert str(exc) == NOT_A_CURSOR
        return
    shown, following = paging.page(small_store, remem.Filters(), 2, cursor)  # and a page starts there
    assert all((memory.created_at, memory.id) < (position.created_at, position.id) for memory in shown)
    assert following is None or paging.Position.decode(following).created_at


@given(
    moment=st.datetimes(timezones=st.just(timezone.utc)),
    memory_id=st.integers(min_value=1, max_value=2**63 - 1),
)
def test_every_cursor_of_memory_list_reads_back_as_itself(moment: datetime, memory_id: int) -> None:
    position = paging.Position(utc_iso(moment), memory_id)
    assert paging.Position.decode(position.encode()) == position


def test_a_forged_cursor_is_the_cursor_error_through_the_client(store_dir: Path) -> None:
    with memories(store_dir) as other:
        other.add("a memory to list")
    app = server(store_dir)
    forged = [
        b'["x",1e400,0]',
        b'["x",1,0]',
        b'["\\ud800",1,0]',
        b'["2026-01-01",1.5,0]',
        b'["2026-01-01"]',
        b'["2026-01-01",1,0,0]',
        b'["2026-01-01",1,-1]',
        b'["2026-01-01T00:00:00Z",1,0]',  # a cursor of a pre-release remem, which counted ties
    ]

    async def scenario() -> None:
        async with Client(app) as client:
            for raw in forged:
                assert await fail(client, "memory_list", {"cursor": _b64(raw)}) == NOT_A_CURSOR, raw
            end_of_time = _b64(b'["9999-12-31T23:59:59.999-05:00",9]')  # a position (then overflowed)
            assert len((await call(client, "memory_list", {"cursor": end_of_time}))["memories"]) == 1

    run(scenario)


def test_memory_list_pages_through_a_bulk_batch_of_one_created_at(store_dir: Path) -> None:
    """Issue 46, finding 5: a bulk ingest's batch shares one created_at; memory_list lists each of
    its memories once, newest first (the higher id first), and a cursor made up for that time and
    id 1 is the end of the list, read at once."""
    batch = "2026-05-01T12:00:00.000Z"
    with memories(store_dir) as other:
        other.add_many([NewMemory(f"batch {n}", created_at=batch) for n in range(230)])
        expected = [m.id for m in sorted(other.iter(), key=lambda m: m.id, reverse=True)]
    app = server(store_dir)

    async def scenario() -> None:
        async with Client(app) as client:
            listed, cursor = [], None
            while True:
                arguments = {"limit": 17} if cursor is None else {"limit": 17, "cursor": cursor}
                page = await call(client, "memory_list", arguments)
                listed += [m["id"] for m in page["memories"]]
                if (cursor := page["next_cursor"]) is None:
                    break
            assert listed == expected
            forged = _json_cursor([batch, 1])
            nothing = {"memories": [], "next_cursor": None}
            assert await call(client, "memory_list", {"cursor": forged}) == nothing

    run(scenario)
