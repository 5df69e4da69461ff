"""The vector lane on PostgreSQL: pgvector, filter first, the top ``k`` among the filtered memories.

Up to ``exact_candidates`` filtered vectors are scored exactly (looked up by memory; exact order).
Past that, the HNSW index (``vector_cosine_ops``) is walked with ``hnsw.iterative_scan`` on
(pgvector ≥ 0.8), so a filter that rejects most of the graph still fills ``k``; ``ef_search`` and
the scan mode are set per query with ``SET LOCAL``. A walk that returns too few is redone exactly.
A score is always the inner product of unit vectors (the cosine), as in the local store; a memory
scores as its best window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from remem.backends.base import Scored
from remem.backends.postgres import filtering
from remem.backends.postgres import settings as meta
from remem.backends.postgres.rows import one_value
from remem.errors import ModelChangedError, StoreError

if TYPE_CHECKING:
    import psycopg

    from remem.arrays import FloatArray
    from remem.backends.postgres.session import Session
    from remem.types import Filters, ModelInfo

#: pgvector's upper bound for hnsw.ef_search (iterative scans go on past it).
MAX_EF_SEARCH = 1000
#: Up to this many filtered vectors are scored exactly rather than through the HNSW index (each
#: memory's windows looked up by id: ≈4 µs each here; past that the iterative walk is faster).
EXACT_CANDIDATES = 5_000


@dataclass(frozen=True)
class LaneSettings:
    """How the lane searches: vector dimension, HNSW search beam, whether iterative scans exist,
    and how many filtered vectors are still scored exactly."""

    dim: int
    ef_search: int
    iterative: bool
    exact_candidates: int = EXACT_CANDIDATES

    @classmethod
    def of(
        cls, rows: dict[str, str], location: str, embedded_with: ModelInfo | None, iterative: bool, exact: int
    ) -> LaneSettings:
        """The settings for the store at ``location`` whose key/value rows are ``rows``: StoreError
        while it holds no vectors, ModelChangedError if it no longer uses ``embedded_with``; without
        iterative scans (pgvector < 0.8) the beam is at least 400."""
        model = meta.model_of(rows)
        if model is None:
            raise StoreError(f"the store at {location} holds no vectors yet")
        if embedded_with is not None and embedded_with != model:
            raise ModelChangedError(f"the store at {location} switched to model {model.name}; retry")
        ef_search = meta.IndexSettings.of(rows).ef_search
        return cls(model.dim, ef_search if iterative else max(ef_search, 400), iterative, exact)


def best_per_memory(rows: Sequence[tuple[Any, Any]]) -> list[Scored]:
    """(memory id, best score of its rows) for (memory id, score) rows, best first (ties: lower id)."""
    best: dict[int, float] = {}
    for mid, score in rows:
        best[int(mid)] = max(float(score), best.get(int(mid), -2.0))
    return sorted(best.items(), key=lambda pair: (-pair[1], pair[0]))


class PostgresVectorLane:
    """Cosine ranking in the server; each call is one transaction (or joins the caller's snapshot)."""

    def __init__(self, session: Session, schema: str, settings: LaneSettings) -> None:
        """Rank over the store in ``schema`` (quoted) through ``session``."""
        self.session = session
        self._s = schema
        self.settings = settings

    def _candidates(self, cursor: psycopg.Cursor[Any], filters: Filters, limit: int) -> int:
        """How many vectors the filters select, counted up to ``limit`` (again only when the store
        may have changed: ``Session.unchanged``)."""
        key = ("candidates", self._s, filters, limit)
        return self.session.unchanged(cursor, key, lambda: self._count_candidates(cursor, filters, limit))

    def _count_candidates(self, cursor: psycopg.Cursor[Any], filters: Filters, limit: int) -> int:
        """How many vectors the filters select, counted up to ``limit``: with no filter, on the
        vectors' primary key index (0.9 ms for 5,001 where the join read the rows: 3.8 ms)."""
        if filters.is_empty():
            cursor.execute(
                f"SELECT count(*) FROM (SELECT id FROM {self._s}.vectors ORDER BY id LIMIT %s) AS x", [limit]
            )
            return int(one_value(cursor))
        condition, params = filtering.where(filters, self._s)
        cursor.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {self._s}.vectors v JOIN {self._s}.memories m "
            f"ON m.id = v.memory_id WHERE {condition} LIMIT %s) AS x",
            [*params, limit],
        )
        return int(one_value(cursor))

    def exact_enough(self, cursor: psycopg.Cursor[Any], filters: Filters) -> bool:
        """Whether ``top`` scores the filtered memories exactly (they have few enough vectors)."""
        limit = self.settings.exact_candidates
        return self._candidates(cursor, filters, limit + 1) <= limit

    def exact_statement(self, vector: FloatArray, k: int, filters: Filters) -> tuple[str, list[Any]]:
        """The statement (and its parameters) of ``exact``: (id, score) rows, best first."""
        condition, params = filtering.where(filters, self._s)
        return (
            f"SELECT id, score FROM (SELECT m.id, (SELECT max(-(v.embedding <#> %s)) "
            f"FROM {self._s}.vectors v WHERE v.memory_id = m.id) AS score "
            f"FROM {self._s}.memories m WHERE {condition}) AS scored "
            "WHERE score IS NOT NULL ORDER BY score DESC, id LIMIT %s",
            [vector, *params, k],
        )

    def exact(
        self, cursor: psycopg.Cursor[Any], vector: FloatArray, k: int, filters: Filters
    ) -> list[Scored]:
        """Exact top ``k`` (memory id, best window's cosine) among the filtered memories: each
        filtered memory's windows looked up by its id (never a scan of every vector)."""
        cursor.execute(*self.exact_statement(vector, k, filters))
        return [(int(mid), float(score)) for mid, score in cursor.fetchall()]

    def walk_settings(self, fetch: int) -> tuple[str, list[Any]]:
        """The expressions (and their parameters) that set a walk of ``fetch`` rows' search settings
        for the current transaction (``SET LOCAL``), to run in a statement of it before the walk;
        the walk then sets them no more (``walk``)."""
        scan = ", set_config('hnsw.iterative_scan', 'relaxed_order', true)" if self.settings.iterative else ""
        beam = str(min(MAX_EF_SEARCH, max(self.settings.ef_search, fetch)))
        self.session.memo[("walk settings", self._s)] = beam
        return f"set_config('hnsw.ef_search', %s, true){scan}", [beam]

    def walk(
        self, cursor: psycopg.Cursor[Any], vector: FloatArray, fetch: int, filters: Filters
    ) -> list[tuple[Any, Any]]:
        """Up to ``fetch`` (memory id, cosine) window rows from an HNSW walk, filtered as it goes
        (inside the caller's transaction: the search settings are ``SET LOCAL``, in a statement of
        their own unless an earlier statement of the transaction set them: ``walk_settings``)."""
        cursor.execute(*self.walk_statement(cursor, vector, fetch, filters))
        return cursor.fetchall()

    def walk_statement(
        self, cursor: psycopg.Cursor[Any], vector: FloatArray, fetch: int, filters: Filters
    ) -> tuple[str, list[Any]]:
        """The statement (and its parameters) of ``walk``: (id, score) window rows; the search
        settings set first (on ``cursor``) unless a statement of the transaction set them."""
        memo, key = self.session.memo, ("walk settings", self._s)
        beam = str(min(MAX_EF_SEARCH, max(self.settings.ef_search, fetch)))
        if memo.get(key) != beam:
            cursor.execute(f"SELECT {self.walk_settings(fetch)[0]}", [beam])  # both in one round trip
        condition, params = filtering.where(filters, self._s)
        dim = self.settings.dim
        return (
            f"SELECT v.memory_id AS id, -(v.embedding <#> %s) AS score FROM {self._s}.vectors v "
            f"JOIN {self._s}.memories m ON m.id = v.memory_id WHERE {condition} "
            f"ORDER BY v.embedding::vector({dim:d}) <=> %s::vector({dim:d}) LIMIT %s",
            [vector, *params, vector, fetch],
        )

    def top(self, vector: FloatArray, k: int, filters: Filters) -> list[Scored]:
        """The top ``k`` (memory id, cosine of its best window) among the filtered memories."""
        with self.session.transaction() as cursor:
            if self.exact_enough(cursor, filters):
                return self.exact(cursor, vector, k, filters)
            fetch = k
            while True:  # long memories may fill the walk with several windows each: walk further
                rows = self.walk(cursor, vector, fetch, filters)
                best = best_per_memory(rows)
                if len(best) >= k:
                    return best[:k]
                if len(rows) < fetch:  # more candidates than the limit, yet the walk ran dry
                    return self.exact(cursor, vector, k, filters)
                fetch *= 2

    def cosines(self, vector: FloatArray, memory_ids: Sequence[int]) -> list[Scored]:
        """(memory id, cosine of its best window) for these memories, best first, exact."""
        with self.session.transaction() as cursor:
            cursor.execute(
                f"SELECT memory_id, max(-(embedding <#> %s)) FROM {self._s}.vectors "
                "WHERE memory_id = ANY(%s::bigint[]) GROUP BY memory_id",
                (vector, list(memory_ids)),
            )
            return best_per_memory(cursor.fetchall())
