"""What both back-ends share about a big ingest's staging area (``remem.core.staged``): a staged row,
a run, the result of the final move, and the checks made around them.

A *run* is one ingest's staging, found again by its key (a hash of its first batch of entries); its
rows are numbered by their place in the input (``seq``), each with the hash of the entry it was
made from, so a re-run of the same input keeps the rows (and vectors) it finds unchanged. Nothing
staged is a memory: searches, lists and exports never read the staging area.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from remem.backends.shapes import windows_of
from remem.errors import StoreError
from remem.times import from_utc_iso
from remem.types import ModelInfo, NewMemory

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from remem.arrays import FloatArray

#: A run untouched this long is discarded by the next big ingest into the store (with a note): an
#: input given up on must not keep its staged copy forever. ``remem doctor --repair`` discards
#: sooner (``BUSY``).
EXPIRE_AFTER = timedelta(days=7)
#: A run written this recently may belong to an ingest still running: ``doctor --repair`` leaves it.
#: A running ingest commits a batch every few seconds (``remem.core.staged.STAGE_BATCH``).
BUSY = timedelta(minutes=2)


@dataclass(frozen=True)
class StagedRow:
    """One entry of the input as staged: its place ``seq``, the hash of the entry (``entry``), its
    deduplication key, its conversation thread (None outside one), the memory (``memory_json``),
    whether it duplicates a stored memory or an earlier entry, and once known its vectors (float32
    windows one after another), the sha256 of the document they were made from, its context, and
    whether the vectors came with the input (``carried``)."""

    seq: int
    entry: bytes
    dedup: bytes
    thread: str | None
    memory: str
    duplicate: bool
    vector: bytes | None = None
    doc: bytes | None = None
    context: str = ""
    carried: bool = False


@dataclass(frozen=True)
class StagedRun:
    """A run of the staging area: its id and key, the model its vectors are of (None before any),
    how many rows it holds (as read), and when it began and was last written (UTC ISO 8601)."""

    id: int
    key: str
    model: ModelInfo | None
    rows: int
    started_at: str
    updated_at: str


@dataclass
class Moved:
    """What the final move did: the ids it added (in input order), the ids of the memories that
    were stored meanwhile by someone else (duplicates after all), and how many of the added rows
    kept vectors the input carried."""

    added: list[int] = field(default_factory=list)
    raced: list[int] = field(default_factory=list)
    carried: int = 0


def memory_json(memory: NewMemory) -> str:
    """A memory as staged: compact JSON of every field (``memory_of`` reads it back)."""
    record = {name: getattr(memory, name) for name in _MEMORY_FIELDS}  # asdict() deep-copies: 3× slower
    record["tags"], record["meta"] = list(memory.tags), dict(memory.meta)
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


_MEMORY_FIELDS = tuple(field.name for field in fields(NewMemory))


def memory_of(staged: str) -> NewMemory:
    """The memory ``memory_json`` wrote."""
    return NewMemory(**json.loads(staged))


@functools.lru_cache(maxsize=8)
def model_json(model: ModelInfo) -> str:
    """A model stamp as a run records it (and an entry's hash holds it)."""
    return json.dumps(asdict(model), sort_keys=True)


def model_of(recorded: str | None) -> ModelInfo | None:
    """The model stamp ``model_json`` wrote (None for none)."""
    return None if recorded is None else ModelInfo(**json.loads(recorded))


class MoveDigest:
    """The digest of the rows a move takes, as (seq, entry hash) in input order, fed a row at a
    time: the move compares what it read with what this process staged, and refuses to move
    another ingest's rows."""

    def __init__(self) -> None:
        """An empty digest."""
        self._digest = hashlib.sha256()

    def add(self, seq: int, entry: bytes) -> None:
        """Count one more row."""
        self._digest.update(seq.to_bytes(8, "little") + bytes(entry))

    def value(self) -> bytes:
        """The digest of the rows counted so far."""
        return self._digest.digest()

    def check(self, expected: bytes, location: str) -> None:
        """StoreError unless the rows counted are those ``expected`` names (another ingest of an
        input that begins the same way rewrote the run meanwhile)."""
        if self._digest.digest() != expected:
            raise changed(location)


def changed(location: str) -> StoreError:
    """The error of a move that found the run's rows changed by another ingest of an input that
    begins the same way (nothing is added)."""
    return StoreError(
        f"another ingest into the store at {location} changed what this one staged; nothing was "
        "added: run it again"
    )


def page_windows(rows: Sequence[StagedRow], dim: int, location: str) -> list[FloatArray]:
    """The vectors of a page of rows to move, each a (windows, dim) array, checked as
    ``shapes.windows_of`` checks every vector written, a page at once (one row at a time cost an
    import of a million 10 µs a row); StoreError when a row has none (another ingest of the same
    input dropped them meanwhile)."""
    import numpy as np  # noqa: PLC0415 - only a move needs numpy here

    from remem.arrays import unit_rows  # noqa: PLC0415

    if any(row.vector is None or len(row.vector) % (4 * dim) for row in rows):
        if any(row.vector is None for row in rows):
            raise changed(location)
        return windows_of([np.frombuffer(row.vector or b"", dtype="<f4") for row in rows], len(rows), dim)
    matrix = np.frombuffer(b"".join(row.vector or b"" for row in rows), dtype="<f4").reshape(-1, dim)
    if not unit_rows(matrix):  # the one at fault, named as windows_of names it
        return windows_of([np.frombuffer(row.vector or b"", dtype="<f4") for row in rows], len(rows), dim)
    counts = np.cumsum([len(row.vector or b"") // (4 * dim) for row in rows])
    return list(np.split(matrix, counts[:-1]))


def run_gone(location: str) -> StoreError:
    """The error of an ingest whose run was finished or discarded by another process meanwhile."""
    return StoreError(
        f"this ingest's staging in the store at {location} was finished or discarded by another "
        "process meanwhile; nothing more was added by this one: run it again"
    )


def since(moment: str, now: datetime | None = None) -> timedelta:
    """How long ago ``moment`` (UTC ISO 8601, as a run records it) was."""
    then = from_utc_iso(moment)
    return (now or datetime.now(timezone.utc)) - then


def describe(runs: Iterable[StagedRun]) -> str:
    """What ``doctor`` says of staged ingests: how many, their entries, when last written, and what
    to do (one written within ``BUSY`` may still be running, and ``--repair`` leaves it)."""
    found = sorted(runs, key=lambda run: run.updated_at)
    if not found:
        return "none"
    rows = sum(run.rows for run in found)
    many = len(found) > 1
    busy = sum(since(run.updated_at) <= BUSY for run in found)
    running = (
        f"; {busy} written in the last {BUSY.seconds // 60} minutes may still be running" if busy else ""
    )
    return (
        f"{len(found)} ingest{'s' if many else ''} interrupted or running ({rows:,} entries staged, last "
        f"written {found[-1].updated_at}){running}: running the same ingest again resumes it; "
        f"a repair discards what is idle"
    )


def row_values(row: StagedRow) -> tuple[Any, ...]:
    """A row's values in the order both back-ends' staging tables hold them (after the run id)."""
    return (
        row.seq,
        row.entry,
        row.dedup,
        row.thread,
        row.memory,
        row.duplicate,
        row.vector,
        row.doc,
        row.context,
        row.carried,
    )


#: The staging table's columns after ``run``, in ``row_values``'s order.
ROW_COLUMNS = (
    "seq",
    "entry",
    "dedup",
    "thread",
    "memory",
    "duplicate",
    "vector",
    "doc",
    "context",
    "carried",
)


#: Rows the move reads (and adds) at a time.
MOVE_PAGE = 2048


def run_of(row: Sequence[Any]) -> StagedRun:
    """A staged run from its row (id, key, model, rows, started_at, updated_at), as either back-end
    reads it."""
    return StagedRun(int(row[0]), str(row[1]), model_of(row[2]), int(row[3]), str(row[4]), str(row[5]))


def row_of(values: Sequence[Any]) -> StagedRow:
    """A staged row from its ``ROW_COLUMNS`` values, as either back-end reads them."""
    seq, entry, dedup, thread, memory, duplicate, vector, doc, context, carried = values
    return StagedRow(
        int(seq),
        bytes(entry),
        bytes(dedup),
        thread,
        memory,
        bool(duplicate),
        None if vector is None else bytes(vector),
        None if doc is None else bytes(doc),
        context,
        bool(carried),
    )
