"""A big `remem import --from chatgpt` killed (SIGKILL, a real process) while staging and while
embedding, on a local store and on PostgreSQL: nothing of it is visible after the kill, and running
it again resumes (keeps what was staged and embedded) and ends with exactly the turns of one
complete import, as `add --jsonl` does (tests/integration/test_interrupted_ingest.py; the child is
tests/ingest_kill.py's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import helpers
from ingest_kill import BATCH, child, complete, staged_runs, staging_of, texts_of
from remem.testing import FakeEmbedder, write_chatgpt_export

pytestmark = pytest.mark.slow  # real processes and kills (the slow tier)


@pytest.fixture(autouse=True)
def _fake_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process CLI runs (export, doctor) embed with a FakeEmbedder, as the children do."""
    monkeypatch.setitem(helpers.CLI, "embedder", FakeEmbedder())


def _export(tmp_path: Path) -> tuple[Path, list[str]]:
    """A ChatGPT export of a little more than three staged batches, and its texts in order."""
    path = tmp_path / "conversations.json"
    write_chatgpt_export(path, 3 * BATCH + 100)
    texts = [
        node["message"]["content"]["parts"][0]
        for conversation in json.loads(path.read_text(encoding="utf-8"))
        for node in conversation["mapping"].values()
        if node.get("message")
    ]
    return path, texts


@pytest.mark.parametrize(("method", "after"), [("put", 2), ("set_vectors", 1)])
def test_a_killed_chat_import_shows_nothing_and_running_it_again_resumes(
    store: str, tmp_path: Path, method: str, after: int
) -> None:
    path, texts = _export(tmp_path)
    killed = child(store, path, "chatgpt", where=f"{staging_of(store)}.{method}", after=after)
    assert killed.code == -9, killed.stderr[-500:]
    assert texts_of(store) == [] and staged_runs(store) == 1
    again = child(store, path, "chatgpt")
    assert again.code == 0, again.stderr[-500:]
    assert f"Imported from chatgpt: {len(texts):,} new, 0 already there" in again.stderr
    assert again.resumed == (2 * BATCH if method == "put" else len(texts)), again.stderr
    if method == "set_vectors":  # the turns embedded before the kill are not embedded again
        assert 0 < again.embedded < len(texts), again.stderr
    complete(store, texts)
    assert staged_runs(store) == 0
    repeated = child(store, path, "chatgpt")
    assert f"Imported from chatgpt: 0 new, {len(texts):,} already there" in repeated.stderr
    assert repeated.embedded == 0
