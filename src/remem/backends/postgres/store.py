"""The PostgreSQL back-end: a store in one schema of one database, shared by many clients at once.

The server holds everything (rows, vectors, the keyword terms, the filters' indexes); there is no
local file. Writers take a shared advisory lock for their transaction, so any number write at once
(dedup by a unique index makes two equal adds one memory); the few changes that must see the store
still — the first model stamp, a re-embed's swap, a reindex — take it exclusively.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from remem.backends import links, pooling
from remem.backends.postgres import (
    bulk,
    doctor,
    facts,
    keywords,
    pending,
    phrases,
    records,
    tokens,
    tops,
    upkeep,
)
from remem.backends.postgres import reembed as reembedding
from remem.backends.postgres import settings as meta
from remem.backends.postgres.access import StoreAccess
from remem.backends.postgres.connecting import connect
from remem.backends.postgres.lanes import EXACT_CANDIDATES, LaneSettings, PostgresVectorLane
from remem.backends.postgres.schema import ITERATIVE_SCAN_VERSION, prepare
from remem.backends.postgres.session import Session, read_again
from remem.backends.postgres.urls import parse
from remem.backends.shapes import contexts_of, windows_of
from remem.types import AddResult, Filters, Memory, ModelInfo, NewMemory, text_sha256, utc_now_iso

if TYPE_CHECKING:
    import psycopg

    from remem.arrays import FloatArray
    from remem.backends.base import Coverage, EmbedFn, PoolAnswer, PoolRequest, ProgressFn, Scored, TurnTime
    from remem.backends.postgres.staged import PostgresStaging
    from remem.backends.shapes import TokenRecord
    from remem.reports import Check, CompactReport, ReembedReport, ReindexReport, StoreStats

_PAGE = 1000  # memories per page when streaming


#: Memories looked up for duplicates in one statement (``find_duplicates``).
LOOKUP_CHUNK = 5_000


class PostgresBackend:
    """A memory store on a PostgreSQL server with pgvector (see the module docstring)."""

    def __init__(self, session: Session, pgvector: tuple[int, ...]) -> None:
        """Use ``PostgresBackend.open``; this wraps a prepared session."""
        self.access = StoreAccess(session)
        self.session, self.s, self.location = session, self.access.s, self.access.location
        self.iterative = pgvector >= ITERATIVE_SCAN_VERSION
        #: Filtered searches over up to this many vectors are exact (see ``lanes``).
        self.exact_candidates = EXACT_CANDIDATES
        self.warnings: list[str] = []
        if not self.iterative:
            version = ".".join(map(str, pgvector))
            self.warnings.append(
                f"pgvector {version} has no iterative index scans (0.8+): filtered searches widen "
                "ef_search instead"
            )

    @classmethod
    def open(cls, url: str, *, create: bool, schema: str | None = None) -> PostgresBackend:
        """Connect to the store at ``url`` (``?schema=`` or ``schema`` names it; default ``remem``),
        creating or upgrading its tables with ``create``.

        StoreNotFoundError when there is none and ``create`` is false; StoreError when the server
        cannot be reached, lacks pgvector, or holds a newer schema; InvalidInputError for a bad URL.
        """
        address = parse(url, schema)
        session = Session(connect(address), address)
        try:
            store = cls(session, prepare(session, create))
            upkeep.ensure_keywords_current(store.access)  # an older analyzer's terms are re-analysed
        except BaseException:
            session.close()
            raise
        return store

    def close(self) -> None:
        """Close the connections."""
        self.session.close()

    def __enter__(self) -> PostgresBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def key_values(self) -> dict[str, str]:
        """The store's key/value rows."""
        return self.access.key_values()

    @property
    def model(self) -> ModelInfo | None:
        """The model whose vectors the store holds, or None while it holds none."""
        return self.access.model

    @property
    def settings(self) -> meta.IndexSettings:
        """How the store's vectors are indexed."""
        return meta.IndexSettings.of(self.key_values())

    def check_model(self, model: ModelInfo) -> None:
        """ModelMismatchError unless the store holds no vectors yet or was made by ``model``."""
        self.access.check_model(model)

    @read_again
    def find_duplicate(self, memory: NewMemory) -> int | None:
        """The id of a memory with the same text, user and conversation, if one is stored."""
        with self.session.transaction() as cursor:
            return records.find_duplicate(cursor, self.s, memory)

    @read_again
    def find_duplicates(self, memories: Sequence[NewMemory]) -> list[int | None]:
        """For each memory, in order, ``find_duplicate``'s answer: ``LOOKUP_CHUNK`` a round trip."""
        found: list[int | None] = []
        with self.session.transaction() as cursor:
            for start in range(0, len(memories), LOOKUP_CHUNK):
                found += records.find_duplicates(cursor, self.s, memories[start : start + LOOKUP_CHUNK])
        return found

    @read_again
    def find_keys(self, keys: Sequence[tuple[str, str | None, str | None]]) -> list[int | None]:
        """For each (text hash, user, conversation), the id stored with it: ``LOOKUP_CHUNK`` a round trip."""
        found: list[int | None] = []
        with self.session.transaction() as cursor:
            for start in range(0, len(keys), LOOKUP_CHUNK):
                found += records.find_keys(cursor, self.s, keys[start : start + LOOKUP_CHUNK])
        return found

    def insert_many(
        self,
        cursor: psycopg.Cursor[Any],
        memories: Sequence[NewMemory],
        created_at: str,
        contexts: Sequence[str],
    ) -> list[AddResult]:
        """Insert memories inside ``access.writing``, in order; a duplicate is not inserted and
        reports the existing id."""
        ids = records.insert_many(cursor, self.s, memories, created_at, contexts)
        skipped = [memory for memory, memory_id in zip(memories, ids, strict=True) if memory_id is None]
        existing = iter(records.find_duplicates(cursor, self.s, skipped) if skipped else [])
        results = [
            AddResult(id=memory_id, duplicate=False)
            if memory_id is not None
            else AddResult(id=next(existing) or -1, duplicate=True)
            for memory_id in ids
        ]
        wanted = [
            links.Link.of(memory, r.id, created_at) for memory, r in zip(memories, results, strict=True)
        ]
        records.supersede(cursor, self.s, [link for link in wanted if link is not None])
        return results

    def add_many(
        self,
        memories: Sequence[NewMemory],
        vectors: Sequence[FloatArray],
        model: ModelInfo,
        contexts: Sequence[str] | None = None,
    ) -> list[AddResult]:
        """Store memories with their (windows, dim) unit vectors (and contexts) in one transaction; a
        duplicate (of a stored memory or an earlier one in the batch) is not stored and reports the
        existing id. An import big enough rebuilds the HNSW graph once instead (``bulk``)."""
        windows = windows_of(vectors, len(memories), model.dim)
        self.access.stamp(model)  # a new store's graph exists before the rule looks for it
        rebuild = bulk.worth_rebuilding(self.access, sum(len(rows) for rows in windows))
        with self.access.writing(model, exclusive=rebuild) as cursor:
            if rebuild:
                bulk.lock_graph(cursor, self.session.url.schema)
            results = self.insert_many(cursor, memories, utc_now_iso(), contexts_of(contexts, memories))
            stored = [(r.id, rows) for r, rows in zip(results, windows, strict=True) if not r.duplicate]
            if rebuild:
                bulk.load_and_rebuild(cursor, self.s, stored, model.dim)
            else:
                for memory_id, rows in stored:
                    records.add_vectors(cursor, self.s, memory_id, rows)
        self.after_adding(sum(not r.duplicate for r in results))
        return results

    def after_adding(self, added: int) -> None:
        """Once an add of ``added`` memories has committed (not inside a caller's transaction): the
        planner's statistics renewed if the add was large for the store (``upkeep.refresh_statistics``)."""
        if not self.session.in_transaction():
            upkeep.refresh_statistics(self.access, added)

    def add_pending(
        self, memories: Sequence[NewMemory], contexts: Sequence[str] | None = None
    ) -> list[AddResult]:
        """Store memories (with contexts) without vectors yet, in one transaction (duplicates as in
        ``add_many``)."""
        with self.access.writing(None) as cursor:
            results = self.insert_many(cursor, memories, utc_now_iso(), contexts_of(contexts, memories))
        self.after_adding(sum(not r.duplicate for r in results))
        return results

    def set_contexts(self, items: Sequence[tuple[int, str, str]]) -> list[int]:
        """Give memories, as (id, text as read, context), new contexts in one transaction; a memory
        deleted or edited meanwhile is skipped. Returns the ids changed."""
        with self.access.writing(None) as cursor:
            return [
                mid
                for mid, text, context in items
                if records.set_context(cursor, self.s, mid, text_sha256(text), context)
            ]

    @read_again
    def pending(self, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` (id, text) of memories waiting for their vectors, oldest first."""
        return pending.waiting(self.access, limit)

    @read_again
    def pending_count(self) -> int:
        """How many memories wait for their vectors."""
        return pending.count(self.access)

    def attach_vectors(
        self, items: Sequence[tuple[int, str, FloatArray]], model: ModelInfo, *, replace: bool = False
    ) -> list[int]:
        """Give pending memories (any, with ``replace``) vectors made for ``text`` (``pending.attach``)."""
        return pending.attach(self.access, items, model, replace=replace)

    def edit(
        self,
        memory_id: int,
        text: str,
        vectors: FloatArray,
        model: ModelInfo,
        expected_sha256: str | None = None,
        context: str = "",
    ) -> Memory:
        """Replace a memory's text and vectors, keeping id and created_at, setting updated_at.

        MemoryNotFoundError if there is none; InvalidInputError if its user/conversation already
        holds that text in another memory; EditConflictError if its text no longer hashes to
        ``expected_sha256`` (another edit came first: the row is re-checked after its lock).
        """
        (rows,) = windows_of([vectors], 1, model.dim)
        with self.access.writing(model) as cursor:
            return records.replace_text(cursor, self.s, memory_id, text, rows, expected_sha256, context)

    def refile(
        self,
        memory_id: int,
        tags: Sequence[str] | None,
        meta: Mapping[str, str] | None,
        expected_sha256: str | None = None,
        owner: tuple[str | None] | None = None,
    ) -> Memory:
        """Replace a memory's tags, meta and/or user and its keyword terms (``records.refile``)."""
        with self.access.writing(None) as cursor:
            return records.refile(cursor, self.s, memory_id, (tags, meta, owner), expected_sha256)

    def forget(self, memory_ids: Sequence[int]) -> list[int]:
        """Delete memories with their vectors; returns the ids that existed."""
        with self.access.writing(None) as cursor:
            records.splice(cursor, self.s, memory_ids)
            cursor.execute(
                f"DELETE FROM {self.s}.memories WHERE id = ANY(%s::bigint[]) RETURNING id",
                (list(memory_ids),),
            )
            return sorted(int(row[0]) for row in cursor.fetchall())

    def supersede(self, wanted: Sequence[links.Link]) -> None:
        """Write supersede links in one transaction (``links``; all or none), one such transaction
        or forget at a time (``records.lock_links``)."""
        with self.access.writing(None) as cursor:
            records.lock_links(cursor, self.s)
            records.supersede(cursor, self.s, wanted)

    def revive(
        self, memory_id: int, supersedes: int | None, expires_at: str | None, at: str
    ) -> links.Revival | None:
        """Make a stored memory current again in one transaction, one such transaction or forget at
        a time (``records.revive``, ``records.lock_links``)."""
        with self.access.writing(None) as cursor:
            records.lock_links(cursor, self.s)
            return records.revive(cursor, self.s, memory_id, supersedes, expires_at, at)

    def add_token(self, record: TokenRecord) -> bool:
        """Store a bearer token's record; False (nothing stored) when its name is taken."""
        return tokens.add(self.access, record)

    @read_again
    def token_records(self) -> list[TokenRecord]:
        """Every stored token's record, read now, by name."""
        return tokens.every(self.access)

    @read_again
    def token_record(self, digest: str) -> TokenRecord | None:
        """The record of the token whose secret hashes to ``digest``, read now; None if none."""
        return tokens.by_hash(self.access, digest)

    def remove_token(self, name: str) -> bool:
        """Delete the token of that name; False when there is none."""
        return tokens.remove(self.access, name)

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """Reads inside see one state of the store (a REPEATABLE READ transaction)."""
        return self.session.snapshot()

    @read_again
    def get_many(self, memory_ids: Sequence[int]) -> dict[int, Memory]:
        """The memories with these ids (missing ids are absent)."""
        with self.session.transaction() as cursor:
            return records.get_many(cursor, self.s, memory_ids)

    @read_again
    def texts(self, memory_ids: Sequence[int]) -> dict[int, str]:
        """The texts of the memories with these ids (missing ids are absent)."""
        with self.session.transaction() as cursor:
            return records.texts(cursor, self.s, memory_ids)

    @read_again
    def turn_times(self, memory_ids: Sequence[int]) -> dict[int, TurnTime]:
        """User, conversation, created_at and role of those of these memories in a conversation."""
        with self.session.transaction() as cursor:
            return records.turn_times(cursor, self.s, memory_ids)

    @read_again
    def newest(self, filters: Filters, limit: int, after: tuple[str, int] | None = None) -> list[Memory]:
        """Up to ``limit`` filtered memories, newest first (ties: higher id first), past ``after``
        (created_at, id) when given: a row comparison the index on (created_at, id) serves."""
        with self.session.transaction() as cursor:
            return records.newest(cursor, self.s, filters, limit, after)

    def iter_all(self, filters: Filters | None = None) -> Iterator[Memory]:
        """Every filtered memory in id order, streamed a page at a time (each page its own
        transaction, unless inside ``snapshot``: then all pages see that one state)."""
        after = 0
        while True:
            with self.session.transaction() as cursor:
                page = records.select(
                    cursor, self.s, filters, "AND m.id > %s ORDER BY m.id LIMIT %s", [after, _PAGE]
                )
            yield from page
            if len(page) < _PAGE:
                return
            after = page[-1].id

    @read_again
    def superseded_of(self, memory_ids: Sequence[int]) -> list[int]:
        """The ids of the memories these memories superseded, ascending."""
        with self.session.transaction() as cursor:
            cursor.execute(
                f"SELECT id FROM {self.s}.memories WHERE superseded_by = ANY(%s::bigint[]) ORDER BY id",
                (list(memory_ids),),
            )
            return [int(row[0]) for row in cursor.fetchall()]

    @read_again
    def expired_ids(self, now: str) -> list[int]:
        """The ids of the memories whose ``expires_at`` is at or before ``now``, ascending."""
        with self.session.transaction() as cursor:
            cursor.execute(
                f"SELECT id FROM {self.s}.memories WHERE expires_at IS NOT NULL AND expires_at <= %s "
                "ORDER BY id",
                (now,),
            )
            return [int(row[0]) for row in cursor.fetchall()]

    @read_again
    def candidate_ids(self, filters: Filters) -> list[int]:
        """Ids of every filtered memory, ascending."""
        with self.session.transaction() as cursor:
            return [m.id for m in records.select(cursor, self.s, filters, "ORDER BY m.id")]

    def vectors_of_memories(self, memory_ids: Sequence[int]) -> dict[int, list[bytes]]:
        """memory id → its window vectors as float32 bytes, in window order."""
        self.session.register_vectors()
        with self.session.transaction() as cursor:
            return records.vectors_of_memories(cursor, self.s, memory_ids)

    def vector_lane(self, embedded_with: ModelInfo | None = None) -> PostgresVectorLane:
        """The vector lane; ModelChangedError if the store no longer uses ``embedded_with``."""
        rows, where = self.key_values(), self.location
        settings = LaneSettings.of(rows, where, embedded_with, self.iterative, self.exact_candidates)
        self.session.register_vectors()
        return PostgresVectorLane(self.session, self.s, settings)

    def warm_up(self, model: ModelInfo) -> None:
        """Read the store's settings and register the vector type now (``vector_lane``)."""
        self.vector_lane(model)

    @read_again
    def pool(self, request: PoolRequest) -> PoolAnswer:
        """A search's pool, its lanes composed inside one snapshot (``pooling.gather``): each lane's
        tops in one statement (``tops``), the pooled memories' facts in one (``facts``)."""
        with self.session.snapshot():
            return pooling.gather(
                self, request, pooling.Shortcuts(self._keyword_tops, self._vector_tops, self._facts)
            )

    def _keyword_tops(
        self, request: PoolRequest, among: Sequence[int] | None
    ) -> tuple[pooling.Tops, pooling.Turns | None]:
        """The keyword lane's tops and the turns among them (``tops.keyword_tops``), with the search
        settings of the vector lane's walk that follows (``walk_settings``)."""
        with self.session.transaction() as cursor:
            walking = request.vector is not None and among is None
            settings = self.vector_lane(request.model).walk_settings(request.depth) if walking else None
            return tops.keyword_tops(cursor, self.s, self.session, request, among, settings)

    def _vector_tops(self, request: PoolRequest, vector: FloatArray) -> pooling.Tops:
        """The vector lane's tops (``tops.vector_tops``)."""
        return tops.vector_tops(self.vector_lane(request.model), request, vector)

    def _facts(self, request: PoolRequest, wanted: pooling.Wanted) -> pooling.Facts:
        """The last step of a hybrid pool in one statement (``facts.facts``), on a cursor made once
        the vector lane registered the vector type (a cursor keeps the adapters it was made with)."""
        with self.session.transaction() as cursor:
            return facts.facts(cursor, self.s, self.session, request, wanted)

    def keyword_top(
        self,
        text: str,
        filters: Filters,
        k: int,
        among: Sequence[int] | None = None,
        scope: Filters | None = None,
    ) -> list[Scored]:
        """Top ``k`` (memory id, score) among the filtered memories, with ``scope``'s statistics if
        given (``keywords.top``)."""
        with self.session.transaction() as cursor:
            return keywords.top(cursor, self.s, text, filters, k, among, self.session, scope)

    def texts_holding(self, words: Sequence[str], filters: Filters) -> list[tuple[int, str]]:
        """(id, text) of the filtered memories that may hold every one of ``words`` (``phrases.holding``)."""
        return phrases.holding(self.session, self.s, words, filters)

    def keyword_coverage(
        self, text: str, memory_ids: Sequence[int], enough: float, scope: Filters | None = None
    ) -> Coverage:
        """Each memory's share of the query's term weight, capped at ``enough`` (``keywords.coverage``)."""
        with self.session.transaction() as cursor:
            return keywords.coverage(cursor, self.s, text, memory_ids, enough, self.session, scope)

    def reembed(
        self, target: ModelInfo, embed: EmbedFn, progress: ProgressFn | None, force: bool
    ) -> ReembedReport:
        """Re-embed every memory with ``target`` (staged, resumable) and swap it in at once."""
        self.session.register_vectors()
        return reembedding.reembed(self.access, target, embed, progress, force)

    def staging(self) -> PostgresStaging:
        """The store's staging area for big ingests (``staged``: tables of its schema)."""
        from remem.backends.postgres.staged import PostgresStaging  # noqa: PLC0415

        return PostgresStaging(self.access, self.insert_many, self.after_adding)

    def reindex(
        self, kind: str | None, hnsw: tuple[int | None, int | None, int | None], force: bool
    ) -> ReindexReport:
        """Rebuild the HNSW index (of ``kind``, with the given parameters) and keyword terms where
        they are not current (everything with ``force``)."""
        return upkeep.reindex(self.access, kind, hnsw, force)

    def compact(self) -> CompactReport:
        """Nothing to do: pgvector updates its index in place with every write (and the keyword
        lane has no heads to keep)."""
        from remem.reports import CompactReport  # noqa: PLC0415 - `list` reads no report

        return CompactReport(0, 0)

    @read_again
    def stats(self) -> StoreStats:
        """Counts, model, index, size on the server and time span (``upkeep.summarize``)."""
        return upkeep.summarize(self.access)

    def index_state(self) -> None:
        """None: a PostgreSQL store's index never waits for a reindex to become HNSW (``auto`` and
        ``hnsw`` build pgvector's graph from the first vector on, ``exact`` asks for none)."""
        return None

    def doctor(self, repair: bool) -> tuple[list[Check], list[str]]:
        """Every check of the store (after repairing what can be derived again, with ``repair``)."""
        return doctor.diagnose(self.access, repair)
