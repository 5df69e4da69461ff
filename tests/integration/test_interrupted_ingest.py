"""A big `remem add --jsonl` / `remem import` killed (SIGKILL, a real process) at several points, on
a local store and on PostgreSQL: nothing of it is visible after the kill, and running it again
resumes — it embeds only what was not staged — and ends with exactly the memories of one complete
ingest. The child and its input are in tests/ingest_kill.py; the child embeds with the fake
embedder, and so do this file's in-process CLI runs (export, doctor).

Each scenario runs on both back-ends (the ``store`` fixture); what only one back-end has is tested
on it alone: the local vector index file written after the commit, PostgreSQL's HNSW graph rebuilt
at the end of a big move."""

from __future__ import annotations

from pathlib import Path

import pytest

import helpers
from ingest_kill import (
    ADDED,
    KILL_POINTS,
    PLAIN,
    REPEATED,
    TURNS,
    child,
    complete,
    killed_after,
    kind_of,
    staged_runs,
    staging_of,
    texts_of,
    write_input,
)
from remem.testing import FakeEmbedder

pytestmark = pytest.mark.slow  # real processes, kills or races (the slow tier)

#: When the kill-at-any-moment test kills its children (seconds after the start), spread over each
#: back-end's ingest of the input (longer on PostgreSQL). Four kills, kept: a kill at a moment no
#: chosen point named caught one in CI between the move's commit and the local index file (67b6d06).
MOMENTS = {"local": (1.0, 2.0, 3.0, 4.5), "postgres": (1.5, 3.0, 5.0, 7.0)}


@pytest.fixture(autouse=True)
def _fake_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process CLI runs embed with a FakeEmbedder, as the children do."""
    monkeypatch.setitem(helpers.CLI, "embedder", FakeEmbedder())


@pytest.mark.parametrize(("method", "after", "staged", "left"), KILL_POINTS)
def test_a_killed_ingest_shows_nothing_and_running_it_again_resumes(
    store: str, ingest_input: tuple[Path, list[str]], method: str, after: int, staged: int, left: int
) -> None:
    path, expected = ingest_input
    killed = child(store, path, where=f"{staging_of(store)}.{method}", after=after)
    assert killed.code == -9, killed.stderr[-500:]
    assert texts_of(store) == [] and staged_runs(store) == 1
    again = child(store, path)
    assert again.code == 0, again.stderr[-500:]
    assert (again.resumed, again.embedded) == (staged, left), again.stderr
    assert f"Added {ADDED}, duplicates {REPEATED}, skipped 0." in again.stderr
    complete(store, expected)
    assert staged_runs(store) == 0


def test_an_ingest_killed_after_its_move_is_complete(
    store: str, ingest_input: tuple[Path, list[str]]
) -> None:
    path, expected = ingest_input
    assert child(store, path, where=f"{staging_of(store)}.discard").code == -9
    assert texts_of(store) == expected  # committed: every memory, found by search too
    again = child(store, path)
    assert (again.code, again.embedded) == (0, 0)
    assert f"Added 0, duplicates {PLAIN + TURNS}, skipped 0." in again.stderr
    complete(store, expected)
    assert staged_runs(store) == 0


def test_an_import_killed_during_its_move_resumes_without_embedding(store: str, tmp_path: Path) -> None:
    """An import of an export carrying vectors, killed during its move (the staging's
    ``_fresh_rows``, at its fourth call): nothing shows, and running it again embeds nothing and ends
    complete. On PostgreSQL the import rebuilds the HNSW graph in its move (it brings more vectors
    than the store holds): killed meanwhile, the store keeps its graph and shows nothing."""
    path = tmp_path / "export.jsonl"
    expected = write_input(path, vectors=True)
    assert child(store, path, "import", f"{staging_of(store)}._fresh_rows", 3).code == -9
    assert texts_of(store) == []
    again = child(store, path, "import")
    assert (again.code, again.resumed, again.embedded) == (0, PLAIN + TURNS, 0), again.stderr
    assert f"Added {ADDED}, duplicates {REPEATED}, skipped 0, {ADDED} vectors reused." in again.stderr
    complete(store, expected)


def test_killed_at_any_moment_it_is_all_or_nothing_and_finishes_on_the_next_run(
    store: str, ingest_input: tuple[Path, list[str]]
) -> None:
    path, expected = ingest_input
    for seconds in MOMENTS[kind_of(store)]:
        killed_after(store, path, seconds)
        assert len(texts_of(store)) in (0, ADDED)
    again = child(store, path)
    assert again.code == 0 and again.embedded <= ADDED
    complete(store, expected)


def test_a_local_ingest_killed_before_its_index_is_written_leaves_a_whole_store_on_the_next_run(
    store_dir: Path, ingest_input: tuple[Path, list[str]]
) -> None:
    """Local only: the vector index file is written after the database's commit."""
    path, expected = ingest_input
    store = str(store_dir)
    killed = child(store, path, where="remem.backends.local.streamed:write_exact")  # after the commit
    assert killed.code == -9 and texts_of(store) == expected
    again = child(store, path)
    assert (again.code, again.embedded) == (0, 0)
    complete(store, expected)  # doctor: the vector index is level with the database again


def test_a_postgres_ingest_killed_before_the_graph_is_built_again_leaves_the_store_as_it_was(
    postgres_url: str, ingest_input: tuple[Path, list[str]]
) -> None:
    """PostgreSQL only: the move of a big ingest drops the HNSW graph and builds it once at its end:
    killed just before the build, the store has its graph and none of the memories."""
    from remem.backends.postgres.store import PostgresBackend

    path, expected = ingest_input
    assert child(postgres_url, path, where="remem.backends.postgres.bulk:build_graph").code == -9
    assert texts_of(postgres_url) == []
    with PostgresBackend.open(postgres_url, create=False) as backend:
        checks = {check.name: check for check in backend.doctor(repair=False)[0]}
    assert checks["vector index"].ok, checks["vector index"].detail
    again = child(postgres_url, path)
    assert (again.code, again.embedded) == (0, 0), again.stderr[-500:]
    complete(postgres_url, expected)
