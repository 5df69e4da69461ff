"""Checking a PostgreSQL store (``remem doctor``) and repairing what can be derived again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from remem.backends import summary
from remem.backends.postgres import schema
from remem.backends.postgres import settings as meta
from remem.backends.postgres.rows import one_row, one_value
from remem.backends.postgres.upkeep import hnsw_is_current, keywords_are_current, reindex
from remem.errors import RememError
from remem.reports import Check

if TYPE_CHECKING:
    import psycopg

    from remem.backends.postgres.access import StoreAccess


def _database(cursor: psycopg.Cursor[Any], s: str) -> Check:
    cursor.execute(
        f"SELECT current_setting('server_version'), (SELECT extversion FROM pg_extension WHERE "
        f"extname = 'vector'), (SELECT max(version) FROM {s}.remem_schema)"
    )
    server, pgvector, version = one_row(cursor)
    detail = f"PostgreSQL {server}, pgvector {pgvector}, schema version {version}"
    return Check("database", version == len(schema.MIGRATIONS), detail)


def _keywords(cursor: psycopg.Cursor[Any], s: str) -> Check:
    current = keywords_are_current(cursor, s)
    detail = "every memory's terms by the current analyzer" if current else "built by an older analyzer"
    return Check("keyword index", current, detail, repairable=True)


def _vectors(cursor: psycopg.Cursor[Any], s: str) -> Check:
    """Every vector of the model's size, finite and of unit length; memories without vectors are
    waiting to be embedded, not a fault."""
    model = meta.model_of(meta.read_meta(cursor, s))
    cursor.execute(
        f"SELECT count(*) FROM {s}.memories m WHERE NOT EXISTS "
        f"(SELECT 1 FROM {s}.vectors v WHERE v.memory_id = m.id)"
    )
    waiting = int(one_value(cursor))
    note = f"; {waiting} waiting to be embedded (`remem reindex` embeds them)" if waiting else ""
    cursor.execute(f"SELECT count(*) FROM {s}.vectors")
    count = int(one_value(cursor))
    if model is None:
        return Check(
            "vectors", count == 0, ("no model recorded" if count == 0 else "vectors without a model") + note
        )
    from remem.arrays import UNIT_TOLERANCE  # noqa: PLC0415 - numpy: `list` and `export` never load it

    cursor.execute(
        f"SELECT count(*) FILTER (WHERE vector_dims(embedding) != %s), count(*) FILTER (WHERE "
        f"vector_dims(embedding) = %s AND NOT abs(vector_norm(embedding) - 1) <= %s) FROM {s}.vectors",
        (model.dim, model.dim, UNIT_TOLERANCE),
    )
    wrong, odd = one_row(cursor)
    problems = [f"{wrong} vectors of the wrong size"] if wrong else []
    problems += [f"{odd} vectors not finite unit vectors (`remem reindex --model` re-embeds)"] if odd else []
    detail = f"{count} vectors of {model.name} ({model.dim}-d)"
    return Check("vectors", not problems, ("; ".join(problems) or detail) + note)


def _index(cursor: psycopg.Cursor[Any], s: str) -> Check:
    rows = meta.read_meta(cursor, s)
    model, settings = meta.model_of(rows), meta.IndexSettings.of(rows)
    if model is None:
        return Check("vector index", True, "no vectors yet")
    if hnsw_is_current(cursor, s, model.dim, settings):
        detail = (
            "exact scans"
            if settings.kind == "exact"
            else (f"pgvector hnsw (m={settings.m}, ef_construction={settings.ef_construction})")
        )
        return Check("vector index", True, detail)
    return Check("vector index", False, "missing, invalid or built with other parameters", repairable=True)


def _staged(cursor: psycopg.Cursor[Any], s: str) -> Check:
    rows = meta.read_meta(cursor, s)
    if meta.REEMBED_KEY not in rows:
        return Check("re-embedding", True, "none in progress")
    cursor.execute(f"SELECT count(DISTINCT memory_id) FROM {s}.vectors_next")
    staged = int(one_value(cursor))
    return Check(
        "re-embedding", True, f"interrupted with {staged} memories staged; `remem reindex --model` resumes"
    )


def _links(cursor: psycopg.Cursor[Any], s: str) -> Check:
    return summary.links_check(cursor.execute, f"{s}.memories")


def diagnose(store: StoreAccess, repair: bool) -> tuple[list[Check], list[str]]:
    """Repair what can be derived again (keyword terms, the HNSW index) when ``repair``, then
    check everything: (checks, what was repaired)."""
    repaired: list[str] = []
    if repair:
        try:
            report = reindex(store, None, (None, None, None), False)
        except RememError as exc:
            repaired.append(f"could not repair: {exc}")
        else:
            repaired += ["rebuilt the vector index"] if report.rebuilt_index else []
            repaired += ["rebuilt the keyword index"] if report.rebuilt_keywords else []
    checks = (_database, _keywords, _vectors, _index, _staged, _links)
    with store.session.snapshot(), store.session.transaction() as cursor:
        return [check(cursor, store.s) for check in checks], repaired
