"""Memories that change, through the CLI: add's similar-memory notice, --supersedes and --expires,
show's links and --history, --include-superseded/--include-expired, forget --expired, and the counts
of stats and doctor. The fake embedder scores OLD and NEW (one word apart) 0.83."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from helpers import run_cli
from remem.backends.local.files import DB_FILE

OLD = "We run Postgres 16 in production"
NEW = "We run Postgres 17 in production"
NOTICE = f'Similar to memory 1 (0.83): "{OLD}"; to replace it: remem add --supersedes 1 …\n'
#: A memory whose expiry has passed (an import may hold one; add refuses a past --expires).
EXPIRED = '{"text": "The 2019 offsite is in Lisbon", "expires_at": "2020-01-01"}\n'


def _ids(stdout: str) -> list[int]:
    return [json.loads(line)["id"] for line in stdout.splitlines()]


@pytest.fixture
def chain(store_dir: Path) -> Path:
    """OLD (1), superseded by NEW (2)."""
    assert run_cli(["add", OLD], store_dir).code == 0
    added = run_cli(["add", "--supersedes", "1", NEW], store_dir)
    assert (added.code, added.stdout, added.stderr) == (0, "2\n", "Memory 2 supersedes memory 1.\n")
    return store_dir


def test_a_similar_memory_is_named_with_how_to_replace_it(store_dir: Path) -> None:
    assert run_cli(["add", OLD], store_dir).stderr == ""
    added = run_cli(["add", NEW], store_dir)
    assert (added.code, added.stdout, added.stderr) == (0, "2\n", NOTICE)
    as_json = run_cli(["add", "--json", f"{NEW} today"], store_dir)
    record = json.loads(as_json.stdout)
    assert (record["id"], record["duplicate"], record["supersedes"]) == (3, False, None)
    assert [s["id"] for s in record["similar"]] == [2, 1] and record["similar"][0]["score"] > 0.69
    assert as_json.stderr.count("Similar to memory") == 2
    assert run_cli(["-q", "add", f"{NEW}, since June"], store_dir).stderr == ""
    relinked = run_cli(["add", "--supersedes", "1", NEW], store_dir)  # the hint, followed
    assert relinked.stdout == "2\n"
    assert relinked.stderr == "Already stored as memory 2; not added again; it supersedes memory 1 now.\n"
    assert json.loads(run_cli(["show", "--json", "1"], store_dir).stdout)["superseded_by"] == 2


def test_a_superseded_memory_is_left_out_until_included(chain: Path) -> None:
    assert _ids(run_cli(["list", "--json"], chain).stdout) == [2]
    assert _ids(run_cli(["list", "--json", "--include-superseded"], chain).stdout) == [2, 1]
    assert _ids(run_cli(["search", "--json", "postgres"], chain).stdout) == [2]
    assert sorted(_ids(run_cli(["search", "--json", "--include-superseded", "postgres"], chain).stdout)) == [
        1,
        2,
    ]
    assert _ids(run_cli(["context", "--json", "postgres"], chain).stdout) == [2]
    assert sorted(_ids(run_cli(["context", "--json", "--include-superseded", "postgres"], chain).stdout)) == [
        1,
        2,
    ]
    assert _ids(run_cli(["export"], chain).stdout) == [1, 2]
    assert "superseded by #2" in run_cli(["export", "-f", "markdown"], chain).stdout


def test_show_names_the_links_and_history_the_chain(chain: Path) -> None:
    shown = run_cli(["show", "1"], chain).stdout.splitlines()
    assert "superseded_by: 2" in shown and any(line.startswith("superseded_at: 20") for line in shown)
    assert not any(
        line.startswith(("superseded", "expires"))
        for line in run_cli(["show", "2"], chain).stdout.splitlines()
    )
    history = run_cli(["show", "2", "--history"], chain).stdout.splitlines()
    assert history[0].split() == ["ID", "CREATED", "STATUS", "TEXT"]
    assert history[1].endswith(f"superseded by 2  {OLD}") and history[2].endswith(f"current          {NEW}")
    records = [
        json.loads(line) for line in run_cli(["show", "1", "--history", "--json"], chain).stdout.splitlines()
    ]
    assert [(r["id"], r["superseded_by"]) for r in records] == [(1, 2), (2, None)]
    assert run_cli(["show", "9", "--history"], chain).code == 1


def test_forgetting_the_newer_memory_makes_the_older_current_again(chain: Path) -> None:
    assert run_cli(["forget", "2"], chain).code == 0
    assert _ids(run_cli(["list", "--json"], chain).stdout) == [1]
    assert json.loads(run_cli(["show", "--json", "1"], chain).stdout)["superseded_by"] is None


def test_expires_sets_a_time_to_come_for_one_memory_or_a_batch(store_dir: Path) -> None:
    assert run_cli(["add", "--expires", "2h", "The office is closed today"], store_dir).code == 0
    shown = run_cli(["show", "1"], store_dir).stdout
    assert "expires_at:    20" in shown and "(expired)" not in shown
    assert (
        run_cli(["add", "--lines", "-", "--expires", "2026-12-31T23:00"], store_dir, stdin="a\nb\n").code == 0
    )
    lines = '{"text": "c"}\n{"text": "d", "expires_at": "2030-01-01"}\n'
    assert run_cli(["add", "--jsonl", "-", "--expires", "2999-01-01"], store_dir, stdin=lines).code == 0
    expiries = [json.loads(line)["expires_at"] for line in run_cli(["export"], store_dir).stdout.splitlines()]
    assert expiries[1:] == [
        "2026-12-31T23:00:00.000Z",
        "2026-12-31T23:00:00.000Z",
        "2999-01-01T00:00:00.000Z",
        "2030-01-01T00:00:00.000Z",
    ]


def test_an_expired_memory_is_left_out_and_forget_expired_deletes_it(store_dir: Path) -> None:
    assert run_cli(["add", "--jsonl", "-"], store_dir, stdin=EXPIRED).code == 0
    assert run_cli(["add", "--expires", "30d", "The 2027 offsite is in Porto"], store_dir).code == 0
    assert _ids(run_cli(["list", "--json"], store_dir).stdout) == [2]
    assert _ids(run_cli(["list", "--json", "--include-expired"], store_dir).stdout) == [2, 1]
    keyword = ["search", "--json", "--mode", "keyword", "offsite"]
    assert _ids(run_cli(keyword, store_dir).stdout) == [2]
    assert sorted(_ids(run_cli([*keyword, "--include-expired"], store_dir).stdout)) == [1, 2]
    assert "expires_at:    2020-01-01T00:00:00.000Z (expired)" in run_cli(["show", "1"], store_dir).stdout
    assert json.loads(run_cli(["stats", "--json"], store_dir).stdout)["expired"] == 1
    dry = run_cli(["forget", "--expired", "--dry-run", "--json"], store_dir)
    assert (dry.code, _ids(dry.stdout), dry.stderr) == (0, [1], "Would forget 1 expired memory.\n")
    assert _ids(run_cli(["export"], store_dir).stdout) == [1, 2]
    done = run_cli(["forget", "--expired"], store_dir)
    assert (done.code, done.stderr) == (0, "Forgot 1 expired memory.\n")
    assert _ids(run_cli(["export"], store_dir).stdout) == [2]
    again = run_cli(["forget", "--expired"], store_dir)  # for cron: nothing to do is no failure
    assert (again.code, again.stdout, again.stderr) == (0, "", "No memory has expired.\n")


def test_a_fact_that_changed_back_is_current_again(chain: Path) -> None:
    """OLD, superseded by NEW, then OLD again: memory 1 is current again (it supersedes 2), where
    `add` used to say "Already stored" while every search found only NEW."""
    again = run_cli(["add", OLD], chain)
    assert (again.code, again.stdout, again.stderr) == (
        0,
        "1\n",
        "Memory 1 is current again, superseding memory 2.\n",
    )
    for mode in ("keyword", "vector", "hybrid"):
        assert _ids(run_cli(["search", "--json", "--mode", mode, "postgres"], chain).stdout) == [1], mode
    assert json.loads(run_cli(["show", "--json", "2"], chain).stdout)["superseded_by"] == 1
    same = run_cli(["add", "--json", OLD], chain)  # current now: a duplicate as ever
    record = json.loads(same.stdout)
    assert (record["duplicate"], record["current_again"], record["superseded"]) == (True, False, [])
    assert same.stderr == "Already stored as memory 1; not added again.\n"
    back = run_cli(["add", "--supersedes", "1", NEW], chain)  # and it may change again
    assert (back.code, back.stdout, back.stderr) == (
        0,
        "2\n",
        "Memory 2 is current again, superseding memory 1.\n",
    )


def test_the_old_text_with_supersedes_brings_it_back(chain: Path) -> None:
    again = run_cli(["add", "--json", "--supersedes", "2", OLD], chain)
    record = json.loads(again.stdout)
    assert (again.code, record["id"], record["current_again"], record["superseded"]) == (0, 1, True, [2])
    assert again.stderr == "Memory 1 is current again, superseding memory 2.\n"
    assert _ids(run_cli(["list", "--json"], chain).stdout) == [1]


def test_an_expired_memory_added_again_with_expires_is_current_and_kept(store_dir: Path) -> None:
    assert run_cli(["add", "--jsonl", "-"], store_dir, stdin=EXPIRED).code == 0
    again = run_cli(["add", "--expires", "7d", "The 2019 offsite is in Lisbon"], store_dir)
    assert (again.code, again.stdout, again.stderr) == (0, "1\n", "Memory 1 is current again.\n")
    assert _ids(run_cli(["search", "--json", "--mode", "keyword", "offsite"], store_dir).stdout) == [1]
    assert run_cli(["forget", "--expired"], store_dir).stderr == "No memory has expired.\n"
    assert _ids(run_cli(["export"], store_dir).stdout) == [1]


def test_importing_part_of_a_chain_links_it_into_the_store_s_chain(chain: Path, tmp_path: Path) -> None:
    """`remem import` of OLD ← NEW into a store that holds NEW, superseded there by a later fact:
    OLD is linked to NEW, not brought back beside the later fact."""
    exported = run_cli(["export"], chain).stdout
    target = tmp_path / "target"
    assert run_cli(["add", NEW], target).code == 0
    assert run_cli(["add", "--supersedes", "1", "We run Postgres 18 in production"], target).code == 0
    imported = run_cli(["import", "-"], target, stdin=exported.encode())
    assert imported.code == 0 and "not kept" not in imported.stderr
    assert _ids(run_cli(["list", "--json"], target).stdout) == [2]
    records = {r["text"]: r for r in map(json.loads, run_cli(["export"], target).stdout.splitlines())}
    assert records[OLD]["superseded_by"] == 1 and records[NEW]["superseded_by"] == 2


def test_stats_and_doctor_count_them_and_doctor_finds_a_broken_link(chain: Path) -> None:
    assert run_cli(["add", "--jsonl", "-"], chain, stdin=EXPIRED).code == 0
    stats = json.loads(run_cli(["stats", "--json"], chain).stdout)
    assert (stats["memories"], stats["superseded"], stats["expired"]) == (3, 1, 1)
    assert "superseded:     1" in run_cli(["stats"], chain).stdout.splitlines()
    doctor = run_cli(["doctor"], chain)
    assert "ok    memory links: 1 superseded, 1 expired" in doctor.stdout
    with sqlite3.connect(chain / DB_FILE) as db:
        db.execute("UPDATE memories SET superseded_by = 99 WHERE id = 3")
    broken = run_cli(["doctor"], chain)
    assert broken.code == 2
    assert (
        "FAIL  memory links: 2 superseded, 1 expired; superseded by a memory that is not stored: 3"
        in broken.stdout
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["add", "--supersedes", "99", "x"], 1, "there is no memory 99"),
        (
            ["add", "--supersedes", "1", "--user", "ann", "x"],
            2,
            "--supersedes: memory 1 is not of the same user",
        ),
        (
            ["add", "--supersedes", "1", "Postgres 18"],
            2,
            "--supersedes: memory 1 was already superseded by memory 2",
        ),
        (["add", "--supersedes", "2", NEW], 2, "--supersedes: memory 2 holds this same text"),
        (["add", "--supersedes", "0", "x"], 2, "Invalid value for '--supersedes'"),
        (["add", "--supersedes", "2", "--lines", "-"], 2, "--supersedes goes with one TEXT"),
        (
            ["add", "--expires", "soon", "x"],
            2,
            "--expires 'soon' is neither a time from now (30m, 12h, 30d, 2w)",
        ),
        (["add", "--expires", "2020-01-01", "x"], 2, "--expires 2020-01-01T00:00:00.000Z has passed"),
        (
            ["add", "--expires", "2020-01-01", "--lines", "-"],
            2,
            "--expires 2020-01-01T00:00:00.000Z has passed",
        ),
        (["forget", "--expired", "1"], 2, "--expired forgets every expired memory: give no ids"),
        (["forget", "--expired", "--where", "--user", "ann"], 2, "--expired forgets every expired memory"),
        (["forget", "--expired", "--tag", "ops"], 2, "--expired forgets every expired memory"),
        (["forget", "--where", "--tag", "x", "--include-superseded"], 2, "forget selects superseded and"),
        (["forget", "1", "--include-expired"], 2, "forget selects superseded and expired memories too"),
        (["export", "--include-expired"], 2, "No such option: --include-expired"),
    ],
)
def test_a_bad_use_is_one_error_line_and_changes_nothing(
    chain: Path, args: list[str], code: int, message: str
) -> None:
    before = run_cli(["export"], chain).stdout
    failed = run_cli(args, chain, stdin="a line\n")
    assert failed.code == code and failed.stdout == ""
    assert failed.stderr.startswith("Error: ") and message in failed.stderr and failed.stderr.count("\n") == 1
    assert run_cli(["export"], chain).stdout == before
