"""Bad input gets one clear error line, exit 2, and changes nothing; damage is handled."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import remem
from helpers import run_cli
from remem.backends.local.files import DB_FILE, INDEX_FILE


@pytest.fixture
def seeded(store_dir: Path) -> Path:
    assert run_cli(["add", "--tag", "db", "Postgres 16 runs on the main box"], store_dir).code == 0
    assert run_cli(["add", "The login sequence uses short-lived JWTs."], store_dir).code == 0
    return store_dir


def _snapshot(store: Path) -> str:
    return run_cli(["export"], store).stdout


BAD_INPUTS = [
    (["add", ""], None, "memory text is empty"),
    (["add", "  ", "\t"], None, "memory text is empty"),
    (["add", "-"], b"   \n\n", "memory text is empty"),
    (["add", "-"], b"caf\xe9 latin-1", "stdin is not valid UTF-8"),
    (["add", "--meta", "novalue", "text"], None, "is not key=value"),
    (["add", "--meta", "=v", "text"], None, "empty key"),
    (["add", "--user", " ", "text"], None, "--user must not be empty"),
    (["add", "--tag", "", "text"], None, "--tag must not be empty"),
    (["search", "-k", "0", "x"], None, "--limit"),
    (["search", "-k", "-3", "x"], None, "--limit"),
    (["search", "--min-score", "1.5", "x"], None, "--min-score must be between 0 and 1"),
    (["search", "--min-score", "-1.01", "x"], None, "--min-score must be between 0 and 1"),
    (["search", "--min-score", "nan", "x"], None, "--min-score must be between 0 and 1"),
    (["search", ""], None, "query is empty"),
    (["list", "--limit", "0"], None, "--limit"),
    (["add", "--no-such-option", "x"], None, "No such option"),
]


@pytest.mark.parametrize(("args", "stdin", "message"), BAD_INPUTS)
def test_bad_input_is_one_error_line_exit_2_and_changes_nothing(
    seeded: Path, args: list[str], stdin: bytes | None, message: str
) -> None:
    before = _snapshot(seeded)
    result = run_cli(args, seeded, stdin=stdin)
    assert result.code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr
    assert _snapshot(seeded) == before


def test_bad_input_does_not_create_a_store(store_dir: Path) -> None:
    assert run_cli(["add", ""], store_dir).code == 2
    assert not store_dir.exists()


def test_store_path_that_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("not a dir")
    result = run_cli(["add", "hello"], path)
    assert result.code == 2
    assert result.stderr == f"Error: store path {path} exists and is not a directory\n"


def test_unwritable_store_location() -> None:
    result = run_cli(["add", "hello"], Path("/proc/remem-cannot-exist/store"))
    assert result.code == 2
    assert result.stderr.startswith("Error: cannot use store directory /proc/remem-cannot-exist/store")


def test_new_store_is_private(store_dir: Path) -> None:
    assert run_cli(["add", "a private note"], store_dir).code == 0
    assert store_dir.stat().st_mode & 0o777 == 0o700
    for name in (DB_FILE, INDEX_FILE):
        assert (store_dir / name).stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("damage", ["delete", "truncate", "zero", "garbage"])
def test_a_damaged_index_file_is_rebuilt_with_a_warning(seeded: Path, damage: str) -> None:
    index = seeded / INDEX_FILE
    size = index.stat().st_size
    if damage == "delete":
        index.unlink()
    elif damage == "truncate":
        index.write_bytes(index.read_bytes()[: size // 2])
    elif damage == "zero":
        index.write_bytes(bytes(size))
    else:
        index.write_bytes(b"definitely not faiss" * 10)
    result = run_cli(["search", "--json", "-k", "1", "which database runs on the box"], seeded)
    assert result.code == 0
    assert '"text":"Postgres 16 runs on the main box"' in result.stdout
    assert result.stderr.startswith("Warning: ") and "rebuilt it from" in result.stderr
    again = run_cli(["search", "database"], seeded)
    assert (again.code, again.stderr) == (0, "")  # the repaired file was saved


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_database_is_a_clear_error_naming_the_file(seeded: Path, damage: str) -> None:
    db = seeded / DB_FILE
    with sqlite3.connect(db) as conn:  # fold the WAL in so the main file holds everything
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    if damage == "garbage":
        db.write_bytes(b"this is not sqlite at all" * 100)
    else:
        db.write_bytes(db.read_bytes()[:100])
    for name in ("-wal", "-shm"):
        Path(str(db) + name).unlink(missing_ok=True)
    for args in (["list"], ["search", "x"], ["add", "y"], ["export"]):
        result = run_cli(args, seeded)
        assert result.code == 2, (args, result)
        assert result.stderr.startswith(f"Error: {db} is not a usable remem database")
        assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["list"], 1),
        (["search", "anything"], 1),
        (["context", "anything"], 1),
        (["stats"], 1),
        (["forget", "1"], 1),
        (["reindex"], 1),
        (["doctor"], 2),
    ],
)
def test_a_missing_store_is_said_not_silent(store_dir: Path, args: list[str], code: int) -> None:
    """Issue 15 #4: reading a store that does not exist says so on stderr (exit 1, doctor 2), and
    how to create it (issue 26 #6)."""
    result = run_cli(args, store_dir)
    assert (result.code, result.stdout) == (code, "")
    assert result.stderr.splitlines()[0] == (
        f"No remem store at {store_dir} — `remem add --store {store_dir} TEXT` creates it"
    )
    assert not store_dir.exists()


def test_export_of_a_missing_store_is_an_error_and_leaves_the_output_alone(
    store_dir: Path, tmp_path: Path
) -> None:
    """Issue 15 #5: a typo in $REMEM_HOME must not replace yesterday's backup with an empty file."""
    backup = tmp_path / "backup.jsonl"
    backup.write_text("yesterday's memories\n")
    for args in (["export"], ["export", "-o", str(backup)], ["export", "-f", "csv", "-o", str(backup)]):
        result = run_cli(args, store_dir)
        assert (result.code, result.stdout) == (2, "")
        assert result.stderr == (
            f"Error: no remem store at {store_dir} — `remem add --store {store_dir} TEXT` creates it\n"
        )
    assert backup.read_text() == "yesterday's memories\n"
    assert not store_dir.exists()


def test_long_text_is_stored_whole_without_a_warning(store_dir: Path) -> None:
    text = " ".join(f"word{i}" for i in range(400))
    result = run_cli(["add", text], store_dir)
    assert result.code == 0
    assert "Warning" not in result.stderr
    assert json.loads(run_cli(["export"], store_dir).stdout)["text"] == text


def test_an_unexpected_exception_never_shows_its_message(two: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise ValueError("the secret text of a memory")

    monkeypatch.setattr(remem.Memories, "list", boom)
    result = run_cli(["list"], two)
    assert result.code == 2 and "secret" not in result.stderr
    assert result.stderr == "Error: unexpected ValueError (set REMEM_DEBUG=1 for a traceback)\n"
