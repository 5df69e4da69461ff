"""Integration tests drive the real CLI with the real bundled model."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark everything under tests/integration as an integration test."""
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(params=["local", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new store of either back-end: a local directory that does not exist yet, or the URL of an
    empty PostgreSQL store (on the session's server). A test module may define its own."""
    if request.param == "local":
        return str(tmp_path / "store")
    url: str = request.getfixturevalue("postgres_url")
    return url
