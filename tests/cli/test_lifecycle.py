"""edit, forget, reindex, doctor and the new filters through the CLI, with the real model."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from helpers import run_cli
from remem.backends.local.files import DB_FILE, INDEX_FILE

NOTES = [
    ("--user", "ann", "--role", "user", "--meta", "project=atlas", "The atlas project ships on Friday."),
    ("--user", "ann", "--role", "assistant", "--tag", "ops", "Backups run nightly at two in the morning."),
    ("--user", "bob", "--role", "user", "--meta", "project=zephyr", "Zephyr needs a new logo by March."),
]


@pytest.fixture
def notes(store_dir: Path) -> Path:
    for args in NOTES:
        assert run_cli(["add", *args], store_dir).code == 0
    return store_dir


def _ids(stdout: str) -> list[int]:
    return [json.loads(line)["id"] for line in stdout.splitlines()]


def test_filters_role_meta_and_time(notes: Path) -> None:
    assert _ids(run_cli(["list", "--json", "--role", "assistant"], notes).stdout) == [2]
    assert _ids(run_cli(["list", "--json", "--meta", "project=zephyr"], notes).stdout) == [3]
    assert _ids(run_cli(["search", "--json", "--meta", "project=atlas", "deadline"], notes).stdout) == [1]
    assert len(_ids(run_cli(["list", "--json", "--since", "1h"], notes).stdout)) == 3
    assert run_cli(["list", "--until", "2000-01-01"], notes).code == 1
    assert run_cli(["list", "--since", "2999-01-01T00:00:00Z"], notes).code == 1


def test_edit_keeps_id_and_created_at_and_reembeds(notes: Path) -> None:
    before = json.loads(run_cli(["list", "--json", "--meta", "project=zephyr"], notes).stdout)
    edited = run_cli(["edit", "--json", "3", "Zephyr's logo is done; the launch moved to April."], notes)
    after = json.loads(edited.stdout)
    assert (after["id"], after["created_at"]) == (3, before["created_at"])
    assert after["updated_at"] and after["text"].startswith("Zephyr's logo is done")
    top = json.loads(run_cli(["search", "--json", "-k", "1", "when is the launch"], notes).stdout)
    assert top["id"] == 3


def test_forget_by_id_and_where_with_dry_run(notes: Path) -> None:
    dry = run_cli(["forget", "--where", "--user", "ann", "--dry-run", "--json"], notes)
    assert (_ids(dry.stdout), "Would forget 2 memories." in dry.stderr) == ([1, 2], True)
    assert len(_ids(run_cli(["export"], notes).stdout)) == 3
    gone = run_cli(["forget", "2", "99"], notes)
    assert gone.code == 0 and "there is no memory 99" in gone.stderr and "Forgot 1 memory." in gone.stderr
    assert run_cli(["forget", "99"], notes).code == 1
    assert _ids(run_cli(["export"], notes).stdout) == [1, 3]
    assert 2 not in _ids(run_cli(["search", "--json", "-k", "5", "backups at night"], notes).stdout)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["forget"], "give memory ids, or --where"),
        (["forget", "1", "--where", "--user", "ann"], "give memory ids, or --where"),
        (["forget", "--where"], "--where needs at least one filter"),
        (["forget", "1", "--user", "ann"], "filters only apply with --where"),
        (["edit", "1", "  "], "memory text is empty"),
        (["reindex", "--index", "ivf"], "--index must be one of exact, hnsw, auto"),
        (["reindex", "--hnsw-m", "1"], "must be at least 2"),
        (["list", "--since", "yesterday morning"], "--since 'yesterday morning' is neither"),
        (["list", "--since", "1h", "--until", "2h"], "--since must be before --until"),
        (["reindex", "--model", "no-such-model"], "unknown model 'no-such-model'"),
    ],
)
def test_lifecycle_bad_input_is_one_error_line_and_changes_nothing(
    notes: Path, args: list[str], message: str
) -> None:
    before = run_cli(["export"], notes).stdout
    result = run_cli(args, notes)
    assert result.code == 2 and result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
    assert message in result.stderr, result.stderr
    assert run_cli(["export"], notes).stdout == before


@pytest.mark.parametrize("args", [["show", "42"], ["edit", "42", "new text"], ["forget", "42"]])
def test_an_id_that_names_no_memory_is_one_rule_everywhere(notes: Path, args: list[str]) -> None:
    """show, edit and forget agree: one ``Error:`` line, exit 1 (nothing found), nothing changed."""
    before = run_cli(["export"], notes).stdout
    result = run_cli(args, notes)
    assert (result.code, result.stdout, result.stderr) == (1, "", "Error: there is no memory 42\n")
    assert run_cli(["export"], notes).stdout == before


def test_min_score_explains_an_empty_result(notes: Path) -> None:
    result = run_cli(["search", "--min-score", "0.95", "atlas ships"], notes)
    assert result.code == 1 and result.stdout == ""
    assert result.stderr.startswith("No results: 3 below --min-score 0.95 (best score seen 0.")


def test_reindex_switches_kind_and_is_idempotent_and_doctor_is_clean(notes: Path) -> None:
    first = run_cli(["reindex", "--index", "hnsw", "--ef-search", "64"], notes)
    assert first.code == 0 and "hnsw index rebuilt" in first.stderr
    second = run_cli(["reindex"], notes)
    assert "vector index current, keyword index current" in second.stderr
    doctor = run_cli(["doctor", "--json"], notes)
    checks = [json.loads(line) for line in doctor.stdout.splitlines()]
    assert doctor.code == 0 and all(c["ok"] for c in checks) and len(checks) == 9
    assert any("hnsw" in c["detail"] for c in checks if c["check"] == "vector index")


def test_doctor_reports_and_repairs_damage(notes: Path) -> None:
    (notes / INDEX_FILE).write_bytes(b"\0" * 64)
    with sqlite3.connect(notes / DB_FILE) as conn:
        conn.execute("DELETE FROM memories_fts WHERE rowid = 1")
    (notes / DB_FILE).chmod(0o644)
    found = run_cli(["doctor"], notes)
    assert found.code == 2 and "(--repair can fix some)" in found.stderr
    failing = {
        line.split(":")[0].split(None, 1)[1] for line in found.stdout.splitlines() if line.startswith("FAIL")
    }
    assert failing == {"keyword index", "vector index", "permissions"}
    repaired = run_cli(["doctor", "--repair"], notes)
    assert repaired.code == 0, repaired.stdout + repaired.stderr
    assert repaired.stderr.count("Repaired: ") >= 3
    assert _ids(run_cli(["search", "--mode", "keyword", "--json", "atlas"], notes).stdout) == [1]


def test_doctor_says_which_leftover_temporary_files_it_removed(notes: Path) -> None:
    """Plain doctor's recovery removes a killed writer's temp file; it says so, not "none left over"."""
    (notes / ".vectors.faiss.4242.tmp").write_bytes(b"partial")
    result = run_cli(["doctor"], notes)
    assert result.code == 0, result.stdout
    assert "temporary files: removed .vectors.faiss.4242.tmp" in result.stdout
    assert not (notes / ".vectors.faiss.4242.tmp").exists()
    assert "temporary files: none left over" in run_cli(["doctor"], notes).stdout
