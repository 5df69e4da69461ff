"""remem: local semantic memory — add short texts, search them by meaning and by exact words.

The public Python API is this flat namespace::

    import remem

    with remem.open() as memories:            # $REMEM_HOME, else the user data directory
        memories.add("Postgres 16 runs on the main box", tags=["ops"])
        for hit in memories.search("which database do we run", k=3):
            print(hit.score, hit.memory.text)

Exceptions live in ``remem.errors`` (one tree under ``RememError``). Names load on first use, so
``import remem`` stays cheap for the command line's startup.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from remem.core.context import ContextItem, Merge
    from remem.core.memories import Memories
    from remem.core.opening import model_catalog, open
    from remem.core.upkeep import ReindexOutcome
    from remem.embedders.base import DocumentEmbeddings, Embedder, Embeddings
    from remem.embedders.catalog import FileProblem, ModelCatalog
    from remem.reports import (
        BulkResult,
        Check,
        DoctorReport,
        ForgetResult,
        ReembedReport,
        ReindexReport,
        SearchResult,
        StoreStats,
    )
    from remem.types import (
        AddResult,
        Filters,
        Hit,
        Lane,
        Memory,
        ModelInfo,
        NewMemory,
        SearchMode,
        Similar,
        Snippet,
        Tip,
        Token,
    )

__version__ = "0.1.0"

#: Where each public name is defined (all re-exported here).
_HOMES = {
    "remem.core.context": ("ContextItem", "Merge"),
    "remem.core.memories": ("Memories",),
    "remem.embedders.catalog": ("FileProblem", "ModelCatalog"),
    "remem.core.opening": ("model_catalog", "open"),
    "remem.core.upkeep": ("ReindexOutcome",),
    "remem.embedders.base": ("DocumentEmbeddings", "Embedder", "Embeddings"),
    "remem.reports": (
        "BulkResult",
        "Check",
        "DoctorReport",
        "ForgetResult",
        "ReembedReport",
        "ReindexReport",
        "SearchResult",
        "StoreStats",
    ),
    "remem.types": (
        "AddResult",
        "Filters",
        "Hit",
        "Lane",
        "Memory",
        "ModelInfo",
        "NewMemory",
        "SearchMode",
        "Similar",
        "Snippet",
        "Tip",
        "Token",
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

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
    "Similar",
    "Snippet",
    "StoreStats",
    "Tip",
    "Token",
    "__version__",
    "model_catalog",
    "open",
]


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use (PEP 562)."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'remem' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names."""
    return sorted(__all__)
