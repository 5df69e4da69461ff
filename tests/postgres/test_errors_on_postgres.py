"""PostgreSQL's errors become remem's by what they mean: only a connection that is gone says "lost the
connection"; a limit of PostgreSQL is the caller's InvalidInputError; a lock wait that gave up, a
closed store, each says what happened (real errors from a real server)."""

from __future__ import annotations

import psycopg
import pytest

import remem
from remem.backends.postgres.connecting import connect, remem_error
from remem.backends.postgres.rows import one_row, one_value
from remem.backends.postgres.urls import parse
from remem.errors import InvalidInputError, StoreError
from remem.testing import FakeEmbedder


def _raised(conn: psycopg.Connection, sql: str) -> psycopg.Error:  # type: ignore[type-arg]
    with pytest.raises(psycopg.Error) as raised:
        conn.execute(sql)
    return raised.value


def test_a_lock_wait_that_gives_up_is_not_a_lost_connection(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = postgres_url
    monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=100")  # read by libpq
    with remem.open(url, embedder=FakeEmbedder(), environ={}) as memories:
        memories.add("the store exists")
        schema = parse(url).schema
        with psycopg.connect(parse(url).conninfo) as other, other.transaction():
            other.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"remem-store:{schema}",))
            with pytest.raises(StoreError) as refused:
                memories.add("waits for the store's lock")
        message = str(refused.value)
        assert "lock timeout" in message and "connection" not in message
        assert [m.text for m in memories.list()] == ["the store exists"]  # it still works


def test_each_error_says_what_happened(postgres_url: str) -> None:
    url = parse(postgres_url)
    with connect(url) as conn:
        limit = remem_error(
            _raised(conn, "SELECT ('''' || repeat('x', 3000) || '''')::tsvector"), conn, url.shown
        )
        assert isinstance(limit, InvalidInputError) and "connection" not in str(limit)
        assert "word is too long" in str(limit)
        missing = remem_error(_raised(conn, "SELECT * FROM no_such_table"), conn, url.shown)
        assert type(missing) is StoreError and str(missing).startswith(f"{url.shown}: relation")
        with connect(url) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        lost = remem_error(_raised(conn, "SELECT 1"), conn, url.shown)
        assert str(lost).startswith(f"lost the connection to {url.shown}: ")
    conn = connect(url)
    conn.close()
    closed = remem_error(_raised(conn, "SELECT 1"), conn, url.shown)
    assert str(closed).startswith(f"the store at {url.shown} was closed")


def test_a_statement_that_returns_no_row_is_a_store_error(postgres_url: str) -> None:

    with psycopg.connect(parse(postgres_url).conninfo) as conn, conn.cursor() as cursor:
        cursor.execute("SELECT 7, 'x'")
        assert one_row(cursor) == (7, "x")
        cursor.execute("SELECT 8")
        assert one_value(cursor) == 8
        cursor.execute("SELECT 1 WHERE false")
        with pytest.raises(StoreError, match="no row"):
            one_value(cursor)
