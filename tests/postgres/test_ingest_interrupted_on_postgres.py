"""A big `remem add --jsonl` / `remem import` into a PostgreSQL store killed (SIGKILL, a real
process) at several points: nothing of it is visible after the kill, and running it again resumes
(embedding only what was not staged), ending with exactly the memories of one complete ingest."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest_kill import (
    ADDED,
    PLAIN,
    REPEATED,
    TURNS,
    child,
    complete,
    import_killed_in_its_move_resumes,
    kill_points,
    killed_after,
    texts_of,
)
from remem.backends.postgres.store import PostgresBackend

pytestmark = pytest.mark.slow  # real processes, kills or races (the slow tier)

STAGING = "remem.backends.postgres.staged:PostgresStaging"
POINTS = kill_points(STAGING)


def _runs(url: str) -> int:
    with PostgresBackend.open(url, create=False) as backend:
        return len(backend.staging().runs())


@pytest.mark.parametrize(("where", "after", "staged", "left"), POINTS)
def test_a_killed_ingest_shows_nothing_and_running_it_again_resumes(
    postgres_url: str, ingest_input: tuple[Path, list[str]], where: str, after: int, staged: int, left: int
) -> None:
    path, expected = ingest_input
    killed = child(postgres_url, path, where=where, after=after)
    assert killed.code == -9, killed.stderr[-500:]
    assert texts_of(postgres_url) == [] and _runs(postgres_url) == 1
    again = child(postgres_url, path)
    assert again.code == 0, again.stderr[-500:]
    assert (again.resumed, again.embedded) == (staged, left), again.stderr
    assert f"Added {ADDED}, duplicates {REPEATED}, skipped 0." in again.stderr
    complete(postgres_url, expected)
    assert _runs(postgres_url) == 0


def test_an_ingest_killed_after_its_move_is_complete(
    postgres_url: str, ingest_input: tuple[Path, list[str]]
) -> None:
    path, expected = ingest_input
    assert child(postgres_url, path, where=f"{STAGING}.discard").code == -9
    assert texts_of(postgres_url) == expected
    again = child(postgres_url, path)
    assert (again.code, again.embedded) == (0, 0)
    assert f"Added 0, duplicates {PLAIN + TURNS}, skipped 0." in again.stderr
    complete(postgres_url, expected)
    assert _runs(postgres_url) == 0


def test_an_import_killed_during_its_move_resumes_without_embedding(
    postgres_url: str, tmp_path: Path
) -> None:
    """The import rebuilds the HNSW graph in its move (it brings more vectors than the store holds):
    killed meanwhile, the store keeps its graph and shows nothing."""
    import_killed_in_its_move_resumes(postgres_url, STAGING, tmp_path)


def test_an_ingest_killed_before_the_graph_is_built_again_leaves_the_store_as_it_was(
    postgres_url: str, ingest_input: tuple[Path, list[str]]
) -> None:
    """The move of a big ingest drops the HNSW graph and builds it once at its end: killed just
    before the build, the store has its graph and none of the memories."""
    path, expected = ingest_input
    assert child(postgres_url, path, where="remem.backends.postgres.bulk:build_graph").code == -9
    assert texts_of(postgres_url) == []
    with PostgresBackend.open(postgres_url, create=False) as backend:
        checks = {check.name: check for check in backend.doctor(repair=False)[0]}
    assert checks["vector index"].ok, checks["vector index"].detail
    again = child(postgres_url, path)
    assert (again.code, again.embedded) == (0, 0), again.stderr[-500:]
    complete(postgres_url, expected)


def test_killed_at_any_moment_it_is_all_or_nothing_and_finishes_on_the_next_run(
    postgres_url: str, ingest_input: tuple[Path, list[str]]
) -> None:
    path, expected = ingest_input
    for seconds in (1.5, 3.0, 5.0, 7.0):
        killed_after(postgres_url, path, seconds)
        assert len(texts_of(postgres_url)) in (0, ADDED)
    again = child(postgres_url, path)
    assert again.code == 0 and again.embedded <= ADDED
    complete(postgres_url, expected)
