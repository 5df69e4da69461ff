"""Numbered schema migrations, tracked in SQLite's ``user_version``; each runs in one transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from remem.backends.local import fts
from remem.backends.local.transactions import atomic
from remem.errors import StoreError

_SCHEMA = (
    # A memory of a conversation keeps the turns before it (remem.core.turns) as its ``context``.
    # Memories that change (remem.backends.links): a superseded memory names the one that replaced
    # it and when; a memory may expire.
    """CREATE TABLE memories (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        text TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT,
        user TEXT,
        conversation TEXT,
        role TEXT,
        meta TEXT NOT NULL DEFAULT '{}',
        context TEXT NOT NULL DEFAULT '',
        superseded_by INTEGER,
        superseded_at TEXT,
        expires_at TEXT
    )""",
    # Same text in the same user/conversation is one memory (NULLs compare equal via ifnull).
    """CREATE UNIQUE INDEX memories_dedup
        ON memories (sha256, ifnull(user, ''), ifnull(conversation, ''))""",
    "CREATE INDEX memories_created ON memories (created_at, id)",
    # memory_list's pages of one user's (and the shared) or one conversation's memories, newest
    # first: the name's index in the list's order, so a page past a cursor reads only its own rows
    # at any depth (remem.backends.local.filtering.newest_branches).
    "CREATE INDEX memories_user ON memories (user, created_at, id)",
    "CREATE INDEX memories_conversation ON memories (conversation, created_at, id)",
    "CREATE INDEX memories_role ON memories (role)",
    # Searches leave superseded and expired memories out through these two partial indexes.
    "CREATE INDEX memories_superseded ON memories (superseded_by) WHERE superseded_by IS NOT NULL",
    "CREATE INDEX memories_expires ON memories (expires_at) WHERE expires_at IS NOT NULL",
    """CREATE TABLE memory_tags (
        memory_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        tag TEXT NOT NULL,
        PRIMARY KEY (memory_id, tag)
    ) WITHOUT ROWID""",
    "CREATE INDEX memory_tags_tag ON memory_tags (tag, memory_id)",
    # Vectors have their own ids (the FAISS ids): an edited memory gets a new vector id, so an index
    # that cannot delete (HNSW) can tombstone the old one; a long memory can have several windows.
    """CREATE TABLE vectors (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        window INTEGER NOT NULL DEFAULT 0,
        vector BLOB NOT NULL,
        UNIQUE (memory_id, window)
    )""",
    # The keyword lane: analyzed terms, rowid = memory id; the context's column weighs less.
    fts.CREATE_TABLE,
    # The bearer tokens of `remem serve`: only the sha256 of each secret is kept (remem.core.tokens);
    # a token may stop working at ``expires_at`` (`remem token add --expires`): NULL is never.
    """CREATE TABLE tokens (
        name TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        user TEXT,
        conversation TEXT,
        read_only INTEGER NOT NULL,
        private INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT
    ) WITHOUT ROWID""",
    "CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
    "INSERT INTO store_meta (key, value) VALUES ('generation', '1')",
    # Identifies the store in its index file, so a file copied from another store is never trusted.
    "INSERT INTO store_meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))))",
)


#: Who wrote each memory (``Memory.written_by``): a token's name, ``cli``…; NULL for the memories
#: written before it was recorded (unknown).
_WRITTEN_BY = ("ALTER TABLE memories ADD COLUMN written_by TEXT",)

#: The number of stored vectors, kept in ``store_meta`` by triggers in the transaction that changes
#: them (cascades from a forgotten memory included), so that no write or search counts the table:
#: `SELECT count(*) FROM vectors` walks its smallest index, and a warm add at a million memories
#: counted it three times (the catch-up's check and the growth advice before and after).
_VECTOR_COUNT = (
    "INSERT OR REPLACE INTO store_meta (key, value) SELECT 'vector_count', count(*) FROM vectors",
    """CREATE TRIGGER vectors_counted_in AFTER INSERT ON vectors BEGIN
        UPDATE store_meta SET value = value + 1 WHERE key = 'vector_count'; END""",
    """CREATE TRIGGER vectors_counted_out AFTER DELETE ON vectors BEGIN
        UPDATE store_meta SET value = value - 1 WHERE key = 'vector_count'; END""",
)

#: Each frequent term's best holders by its own BM25 share, kept for the keyword lane (``heads``: the
#: stored heads): the term (a token of the keyword table: a Porter stem), its IDF, the mean
#: length, highest id and in-place rewrites when taken, and the holders' ids and shares (little-endian
#: int64 and float64; one share more than ids when other memories hold the term).
_KEYWORD_HEADS = (
    """CREATE TABLE keyword_heads (
        term TEXT PRIMARY KEY,
        idf REAL NOT NULL,
        mean REAL NOT NULL,
        last INTEGER NOT NULL,
        rewrites INTEGER NOT NULL,
        ids BLOB NOT NULL,
        shares BLOB NOT NULL
    ) WITHOUT ROWID""",
    # The newest in-place rewrites of keyword rows (``fts.REWRITES_KEPT``): the count of rewrites
    # after each, and its memory; a head taken before one takes the memory as a candidate.
    "CREATE TABLE keyword_rewrites (seq INTEGER PRIMARY KEY, memory_id INTEGER NOT NULL)",
)

#: A migration is SQL statements or a function of the connection; it runs inside a transaction.
Migration = tuple[str, ...] | Callable[[sqlite3.Connection], None]

#: Migration n brings a database from schema version n-1 to n. Version 1 is the schema remem 0.1
#: ships (what came before it was never released). Append only; never edit a released one.
MIGRATIONS: tuple[Migration, ...] = (_SCHEMA, _WRITTEN_BY, _VECTOR_COUNT, _KEYWORD_HEADS)
LATEST_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    """The schema version recorded in the database (0 for a new, empty file)."""
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    return int(version)


def migrate(conn: sqlite3.Connection, migrations: tuple[Migration, ...] | None = None) -> int:
    """Apply every migration (``MIGRATIONS`` unless given) the database lacks, each atomically;
    return the resulting version.

    The connection must be in autocommit mode (``isolation_level=None``) with foreign keys off (a
    migration may rebuild a table that others reference). Raises StoreError if the database was made
    by a newer remem than this one.
    """
    migrations = MIGRATIONS if migrations is None else migrations  # read when called: a test may add a step
    version = schema_version(conn)
    if version > len(migrations):
        raise StoreError(
            f"the store's schema version {version} is newer than this remem understands "
            f"({len(migrations)}); upgrade remem"
        )
    for number in range(version + 1, len(migrations) + 1):
        with atomic(conn):
            if schema_version(conn) >= number:  # another process migrated meanwhile
                continue
            step = migrations[number - 1]
            if callable(step):
                step(conn)
            else:
                for statement in step:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number:d}")
    return schema_version(conn)
