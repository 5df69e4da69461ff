"""What a PostgreSQL store records about itself (table ``store_meta``): its model stamp, how its
vectors are indexed, the analyzer that built its keyword terms, a re-embedding in progress."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from remem.backends.postgres.rows import one_value
from remem.types import ModelInfo

if TYPE_CHECKING:
    import psycopg

    from remem.backends.postgres.session import Session

MODEL_KEYS = ("model_name", "model_dim", "model_pooling", "model_sha256")
ANALYZER_KEY = "keyword_analyzer"
REEMBED_KEY = "reembed_target"
HNSW_INDEX = "vectors_hnsw"
#: Bytes one graph element takes in pgvector's build memory beyond its vector's 4 bytes a dimension:
#: 64 MB held 28,358 elements of 384-d, m=16 (2,366 bytes each; pgvector's "no longer fits" notice,
#: the retired ``bench/pg_bulk.py``). A build that does not fit is several times slower.
ELEMENT_BYTES = 830
#: The most maintenance_work_mem (kB) remem asks for a build; a server set higher keeps its own.
MAX_BUILD_KB = 1024 * 1024


@dataclass(frozen=True)
class IndexSettings:
    """The index asked for (``auto``/``hnsw``: a pgvector HNSW index; ``exact``: none) and its
    knobs: pgvector's own defaults for the graph, a wider search beam than its 40."""

    requested: str = "auto"
    #: pgvector's defaults. A graph of m 32, ef_construction 200 found more at a small beam (100k
    #: memories of ``bench/search.py``: recall@10 0.983 at 64, 0.998 at 200), but took 157 s to
    #: build instead of 35 and a single add into it 23 ms instead of 5.4 (43 a second, not 184).
    m: int = 16
    ef_construction: int = 64
    #: Recall@10 of a vector search against exact, by beam, on that default graph: 10k memories
    #: 0.950 / 0.978 / 0.998 at 64 / 200 / 400 (p50 5.9 / 6.6 / 7.8 ms); 100k 0.919 / 0.975 / 0.989
    #: (then 0.999 at 1,000, pgvector's largest, twice as slow); a million, in plain SQL, 0.45 / 0.67
    #: / 0.81 (``docs/performance.md``). Recorded with the graph: a store keeps the beam it has.
    ef_search: int = 400

    @property
    def kind(self) -> str:
        """What is built: ``hnsw`` or ``exact``."""
        return "exact" if self.requested == "exact" else "hnsw"

    @classmethod
    def of(cls, meta: dict[str, str]) -> IndexSettings:
        """The settings in the store's key/value rows (defaults where unset)."""
        default = cls()
        return cls(
            requested=meta.get("index_requested", default.requested),
            m=int(meta.get("hnsw_m", default.m)),
            ef_construction=int(meta.get("hnsw_ef_construction", default.ef_construction)),
            ef_search=int(meta.get("hnsw_ef_search", default.ef_search)),
        )

    def rows(self) -> dict[str, str]:
        """These settings as key/value rows."""
        return {
            "index_requested": self.requested,
            "hnsw_m": str(self.m),
            "hnsw_ef_construction": str(self.ef_construction),
            "hnsw_ef_search": str(self.ef_search),
        }


def read_meta(cursor: psycopg.Cursor[Any], s: str) -> dict[str, str]:
    """Every key/value row of the store."""
    cursor.execute(f"SELECT key, value FROM {s}.store_meta")
    return {str(k): str(v) for k, v in cursor.fetchall()}


def write_meta(cursor: psycopg.Cursor[Any], s: str, rows: dict[str, str]) -> None:
    """Set key/value rows (inside the caller's transaction)."""
    cursor.executemany(
        f"INSERT INTO {s}.store_meta (key, value) VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        list(rows.items()),
    )


def model_of(meta: dict[str, str]) -> ModelInfo | None:
    """The model stamp in the key/value rows, or None while the store holds no vectors."""
    if any(key not in meta for key in MODEL_KEYS):
        return None
    name, dim, pooling, sha = (meta[key] for key in MODEL_KEYS)
    return ModelInfo(name=name, dim=int(dim), pooling=pooling, sha256=sha)


def model_rows(model: ModelInfo) -> dict[str, str]:
    """A model stamp as key/value rows."""
    return dict(zip(MODEL_KEYS, (model.name, str(model.dim), model.pooling, model.sha256), strict=True))


def create_hnsw(
    cursor: psycopg.Cursor[Any], s: str, dim: int, settings: IndexSettings, name: str = HNSW_INDEX
) -> None:
    """Create the HNSW index over the vectors of a ``dim``-d model (for ``exact``: none), inside
    the caller's transaction — for an empty table (a new store's first model)."""
    if settings.kind == "hnsw":
        cursor.execute(_create_sql(s, dim, settings, name, concurrently=False))


def _create_sql(s: str, dim: int, settings: IndexSettings, name: str, *, concurrently: bool) -> str:
    how = "CONCURRENTLY " if concurrently else ""
    return (
        f"CREATE INDEX {how}{name} ON {s}.vectors USING hnsw ((embedding::vector({dim:d})) "
        f"vector_cosine_ops) WITH (m = {settings.m:d}, ef_construction = {settings.ef_construction:d})"
    )


def rebuild_hnsw(session: Session, s: str, dim: int, settings: IndexSettings) -> None:
    """Rebuild the HNSW index without blocking searches or writes: a new one is built
    concurrently (outside any transaction) and swapped in for the old one in a short transaction;
    for ``exact`` the index is dropped. One rebuild per store at a time (a session lock)."""
    schema = session.url.schema
    with session.connection() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"remem-reindex:{schema}",))
        try:
            cursor.execute("SET statement_timeout = 0")
            raise_build_memory(cursor, s, dim, local=False)
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {s}.{HNSW_INDEX}_next")
            if settings.kind == "hnsw":
                cursor.execute(_create_sql(s, dim, settings, f"{HNSW_INDEX}_next", concurrently=True))
            with conn.transaction():
                cursor.execute(f"DROP INDEX IF EXISTS {s}.{HNSW_INDEX}")
                if settings.kind == "hnsw":
                    cursor.execute(f"ALTER INDEX {s}.{HNSW_INDEX}_next RENAME TO {HNSW_INDEX}")
        finally:
            cursor.execute("RESET statement_timeout")
            cursor.execute("RESET maintenance_work_mem")
            cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", (f"remem-reindex:{schema}",))


def build_memory_kb(rows: int, dim: int) -> int:
    """The maintenance_work_mem (kB) a graph of ``rows`` ``dim``-d vectors fits in (a tenth spare),
    at least 64 MB and at most ``MAX_BUILD_KB``."""
    needed = rows * (4 * dim + ELEMENT_BYTES) * 1.1 / 1024
    return int(min(max(needed, 64 * 1024), MAX_BUILD_KB))


def raise_build_memory(cursor: psycopg.Cursor[Any], s: str, dim: int, *, local: bool) -> None:
    """Raise maintenance_work_mem (for this transaction when ``local``, else for the session; never
    lowered) to what a graph of the store's vectors needs (``build_memory_kb``)."""
    most = int(MAX_BUILD_KB * 1024 / (4 * dim + ELEMENT_BYTES))  # more rows cannot raise it further
    cursor.execute(f"SELECT count(*) FROM (SELECT 1 FROM {s}.vectors LIMIT %s) AS v", (most,))
    rows = int(one_value(cursor))
    cursor.execute(
        "SELECT set_config('maintenance_work_mem', greatest(setting::bigint, %s)::text || 'kB', %s) "
        "FROM pg_settings WHERE name = 'maintenance_work_mem'",
        (build_memory_kb(rows, dim), local),
    )
