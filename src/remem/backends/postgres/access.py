"""One PostgreSQL store's tables over a session: its key/value rows, its advisory lock and its write
transactions — what the store and its helpers (pending, re-embed, upkeep, doctor) share.

Writers take the store's advisory lock shared for their transaction, so any number write at once;
the few changes that must see the store still (the first model stamp, a re-embed's swap, a
reindex) take it exclusively.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from remem.backends.postgres import settings as meta
from remem.backends.postgres.schema import quoted
from remem.backends.postgres.session import STATEMENT_TIMEOUT_MS, Session, read_again
from remem.backends.shapes import check_same_model

if TYPE_CHECKING:
    import psycopg

    from remem.types import ModelInfo


class StoreAccess:
    """The tables of the store in ``session``'s schema (``s``, quoted for SQL) and its lock."""

    def __init__(self, session: Session) -> None:
        """Reach the store that ``session`` addresses (its tables already prepared)."""
        self.session = session
        self.s = quoted(session.url.schema)
        self.location = session.url.shown

    @read_again
    def key_values(self) -> dict[str, str]:
        """The store's key/value rows."""
        with self.session.transaction() as cursor:
            return dict(self.session.unchanged(cursor, "store_meta", lambda: meta.read_meta(cursor, self.s)))

    @property
    def model(self) -> ModelInfo | None:
        """The model whose vectors the store holds, or None while it holds none."""
        return meta.model_of(self.key_values())

    def check_model(self, model: ModelInfo) -> None:
        """ModelMismatchError unless the store holds no vectors yet or was made by ``model``."""
        check_same_model(str(self.location), self.model, model)

    def lock(self, cursor: psycopg.Cursor[Any], *, exclusive: bool) -> None:
        """Take the store's advisory lock for this transaction (writers share it)."""
        how = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
        cursor.execute(f"SELECT {how}(hashtext(%s))", (f"remem-store:{self.session.url.schema}",))

    def stamp(self, model: ModelInfo) -> None:
        """Let vectors travel; record the first model (and build its HNSW index) before any vector
        is written."""
        self.session.register_vectors()
        if self.model is not None:
            return
        with self.session.transaction(writes=True) as cursor:
            self.lock(cursor, exclusive=True)
            rows = meta.read_meta(cursor, self.s)
            if meta.model_of(rows) is None:
                settings = meta.IndexSettings.of(rows)  # recorded: a later remem's defaults leave it be
                meta.write_meta(cursor, self.s, meta.model_rows(model) | settings.rows())
                meta.create_hnsw(cursor, self.s, model.dim, settings)

    @contextlib.contextmanager
    def writing(self, model: ModelInfo | None, *, exclusive: bool = False) -> Iterator[psycopg.Cursor[Any]]:
        """A write transaction holding the store lock (shared; ``exclusive``: alone, and without a
        statement timeout, for an import that rebuilds the graph), the model checked inside it."""
        if model is not None:
            self.stamp(model)
        timeout = 0 if exclusive else STATEMENT_TIMEOUT_MS
        with self.session.transaction(timeout, writes=True) as cursor:
            self.lock(cursor, exclusive=exclusive)
            if model is not None:
                self.check_model(model)
            yield cursor
