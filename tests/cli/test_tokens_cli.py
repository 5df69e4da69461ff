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
    assert rows[0] == ["NAME", "USER", "CONVERSATION", "ACCESS", "SEES", "CREATED"]
    assert [row[:-2] for row in rows[1:]] == [
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
