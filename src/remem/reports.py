"""What remem's longer operations report back: plain frozen data, importable from ``remem``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

from remem.types import Hit, Memory


@dataclass(frozen=True)
class SearchResult(Sequence[Hit]):
    """The hits of a search, best first (a sequence: iterate, index, ``len``), and what else
    happened: how many hits ``min_score`` left out and the best cosine among them, and notes
    (e.g. a query cut to the model window)."""

    hits: list[Hit] = field(default_factory=list)
    below_min_score: int = 0
    best_below: float | None = None
    notes: tuple[str, ...] = ()

    @overload
    def __getitem__(self, index: int) -> Hit: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Hit]: ...
    def __getitem__(self, index: int | slice) -> Hit | Sequence[Hit]:
        """The hit at ``index`` (0 is the best)."""
        return self.hits[index]

    def __len__(self) -> int:
        """How many hits."""
        return len(self.hits)

    def __iter__(self) -> Iterator[Hit]:
        """The hits, best first."""
        return iter(self.hits)


@dataclass
class BulkResult:
    """What a batch add or import did: ids added, ids of duplicates (the existing memories), input
    lines skipped as invalid, and how many exported vectors were reused instead of re-embedded."""

    added: list[int] = field(default_factory=list)
    duplicates: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    reused_vectors: int = 0


@dataclass(frozen=True)
class ForgetResult:
    """The memories forgotten, as they were (with ``dry_run``: the ones that would be), in id
    order, and the ids asked for that name no memory."""

    forgotten: tuple[Memory, ...]
    missing: tuple[int, ...]
    dry_run: bool


@dataclass(frozen=True)
class ReindexReport:
    """What a reindex did: the kind built, how many vectors, whether anything changed, seconds."""

    kind: str | None
    vectors: int
    rebuilt_index: bool
    rebuilt_keywords: bool
    seconds: float


@dataclass(frozen=True)
class ReembedReport:
    """How many memories were embedded by this run, and whether the store's model changed."""

    embedded: int
    resumed_from: int
    swapped: bool


@dataclass(frozen=True)
class Check:
    """One finding of ``doctor``: what was checked, whether it is fine, details, and whether
    ``repair`` fixes it."""

    name: str
    ok: bool
    detail: str
    repairable: bool = False


@dataclass(frozen=True)
class DoctorReport:
    """Every check, and what ``repair`` did before they were made."""

    checks: tuple[Check, ...]
    repaired: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return all(check.ok for check in self.checks)
