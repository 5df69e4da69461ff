"""A big import into a PostgreSQL store: its HNSW graph dropped for the import and built once at the
end, inside the import's own transaction.

pgvector adds a row to an HNSW graph far more slowly than it builds a graph of the same rows
(the retired ``bench/pg_bulk.py``, in git history; and the retired ``bench/postgres.py``: one writer
added 245 memories/s to PostgreSQL against 3,617/s to a local store, 100,000 clustered 384-d vectors,
2-core AMD EPYC). So an ``add_many`` that brings at least ``FLOOR`` vectors and at least
``SHARE`` times the vectors already stored inserts its memories, then drops the graph, copies the
vectors in and builds the graph again from the index's own definition (same name, parameters and
operator class). All of it is one transaction: a failure, a killed connection or a killed client
rolls it back, and PostgreSQL restores the dropped index with it — the store never lacks its graph.

While the vectors are copied and the graph built (from DROP INDEX to COMMIT), the ``vectors`` table
is locked ACCESS EXCLUSIVE: other clients' vector and hybrid searches, ``stats`` and ``export`` wait
for the import (keyword searches read ``memories`` only and go on). Other writers wait for the
whole import: it takes the store's advisory lock exclusively (so no writer holds a row lock or a
table lock the import will need: two adds of the same text cannot deadlock it), and the reindex
lock (no reindex builds a graph meanwhile). Waiting calls give up after their statement timeout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from remem.backends.postgres import settings as meta
from remem.backends.postgres.rows import one_value

if TYPE_CHECKING:
    import psycopg

    from remem.arrays import FloatArray
    from remem.backends.postgres.access import StoreAccess

#: Fewest vectors one add brings before the graph is rebuilt for it: from here rebuilding saves half
#: a minute or more (10,000 into an empty graph: 35 s kept, 9 s rebuilt; retired ``bench/pg_bulk.py``), and
#: smaller adds never hold the store alone.
FLOOR = 10_000
#: ... and the share of the vectors already stored it must bring at least: rebuilding wins from about
#: a quarter on, and by 2× from an equal number, where it is worth making others wait for the build.
SHARE = 1.0
#: How often (ms) the server checks, during the build, that the importing client is still there.
CLIENT_CHECK_MS = 1000


def worth_rebuilding(store: StoreAccess, adding: int) -> bool:
    """True when an add of ``adding`` vectors should rebuild the graph: at least ``FLOOR`` of them,
    at least ``SHARE`` times those stored (counted only up to where the answer is known), and a
    valid graph to rebuild."""
    if adding < FLOOR:
        return False
    enough = int(adding / SHARE)
    with store.session.transaction() as cursor:
        if graph_definition(cursor, store.s) is None:
            return False
        cursor.execute(f"SELECT count(*) FROM (SELECT 1 FROM {store.s}.vectors LIMIT %s) AS v", (enough + 1,))
        return int(one_value(cursor)) <= enough


def graph_definition(cursor: psycopg.Cursor[Any], s: str) -> str | None:
    """The CREATE INDEX statement of the store's HNSW index, or None when it has none (or an
    invalid one: that is ``reindex``'s to rebuild)."""
    cursor.execute(
        "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indexrelid = to_regclass(%s) "
        "AND i.indisvalid",
        (f"{s}.{meta.HNSW_INDEX}",),
    )
    row = cursor.fetchone()
    return None if row is None else str(row[0])


def build_settings(cursor: psycopg.Cursor[Any], s: str, dim: int) -> None:
    """For the rest of this transaction: no statement timeout, maintenance_work_mem raised to what the
    graph of the store's vectors needs, and the client checked for while the build runs."""
    cursor.execute("SET LOCAL statement_timeout = 0")
    meta.raise_build_memory(cursor, s, dim, local=True)
    cursor.execute("SELECT current_setting('server_version_num')::int >= 140000")
    if one_value(cursor):
        cursor.execute(f"SET LOCAL client_connection_check_interval = {CLIENT_CHECK_MS:d}")


def copy_vectors(cursor: psycopg.Cursor[Any], s: str, items: Sequence[tuple[int, FloatArray]]) -> None:
    """Store each memory's window vectors, in window order, with one binary COPY."""
    with cursor.copy(
        f"COPY {s}.vectors (memory_id, window_no, embedding) FROM STDIN WITH (FORMAT BINARY)"
    ) as loading:
        loading.set_types(["int8", "int4", "vector"])
        for memory_id, windows in items:
            for number, row in enumerate(windows):
                loading.write_row((memory_id, number, row))


def load_and_rebuild(
    cursor: psycopg.Cursor[Any], s: str, items: Sequence[tuple[int, FloatArray]], dim: int
) -> None:
    """Inside the import's transaction (holding the store's lock exclusively): drop the graph, copy
    the vectors in, build the graph again from its own definition (see the module docstring). With
    no valid graph, the vectors are copied in and nothing is built."""
    definition = graph_definition(cursor, s)
    if definition is not None:
        cursor.execute(f"DROP INDEX {s}.{meta.HNSW_INDEX}")
    copy_vectors(cursor, s, items)
    if definition is not None:
        build_graph(cursor, s, dim, definition)


def drop_graph(cursor: psycopg.Cursor[Any], schema: str, s: str) -> str | None:
    """``load_and_rebuild``'s first half, for vectors copied in a page at a time (a staged
    ingest's move): the reindex lock taken, the graph dropped; its definition (None: no valid graph)."""
    lock_graph(cursor, schema)
    definition = graph_definition(cursor, s)
    if definition is not None:
        cursor.execute(f"DROP INDEX {s}.{meta.HNSW_INDEX}")
    return definition


def build_graph(cursor: psycopg.Cursor[Any], s: str, dim: int, definition: str) -> None:
    """Build the graph again from its ``definition``, in the import's transaction."""
    build_settings(cursor, s, dim)
    cursor.execute(definition)


def lock_graph(cursor: psycopg.Cursor[Any], schema: str) -> None:
    """Wait for a reindex's concurrent graph build to end, and keep others from starting one until
    this transaction ends."""
    cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"remem-reindex:{schema}",))
