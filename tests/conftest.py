"""Fixtures shared by unit and integration tests."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    """A path for a store that does not exist yet."""
    return tmp_path / "store"


@pytest.fixture(params=["local", "postgres"])
def either_store(request: pytest.FixtureRequest, store_dir: Path) -> Path | str:
    """A new store of each back-end: a local directory, then a PostgreSQL URL (real server)."""
    if request.param == "local":
        return store_dir
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture(scope="session")
def session_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One model cache for the whole run: the bundled model's int8 variant is built (through the
    real code path) by the first test that makes a store with the real model, and reused after."""
    return tmp_path_factory.mktemp("session-models")


@pytest.fixture(autouse=True)
def _no_ambient_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, session_models: Path) -> None:
    """Never let a test touch the developer's real store or model cache, or the network.

    REMEM_HOME points into tmp_path and REMEM_MODELS to the run's own cache (a test that needs an
    empty one sets its own); downloads go to a closed local port unless a test starts its own
    stand-in hub.
    """
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "ambient-home"))
    monkeypatch.setenv("REMEM_MODELS", str(session_models))
    monkeypatch.setenv("REMEM_HF_ENDPOINT", "http://127.0.0.1:9")
    for name in ("REMEM_DEBUG", "REMEM_MODEL_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def varied(store_dir: Path) -> Path:
    """A store with CSV-hostile texts, two conversations, a forgotten id and an edited memory."""
    from helpers import run_cli

    data = "\n".join(
        json.dumps(record)
        for record in [
            {"text": '=HYPERLINK("http://evil")', "conversation": "c1", "tags": ["csv"]},
            {"text": "+1 for the plan; -2 for the cost", "conversation": "c2", "meta": {"a": "@b"}},
            {"text": 'multi\nline, with "quotes"', "conversation": "c1", "user": "ann", "role": "user"},
            {"text": "no conversation at all", "created_at": "2024-01-01T00:00:00Z"},
        ]
    )
    assert run_cli(["add", "--jsonl", "-"], store_dir, stdin=data.encode()).code == 0
    assert run_cli(["forget", "2"], store_dir).code == 0  # a gap in the ids
    assert run_cli(["edit", "3", 'multi\nline, with "quotes" (edited)'], store_dir).code == 0
    return store_dir


@pytest.fixture(scope="session")
def postgres_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a real PostgreSQL + pgvector server for this test session."""
    pytest.importorskip("psycopg")
    import postgres_server

    try:
        yield postgres_server.start(tmp_path_factory.mktemp("pgdata"))
    finally:
        postgres_server.stop()


@pytest.fixture
def postgres_url(postgres_base: str, tmp_path: Path) -> str:
    """A URL of a new, empty PostgreSQL store (a schema of its own) for this test."""
    import postgres_server

    return postgres_server.store_url(postgres_base, str(tmp_path))


@pytest.fixture
def ingest_input(tmp_path: Path) -> tuple[Path, list[str]]:
    """The input of the interrupted-ingest tests (``ingest_kill.write_input``) and the texts it stores."""
    from ingest_kill import write_input

    path = tmp_path / "input.jsonl"
    return path, write_input(path)
