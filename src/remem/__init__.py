"""remem: local semantic memory — add short texts, search them by meaning and by exact words.

The public Python API is this flat namespace::

    import remem

    with remem.open() as memories:            # $REMEM_HOME, else the user data directory
        memories.add("Postgres 16 runs on the main box", tags=["ops"])
        for hit in memories.search("which database do we run", k=3):
            print(hit.score, hit.memory.text)

Exceptions live in ``remem.errors`` (one tree under ``RememError``).
"""

from remem.core.context import ContextItem, Merge
from remem.core.memories import Memories
from remem.core.models import FileProblem, ModelCatalog
from remem.core.opening import model_catalog, open
from remem.core.upkeep import ReindexOutcome
from remem.embedders.base import DocumentEmbeddings, Embedder, Embeddings
from remem.reports import (
    BulkResult,
    Check,
    DoctorReport,
    ForgetResult,
    ReembedReport,
    ReindexReport,
    SearchResult,
)
from remem.types import AddResult, Filters, Hit, Lane, Memory, ModelInfo, NewMemory, SearchMode

__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "BulkResult",
    "Check",
    "ContextItem",
    "DoctorReport",
    "DocumentEmbeddings",
    "Embedder",
    "Embeddings",
    "FileProblem",
    "Filters",
    "ForgetResult",
    "Hit",
    "Lane",
    "Memories",
    "Memory",
    "Merge",
    "ModelCatalog",
    "ModelInfo",
    "NewMemory",
    "ReembedReport",
    "ReindexOutcome",
    "ReindexReport",
    "SearchMode",
    "SearchResult",
    "__version__",
    "model_catalog",
    "open",
]
