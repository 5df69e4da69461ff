"""Rebuilding a PostgreSQL store's derived parts (reindex) and describing it (stats)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from remem.backends import summary
from remem.backends.analyzer import ANALYZER_VERSION
from remem.backends.postgres import records
from remem.backends.postgres import settings as meta
from remem.backends.postgres.rows import one_value
from remem.errors import RememError
from remem.reports import ReindexReport, StoreStats

if TYPE_CHECKING:
    import psycopg

    from remem.backends.postgres.access import StoreAccess

#: What built a memory's terms here: the analyzer's version and the tsvector layout (with positions,
#: so the keyword score counts how often a term occurs; its context's terms with weight C). Either
#: changing re-analyses the store.
TERMS_VERSION = f"{ANALYZER_VERSION}+positions+context"
_BATCH = 1000
#: An add of at least this many memories, and at least ``ANALYZE_SHARE`` of the memories the
#: planner last counted, renews the planner's statistics at once rather than when autovacuum gets to
#: it. Until then a just-loaded store is planned as empty: a filter that selects every memory made
#: each vector search an exact scan (10k memories: hybrid p50 21 ms, 16 ms once analysed; an
#: ANALYZE there took 90 ms, at 100k 0.6 s).
ANALYZE_FLOOR = 1_000
#: ... the share autovacuum's own rule uses (``autovacuum_analyze_scale_factor``).
ANALYZE_SHARE = 0.1


def refresh_statistics(store: StoreAccess, added: int) -> None:
    """After an add (committed) of ``added`` memories that is large for the store (see
    ``ANALYZE_FLOOR``), ANALYZE its memories and vectors. Statistics only steer plans: if the
    ANALYZE fails (a lost connection, a role that may not analyze), the add stands and autovacuum
    renews them later."""
    if added < ANALYZE_FLOOR:
        return
    s = store.s
    try:
        with store.session.transaction(writes=True) as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", (f"{s}.memories",))
            counted = float(one_value(cursor))
            if counted < 0 or added >= ANALYZE_SHARE * counted:  # -1: never analysed
                cursor.execute(f"ANALYZE {s}.memories, {s}.vectors")
    except RememError:
        return


def hnsw_is_current(cursor: psycopg.Cursor[Any], s: str, dim: int, settings: meta.IndexSettings) -> bool:
    """True when the HNSW index exists (or, for ``exact``, does not), is valid, and was built for
    this dimension and these parameters."""
    cursor.execute(
        "SELECT pg_get_indexdef(c.oid), i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
        "WHERE c.oid = to_regclass(%s)",
        (f"{s}.{meta.HNSW_INDEX}",),
    )
    row = cursor.fetchone()
    if settings.kind == "exact":
        return row is None
    if row is None or not row[1]:
        return False
    wanted = (f"vector({dim})", f"m='{settings.m}'", f"ef_construction='{settings.ef_construction}'")
    return all(part in row[0] for part in wanted)


def keywords_are_current(cursor: psycopg.Cursor[Any], s: str) -> bool:
    """True when this analyzer built every memory's keyword terms (a store that never recorded its
    analyzer is current only while it holds no memory)."""
    recorded = meta.read_meta(cursor, s).get(meta.ANALYZER_KEY)
    if recorded is None:
        cursor.execute(f"SELECT NOT EXISTS (SELECT 1 FROM {s}.memories)")
        return bool(one_value(cursor))
    return recorded == TERMS_VERSION


def ensure_keywords_current(store: StoreAccess) -> bool:
    """Re-analyze every memory's terms if an older analyzer (or none recorded) built them, under
    the store's exclusive lock, as a local store does on open; True when it rebuilt them."""
    with store.session.transaction(timeout_ms=0, writes=True) as cursor:
        if meta.read_meta(cursor, store.s).get(meta.ANALYZER_KEY) == TERMS_VERSION:
            return False
        store.lock(cursor, exclusive=True)
        current = keywords_are_current(cursor, store.s)
        if not current:
            rebuild_keywords(cursor, store.s)
        elif meta.ANALYZER_KEY not in meta.read_meta(cursor, store.s):  # empty store: record it
            meta.write_meta(cursor, store.s, {meta.ANALYZER_KEY: TERMS_VERSION})
        return not current


def rebuild_keywords(cursor: psycopg.Cursor[Any], s: str) -> None:
    """Re-analyze every memory's text and names into its keyword terms and record the version."""
    cursor.execute(f'SELECT id, text, role, "user", tags, context FROM {s}.memories ORDER BY id')
    rows = cursor.fetchall()
    for start in range(0, len(rows), _BATCH):
        cursor.executemany(
            f"UPDATE {s}.memories SET terms = {records.terms_sql(s)}, term_count = %s WHERE id = %s",
            [
                (*records.analyzed(text, (role, user, *tags), context), mid)
                for mid, text, role, user, tags, context in rows[start : start + _BATCH]
            ],
        )
    meta.write_meta(cursor, s, {meta.ANALYZER_KEY: TERMS_VERSION})


def reindex(
    store: StoreAccess,
    requested: str | None,
    hnsw: tuple[int | None, int | None, int | None],
    force: bool,
) -> ReindexReport:
    """Apply the asked index kind and HNSW parameters; rebuild the keyword terms and the HNSW index
    (concurrently, after the settings commit) where they are not current (both with ``force``).
    A second reindex in a row does nothing."""
    started = time.perf_counter()
    with store.session.transaction(timeout_ms=0, writes=True) as cursor:
        store.lock(cursor, exclusive=True)
        rows = meta.read_meta(cursor, store.s)
        current = meta.IndexSettings.of(rows)
        m, ef_construction, ef_search = hnsw
        wanted = replace(
            current,
            requested=requested or current.requested,
            m=m or current.m,
            ef_construction=ef_construction or current.ef_construction,
            ef_search=ef_search or current.ef_search,
        )
        meta.write_meta(cursor, store.s, wanted.rows())
        model = meta.model_of(rows)
        rebuild_index = model is not None and (
            force or not hnsw_is_current(cursor, store.s, model.dim, wanted)
        )
        rebuild_terms = force or not keywords_are_current(cursor, store.s)
        if rebuild_terms:
            rebuild_keywords(cursor, store.s)
        cursor.execute(f"SELECT count(*) FROM {store.s}.vectors")
        count = int(one_value(cursor))
    if rebuild_index and model is not None:  # built beside the old one: nobody waits for it
        meta.rebuild_hnsw(store.session, store.s, model.dim, wanted)
    return ReindexReport(wanted.kind, count, rebuild_index, rebuild_terms, time.perf_counter() - started)


def summarize(store: StoreAccess) -> StoreStats:
    """Counts, model, index, size on the server and time span, read in one snapshot."""
    s = store.s
    with store.session.snapshot(), store.session.transaction() as cursor:
        rows = meta.read_meta(cursor, s)
        cursor.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (store.session.url.schema,),
        )
        size = int(one_value(cursor))
        model, settings = meta.model_of(rows), meta.IndexSettings.of(rows)
        built = (
            model is not None and settings.kind == "hnsw" and hnsw_is_current(cursor, s, model.dim, settings)
        )
        graph = f"pgvector hnsw (m={settings.m}, ef_construction={settings.ef_construction})"
        own = summary.Own(model, graph if built else "exact scans", settings.requested, size)
        tables = summary.Tables(f"{s}.memories", f"{s}.vectors", f"{s}.memories, unnest(tags) AS tag")
        return summary.gather(cursor.execute, tables, own)
