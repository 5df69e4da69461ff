"""A PostgreSQL store whose connections are lost right after a write's COMMIT, for the tests that
show a committed write is reported stored: the store lives in a database of the test's own, which
refuses every connection (the open ones terminated) from the moment a back-end method returned until
the test lets them in again. (A lost connection is retried once for a read, so a single termination
would not be enough.)"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import postgres_server


@contextmanager
def own_database(base: str, place: Path) -> Iterator[str]:
    """A store's URL in a new database for ``place`` (dropped afterwards) on the session's server."""
    name = "lost_" + hashlib.sha1(str(place).encode()).hexdigest()[:16]
    postgres_server.psql(f"CREATE DATABASE {name}")
    address, query = base.split("?", 1)
    try:
        yield postgres_server.store_url(f"{address.rsplit('/', 1)[0]}/{name}?{query}", str(place))
    finally:
        let_in(name)
        postgres_server.psql(f"DROP DATABASE {name} WITH (FORCE)")


def database_of(url: str) -> str:
    """The database a store URL names."""
    return url.split("?", 1)[0].rsplit("/", 1)[1]


def shut_out(database: str) -> None:
    """No new connection to ``database``, and every open one terminated (waiting until gone)."""
    postgres_server.psql(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
    postgres_server.psql(
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
        f"WHERE datname = '{database}' AND pid <> pg_backend_pid()"
    )


def let_in(database: str) -> None:
    """``database`` takes connections again."""
    postgres_server.psql(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")


@contextmanager
def lost_after(backend: Any, method: str, url: str) -> Iterator[list[str]]:
    """Within the block, the connection is lost (and no new one made) right after the real
    ``backend.method`` returns — after its COMMIT; connections are let in again after the block.
    Yields the list the method's name is appended to each time it committed."""
    real: Callable[..., Any] = getattr(backend, method)
    committed: list[str] = []

    def then_lost(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        committed.append(method)
        shut_out(database_of(url))
        return result

    setattr(backend, method, then_lost)
    try:
        yield committed
    finally:
        setattr(backend, method, real)
        let_in(database_of(url))
