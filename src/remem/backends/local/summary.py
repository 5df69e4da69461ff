"""A store's vital statistics, read without loading numpy or FAISS."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from remem.backends.local.vectors_header import read_header

if TYPE_CHECKING:
    from remem.backends.local.store import LocalBackend

TOP = 20  # the most frequent users, conversations and tags listed


def _counts(store: LocalBackend, sql: str) -> dict[str, int]:
    return {str(name): int(count) for name, count in store.records.conn.execute(sql + f" LIMIT {TOP}")}


def summarize(store: LocalBackend) -> dict[str, Any]:
    """Counts, model, index, disk size and time span of a store, as JSON-ready values."""
    conn = store.records.conn
    oldest, newest = conn.execute("SELECT min(created_at), max(created_at) FROM memories").fetchone()
    model = store.model
    header = read_header(store.index_path)
    settings = store.settings
    files = [p for p in store.directory.iterdir() if p.is_file()]
    return {
        "memories": store.records.count(),
        "vectors": store.records.vector_count(),
        "oldest": oldest,
        "newest": newest,
        "model": None if model is None else f"{model.name} ({model.dim}-d, {model.pooling} pooling)",
        "index": None if header is None else f"{header['kind']} ({len(header['tombstones'])} tombstones)",
        "index_setting": settings.requested,
        "disk_bytes": sum(p.stat().st_size for p in files),
        "by_user": _counts(
            store, "SELECT ifnull(user, '(none)'), count(*) c FROM memories GROUP BY 1 ORDER BY c DESC, 1"
        ),
        "by_conversation": _counts(
            store,
            "SELECT ifnull(conversation, '(none)'), count(*) c FROM memories GROUP BY 1 ORDER BY c DESC, 1",
        ),
        "by_tag": _counts(store, "SELECT tag, count(*) c FROM memory_tags GROUP BY tag ORDER BY c DESC, tag"),
        "by_role": _counts(
            store, "SELECT ifnull(role, '(none)'), count(*) c FROM memories GROUP BY 1 ORDER BY c DESC, 1"
        ),
    }
