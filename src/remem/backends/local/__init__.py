"""The local back-end: SQLite records (the truth, with FTS5) and the FAISS vector index derived
from them, in one directory.

Importing this package is cheap: numpy and faiss load only when vectors are touched.
"""

from remem.backends.local.store import LocalBackend

__all__ = ["LocalBackend"]
