"""A store's home: its directory (the index file, the writers' lock) and its records (the model
stamp, the index settings) — what the store and its helpers (reindex, re-embed, doctor, stats) share.

The helpers take a ``Home`` (or, to write, a ``Writing``) rather than the whole ``LocalBackend``, so
they never import the store module that calls them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from remem.backends.local.files import INDEX_FILE, locked
from remem.backends.local.records import Records
from remem.backends.local.settings import IndexSettings, read_model
from remem.types import ModelInfo

if TYPE_CHECKING:
    from collections.abc import Callable

    from remem.backends.local.writelog import WriteLog

    #: ``LocalBackend.writing``: a write transaction under the store lock for a model (None: no
    #: vectors change), yielding the log of the vector ids it deletes and the records.
    Writing = Callable[[ModelInfo | None], contextlib.AbstractContextManager[tuple[WriteLog, Records]]]


@dataclass(frozen=True)
class Home:
    """A store's directory and its records."""

    directory: Path
    records: Records

    @property
    def index_path(self) -> Path:
        """Where the vector index file lives."""
        return self.directory / INDEX_FILE

    @property
    def settings(self) -> IndexSettings:
        """The index kind and HNSW parameters this store is configured with."""
        return IndexSettings.read(self.records)

    @property
    def model(self) -> ModelInfo | None:
        """The model whose vectors this store holds, or None if it holds none yet."""
        return read_model(self.records)

    def write_lock(self, *, blocking: bool = True) -> contextlib.AbstractContextManager[None]:
        """The store's exclusive writer lock (an OS file lock; BlockingIOError if not ``blocking``
        and it is held). Taking it removes temporary files a killed writer left behind."""
        return locked(self.directory, blocking=blocking)
