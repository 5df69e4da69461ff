"""Rows of a PostgreSQL store: memories in and out, by id, newest first, or streamed in id order.

Every function takes a cursor inside the caller's transaction and the quoted schema name ``s``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from remem.backends import links, listing
from remem.backends.analyzer import memory_terms
from remem.backends.base import TurnTime
from remem.backends.postgres import filtering, keywords
from remem.backends.shapes import stored_memory
from remem.errors import EditConflictError, InvalidInputError, MemoryNotFoundError
from remem.types import Filters, Memory, NewMemory, text_sha256, utc_now_iso

if TYPE_CHECKING:
    import psycopg

    from remem.arrays import FloatArray

COLUMNS = (
    'm.id, m.text, m.sha256, m.created_at, m."user", m.conversation, m.role, m.meta, m.tags, m.updated_at, '
    "m.superseded_by, m.superseded_at, m.expires_at, m.written_by"
)


def dedup_key(s: str) -> str:
    """The expressions of the unique index that makes a text one memory per user and conversation."""
    return f"(sha256, {s}.name_key(coalesce(\"user\", '')), {s}.name_key(coalesce(conversation, '')))"


def memory(row: Sequence[Any]) -> Memory:
    """A Memory from a row of ``COLUMNS``."""
    return stored_memory(row, row[8])  # tags as a text[]


def get_many(cursor: psycopg.Cursor[Any], s: str, ids: Sequence[int]) -> dict[int, Memory]:
    """The memories with these ids (missing ids are absent)."""
    cursor.execute(f"SELECT {COLUMNS} FROM {s}.memories m WHERE m.id = ANY(%s::bigint[])", (list(ids),))
    return {int(row[0]): memory(row) for row in cursor.fetchall()}


def texts(cursor: psycopg.Cursor[Any], s: str, ids: Sequence[int]) -> dict[int, str]:
    """The texts of the memories with these ids (missing ids are absent)."""
    cursor.execute(f"SELECT m.id, m.text FROM {s}.memories m WHERE m.id = ANY(%s::bigint[])", (list(ids),))
    return {int(mid): str(text) for mid, text in cursor.fetchall()}


def turn_times(cursor: psycopg.Cursor[Any], s: str, ids: Sequence[int]) -> dict[int, TurnTime]:
    """User, conversation, created_at and role of those of these memories in a conversation."""
    cursor.execute(
        f'SELECT m.id, m."user", m.conversation, m.created_at, m.role FROM {s}.memories m '
        "WHERE m.id = ANY(%s::bigint[]) AND m.conversation IS NOT NULL",
        (list(ids),),
    )
    return {int(mid): TurnTime(*turn) for mid, *turn in cursor.fetchall()}


def select(
    cursor: psycopg.Cursor[Any], s: str, filters: Filters | None, tail: str, params: Sequence[Any] = ()
) -> list[Memory]:
    """The filtered memories, with ``tail`` (ORDER BY, LIMIT; its parameters last) appended."""
    condition, where_params = filtering.where(filters, s)
    cursor.execute(f"SELECT {COLUMNS} FROM {s}.memories m WHERE {condition} {tail}", [*where_params, *params])
    return [memory(row) for row in cursor.fetchall()]


def newest(
    cursor: psycopg.Cursor[Any], s: str, filters: Filters, limit: int, after: tuple[str, int] | None
) -> list[Memory]:
    """Up to ``limit`` filtered memories, newest first (ties: higher id first), past ``after``
    (created_at, id) when given: the union of ``remem.backends.listing``'s branches, each an ordered
    index scan that stops after ``limit`` rows."""
    dialect = listing.Dialect("%s", "m.user_key IS NULL", lambda chosen: filtering.where(chosen, s))
    sql, params = listing.page_query(f"SELECT {COLUMNS} FROM {s}.memories m", filters, after, limit, dialect)
    cursor.execute(sql, params)
    return [memory(row) for row in cursor.fetchall()]


def find_duplicate(cursor: psycopg.Cursor[Any], s: str, item: NewMemory) -> int | None:
    """The id of a memory with the same text in the same user and conversation, if any."""
    return find_duplicates(cursor, s, [item])[0]


def find_duplicates(cursor: psycopg.Cursor[Any], s: str, items: Sequence[NewMemory]) -> list[int | None]:
    """For each item, in order, ``find_duplicate``'s answer: one statement (the unique index probed
    once per item) instead of a round trip each."""
    return find_keys(cursor, s, [(text_sha256(item.text), item.user, item.conversation) for item in items])


def find_keys(
    cursor: psycopg.Cursor[Any], s: str, keys: Sequence[tuple[str, str | None, str | None]]
) -> list[int | None]:
    """For each (text's sha256, user, conversation), in order, the id stored with it, if any."""
    cursor.execute(
        "SELECT q.n, m.id FROM unnest(%s::text[], %s::text[], %s::text[]) WITH ORDINALITY AS q(sha, u, c, n) "
        f"JOIN {s}.memories m ON {dedup_key(s)} = "
        f"(q.sha, {s}.name_key(coalesce(q.u, '')), {s}.name_key(coalesce(q.c, '')))",
        (
            [sha for sha, _, _ in keys],
            [user for _, user, _ in keys],
            [conversation for _, _, conversation in keys],
        ),
    )
    found = {int(n): int(mid) for n, mid in cursor.fetchall()}
    return [found.get(n) for n in range(1, len(keys) + 1)]


def terms_sql(s: str) -> str:
    """SQL for a memory's tsvector: its own analyzed terms with positions (weight D), then its
    context's (weight C). Parameters: the two term arrays (``analyzed``)."""
    return f"({s}.term_vector(%s::text[]) || setweight({s}.term_vector(%s::text[]), 'C'))"


def analyzed(text: str, names: Sequence[str | None], context: str) -> tuple[list[str], list[str], int]:
    """The parameters of ``terms_sql`` (the terms the memory's tsvector can hold: ``keywords.indexed``)
    and the term count (the memory's own terms) of a memory."""
    terms = memory_terms(text, names)
    return (*keywords.indexed(terms, memory_terms(context)), len(terms))


def _insert_sql(s: str) -> str:
    """The INSERT of one memory (parameters: ``_insert_row``), its id or no row for a duplicate. A
    memory's own id is kept when it is above every id the store gave (the sequence moves past it);
    otherwise, and without one, the sequence gives the next."""
    sequence = f"pg_get_serial_sequence('{s}.memories', 'id')"
    new_id = (
        f"CASE WHEN %s::bigint > coalesce(pg_sequence_last_value({sequence}::regclass), 0) "
        f"THEN setval({sequence}, %s::bigint) ELSE nextval({sequence}) END"
    )
    return (
        f'INSERT INTO {s}.memories (id, text, sha256, created_at, updated_at, "user", conversation, '
        f"role, meta, tags, context, expires_at, written_by, terms, term_count) VALUES ({new_id}, %s, %s, "
        f"%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, {terms_sql(s)}, %s) "
        f"ON CONFLICT {dedup_key(s)} DO NOTHING RETURNING id"
    )


def _insert_row(item: NewMemory, created_at: str, context: str) -> tuple[Any, ...]:
    """The parameters of ``_insert_sql`` for one memory."""
    terms = analyzed(item.text, (item.role, item.user, *sorted(set(item.tags))), context)
    return (
        item.id,
        item.id,
        item.text,
        text_sha256(item.text),
        item.created_at or created_at,
        item.updated_at,
        item.user,
        item.conversation,
        item.role,
        json.dumps(dict(item.meta), ensure_ascii=False, sort_keys=True),
        sorted(set(item.tags)),
        context,
        item.expires_at,
        item.written_by,
        *terms,
    )


def insert_many(
    cursor: psycopg.Cursor[Any], s: str, items: Sequence[NewMemory], created_at: str, contexts: Sequence[str]
) -> list[int | None]:
    """Insert memories (with their contexts and keyword terms), in order: each one's id, or None
    (nothing written) for a duplicate. ``created_at`` applies unless a memory carries its own; a
    memory's ``id`` is kept if never given. The statements go in one pipeline, not one round trip
    each (and memories with ids to keep, for which four more went, take the ids lock once)."""
    if not items:
        return []
    if any(item.id is not None for item in items):  # one writer at a time moves the sequence
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"remem-ids:{s}",))
    rows = [_insert_row(item, created_at, context) for item, context in zip(items, contexts, strict=True)]
    cursor.executemany(_insert_sql(s), rows, returning=True)
    ids: list[int | None] = []
    while True:
        row = cursor.fetchone()
        ids.append(None if row is None else int(row[0]))
        if not cursor.nextset():
            return ids


def lock_links(cursor: psycopg.Cursor[Any], s: str) -> None:
    """Take the store's links lock for this transaction: splices (and an import's links) run one
    at a time, each reading the chains as the one before it left them. Two forgets at once of
    consecutive memories of a chain (W → M → N) would otherwise each splice past the other's
    memory as it was (W → N, and M current again), and W point to N, deleted. Taken before any row
    lock, so a transaction waiting for it holds none."""
    cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"remem-links:{s}",))


def supersede(cursor: psycopg.Cursor[Any], s: str, wanted: Sequence[links.Link]) -> None:
    """Write each link inside the caller's transaction, as ``links.needs_link`` allows (it raises
    for one it refuses); the old memory's row is locked first, so a forget or another supersede of
    it waits for this transaction, or this one finds it gone or superseded, and so are the rows of
    the new memory's chain that ``links.loops`` reads (an add's new memory is its own insert: one
    row). The new memory must be stored (``links.check_new_stored``): an add's is its own insert;
    an import's were found before, and it holds ``lock_links``, so a forget of one waits or has
    finished."""
    read = reader(cursor, s)
    for link in wanted:
        if links.needs_link(link, read(link.old), links.loops(link, read)):
            links.check_new_stored(link, read(link.new) is not None)
            cursor.execute(
                f"UPDATE {s}.memories SET superseded_by = %s, superseded_at = %s WHERE id = %s",
                (link.new, link.at, link.old),
            )


def reader(cursor: psycopg.Cursor[Any], s: str) -> links.Read:
    """Reads a memory's ``links.Target`` inside the caller's transaction, its row locked."""

    def read(memory_id: int) -> links.Target | None:
        cursor.execute(
            f'SELECT id, "user", conversation, superseded_by, expires_at FROM {s}.memories WHERE id = %s '
            "FOR UPDATE",
            (memory_id,),
        )
        row = cursor.fetchone()
        return None if row is None else links.Target(int(row[0]), row[1], row[2], row[3], row[4])

    return read


def revive(
    cursor: psycopg.Cursor[Any],
    s: str,
    memory_id: int,
    supersedes: int | None,
    expires_at: str | None,
    at: str,
) -> links.Revival | None:
    """Make a stored memory current again inside the caller's transaction (which holds
    ``lock_links``), as ``links.revival`` plans (it raises what it refuses), every row it reads
    locked; None when there is no such memory."""
    read = reader(cursor, s)
    memory = read(memory_id)
    if memory is None:
        return None
    plan = links.revival(memory, read, supersedes, at)
    if plan.retired:
        cursor.execute(
            f"UPDATE {s}.memories SET superseded_by = NULL, superseded_at = NULL, expires_at = %s "
            "WHERE id = %s",
            (expires_at, memory_id),
        )
    if plan.supersedes:
        cursor.execute(
            f"UPDATE {s}.memories SET superseded_by = %s, superseded_at = %s WHERE id = ANY(%s::bigint[])",
            (memory_id, at, list(plan.supersedes)),
        )
    return plan


def splice(cursor: psycopg.Cursor[Any], s: str, ids: Sequence[int]) -> None:
    """Before ``ids`` are deleted (under ``lock_links``, their rows locked first): the memories they
    superseded that stay point to the first memory after them that stays, or are current again
    (``links``)."""
    lock_links(cursor, s)
    cursor.execute(
        f"SELECT id FROM {s}.memories WHERE id = ANY(%s::bigint[]) ORDER BY id FOR UPDATE", (list(ids),)
    )
    cursor.execute(
        f"SELECT DISTINCT superseded_by FROM {s}.memories WHERE superseded_by = ANY(%s::bigint[])",
        (list(ids),),
    )
    gone, pointed = set(ids), {int(row[0]) for row in cursor.fetchall()}
    successor: dict[int, int | None] = {}
    while reads := links.chain_reads(pointed, gone, successor):
        cursor.execute(f"SELECT id, superseded_by FROM {s}.memories WHERE id = ANY(%s::bigint[])", (reads,))
        successor.update({int(mid): None if by is None else int(by) for mid, by in cursor.fetchall()})
        successor.update({mid: None for mid in reads if mid not in successor})
    for old_end, after in links.spliced(pointed, gone, successor).items():
        cursor.execute(
            f"UPDATE {s}.memories SET superseded_by = %s, superseded_at = CASE WHEN %s::bigint IS NULL "
            "THEN NULL ELSE superseded_at END WHERE superseded_by = %s",
            (after, after, old_end),
        )


def add_vectors(cursor: psycopg.Cursor[Any], s: str, memory_id: int, windows: FloatArray) -> None:
    """Store a memory's window vectors, in window order."""
    cursor.executemany(
        f"INSERT INTO {s}.vectors (memory_id, window_no, embedding) VALUES (%s, %s, %s)",
        [(memory_id, number, row) for number, row in enumerate(windows)],
    )


def vectors_of_memories(cursor: psycopg.Cursor[Any], s: str, ids: Sequence[int]) -> dict[int, list[bytes]]:
    """memory id → its window vectors as float32 bytes, in window order."""
    cursor.execute(
        f"SELECT memory_id, embedding FROM {s}.vectors WHERE memory_id = ANY(%s::bigint[]) "
        "ORDER BY memory_id, window_no",
        (list(ids),),
    )
    found: dict[int, list[bytes]] = {}
    for mid, embedding in cursor.fetchall():
        found.setdefault(int(mid), []).append(embedding.to_numpy().astype("<f4").tobytes())
    return found


def replace_text(
    cursor: psycopg.Cursor[Any],
    s: str,
    memory_id: int,
    text: str,
    windows: FloatArray,
    expected_sha256: str | None,
    context: str = "",
) -> Memory:
    """Give a memory new text, context, keyword terms and vectors, keeping id and created_at (see
    ``PostgresBackend.edit`` for the errors). The row is locked first, so a racing edit waits and
    then finds the text changed."""
    cursor.execute(
        f'SELECT sha256, "user", conversation, role, tags FROM {s}.memories WHERE id = %s FOR UPDATE',
        (memory_id,),
    )
    current = cursor.fetchone()
    if current is None:
        raise MemoryNotFoundError([memory_id])
    sha, user, conversation, role, tags = current
    if expected_sha256 not in (None, sha):
        raise EditConflictError(f"memory {memory_id} was changed by another edit meanwhile; retry")
    if find_duplicate(cursor, s, NewMemory(text=text, user=user, conversation=conversation)) not in (
        None,
        memory_id,
    ):
        raise InvalidInputError("another memory of the same user/conversation already holds this text")
    cursor.execute(
        f"UPDATE {s}.memories SET text = %s, sha256 = %s, updated_at = %s, context = %s, "
        f"terms = {terms_sql(s)}, term_count = %s WHERE id = %s",
        (
            text,
            text_sha256(text),
            utc_now_iso(),
            context,
            *analyzed(text, (role, user, *tags), context),
            memory_id,
        ),
    )
    cursor.execute(f"DELETE FROM {s}.vectors WHERE memory_id = %s", (memory_id,))
    add_vectors(cursor, s, memory_id, windows)
    return get_many(cursor, s, [memory_id])[memory_id]


def refile(
    cursor: psycopg.Cursor[Any],
    s: str,
    memory_id: int,
    change: tuple[Sequence[str] | None, Mapping[str, str] | None, tuple[str | None] | None],
    expected_sha256: str | None,
) -> Memory:
    """Replace a memory's tags, meta and/or user (``change``; None: kept) and its keyword terms,
    setting updated_at (see ``Backend.refile`` for the errors). The row is locked first, as an
    edit's is."""
    tags, meta, owner = change
    cursor.execute(
        f'SELECT sha256, text, "user", role, tags, context, conversation FROM {s}.memories '
        "WHERE id = %s FOR UPDATE",
        (memory_id,),
    )
    current = cursor.fetchone()
    if current is None:
        raise MemoryNotFoundError([memory_id])
    sha, text, user, role, stored_tags, context, conversation = current
    if expected_sha256 not in (None, sha):
        raise EditConflictError(f"memory {memory_id} was changed by another edit meanwhile; retry")
    if owner is not None:
        user = owner[0]
        if find_duplicate(cursor, s, NewMemory(text=text, user=user, conversation=conversation)) not in (
            None,
            memory_id,
        ):
            raise InvalidInputError("the new user already holds this text in another memory")
    new_tags = sorted(set(stored_tags if tags is None else tags))
    stored_meta = None if meta is None else json.dumps(dict(meta), ensure_ascii=False, sort_keys=True)
    cursor.execute(
        f'UPDATE {s}.memories SET tags = %s, meta = coalesce(%s, meta), "user" = %s, updated_at = %s, '
        f"terms = {terms_sql(s)}, term_count = %s WHERE id = %s",
        (
            new_tags,
            stored_meta,
            user,
            utc_now_iso(),
            *analyzed(text, (role, user, *new_tags), context),
            memory_id,
        ),
    )
    return get_many(cursor, s, [memory_id])[memory_id]


def set_context(cursor: psycopg.Cursor[Any], s: str, memory_id: int, sha256: str, context: str) -> bool:
    """Give a memory a new context (and keyword terms) if its text still hashes to ``sha256``; False
    (nothing written) otherwise, or when it has that context already."""
    cursor.execute(
        f'SELECT text, role, "user", tags FROM {s}.memories WHERE id = %s AND sha256 = %s '
        "AND context <> %s FOR UPDATE",
        (memory_id, sha256, context),
    )
    row = cursor.fetchone()
    if row is None:
        return False
    text, role, user, tags = row
    cursor.execute(
        f"UPDATE {s}.memories SET context = %s, terms = {terms_sql(s)}, term_count = %s WHERE id = %s",
        (context, *analyzed(text, (role, user, *tags), context), memory_id),
    )
    return True
