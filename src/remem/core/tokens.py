"""The bearer tokens of ``remem serve``, kept in the store (both back-ends) so that every server on
it honours them and a revocation counts on the next call.

A token's secret is ``remem_`` and 32 random bytes (URL-safe base64); the store keeps only its
sha256. The secret is 256 bits of randomness, not a password: no one can guess it or search for it,
so a fast hash is right (a slow, salted one would only slow every call down and protect nothing
more). The secret is handed back once, by ``Tokens.add``, and never appears in an error, a repr or
a note.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import remem.checks as checks  # noqa: PLR0402 - the layer rule reads `from remem import` as the public API
from remem.backends.shapes import TokenRecord
from remem.errors import InvalidInputError, TokenNotFoundError
from remem.inputs import parse_expiry
from remem.times import utc_iso
from remem.types import TOKEN_NAME_CHARS, Token, utc_now_iso

if TYPE_CHECKING:
    import builtins

    from remem.backends.base import Backend

#: What every secret starts with, so a scanner (or a person) recognises a leaked one.
SECRET_PREFIX = "remem_"
#: Random bytes in a secret.
SECRET_BYTES = 32
#: The default name of an admin token (then ``admin-2``, ``admin-3``…).
ADMIN_NAME = "admin"
#: Names no new token may have: the writers the front-ends record (``Memory.written_by``) for what
#: is written without a token (the CLI, ``remem import``, ``remem mcp`` over stdio, ``remem ui``).
FRONT_END_WRITERS = frozenset({"cli", "import", "mcp", "ui"})


def secret_hash(secret: str) -> str:
    """The sha256 (hex) of a secret as stored: of its UTF-8 bytes (a lone surrogate is encoded as
    is, so any str has a hash and none raises)."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class Tokens:
    """The store's bearer tokens (``Memories.tokens``): add, list, revoke, verify. Every call reads
    or writes the store at once: another process's changes count on the next call."""

    def __init__(self, backend: Callable[[], Backend]) -> None:
        """Work on the back-end ``backend()`` returns (asked at each call: once its ``Memories`` is
        closed, that raises StoreClosedError)."""
        self._backend = backend

    def add(
        self,
        *,
        user: str | None,
        name: str | None = None,
        conversation: str | None = None,
        read_only: bool = False,
        private: bool = False,
        expires_at: str | datetime | None = None,
    ) -> tuple[str, Token]:
        """A new token: (the secret, shown once and never stored; the stored Token). ``user=None``
        is an admin token (every user's memories). ``name`` defaults to the user's name (``alice``,
        then ``alice-2``, ``alice-3``… when taken; whitespace in it becomes ``-``), ``admin`` for an
        admin token (then ``admin-2``…). ``expires_at``: when it stops working (``30d``, ``12h``…
        from now, an ISO 8601 date/time, a datetime; None: never), a time still to come. A name
        already taken is an InvalidInputError (``parameter="name"``), as is a bad name, a bad or
        past ``expires_at`` or ``private`` without a user."""
        for argument, label in ((user, "user"), (name, "name"), (conversation, "conversation")):
            checks.optional_string(argument, label)
        expiry = _expiry(checks.optional_moment(expires_at, "expires_at"))
        secret = SECRET_PREFIX + secrets.token_urlsafe(SECRET_BYTES)
        digest, created_at = secret_hash(secret), utc_now_iso()
        fields = (conversation, checks.flag(read_only, "read_only"), checks.flag(private, "private"))
        if name is not None:
            token = Token(name, user, *fields, created_at, expiry)
            if token.name in FRONT_END_WRITERS:
                raise InvalidInputError(
                    f'name "{token.name}" names what its memories were written by without a token; '
                    "choose another name",
                    parameter="name",
                )
            if not self._backend().add_token(TokenRecord.made(token, digest)):
                raise InvalidInputError(
                    f'name "{token.name}" is taken by another token; '
                    "choose another name or revoke that token",
                    parameter="name",
                )
            return secret, token
        base = Token(ADMIN_NAME, user, *fields, created_at, expiry)  # checks the fields before a name is made
        stem = ADMIN_NAME if base.user is None else _name_from(base.user)
        while True:  # a name another process takes meanwhile is skipped: the next one is tried
            taken = {record.name for record in self._backend().token_records()} | FRONT_END_WRITERS
            token = Token(_free_name(stem, taken), user, *fields, created_at, expiry)
            if self._backend().add_token(TokenRecord.made(token, digest)):
                return secret, token

    def list(self) -> builtins.list[Token]:
        """Every token of the store, by name (never a secret: the store has none)."""
        return sorted((record.token for record in self._backend().token_records()), key=lambda t: t.name)

    def revoke(self, name: str) -> Token:
        """Remove the token named ``name`` (stripped): every server on the store refuses it from its
        next call on. Returns it; TokenNotFoundError (nothing changed) when no token has that name."""
        wanted = checks.string(name, "name").strip()
        backend = self._backend()
        found = next((r.token for r in backend.token_records() if r.name == wanted), None)
        if found is None or not backend.remove_token(wanted):
            raise TokenNotFoundError(wanted)
        return found

    def verify(self, secret: str) -> Token | None:
        """The token whose secret this is, or None — None too once it has expired (as for a revoked
        one). The store is read at every call (a revocation by another process counts at once): one
        row, looked up by the sha256 of ``secret`` (the unique index on the stored hash), whatever
        the number of tokens. Never raises for a malformed secret: anything but a stored token's
        secret is None.

        A look-up keyed by the presented value may take longer or shorter by how the presented
        digest compares with stored ones (the index's order), but what it could reveal is about
        sha256 digests, not secrets: a digest cannot be turned back into a secret, and a secret is
        256 random bits, so no presented guess gets nearer to one by knowing its digest's neighbours
        (the standard scheme for high-entropy API tokens; a per-row salt would forbid the look-up
        and protect nothing more)."""
        if not isinstance(secret, str):
            return None
        record = self._backend().token_record(secret_hash(secret))
        token = None if record is None else record.token
        return None if token is None or token.expired() else token


def _expiry(value: str | datetime | None) -> str | None:
    """When a new token stops working (``parse_expiry``), as UTC ISO 8601 (None: never);
    InvalidInputError (``parameter="expires_at"``) for a value that is no time. One already past is
    refused by the Token made with it."""
    moment = parse_expiry(value, "expires_at", datetime.now(timezone.utc))
    return None if moment is None else utc_iso(moment)


def _name_from(user: str) -> str:
    """A token name made of a user's name: whitespace and unprintable characters become ``-``."""
    return "".join(char if char.isprintable() and not char.isspace() else "-" for char in user)


def _free_name(stem: str, taken: set[str]) -> str:
    """``stem`` if no token has it, else the first of ``stem-2``, ``stem-3``… no token has (``stem``
    cut so that each fits in a name's 64 characters)."""
    number = 1
    while True:
        suffix = "" if number == 1 else f"-{number}"
        name = stem[: TOKEN_NAME_CHARS - len(suffix)] + suffix
        if name not in taken:
            return name
        number += 1
