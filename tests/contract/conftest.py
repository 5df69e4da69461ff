"""The back-ends the contract suite runs against.

Every test in ``tests/contract`` takes the ``backend`` fixture and runs once per name in
``BACKENDS``. To put a new back-end under the contract, add an opener to ``OPENERS`` (it must give a
new, empty store for each call with a new ``place``, and the same store again for the same
``place``) and its name to ``BACKENDS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from remem.backends.local import LocalBackend

if TYPE_CHECKING:
    from remem.backends.base import Backend

#: Opens the store kept at ``place`` (a test's own directory), creating it if needed.
Opener = Callable[[Path], "Backend"]


def _open_local(place: Path) -> Backend:
    return LocalBackend.open(place / "store", create=True)


def _open_postgres(place: Path) -> Backend:
    import postgres_server
    from remem.backends.postgres.store import PostgresBackend

    return PostgresBackend.open(
        postgres_server.store_url(postgres_server.start(place), str(place)), create=True
    )


OPENERS: dict[str, Opener] = {"local": _open_local, "postgres": _open_postgres}
BACKENDS = ["local", "postgres"]


@pytest.fixture(params=BACKENDS)
def open_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Backend]]:
    """Opens this test's store (new and empty at first; the same store on every call), or with a
    name another store of the same back-end (for moving memories between stores); every back-end
    it opened is closed after the test. PostgreSQL runs on the session's server."""
    if request.param == "postgres":
        request.getfixturevalue("postgres_base")
    opener = OPENERS[request.param]
    opened: list[Backend] = []

    def open_again(name: str = "") -> Backend:
        backend = opener(tmp_path / name if name else tmp_path)
        opened.append(backend)
        return backend

    yield open_again
    for backend in reversed(opened):
        backend.close()


@pytest.fixture
def backend(open_backend: Callable[..., Backend]) -> Backend:
    """A new, empty store of each back-end under contract."""
    return open_backend()
