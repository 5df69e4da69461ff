"""The storage seam: what the core needs from a back-end, and nothing about how it is kept.

A back-end holds memories, their window vectors, a keyword index and the store's model stamp. It
selects by ``Filters`` *before* it ranks, so every lane returns the true top ``k`` among the
filtered memories. It knows nothing of embedders (vectors arrive computed) nor of front-ends.
Every write is one transaction: all of it happens, or none of it. The contract tests in
``tests/contract`` state what every back-end must do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from datetime import timedelta

    from remem.arrays import FloatArray
    from remem.backends.links import Link, Revival
    from remem.backends.shapes import IndexState, TokenRecord
    from remem.backends.staging import Moved, StagedRow, StagedRun
    from remem.reports import Check, CompactReport, ReembedReport, ReindexReport, StoreStats
    from remem.types import AddResult, Filters, Memory, ModelInfo, NewMemory

#: (memory id, lane score), best first.
Scored = tuple[int, float]


class Coverage(NamedTuple):
    """How much of a query's IDF-weighted terms memories match (``Backend.keyword_coverage``)."""

    #: memory id → the share (0..1) of the query's weight its own terms match, capped at the
    #: ``enough`` asked for (exact below it).
    shares: dict[int, float]
    #: the query's whole weight: the sum of its terms' IDF, Lucene's ln(1 + (N - n + 0.5) / (n + 0.5))
    #: over the whole store (0.0 for a query without terms).
    weight: float


class TurnTime(NamedTuple):
    """Where, when and by whom a memory of a conversation was made (``Backend.turn_times``)."""

    user: str | None
    conversation: str
    #: UTC ISO 8601 with milliseconds and a trailing Z (``remem.times.utc_iso``).
    created_at: str
    #: Who said it (the memory's role), if given.
    role: str | None = None


#: Embeds memories given as (id, text): for each its unit vectors, (windows, dim).
EmbedFn = Callable[[Sequence[tuple[int, str]]], Sequence["FloatArray"]]
#: Called with (done so far, total).
ProgressFn = Callable[[int, int], None]


class VectorLane(Protocol):
    """Cosine ranking over the vectors of one model, as of one moment of the store."""

    def top(self, vector: FloatArray, k: int, filters: Filters) -> list[Scored]:
        """The exact top ``k`` (memory id, cosine) among the filtered memories, best first; a
        memory scores as its best window."""
        ...

    def cosines(self, vector: FloatArray, memory_ids: Sequence[int]) -> list[Scored]:
        """(memory id, cosine of its best window) for these memories, best first."""
        ...


#: The query's vector, given the keyword top's turns (whose roles may be speakers the query names:
#: the vector lane searches without them).
VectorOf = Callable[[Mapping[int, "TurnTime"]], "FloatArray"]


@dataclass(frozen=True)
class PoolRequest:
    """What a search asks for its pool (``Backend.pool``; ``remem.backends.pooling`` says what a
    back-end does with it)."""

    #: What the keyword lane searches.
    text: str
    filters: Filters
    #: How many each lane returns (and each lane within the window).
    depth: int
    #: Whether the keyword lane is asked.
    keyword: bool = True
    #: The query's vector (None: the vector lane is not asked).
    vector: VectorOf | None = None
    #: The model the vector was made with (ModelChangedError if the store no longer uses it).
    model: ModelInfo | None = None
    #: The filters narrowed to the window the query's time words name (None: no window).
    window: Filters | None = None
    #: The words of the required phrases, for the keyword index to propose their holders.
    phrase_words: tuple[str, ...] = ()
    #: Whether a proposed text holds every required phrase (None: none is required).
    holds: Callable[[str], bool] | None = None
    #: Whether the query may name speakers (then ``vector`` is given the keyword top's turns).
    speakers: bool = False
    #: The memories whose statistics the keyword lane counts (None: the whole store's).
    scope: Filters | None = None
    #: A keyword match's coverage counts whole from this share of the query's weight on.
    enough: float = 1.0
    #: Whether the pooled memories' texts are needed (word order; ``cjk``: their scripts).
    texts: bool = False
    #: For a model blind across scripts, whether the query is written in CJK (``analyzer.is_cjk``):
    #: the answer names the vector lane's memories written in the other script (None: not asked).
    cjk: bool | None = None

    @property
    def hybrid(self) -> bool:
        """Both lanes are asked: each scores the other's top, with turns and coverage."""
        return self.keyword and self.vector is not None


@dataclass(frozen=True)
class PoolAnswer:
    """A search's pool as the back-end found it (``Backend.pool``; ``remem.backends.pooling``)."""

    #: The keyword lane's list, best first (window top merged in), then the BM25 of the vector
    #: top's memories beyond it.
    keyword: list[Scored] = field(default_factory=list)
    #: The vector lane's list, best first (window top merged in), then the cosines of the keyword
    #: matches beyond it.
    vector: list[Scored] = field(default_factory=list)
    #: The pooled memories from the window.
    inside: frozenset[int] = frozenset()
    #: The pooled turns (hybrid only).
    turns: dict[int, TurnTime] = field(default_factory=dict)
    #: Hybrid: the keyword matches' coverage; keyword: the coverage of no memory (the query's weight).
    coverage: Coverage | None = None
    #: The pooled memories' texts (when asked, and every phrase holder's).
    texts: dict[int, str] = field(default_factory=dict)
    #: False when a required phrase is held by no filtered memory (then nothing is pooled).
    held: bool = True
    #: The vector lane's memories written in another script than the query's (when asked: ``cjk``).
    unread: frozenset[int] = frozenset()


class Staging(Protocol):
    """A store's staging area for big ingests (``remem.core.staged``; the rows and runs are
    ``remem.backends.staging``'s): committed batches no search, list or export reads, moved into
    the store by one transaction. Every write is its own committed transaction; one to a run that
    is gone (finished or discarded by another process) raises StoreError."""

    def begin(self, key: str) -> tuple[StagedRun, int]:
        """The run of ``key`` (made if there is none), and how many runs untouched for longer than
        ``EXPIRE_AFTER`` were discarded."""
        ...

    def use_model(self, run: StagedRun, model: ModelInfo) -> StagedRun:
        """The run with its vectors of ``model``: those of another model are dropped first."""
        ...

    def staged(self, run: StagedRun, first: int, count: int) -> dict[int, tuple[bytes, bytes | None]]:
        """seq → (entry hash, hash of its vectors' document or None without vectors) for the run's
        rows ``first`` … ``first + count - 1`` that are staged."""
        ...

    def earlier(self, run: StagedRun, keys: Sequence[bytes], before: int) -> set[bytes]:
        """Those of the deduplication ``keys`` that a row before ``before`` has."""
        ...

    def put(self, run: StagedRun, rows: Sequence[StagedRow], flags: Sequence[tuple[int, bool]]) -> None:
        """Stage ``rows`` (replacing any of the same seq) and set the ``duplicate`` flag of the
        rows given as (seq, flag), in one transaction."""
        ...

    def end_input(self, run: StagedRun, count: int) -> None:
        """The input had ``count`` entries: rows from there on (of a longer input) are dropped."""
        ...

    def conversation_rows(self, run: StagedRun, after: tuple[str, int] | None, limit: int) -> list[StagedRow]:
        """Up to ``limit`` rows of the run in a conversation and not duplicates, by (thread, seq),
        after ``after`` (thread, seq)."""
        ...

    def set_vectors(
        self, run: StagedRun, items: Sequence[tuple[int, str, bytes | None, bytes | None]]
    ) -> None:
        """Give rows, as (seq, context, document hash, vectors), their context and (unless the
        vectors are None: kept as they are) vectors, in one transaction."""
        ...

    def duplicate_rows(self, run: StagedRun, after: int, limit: int) -> list[StagedRow]:
        """Up to ``limit`` of the run's duplicate rows after seq ``after``, in input order."""
        ...

    def move(self, run: StagedRun, model: ModelInfo, digest: bytes) -> Moved:
        """Add the run's rows that are not duplicates, in input order, with their vectors and
        contexts, in one transaction (duplicates of memories stored meanwhile are not added);
        StoreError, nothing added, unless the rows read are those ``digest`` names
        (``staging.MoveDigest``). The run stays until ``discard``."""
        ...

    def discard(self, run: StagedRun) -> None:
        """Drop the run and its rows."""
        ...

    def runs(self) -> list[StagedRun]:
        """Every run staged (an ingest interrupted, or running now)."""
        ...

    def discard_idle(self, idle: timedelta) -> list[StagedRun]:
        """Drop every run not written for longer than ``idle``; the runs dropped."""
        ...

    def close(self) -> None:
        """Release what the staging area holds open (opened again when next used)."""
        ...


class Backend(Protocol):
    """A store of memories (see the module docstring)."""

    #: Where the store is, for messages (a directory, or a URL without its password).
    location: str
    #: Problems the back-end repaired by itself while serving (for the caller to report).
    warnings: list[str]

    @property
    def model(self) -> ModelInfo | None:
        """The model whose vectors the store holds, or None while it holds none."""
        ...

    def check_model(self, model: ModelInfo) -> None:
        """ModelMismatchError unless the store holds no vectors yet or was made by ``model``."""
        ...

    def find_duplicate(self, memory: NewMemory) -> int | None:
        """The id of a memory with the same text, user and conversation, if one is stored."""
        ...

    def find_duplicates(self, memories: Sequence[NewMemory]) -> list[int | None]:
        """For each memory, in order, ``find_duplicate``'s answer: looked up a batch at a time, not
        one statement (on PostgreSQL one round trip) per memory."""
        ...

    def find_keys(self, keys: Sequence[tuple[str, str | None, str | None]]) -> list[int | None]:
        """For each (text's sha256, user, conversation), in order, the id of the memory stored with
        it, if any (``find_duplicates`` by what a memory is found by, without its text)."""
        ...

    def add_many(
        self,
        memories: Sequence[NewMemory],
        vectors: Sequence[FloatArray],
        model: ModelInfo,
        contexts: Sequence[str] | None = None,
    ) -> list[AddResult]:
        """Store memories with their (windows, dim) unit vectors in one transaction; a duplicate
        (of a stored memory or an earlier one in the batch) is not stored and reports the existing id.
        ``contexts[i]`` (default none) is memory i's context: text the keyword lane matches with
        less weight than the memory's own (the turns before a chat turn), never shown."""
        ...

    def add_pending(
        self, memories: Sequence[NewMemory], contexts: Sequence[str] | None = None
    ) -> list[AddResult]:
        """Store memories (with contexts, as in ``add_many``) without vectors yet, in one transaction
        (duplicates as in ``add_many``); the keyword lane finds them at once, the vector lane once
        ``attach_vectors`` gave them theirs."""
        ...

    def set_contexts(self, items: Sequence[tuple[int, str, str]]) -> list[int]:
        """Give memories, as (id, text as read, context), new contexts in one transaction; a memory
        deleted or edited meanwhile, or with that context already, is skipped. Returns the ids
        changed."""
        ...

    def pending(self, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` (id, text) of memories waiting for their vectors, oldest first."""
        ...

    def pending_count(self) -> int:
        """How many memories wait for their vectors."""
        ...

    def attach_vectors(
        self, items: Sequence[tuple[int, str, FloatArray]], model: ModelInfo, *, replace: bool = False
    ) -> list[int]:
        """Give pending memories the (windows, dim) vectors made for ``text`` in one transaction; a
        memory deleted, edited or embedded meanwhile is skipped. With ``replace`` a memory's vectors
        are replaced whether or not it had some (still skipped when deleted or edited). Returns the
        ids that got vectors."""
        ...

    def edit(
        self,
        memory_id: int,
        text: str,
        vectors: FloatArray,
        model: ModelInfo,
        expected_sha256: str | None = None,
        context: str = "",
    ) -> Memory:
        """Replace a memory's text, context and vectors, keeping id and created_at, setting updated_at.

        MemoryNotFoundError if there is none; InvalidInputError if its user/conversation already
        holds that text in another memory; EditConflictError if ``expected_sha256`` is given and the
        memory's text no longer has it (another edit came first).
        """
        ...

    def refile(
        self,
        memory_id: int,
        tags: Sequence[str] | None,
        meta: Mapping[str, str] | None,
        expected_sha256: str | None = None,
        owner: tuple[str | None] | None = None,
    ) -> Memory:
        """Replace a memory's tags and/or meta (None: kept as they are) and, with ``owner`` (``(user,)``,
        ``(None,)`` for no user), its user, in one transaction, its keyword terms with them, setting
        updated_at; its text and vectors stay.

        MemoryNotFoundError if there is none; EditConflictError if ``expected_sha256`` is given and
        the memory's text no longer has it; InvalidInputError (nothing changed) if the new user
        already holds that text in another memory.
        """
        ...

    def forget(self, memory_ids: Sequence[int]) -> list[int]:
        """Delete memories with everything derived from them; returns the ids that existed. The
        memories they superseded point past them, or are current again (``remem.backends.links``)."""
        ...

    def supersede(self, wanted: Sequence[Link]) -> None:
        """Write supersede links (an import's) in one transaction, all or none, as
        ``links.needs_link`` allows, each new memory still stored (``links.check_new_stored``).
        ``add_many``/``add_pending`` write the link a memory's ``supersedes`` asks for in their own
        transaction."""
        ...

    def revive(
        self, memory_id: int, supersedes: int | None, expires_at: str | None, at: str
    ) -> Revival | None:
        """Make a stored memory current again (its text was added again) in one transaction, as
        ``links.revival`` plans at ``at`` (now): a retired one gets its link cleared and
        ``expires_at``, and supersedes the head of the chain that had replaced it; ``supersedes``
        links as an add's would. Returns the plan written; None (nothing written) when there is no
        such memory; MemoryNotFoundError or InvalidInputError (nothing written) for a refused link."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """A block whose reads all see one consistent state of the store (the lanes of one search
        and the memories they found); nested use joins the outer block."""
        ...

    def get_many(self, memory_ids: Sequence[int]) -> dict[int, Memory]:
        """The memories with these ids (missing ids are absent)."""
        ...

    def texts(self, memory_ids: Sequence[int]) -> dict[int, str]:
        """The texts of the memories with these ids (missing ids are absent): what ranking reads of
        its candidates, without the rest of each memory."""
        ...

    def turn_times(self, memory_ids: Sequence[int]) -> dict[int, TurnTime]:
        """For those of these memories that belong to a conversation: their user, conversation,
        created_at and role (what ranking reads to find a turn's session and speaker); others and
        missing ids are absent."""
        ...

    def newest(self, filters: Filters, limit: int, after: tuple[str, int] | None = None) -> list[Memory]:
        """Up to ``limit`` filtered memories, newest first (ties: higher id first); with ``after``
        (created_at, id), only those past it in that order (older, or as old with a lower id), read
        through an index so that a page costs the same at any depth."""
        ...

    def iter_all(self, filters: Filters | None = None) -> Iterator[Memory]:
        """Every filtered memory in id order, streamed."""
        ...

    def superseded_of(self, memory_ids: Sequence[int]) -> list[int]:
        """The ids of the memories these memories superseded, ascending."""
        ...

    def expired_ids(self, now: str) -> list[int]:
        """The ids of the memories whose ``expires_at`` is at or before ``now`` (UTC ISO 8601), ascending."""
        ...

    def candidate_ids(self, filters: Filters) -> list[int]:
        """Ids of every filtered memory, ascending."""
        ...

    def vectors_of_memories(self, memory_ids: Sequence[int]) -> dict[int, list[bytes]]:
        """memory id → its window vectors as float32 bytes, in window order."""
        ...

    def vector_lane(self, embedded_with: ModelInfo | None = None) -> VectorLane:
        """The vector lane; ModelChangedError if the store no longer uses ``embedded_with``."""
        ...

    def warm_up(self, model: ModelInfo) -> None:
        """Prepare searches by ``model``'s vectors now, for a process that serves many (ModelChangedError
        as ``vector_lane``)."""
        ...

    def keyword_top(
        self,
        text: str,
        filters: Filters,
        k: int,
        among: Sequence[int] | None = None,
        scope: Filters | None = None,
    ) -> list[Scored]:
        """Keyword top ``k`` by BM25 (or a BM25-like score): (memory id, score; higher is better)
        among the filtered memories (only ``among`` if given); [] when the text has no terms; at most
        ``analyzer.MAX_QUERY_TERMS`` of the query's terms count. Every statistic the score counts (the
        number of memories, each term's holders, the mean length, which terms are near-zero-IDF) is
        that of the whole store, or with ``scope`` (selecting only by user, shared and conversation,
        and holding every filtered memory) of the memories it selects, superseded and expired ones
        included: nothing else about the store shows in a score."""
        ...

    def pool(self, request: PoolRequest) -> PoolAnswer:
        """A search's candidate pool in one call (``remem.backends.pooling``: what each list holds):
        both lanes' tops with their raw scores, each scoring the other's, the turns, coverage,
        window marks and texts the request asks for, all over one state of the store; raises
        ModelChangedError as ``vector_lane`` when the request's model is no longer the store's."""
        ...

    def texts_holding(self, words: Sequence[str], filters: Filters) -> list[tuple[int, str]]:
        """(id, text) of the filtered memories that may hold every one of ``words`` (normalised words,
        ``remem.core.search.phrases.words``), in id order: at least every filtered memory whose text holds
        them all (more, for the caller to check the texts). The words that surely are index terms
        (``analyzer.sure_terms``) select through the keyword index; with none, every filtered memory."""
        ...

    def keyword_coverage(
        self, text: str, memory_ids: Sequence[int], enough: float, scope: Filters | None = None
    ) -> Coverage:
        """For each of the memories, the share (0..1) of the query's IDF-weighted terms its own terms
        (not its context's) match — exact below ``enough``, ``enough`` at or above it — and the
        query's whole weight (``Coverage``), IDF counted as ``keyword_top`` counts it (over ``scope``'s
        memories if given); an id the store does not hold gets 0."""
        ...

    def reembed(
        self, target: ModelInfo, embed: EmbedFn, progress: ProgressFn | None, force: bool
    ) -> ReembedReport:
        """Re-embed every memory with ``target`` (staged, resumable) and swap it in at once."""
        ...

    def staging(self) -> Staging:
        """The store's staging area for big ingests."""
        ...

    def reindex(
        self, kind: str | None, hnsw: tuple[int | None, int | None, int | None], force: bool
    ) -> ReindexReport:
        """Rebuild the derived indexes (vector index of ``kind``, HNSW (m, ef_construction,
        ef_search) where given; keyword index); what is current is left alone unless ``force``."""
        ...

    def compact(self) -> CompactReport:
        """Write the vector index where it is a checkpoint that lags, and the keyword lane's stored
        heads where they are behind (the local store); what it wrote (zeros: nothing to do)."""
        ...

    def stats(self) -> StoreStats:
        """Counts, model, index, size and time span (``backends.summary.gather``)."""
        ...

    def index_state(self) -> IndexState | None:
        """The vector index's kinds (asked for, built), its vectors and the size from which ``auto``
        builds HNSW, read cheaply (no counting beyond the vectors, no numpy) for a check after every
        write; None where the kind does not wait for a reindex (PostgreSQL: ``auto`` is HNSW from
        the first vector)."""
        ...

    def doctor(self, repair: bool) -> tuple[list[Check], list[str]]:
        """Every check of the store (after repairing what can be derived again, with ``repair``),
        and what was repaired."""
        ...

    def add_token(self, record: TokenRecord) -> bool:
        """Store a bearer token's record in one transaction; False (nothing stored) when a token of
        that name exists already. Tokens are credentials: no export carries them."""
        ...

    def token_records(self) -> list[TokenRecord]:
        """Every stored token's record, read from the store at each call (a token another process
        added or revoked counts at once), by name."""
        ...

    def token_record(self, digest: str) -> TokenRecord | None:
        """The record of the token whose secret hashes to ``digest`` (one look-up by the stored
        hash, a unique index), read from the store at each call; None when no token has it."""
        ...

    def remove_token(self, name: str) -> bool:
        """Delete the token of that name in one transaction; False when there is none."""
        ...

    def close(self) -> None:
        """Release the store (connections, files)."""
        ...
