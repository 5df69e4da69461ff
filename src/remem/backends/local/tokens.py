"""The bearer tokens of a local store: rows of its ``tokens`` table (hashes, never secrets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from remem.backends.local.guard import translating
from remem.backends.local.transactions import atomic
from remem.backends.shapes import TOKEN_COLUMNS, TokenRecord

if TYPE_CHECKING:
    from remem.backends.local.records import Records

_COLUMNS = ", ".join(TOKEN_COLUMNS)
_MARKS = ", ".join("?" * len(TOKEN_COLUMNS))


def add(records: Records, record: TokenRecord) -> bool:
    """Insert a token's record in one transaction; False (nothing written) when its name is taken."""
    with atomic(records.conn) as conn:
        cursor = conn.execute(
            f"INSERT INTO tokens ({_COLUMNS}) VALUES ({_MARKS}) ON CONFLICT (name) DO NOTHING",
            record.row(),
        )
        return cursor.rowcount == 1


def every(records: Records) -> list[TokenRecord]:
    """Every token's record, by name."""
    return [
        TokenRecord.of(row) for row in records.conn.execute(f"SELECT {_COLUMNS} FROM tokens ORDER BY name")
    ]


def by_hash(records: Records, digest: str) -> TokenRecord | None:
    """The record of the token whose hash is ``digest`` (the unique index on ``hash``); None if none."""
    row = records.conn.execute(f"SELECT {_COLUMNS} FROM tokens WHERE hash = ?", (digest,)).fetchone()
    return None if row is None else TokenRecord.of(row)


def remove(records: Records, name: str) -> bool:
    """Delete the token of that name in one transaction; False when there is none."""
    with atomic(records.conn) as conn:
        return conn.execute("DELETE FROM tokens WHERE name = ?", (name,)).rowcount == 1


@translating
class TokenRecords:
    """A local store's tokens (``LocalBackend``'s methods). Tokens touch neither the vectors nor the
    index file: SQLite's own write lock is enough, so a token is added or revoked at once even while
    a long reindex holds the writers' lock."""

    records: Records

    def add_token(self, record: TokenRecord) -> bool:
        """Store a bearer token's record; False (nothing stored) when its name is taken."""
        return add(self.records, record)

    def token_records(self) -> list[TokenRecord]:
        """Every stored token's record, read now, by name."""
        return every(self.records)

    def token_record(self, digest: str) -> TokenRecord | None:
        """The record of the token whose secret hashes to ``digest``, read now; None if none."""
        return by_hash(self.records, digest)

    def remove_token(self, name: str) -> bool:
        """Delete the token of that name; False when there is none."""
        return remove(self.records, name)
