"""The store: SQLite records (the truth) and the FAISS vector index derived from them.

Importing this package is cheap: numpy and faiss load only when vectors are touched.
"""

from remem.index.memory import Filters, Memory, ModelStamp, NewMemory
from remem.index.search import Hit, Lane, SearchMode
from remem.index.store import AddResult, MemoryStore, StoreNotFoundError

__all__ = [
    "AddResult",
    "Filters",
    "Hit",
    "Lane",
    "Memory",
    "MemoryStore",
    "ModelStamp",
    "NewMemory",
    "SearchMode",
    "StoreNotFoundError",
]
