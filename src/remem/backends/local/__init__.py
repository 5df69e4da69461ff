"""The local back-end: SQLite records (the truth, with FTS5) and the vector index derived from them
(a file in FAISS's layout), in one directory.

Importing this package is cheap: numpy loads only when vectors are touched, FAISS only for HNSW.
"""

from remem.backends.local.store import LocalBackend

__all__ = ["LocalBackend"]
