"""remem: local semantic memory — add short texts, search them by meaning and by exact words.

The public Python API is this flat namespace::

    import remem

    with remem.open() as memories:            # $REMEM_HOME, else the user data directory
        memories.add("Postgres 16 runs on the main box", tags=["ops"])
        for hit in memories.search("which database do we run", k=3):
            print(hit.score, hit.memory.text)

Exceptions live in ``remem.errors`` (one tree under ``RememError``). Names load on first use, so
``import remem`` stays cheap for the command line's startup.

The public names are listed once for Python, in ``_HOMES`` (module → names): ``__all__``, ``dir()``
and the lazy loading (PEP 562 ``__getattr__``) are derived from it. Type checkers and IDEs cannot
run that table, so the ``TYPE_CHECKING`` block imports the same names (``X as X``: an explicit
re-export, which mypy --strict, pyright and IDEs read without ``__all__``); it is never executed, and
tests/unit/test_public_api.py checks that it names exactly the table's names from the same modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names of _HOMES below, for type checkers (never run)
    from remem.core.context import ContextItem as ContextItem
    from remem.core.context import Merge as Merge
    from remem.core.memories import Memories as Memories
    from remem.core.opening import model_catalog as model_catalog
    from remem.core.opening import open as open
    from remem.core.sources import History as History
    from remem.core.sources import read_history as read_history
    from remem.core.upkeep import ReindexOutcome as ReindexOutcome
    from remem.embedders.base import DocumentEmbeddings as DocumentEmbeddings
    from remem.embedders.base import Embedder as Embedder
    from remem.embedders.base import Embeddings as Embeddings
    from remem.embedders.catalog import FileProblem as FileProblem
    from remem.embedders.catalog import ModelCatalog as ModelCatalog
    from remem.reports import BulkResult as BulkResult
    from remem.reports import Check as Check
    from remem.reports import CompactReport as CompactReport
    from remem.reports import DoctorReport as DoctorReport
    from remem.reports import ForgetResult as ForgetResult
    from remem.reports import ReembedReport as ReembedReport
    from remem.reports import ReindexReport as ReindexReport
    from remem.reports import SearchResult as SearchResult
    from remem.reports import StoreStats as StoreStats
    from remem.types import AddResult as AddResult
    from remem.types import Calibration as Calibration
    from remem.types import Filters as Filters
    from remem.types import Hit as Hit
    from remem.types import Lane as Lane
    from remem.types import Lift as Lift
    from remem.types import Memory as Memory
    from remem.types import ModelInfo as ModelInfo
    from remem.types import NewMemory as NewMemory
    from remem.types import SearchMode as SearchMode
    from remem.types import Similar as Similar
    from remem.types import Snippet as Snippet
    from remem.types import Tip as Tip
    from remem.types import Token as Token

__version__ = "0.1.0"

#: The public names, by the module that defines each (all re-exported here): the one list.
_HOMES = {
    "remem.core.context": ("ContextItem", "Merge"),
    "remem.core.memories": ("Memories",),
    "remem.core.opening": ("model_catalog", "open"),
    "remem.core.sources": ("History", "read_history"),
    "remem.core.upkeep": ("ReindexOutcome",),
    "remem.embedders.base": ("DocumentEmbeddings", "Embedder", "Embeddings"),
    "remem.embedders.catalog": ("FileProblem", "ModelCatalog"),
    "remem.reports": (
        "BulkResult",
        "Check",
        "CompactReport",
        "DoctorReport",
        "ForgetResult",
        "ReembedReport",
        "ReindexReport",
        "SearchResult",
        "StoreStats",
    ),
    "remem.types": (
        "AddResult",
        "Calibration",
        "Filters",
        "Hit",
        "Lane",
        "Lift",
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

__all__ = sorted([*_HOME_OF, "__version__"])  # noqa: PLE0605 - derived from _HOMES


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
    return list(__all__)
