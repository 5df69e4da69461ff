"""A write that committed is reported stored, whatever happens to the connection after the commit:
the server goes away right after an add's COMMIT (``lost_connections``), and the add still returns
its id — the similar-memory look-up, the turns after it, an import's links are left undone with a
note (``remem.core.afterwards``) — and the memory is there once the server takes connections again.
So does a big ingest (the staged path, ``remem.core.staged``) whose connection is lost after its move."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import remem
from helpers import run_cli
from lost_connections import lost_after, own_database
from remem.backends.postgres.staged import PostgresStaging
from remem.core.staged import STAGE_BATCH
from remem.testing import FakeEmbedder


@pytest.fixture
def database_url(postgres_base: str, tmp_path: Path) -> Iterator[str]:
    """A store's URL in a database of this test's own (so that it can refuse connections)."""
    with own_database(postgres_base, tmp_path) as url:
        yield url


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
        with lost_after(memories.backend, method, database_url) as committed:
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
        with lost_after(memories.backend, "add_many", database_url) as committed:
            result = memories.import_(exported)
        assert committed == ["add_many"] and len(result.added) == 2 and result.duplicates == []
        assert any("supersede links the import carries" in note for note in memories.notes)
    stored = _texts(database_url)
    assert sorted(stored[r["text"]] for r in exported) == sorted(result.added)


def _big_input(path: Path) -> list[str]:
    """More entries than ``STAGE_BATCH`` (the staged path), as JSON lines: plain memories, the
    first ten repeated (duplicates of an earlier entry), one repeating a stored memory, and a turn
    that comes before the stored turns of "ops" (they are refreshed after the move)."""
    texts = [f"memory {n}: service {n % 97} deployed in {n % 13} minutes" for n in range(STAGE_BATCH + 60)]
    records: list[dict[str, str]] = [{"text": text} for text in [*texts, *texts[:10]]]
    records.append({"text": "the replica listens on port 6432", "conversation": "ops", "role": "user"})
    records.append({"text": "the standby listens on port 5433", "conversation": "ops", "role": "user",
                    "created_at": "2001-02-03T04:05:06Z"})  # fmt: skip
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return [*texts, "the standby listens on port 5433"]


@pytest.mark.slow
def test_a_big_ingest_whose_connection_is_lost_after_its_move_commits_reports_it_stored(
    database_url: str, tmp_path: Path
) -> None:
    """`remem add --jsonl` of a staged ingest: the connection is lost right after the move's commit;
    the duplicates' look-up, dropping the staged run and refreshing the turns after the new one are
    left undone with notes, the command exits 0 with the full report, and every memory is there."""
    with remem.open(database_url, embedder=FakeEmbedder()) as memories:
        memories.add("the primary database listens on port 5432", conversation="ops", role="user")
        stored = memories.add("the replica listens on port 6432", conversation="ops", role="user").id
    source = tmp_path / "big.jsonl"
    texts = _big_input(source)
    with lost_after(PostgresStaging, "move", database_url) as committed:
        outcome = run_cli(["add", "--jsonl", str(source), "--json"], database_url)  # type: ignore[arg-type]
    assert committed == ["move"] and outcome.code == 0, outcome.stderr
    report = json.loads(outcome.stdout)
    assert len(report["added"]) == len(texts) and len(report["duplicates"]) == 11
    assert report["duplicates"][-1] == stored and outcome.stderr.count("The write is stored, but ") == 3
    assert f"Added {len(texts)}, duplicates 11" in outcome.stderr
    found = _texts(database_url)
    assert sorted(found[text] for text in texts) == sorted(report["added"])
