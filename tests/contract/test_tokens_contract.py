"""The bearer tokens of `remem serve` on every back-end: only a hash is stored, names are unique and
default to the user's, a second process on the same store honours a token at once and refuses it
right after a revocation, and anything but a stored token's secret verifies to None. The arguments
refused while a token is made, before any back-end is asked, are checked once:
tests/unit/test_token_arguments.py."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from remem import Memories, Token
from remem.core.opening import model_catalog
from remem.errors import InvalidInputError, StoreClosedError, TokenNotFoundError
from remem.testing import FakeEmbedder

if TYPE_CHECKING:
    from remem.backends.base import Backend

SECRET = re.compile(r"remem_[A-Za-z0-9_-]{43}")


def memories_of(backend: Backend) -> Memories:
    return Memories(backend, model_catalog(environ={}), FakeEmbedder())


@pytest.fixture
def memories(backend: Backend) -> Memories:
    return memories_of(backend)


def test_a_token_is_added_listed_verified_and_revoked(memories: Memories) -> None:
    secret, token = memories.tokens.add(user="alice", conversation="c1", read_only=True)
    assert SECRET.fullmatch(secret)
    assert (token.name, token.user, token.conversation, token.read_only, token.private, token.admin) == (
        "alice",
        "alice",
        "c1",
        True,
        False,
        False,
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", token.created_at)
    assert memories.tokens.list() == [token]
    assert memories.tokens.verify(secret) == token
    assert memories.tokens.revoke("alice") == token
    assert memories.tokens.list() == []
    assert memories.tokens.verify(secret) is None


def test_only_the_hash_of_the_secret_is_stored(memories: Memories) -> None:
    secret, _ = memories.tokens.add(user="alice")
    (record,) = memories.backend.token_records()
    assert record.hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in repr(record) and record.hash not in repr(record)
    assert secret not in repr(memories.tokens.list())


def test_an_admin_token_sees_everything(memories: Memories) -> None:
    secret, token = memories.tokens.add(user=None)
    assert (token.name, token.user, token.admin, token.private) == ("admin", None, True, False)
    assert memories.tokens.verify(secret) == token


def test_names_default_to_the_users_and_count_up_when_taken(memories: Memories) -> None:
    tokens = memories.tokens
    names = [tokens.add(user=user)[1].name for user in ("alice", "alice", None, "alice", None)]
    assert names == ["alice", "alice-2", "admin", "alice-3", "admin-2"]
    assert tokens.add(user="Bob Stone", private=True)[1].name == "Bob-Stone"
    assert tokens.add(user="x" * 100)[1].name == "x" * 64
    assert tokens.add(user="x" * 100)[1].name == "x" * 62 + "-2"
    assert tokens.add(user="carol", name=" ci-bot ")[1].name == "ci-bot"
    assert [t.name for t in tokens.list()] == sorted(
        ["alice", "alice-2", "admin", "alice-3", "admin-2", "Bob-Stone", "x" * 64, "x" * 62 + "-2", "ci-bot"]
    )


def test_a_name_that_is_taken_is_refused_and_nothing_changes(memories: Memories) -> None:
    first_secret, first = memories.tokens.add(user="alice")
    with pytest.raises(InvalidInputError, match=r'^name "alice" is taken by another token') as refused:
        memories.tokens.add(user="bob", name="alice")
    assert refused.value.parameter == "name"
    assert memories.tokens.list() == [first]
    assert memories.tokens.verify(first_secret) == first


def test_revoking_an_unknown_name_changes_nothing(memories: Memories) -> None:
    secret, token = memories.tokens.add(user="alice")
    for name in ("bob", "alice-2", "", "ali\nce"):
        with pytest.raises(TokenNotFoundError, match=r"^there is no token named ") as refused:
            memories.tokens.revoke(name)
        assert isinstance(refused.value, InvalidInputError) and "\n" not in str(refused.value)
    assert memories.tokens.list() == [token]
    assert memories.tokens.verify(secret) == token


def test_wrong_malformed_and_empty_secrets_verify_to_none(memories: Memories) -> None:
    secret, token = memories.tokens.add(user="alice")
    memories.tokens.add(user=None)
    digest = hashlib.sha256(secret.encode()).hexdigest()
    wrong: list[Any] = [
        "",
        " ",
        "remem_",
        secret[:-1],
        secret + "x",
        secret.upper(),
        f" {secret}",
        f"Bearer {secret}",
        digest,
        "\ud800",
        "\x00",
        "é" * 10_000,
        None,
        secret.encode(),
        42,
    ]
    assert [memories.tokens.verify(value) for value in wrong] == [None] * len(wrong)
    assert memories.tokens.verify(secret) == token


def test_another_process_honours_a_token_at_once_and_refuses_it_after_a_revocation(
    open_backend: Callable[..., Backend],
) -> None:
    first, second = memories_of(open_backend()), memories_of(open_backend())
    assert second.tokens.list() == []  # read once: nothing is kept from that read
    secret, token = first.tokens.add(user="alice")
    assert second.tokens.verify(secret) == token
    assert second.tokens.list() == [token]
    first.tokens.revoke("alice")
    assert second.tokens.verify(secret) is None
    assert second.tokens.add(user="alice")[1].name == "alice"  # the name is free again
    assert first.tokens.add(user="alice")[1].name == "alice-2"


def test_tokens_are_not_memories_and_no_export_carries_them(memories: Memories) -> None:
    secret, _ = memories.tokens.add(user="alice")
    memories.add("a memory of alice", user="alice")
    exported = repr(list(memories.export(with_vectors=True)))
    assert secret not in exported and hashlib.sha256(secret.encode()).hexdigest() not in exported
    assert [m.text for m in memories.list()] == ["a memory of alice"]


def test_tokens_made_before_close_say_the_store_is_closed(memories: Memories) -> None:
    tokens = memories.tokens  # kept by a server across the Memories' life
    memories.close()
    for call in (tokens.list, lambda: tokens.verify("remem_x"), lambda: tokens.add(user="a")):
        with pytest.raises(StoreClosedError):
            call()


def test_a_token_value_is_checked_as_it_is_made() -> None:
    token = Token(" a ", " alice ", None, False, True, "2026-01-01T00:00:00.000Z")
    assert (token.name, token.user, token.admin) == ("a", "alice", False)
    with pytest.raises(InvalidInputError, match=r"^private needs a user"):
        Token("a", None, None, False, True, "2026-01-01T00:00:00.000Z")


# --- tokens that expire (issue 46, finding 9g) -------------------------------------------------------


def test_a_token_with_an_expiry_works_until_then_and_is_listed_with_it(memories: Memories) -> None:
    secret, token = memories.tokens.add(user="alice", expires_at="30d")
    later, forever = (
        memories.tokens.add(user="bob", expires_at="2999-01-01"),
        memories.tokens.add(user="carol"),
    )
    assert token.expires_at is not None and token.expires_at > token.created_at
    assert later[1].expires_at == "2999-01-01T00:00:00.000Z" and forever[1].expires_at is None
    assert [t.expires_at for t in memories.tokens.list()] == [
        token.expires_at,
        "2999-01-01T00:00:00.000Z",
        None,
    ]
    assert memories.tokens.verify(secret) == token and not token.expired()
    assert token.expired(now="3000-01-01T00:00:00.000Z")


def test_an_expired_token_verifies_to_none_as_a_revoked_one(memories: Memories) -> None:
    """A token past its expiry (written as the store keeps it: a record with that time) is refused
    at its next verify, on every back-end; the one beside it still works."""
    from remem.backends.shapes import TokenRecord
    from remem.core.tokens import secret_hash

    kept, kept_token = memories.tokens.add(user="alice")
    old = Token("old", "alice", None, False, False, "2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z")
    memories.backend.add_token(TokenRecord.made(old, secret_hash("remem_old")))
    assert memories.tokens.list() == [kept_token, old] and old.expired()
    assert memories.tokens.verify("remem_old") is None
    assert memories.tokens.verify(kept) == kept_token
    assert memories.tokens.revoke("old") == old


def test_a_token_record_is_looked_up_by_the_hash_of_its_secret(memories: Memories) -> None:
    from remem.core.tokens import secret_hash

    secrets = {user: memories.tokens.add(user=user)[0] for user in ("alice", "bob", "carol")}
    found = memories.backend.token_record(secret_hash(secrets["bob"]))
    assert found is not None and found.name == "bob" and found.hash == secret_hash(secrets["bob"])
    assert memories.backend.token_record(secret_hash("remem_wrong")) is None
    memories.tokens.revoke("bob")
    assert memories.backend.token_record(secret_hash(secrets["bob"])) is None
    assert memories.tokens.verify(secrets["carol"]) is not None
