"""The bearer tokens of a PostgreSQL store: rows of its ``tokens`` table (hashes, never secrets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from remem.backends.shapes import TOKEN_COLUMNS, TokenRecord

if TYPE_CHECKING:
    from remem.backends.postgres.access import StoreAccess

_COLUMNS = ", ".join(f'"{column}"' for column in TOKEN_COLUMNS)
_MARKS = ", ".join(["%s"] * len(TOKEN_COLUMNS))


def add(access: StoreAccess, record: TokenRecord) -> bool:
    """Insert a token's record in one transaction; False (nothing written) when its name is taken."""
    with access.writing(None) as cursor:
        cursor.execute(
            f"INSERT INTO {access.s}.tokens ({_COLUMNS}) VALUES ({_MARKS}) ON CONFLICT (name) DO NOTHING",
            record.row(),
        )
        return cursor.rowcount == 1


def every(access: StoreAccess) -> list[TokenRecord]:
    """Every token's record, by name (code point order, as the local store sorts)."""
    with access.session.transaction() as cursor:
        cursor.execute(f'SELECT {_COLUMNS} FROM {access.s}.tokens ORDER BY name COLLATE "C"')
        return [TokenRecord.of(row) for row in cursor.fetchall()]


def by_hash(access: StoreAccess, digest: str) -> TokenRecord | None:
    """The record of the token whose hash is ``digest`` (the unique index on ``hash``); None if none."""
    with access.session.transaction() as cursor:
        cursor.execute(f"SELECT {_COLUMNS} FROM {access.s}.tokens WHERE hash = %s", (digest,))
        row = cursor.fetchone()
        return None if row is None else TokenRecord.of(row)


def remove(access: StoreAccess, name: str) -> bool:
    """Delete the token of that name in one transaction; False when there is none."""
    with access.writing(None) as cursor:
        cursor.execute(f"DELETE FROM {access.s}.tokens WHERE name = %s", (name,))
        return cursor.rowcount == 1
