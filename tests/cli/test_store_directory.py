"""A store directory holds remem's files only as far as remem is concerned (issue 15 #6, #21): other
files in it are never removed or chmodded, a store is not created among them, and remem's own
files (and a directory that is remem's alone) are kept private."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from helpers import run_cli
from remem.backends.local.files import DB_FILE, MARKER_FILE


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def legacy_in_shared_dir(tmp_path: Path) -> Path:
    """A store made in a directory that also holds the user's files (as `--store .` did), from
    before the marker existed."""
    shared = tmp_path / "home"
    assert run_cli(["add", "the kitchen sink leaks"], shared).code == 0
    (shared / MARKER_FILE).unlink()
    (shared / "notes.txt").write_text("mine")
    (shared / ".editor.swp.tmp").write_text("mine too")
    (shared / ".vectors.faiss.tmp").write_text("not remem's pattern")
    os.chmod(shared / "notes.txt", 0o644)
    os.chmod(shared / ".editor.swp.tmp", 0o664)
    os.chmod(shared, 0o755)
    return shared


def test_a_new_store_gets_a_marker(store_dir: Path) -> None:
    assert run_cli(["add", "hello"], store_dir).code == 0
    assert (store_dir / MARKER_FILE).is_file() and _mode(store_dir / MARKER_FILE) == 0o600


def test_no_store_is_created_in_a_directory_of_other_files(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "README").write_text("x")
    result = run_cli(["add", "hello"], tmp_path / "project")
    assert result.code == 2 and "holds other files and is not a remem store" in result.stderr
    assert sorted(p.name for p in (tmp_path / "project").iterdir()) == ["README"]


def test_a_store_is_created_in_an_empty_existing_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert run_cli(["add", "hello"], tmp_path / "empty").code == 0
    assert (tmp_path / "empty" / DB_FILE).is_file()


def test_writers_and_doctor_touch_only_remems_files(legacy_in_shared_dir: Path) -> None:
    shared = legacy_in_shared_dir
    own_temp = shared / ".vectors.faiss.k2j4x9a1.tmp"  # what remem.atomic names its temporary files
    own_temp.write_bytes(b"left by a killed writer")
    assert run_cli(["add", "the garden gate squeaks"], shared).code == 0
    assert not own_temp.exists()
    assert (shared / MARKER_FILE).is_file()  # an old store is marked when opened for writing
    repaired = run_cli(["doctor", "--repair"], shared)
    assert repaired.code == 0, repaired.stdout
    assert (shared / "notes.txt").read_text() == "mine" and _mode(shared / "notes.txt") == 0o644
    assert (shared / ".editor.swp.tmp").exists() and _mode(shared / ".editor.swp.tmp") == 0o664
    assert (shared / ".vectors.faiss.tmp").exists()
    assert _mode(shared) == 0o755  # not remem's alone: the user's directory keeps its mode
    assert _mode(shared / DB_FILE) == 0o600
    assert len(run_cli(["list"], shared).stdout.splitlines()) == 3


def test_a_store_directory_opened_up_by_the_user_is_made_private_again(store_dir: Path) -> None:
    assert run_cli(["add", "hello"], store_dir).code == 0
    os.chmod(store_dir, 0o755)
    os.chmod(store_dir / DB_FILE, 0o644)
    assert run_cli(["add", "again"], store_dir).code == 0
    assert _mode(store_dir) == 0o700 and _mode(store_dir / DB_FILE) == 0o600
    assert run_cli(["doctor"], store_dir).code == 0


def test_doctor_reports_a_loose_store_directory(store_dir: Path) -> None:
    assert run_cli(["add", "hello"], store_dir).code == 0
    os.chmod(store_dir, 0o755)
    result = run_cli(["doctor"], store_dir)
    assert result.code == 2 and "permissions" in result.stdout and str(store_dir) in result.stdout
    assert run_cli(["doctor", "--repair"], store_dir).code == 0
    assert _mode(store_dir) == 0o700


# --- #21: `show -1` -----------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["show", "-1"], ["forget", "-1"], ["show", "-5", "--json"]])
def test_a_negative_id_needs_no_double_dash(store_dir: Path, args: list[str]) -> None:
    assert run_cli(["add", "hello"], store_dir).code == 0
    result = run_cli(args, store_dir)
    assert result.code == 1 and result.stderr == f"Error: there is no memory {args[1]}\n"


def test_a_negative_number_taken_for_an_option_says_how_to_pass_it(store_dir: Path) -> None:
    assert run_cli(["add", "hello"], store_dir).code == 0
    result = run_cli(["edit", "-1", "new text"], store_dir)
    assert result.code == 2 and "No such option: -1" in result.stderr
    assert "put -- before it: remem edit -- -1" in result.stderr


def test_a_new_store_in_an_existing_empty_directory_is_made(tmp_path: Path) -> None:
    empty = tmp_path / "made-by-hand"
    empty.mkdir()
    assert run_cli(["add", "the first memory"], empty).code == 0
    assert run_cli(["list"], empty).code == 0  # (its 0755 mode is issue 15 #21, not done yet)
