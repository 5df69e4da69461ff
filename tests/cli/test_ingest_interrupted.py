"""A big `remem add --jsonl` / `remem import` into a local store killed (SIGKILL, a real process) at
several points: nothing of it is visible after the kill, and running it again resumes — it embeds
only what was not staged — and ends with exactly the memories of one complete ingest."""

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
from remem.backends.local.files import STAGING_FILE

pytestmark = pytest.mark.slow  # real processes, kills or races (the slow tier)

STAGING = "remem.backends.local.staged:LocalStaging"
POINTS = kill_points(STAGING)


@pytest.mark.parametrize(("where", "after", "staged", "left"), POINTS)
def test_a_killed_ingest_shows_nothing_and_running_it_again_resumes(
    store_dir: Path, ingest_input: tuple[Path, list[str]], where: str, after: int, staged: int, left: int
) -> None:
    path, expected = ingest_input
    store = str(store_dir)
    killed = child(store, path, where=where, after=after)
    assert killed.code == -9, killed.stderr[-500:]
    assert texts_of(store) == []
    assert (store_dir / STAGING_FILE).is_file()
    again = child(store, path)
    assert again.code == 0, again.stderr[-500:]
    assert (again.resumed, again.embedded) == (staged, left), again.stderr
    assert f"Added {ADDED}, duplicates {REPEATED}, skipped 0." in again.stderr
    complete(store, expected)
    assert not (store_dir / STAGING_FILE).exists()


def test_an_ingest_killed_after_its_move_is_complete(
    store_dir: Path, ingest_input: tuple[Path, list[str]]
) -> None:
    path, expected = ingest_input
    store = str(store_dir)
    assert child(store, path, where=f"{STAGING}.discard").code == -9
    assert texts_of(store) == expected  # committed: every memory, found by search too
    again = child(store, path)
    assert (again.code, again.embedded) == (0, 0)
    assert f"Added 0, duplicates {PLAIN + TURNS}, skipped 0." in again.stderr
    complete(store, expected)
    assert not (store_dir / STAGING_FILE).exists()


def test_an_ingest_killed_before_its_index_is_written_leaves_a_whole_store_on_the_next_run(
    store_dir: Path, ingest_input: tuple[Path, list[str]]
) -> None:
    path, expected = ingest_input
    store = str(store_dir)
    killed = child(store, path, where="remem.backends.local.streamed:write_exact")  # after the commit
    assert killed.code == -9 and texts_of(store) == expected
    again = child(store, path)
    assert (again.code, again.embedded) == (0, 0)
    complete(store, expected)  # doctor: the vector index is level with the database again


def test_an_import_killed_during_its_move_resumes_without_embedding(store_dir: Path, tmp_path: Path) -> None:
    import_killed_in_its_move_resumes(str(store_dir), STAGING, tmp_path)


def test_killed_at_any_moment_it_is_all_or_nothing_and_finishes_on_the_next_run(
    store_dir: Path, ingest_input: tuple[Path, list[str]]
) -> None:
    path, expected = ingest_input
    store = str(store_dir)
    for seconds in (1.0, 2.0, 3.0, 4.5):
        killed_after(store, path, seconds)
        assert len(texts_of(store)) in (0, ADDED)
    again = child(store, path)
    assert again.code == 0 and again.embedded <= ADDED
    complete(store, expected)
