"""A write that committed is reported stored, whatever happens to the connection after the commit:
the server goes away right after an add's COMMIT (its connections terminated, no new one allowed),
and the add still returns its id — the similar-memory look-up, the turns after it, an import's links
are left undone with a note (``remem.core.afterwards``) — and the memory is there once the server
takes connections again. (A lost connection is retried once for a read, so a single termination is
not enough: the database refuses every new connection until the test lets them in again.)"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import postgres_server
import remem
from remem.testing import FakeEmbedder


@pytest.fixture
def database_url(postgres_base: str, tmp_path: Path) -> Iterator[str]:
    """A store's URL in a database of this test's own (so that it can refuse connections)."""
    name = "lost_" + hashlib.sha1(str(tmp_path).encode()).hexdigest()[:16]
    postgres_server.psql(f"CREATE DATABASE {name}")
    base, query = postgres_base.split("?", 1)
    yield postgres_server.store_url(f"{base.rsplit('/', 1)[0]}/{name}?{query}", str(tmp_path))
    _let_in(name)
    postgres_server.psql(f"DROP DATABASE {name} WITH (FORCE)")


def _shut_out(database: str) -> None:
    """No new connection to ``database``, and every open one terminated (waiting until gone)."""
    postgres_server.psql(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
    postgres_server.psql(
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
        f"WHERE datname = '{database}' AND pid <> pg_backend_pid()"
    )


def _let_in(database: str) -> None:
    postgres_server.psql(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")


@contextmanager
def lost_after(memories: remem.Memories, method: str, url: str) -> Iterator[list[str]]:
    """Within the block, the connection is lost (and no new one made) right after the back-end's
    ``method`` returns — after its COMMIT; the database lets connections in again after the block.
    Yields the names of the calls that committed."""
    backend: Any = memories.backend
    real: Callable[..., Any] = getattr(backend, method)
    database = url.split("?", 1)[0].rsplit("/", 1)[1]
    committed: list[str] = []

    def then_lost(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        committed.append(method)
        _shut_out(database)
        return result

    setattr(backend, method, then_lost)
    try:
        yield committed
    finally:
        setattr(backend, method, real)
        _let_in(database)


def _texts(url: str) -> dict[str, int]:
    with remem.open(url, embedder=FakeEmbedder()) as again:
        return {m.text: m.id for m in again.iter(include_superseded=True)}


@pytest.mark.slow
@pytest.mark.parametrize("embed", [True, False], ids=["embedded", "pending"])
def test_an_add_whose_connection_is_lost_after_the_commit_returns_its_id(
    database_url: str, embed: bool
) -> None:
    with remem.open(database_url, embedder=FakeEmbedder()) as memories:
        memories.add("the primary database listens on port 5432", conversation="ops", role="user")
        memories.add("the replica listens on port 6432", conversation="ops", role="user")
        method = "add_many" if embed else "add_pending"
        with lost_after(memories, method, database_url) as committed:
            added = memories.add(  # a turn before the stored two: the turns after it are refreshed too
                "the standby listens on port 5433",
                conversation="ops",
                role="user",
                created_at="2001-02-03T04:05:06Z",
                embed=embed,
            )
        assert committed == [method] and not added.duplicate and added.id == 3
        assert any(note.startswith("The write is stored, but ") for note in memories.notes)
    assert _texts(database_url)["the standby listens on port 5433"] == added.id


@pytest.mark.slow
def test_an_import_whose_connection_is_lost_after_the_commit_reports_what_it_added(
    database_url: str, tmp_path: Path
) -> None:
    source = tmp_path / "source"
    with remem.open(source, embedder=FakeEmbedder()) as memories:
        old = memories.add("the deploy window opens at nine").id
        memories.add("the deploy window opens at ten", supersedes=old)
        exported = list(memories.export())
    with remem.open(database_url, embedder=FakeEmbedder()) as memories:
        memories.add("a memory that makes the store")
        with lost_after(memories, "add_many", database_url) as committed:
            result = memories.import_(exported)
        assert committed == ["add_many"] and len(result.added) == 2 and result.duplicates == []
        assert any("supersede links the import carries" in note for note in memories.notes)
    stored = _texts(database_url)
    assert sorted(stored[r["text"]] for r in exported) == sorted(result.added)
