"""`remem token add|list|revoke`: the secret alone on stdout once, never in `list`, a person's lines
on stderr, and one-line errors in the command's own option names that change nothing."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

import remem
from helpers import Outcome, run_cli
from remem.testing import FakeEmbedder

SECRET = re.compile(r"remem_[A-Za-z0-9_-]{43}\n")


def add(store: Path, *args: str) -> str:
    """The secret `token add ARGS` printed (it must succeed)."""
    done = run_cli(["token", "add", *args], store)
    assert done.code == 0, done.stderr
    assert SECRET.fullmatch(done.stdout), done.stdout
    return done.stdout.strip()


def verified(store: Path, secret: str) -> remem.Token | None:
    with remem.open(store, create=False, embedder=FakeEmbedder()) as memories:
        return memories.tokens.verify(secret)


def assert_one_line_error(done: Outcome, message: str, code: int = 2) -> None:
    assert (done.code, done.stdout, done.stderr) == (code, "", f"Error: {message}\n")


def test_add_prints_the_secret_alone_and_tells_a_person_what_it_allows(store_dir: Path) -> None:
    done = run_cli(["token", "add", "--user", "alice"], store_dir)
    assert done.code == 0 and SECRET.fullmatch(done.stdout)
    assert done.stderr.splitlines() == [
        'Token "alice" for user alice: their memories and the shared ones, read-write.',
        "It is shown only this once: give it to alice (as an HTTP header: Authorization: Bearer <token>).",
    ]
    token = verified(store_dir, done.stdout.strip())  # the store was made by `token add`
    assert token is not None and (token.name, token.user, token.private) == ("alice", "alice", False)


def test_add_with_every_option_and_json(store_dir: Path) -> None:
    args = ["token", "add", "-u", "bob", "--name", "bob-ci", "-c", "c1", "--read-only", "--private", "--json"]
    done = run_cli(args, store_dir)
    assert done.code == 0 and len(done.stdout.splitlines()) == 1
    record = json.loads(done.stdout)
    assert SECRET.fullmatch(record.pop("token") + "\n")
    assert record.pop("created_at")
    assert record == {
        "name": "bob-ci",
        "user": "bob",
        "conversation": "c1",
        "read_only": True,
        "private": True,
        "expires_at": None,
    }
    assert done.stderr.splitlines()[0] == (
        'Token "bob-ci" for user bob: only their own memories in conversation c1, read-only.'
    )


def test_an_admin_token_and_quiet(store_dir: Path) -> None:
    done = run_cli(["-q", "token", "add", "--admin"], store_dir)
    assert (done.code, done.stderr) == (0, "") and SECRET.fullmatch(done.stdout)
    token = verified(store_dir, done.stdout.strip())
    assert token is not None and token.admin and token.name == "admin"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --user NAME (a token for one user) or --admin (a token that sees every user's memories)"),
        (
            ["--name", "x"],
            "give --user NAME (a token for one user) or --admin (a token that sees every user's memories)",
        ),
        (["--user", "a", "--admin"], "--user and --admin exclude each other: give one"),
        (["--admin", "--private"], "--private needs a --user: an admin token sees every memory"),
        (["--user", "a", "--name", "two words"], "--name 'two words' must not contain whitespace"),
        (["--user", "a", "--name", "x" * 65], "--name has 65 characters, more than 64"),
        (["--user", " "], "--user must not be empty"),
    ],
)
def test_a_bad_add_is_one_line_and_makes_nothing(store_dir: Path, args: list[str], message: str) -> None:
    assert_one_line_error(run_cli(["token", "add", *args], store_dir), message)
    assert not store_dir.exists()


def test_a_name_that_is_taken_is_refused(store_dir: Path) -> None:
    secret = add(store_dir, "--user", "alice")
    done = run_cli(["token", "add", "--user", "bob", "--name", "alice"], store_dir)
    assert_one_line_error(
        done, '--name "alice" is taken by another token; choose another name or revoke that token'
    )
    assert add(store_dir, "--user", "alice") != secret  # without --name: the next free name
    listed = [
        json.loads(line) for line in run_cli(["token", "list", "--json"], store_dir).stdout.splitlines()
    ]
    assert [(t["name"], t["user"]) for t in listed] == [("alice", "alice"), ("alice-2", "alice")]


def test_list_shows_every_token_but_never_a_secret_or_its_hash(store_dir: Path) -> None:
    secrets = [
        add(store_dir, "--user", "alice"),
        add(store_dir, "--admin", "--read-only"),
        add(store_dir, "--user", "bob", "--private", "--conversation", "c1"),
    ]
    table = run_cli(["token", "list"], store_dir)
    as_json = run_cli(["token", "list", "--json"], store_dir)
    assert (table.code, as_json.code) == (0, 0)
    rows = [line.split() for line in table.stdout.splitlines()]
    assert rows[0] == ["NAME", "USER", "CONVERSATION", "ACCESS", "SEES", "CREATED", "EXPIRES"]
    assert all(row[-1] == "never" for row in rows[1:])
    assert [row[:-3] for row in rows[1:]] == [
        ["admin", "admin", "read-only", "everything"],
        ["alice", "alice", "read-write", "own", "+", "shared"],
        ["bob", "bob", "c1", "read-write", "own", "only"],
    ]
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [(r["name"], r["user"], r["private"]) for r in records] == [
        ("admin", None, False),
        ("alice", "alice", False),
        ("bob", "bob", True),
    ]
    for secret in secrets:
        for shown in (secret, hashlib.sha256(secret.encode()).hexdigest(), secret[6:]):
            assert shown not in table.stdout + table.stderr + as_json.stdout + as_json.stderr


def test_list_of_no_tokens(store_dir: Path) -> None:
    run_cli(["add", "a memory"], store_dir)
    assert run_cli(["token", "list"], store_dir) == Outcome(0, "No tokens.\n", "")
    assert run_cli(["token", "list", "--json"], store_dir) == Outcome(0, "", "")


def test_revoke_and_an_unknown_name(store_dir: Path) -> None:
    alice, bob = add(store_dir, "--user", "alice"), add(store_dir, "--user", "bob")
    assert run_cli(["token", "revoke", "alice"], store_dir) == Outcome(0, "", 'Revoked token "alice".\n')
    assert verified(store_dir, alice) is None and verified(store_dir, bob) is not None
    assert_one_line_error(
        run_cli(["token", "revoke", "alice"], store_dir), 'there is no token named "alice"', 1
    )
    assert verified(store_dir, bob) is not None
    assert [
        json.loads(line)["name"]
        for line in run_cli(["token", "list", "--json"], store_dir).stdout.splitlines()
    ] == ["bob"]


def test_export_carries_no_token(store_dir: Path) -> None:
    secret = add(store_dir, "--user", "alice")
    run_cli(["add", "--user", "alice", "a memory"], store_dir)
    exported = run_cli(["export", "--with-vectors"], store_dir).stdout
    assert len(exported.splitlines()) == 1
    assert secret not in exported and hashlib.sha256(secret.encode()).hexdigest() not in exported


def test_add_with_expires_lists_and_enforces_it(store_dir: Path) -> None:
    """Issue 46, finding 9g: `token add --expires` (as memories' --expires), shown by `token list`."""
    done = run_cli(["token", "add", "--user", "alice", "--expires", "2999-01-01T12:00", "--json"], store_dir)
    assert done.code == 0, done.stderr
    assert json.loads(done.stdout)["expires_at"] == "2999-01-01T12:00:00.000Z"
    assert done.stderr.splitlines()[0] == (
        'Token "alice" for user alice: their memories and the shared ones, read-write, '
        "until 2999-01-01 12:00 UTC."
    )
    secret = add(store_dir, "--user", "bob", "--expires", "30d")
    token = verified(store_dir, secret)
    assert token is not None and token.expires_at is not None and not token.expired()
    listed = [
        json.loads(line) for line in run_cli(["token", "list", "--json"], store_dir).stdout.splitlines()
    ]
    assert [(t["name"], t["expires_at"]) for t in listed] == [
        ("alice", "2999-01-01T12:00:00.000Z"),
        ("bob", token.expires_at),
    ]
    table = run_cli(["token", "list"], store_dir).stdout.splitlines()
    assert table[1].endswith("2999-01-01 12:00") and table[0].split()[-1] == "EXPIRES"


def test_an_expired_token_is_listed_as_expired(store_dir: Path) -> None:
    from remem.backends.shapes import TokenRecord
    from remem.core.tokens import secret_hash

    add(store_dir, "--user", "alice")
    with remem.open(store_dir, create=False, embedder=FakeEmbedder()) as memories:
        old = remem.Token(
            "old", "bob", None, False, False, "2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z"
        )
        memories.backend.add_token(TokenRecord.made(old, secret_hash("remem_old")))
    rows = run_cli(["token", "list"], store_dir).stdout.splitlines()
    assert rows[2].split()[-3:] == ["expired", "2026-01-02", "00:00"] and rows[1].split()[-1] == "never"
    assert verified(store_dir, "remem_old") is None


@pytest.mark.parametrize(
    ("expires", "message"),
    [
        (
            "2020-01-01",
            "--expires has passed: a token expires at a time still to come",
        ),
        ("soon", "--expires 'soon' is neither a time from now (30m, 12h, 30d, 2w) nor an ISO date/time"),
    ],
)
def test_a_bad_or_past_expires_is_one_line_and_stores_no_token(
    store_dir: Path, expires: str, message: str
) -> None:
    done = run_cli(["token", "add", "--user", "alice", "--expires", expires], store_dir)
    assert done.code == 2 and done.stdout == "" and done.stderr.startswith(f"Error: {message}")
    assert len(done.stderr.splitlines()) == 1
    assert not store_dir.exists()  # checked before a store is made
