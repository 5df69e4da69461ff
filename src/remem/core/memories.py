"""``Memories``: one store and its model, with everything a front-end does to memories.

It adds (dedup first: re-adding a text loads no model), searches (the re-embed retry; the pipeline in
``core.search``), lists, edits, forgets, packs context, exports and imports, and maintains the store.
It never prints: what a person should hear comes back as ``notes`` and ``warnings``.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import remem.checks as checks  # noqa: PLR0402 - the layer rule reads `from remem import` as the public API
from remem.core import arguments
from remem.core.afterwards import afterwards
from remem.core.context import ContextItem, Merge, merge
from remem.errors import MemoryNotFoundError, ModelMismatchError, StoreClosedError
from remem.inputs import MAX_TEXT_CHARS
from remem.later import Later
from remem.timewords import LOCAL
from remem.types import AddResult, Filters, Memory, ModelInfo, NewMemory, SearchMode

if TYPE_CHECKING:
    from collections.abc import Callable

    import remem.reports as reports  # noqa: PLR0402 - `from remem import` is the public API (no layer may)
    from remem.backends.base import Backend, ProgressFn
    from remem.core import bulk, growth, owners, scripts, staged, superseding, turns, upkeep
    from remem.core.tokens import Tokens
    from remem.embedders.base import Embedder
    from remem.embedders.catalog import ModelCatalog
    from remem.ingest import Entry
    from remem.reports import BulkResult, CompactReport, DoctorReport, ForgetResult, SearchResult, StoreStats

else:  # imported when first used: a short command such as `list` needs none of them
    bulk, growth, owners, scripts, staged, superseding, turns, upkeep = (
        Later(f"remem.core.{name}")
        for name in ("bulk", "growth", "owners", "scripts", "staged", "superseding", "turns", "upkeep")
    )
    reports = Later("remem.reports")

#: Chosen by measurement on SciFact and the memory-shaped set in tests/data (see README).
DEFAULT_SEARCH_MODE = SearchMode.HYBRID
DEFAULT_SEARCH_LIMIT = 5
DEFAULT_LIST_LIMIT = 20


class Memories(AbstractContextManager["Memories"]):
    """A store of memories and the model that embeds them. Use ``remem.open``; close it (or ``with``).
    A wrong type of argument is a TypeError naming it, a bad value an InvalidInputError (nothing changes)."""

    def __init__(self, backend: Backend, catalog: ModelCatalog, embedder: Embedder | None = None) -> None:
        """Serve ``backend``; models come from ``catalog`` unless ``embedder`` is given."""
        self._backend: Backend | None = backend
        #: Where the store is; what it repaired by itself while serving (both readable once closed).
        self.location, self.warnings = backend.location, backend.warnings
        self.catalog = catalog
        self._given = self._embedder = embedder
        self._checked = False
        self._loading = threading.Lock()  # threads sharing this Memories load the model once
        #: What a person should know about what happened (e.g. the model a new store chose).
        self.notes: list[str] = []
        #: The longest text a memory or query may have (characters; at most 10,000,000).
        self.max_text_chars = MAX_TEXT_CHARS
        self.writer: str | None = None  # new memories' written_by (``cli``…) unless a call names another
        self._tokens: Tokens | None = None

    @property
    def backend(self) -> Backend:
        """The store's back-end; StoreClosedError once this Memories is closed (on every back-end)."""
        if self._backend is None:
            raise StoreClosedError(self.location)
        return self._backend

    @property
    def model(self) -> ModelInfo | None:
        """The model whose vectors the store holds, or None while it holds none."""
        return self.backend.model

    @property
    def tokens(self) -> Tokens:
        """The store's bearer tokens for ``remem serve`` (``remem.core.tokens.Tokens``: add, list,
        revoke, verify), kept in the store itself; StoreClosedError once this Memories is closed."""
        if self._tokens is None:
            from remem.core.tokens import Tokens  # noqa: PLC0415 - hashlib, hmac: only for tokens

            self._tokens = Tokens(lambda: self.backend)
        return self._tokens

    def close(self) -> None:
        """Release the store; every later call raises StoreClosedError (closing again does nothing)."""
        backend, self._backend = self._backend, None
        if backend is not None:
            backend.close()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def embedder(self) -> Embedder:
        """The store's embedder, loaded on first use (a new store chooses its model, with a note)
        and checked against the store's model (ModelMismatchError), once however many threads ask."""
        with self._loading:
            if self._embedder is None:
                choice = self.catalog.for_store(self.backend.model, self.location)
                self._embedder = choice.embedder
                self.notes.extend(choice.notes)
            if not self._checked:
                self.backend.check_model(self._embedder.info)
                self._checked = True
            return self._embedder

    def _reload_model(self) -> None:
        """The store's model changed: choose (unless given) and check its embedder on next use."""
        with self._loading:
            self._embedder, self._checked = self._given, False

    def _chosen_again(self, chosen: Embedder) -> bool:
        """Whether the store's model changed since ``chosen`` was chosen for it (another process ran
        ``remem reindex --model``): then the model is chosen again on next use. A model the caller
        gave is never swapped (its writes are refused: ModelMismatchError)."""
        if self._given is not None or self.backend.model in (None, chosen.info):
            return False
        self._reload_model()
        return True

    def _stores_embedder(self) -> Embedder:
        """``embedder()`` for a write that embeds: chosen again first when the store's model changed
        since it was chosen (``_chosen_again``), so that a long-lived process carries on."""
        chosen = self._embedder
        if chosen is not None and self._checked:
            self._chosen_again(chosen)
        return self.embedder()

    def _with_the_stores_model(self, write: Callable[[Embedder], AddResult]) -> tuple[Embedder, AddResult]:
        """``write(embedder)`` and the embedder it used; when the store's model changed since the
        embedder was chosen (ModelMismatchError, nothing written), once more with the model chosen
        again (``_chosen_again``; no look-up of the store's model before an add)."""
        embedder = self.embedder()
        try:
            return embedder, write(embedder)
        except ModelMismatchError:
            if not self._chosen_again(embedder):
                raise  # a model the caller gave, or a mismatch the store did not change into
            embedder = self.embedder()
            return embedder, write(embedder)

    # --- adding ----------------------------------------------------------------------------------

    def add(
        self,
        text: str,
        *,
        user: str | None = None,
        conversation: str | None = None,
        role: str | None = None,
        tags: Sequence[str] | None = None,
        meta: Mapping[str, str] | None = None,
        created_at: str | datetime | None = None,
        embed: bool = True,
        progress: ProgressFn | None = None,
        supersedes: int | None = None,
        expires_at: str | datetime | None = None,
        written_by: str | None = None,
    ) -> AddResult:
        """Store one memory, written by ``written_by`` (default: ``writer``); the same text in the same
        user/conversation is stored once (its writer kept): added again while its memory is current,
        the existing id comes back with ``duplicate=True`` (no model is loaded); while it is retired
        (superseded, or expired), that memory is made current again (``current_again``): it takes
        this ``expires_at`` (none without one) and supersedes the memory that had replaced it
        (``superseded``), its history kept (``core.superseding``).

        ``supersedes``: the id of a memory of the same user and conversation that this one replaces,
        whose user, conversation, tags and meta it takes unless given (None: tags=() gives none),
        in the same transaction (``remem.backends.links``: MemoryNotFoundError, or InvalidInputError
        if it is another's, superseded already, or a loop — its chain leads back to this text's
        memory; nothing is stored then); it stays, with ``superseded_by``, out of searches, lists and
        contexts unless they include it.
        ``expires_at`` (``30d``, an ISO date/time, a datetime; still to come): from then on it is
        left out as well (``forget_expired`` deletes it). An embedded memory's ``similar`` names stored
        memories of its user (and conversation) that say nearly the same (``core.superseding``). With
        ``embed=False`` it is stored at once without vectors: keyword search finds it now, vector
        search after ``embed_pending`` (or ``remem reindex``). A turn of a conversation is embedded
        with its context (``turns``); added before stored turns, it re-embeds the (at most two)
        after it — then the model is loaded even with ``embed=False``. ``progress(windows done,
        windows)`` is called as a long text's windows are embedded. Once the memory is stored no
        error comes back: what follows the commit (the similar look-up, the turns after it) is left
        undone with a note in ``notes`` when it fails (``core.afterwards``)."""
        embed, progress = checks.flag(embed, "embed"), checks.callback(progress)
        supersedes = checks.given_id(supersedes, "supersedes")
        given = superseding.Given(user, conversation, tags, meta)  # what it does not give: the old one's
        user, conversation, tags, meta = superseding.inherited(self.backend, supersedes, given)
        fields = (user, conversation, role, () if tags is None else tags, meta, created_at)
        writer = self.writer if written_by is None else written_by
        memory = arguments.new_memory(
            text, *fields, self.max_text_chars, supersedes, expires_at, written_by=writer
        )
        existing = self.backend.find_duplicate(memory)
        again = None if existing is None else superseding.add_again(self.backend, memory, existing)
        if again is not None:
            return again
        asked = () if memory.supersedes is None else (memory.supersedes,)
        with growth.watching(self.backend, self.notes):
            if not embed:
                return replace(
                    bulk.add_waiting(self.backend, self._stores_embedder, memory, self.notes),
                    superseded=asked,
                )
            new_store = self.backend.model is None
            embedder, added = self._with_the_stores_model(
                lambda e: bulk.add_one(self.backend, e, memory, progress, self.notes)
            )
            added = replace(added, superseded=asked)
        if added.duplicate:
            return added
        if new_store:
            self.notes.extend(scripts.first_memories_tips([memory.text], self._embedder))
        with afterwards(self.notes, "the look-up of similar memories"):
            added = replace(added, similar=superseding.similar(self.backend, embedder, memory, added.id))
        return added

    def pending_count(self) -> int:
        """How many memories wait for their vectors (added with ``embed=False``)."""
        return self.backend.pending_count()

    def embed_pending(self, *, limit: int | None = None, progress: ProgressFn | None = None) -> int:
        """Embed the memories added with ``embed=False`` — all, or at most ``limit`` (oldest first),
        a chunk per transaction (a new store chooses its model); returns how many got vectors."""
        limit, progress = arguments.optional_count(limit, "limit"), checks.callback(progress)
        with growth.watching(self.backend, self.notes):
            return bulk.embed_pending(self.backend, self._stores_embedder, progress, limit)

    def warm_up(self) -> None:
        """Load the model and the vector index now, so the next searches answer at once; on a local
        store, searches keep the pages of the index file they read from then on (a long-lived process)."""
        embedder = self._stores_embedder()
        embedder.embed_queries(["warm up"])
        if self.backend.model is not None:
            self.backend.warm_up(embedder.info)

    def add_many(
        self,
        memories: Iterable[NewMemory | str],
        *,
        progress: ProgressFn | None = None,
        expected: int | None = None,
    ) -> BulkResult:
        """Store many memories all or nothing: duplicates are reported, not stored, never embedded.
        ``memories`` is read once, as a stream; more than a few thousand go through the store's
        staging area (``remem.core.staged``): an interrupted add leaves no memory, and the same add
        run again resumes it. ``progress(done, total)`` is called as memories are embedded
        (``total`` at least ``expected`` when a stream of that length is staged). A duplicate of a
        retired (superseded or expired) memory stays retired, with a note naming how many (``add``
        makes one current again)."""
        expected = arguments.sized(memories, expected)
        entries = arguments.memories_to_add(memories, self.max_text_chars)
        result = self.add_entries(entries, progress=progress, expected=expected)
        with afterwards(self.notes, "counting the retired memories among the duplicates"):
            self.notes.extend(superseding.retired_note(self.backend, result.duplicates))
        return result

    def add_entries(
        self, entries: Iterable[Entry], *, progress: ProgressFn | None = None, expected: int | None = None
    ) -> BulkResult:
        """Store parsed input entries (``remem.ingest``) as ``add_many`` stores memories (written by
        ``writer`` unless an entry names who), reusing the vectors an export carried when this store's
        model made them; ``resumed`` counts those an
        interrupted run of the same ingest had staged."""
        entries = arguments.entries_within(entries, self.max_text_chars, self.writer)
        progress = checks.callback(progress)
        expected = arguments.sized(entries, arguments.optional_count(expected, "expected"))
        carried, first = superseding.ImportLinks(), scripts.FirstTexts()
        new_store = self.backend.model is None
        with growth.watching(self.backend, self.notes):
            result, notes = staged.ingest(
                self.backend, self._stores_embedder, first.watch(carried.watch(entries)), progress, expected
            )
        self.notes.extend(notes)
        with afterwards(self.notes, "writing the supersede links the import carries (import it again)"):
            self.notes.extend(carried.apply(self.backend))
        if new_store and result.added:
            self.notes.extend(scripts.first_memories_tips(first.texts, self._embedder))
        return result

    def import_(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        skip_invalid: bool = False,
        progress: ProgressFn | None = None,
        expected: int | None = None,
    ) -> BulkResult:
        """Add the records of an ``export`` (ids kept where unused, timestamps, vectors of this
        store's model reused) as ``add_many`` adds memories. A bad record raises InvalidInputError
        naming it and nothing is added, unless ``skip_invalid`` (then its number is in ``skipped``)."""
        expected = arguments.sized(records, expected)
        entries, skipped = bulk.export_entries(records, skip_invalid, self.max_text_chars)
        result = self.add_entries(entries, progress=progress, expected=expected)
        result.skipped = skipped
        return result

    # --- reading ---------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        k: int = DEFAULT_SEARCH_LIMIT,
        mode: SearchMode | str = DEFAULT_SEARCH_MODE,
        min_score: float | None = None,
        where: Filters | None = None,
        dates: bool = True,
        scope: Filters | None = None,
        **filters: Any,
    ) -> SearchResult:
        """The ``k`` best memories for ``query`` among those the filters select, best first.

        ``mode``: hybrid (default; both lanes fused), vector (cosine) or keyword (BM25, loads no
        model). ``score``: a calibrated relevance in [0, 1] in every mode; ``min_score`` drops hits below.
        Filters: ``where=Filters(...)`` or the keywords of ``Filters.of`` (user, tags, since…).
        Time words ("from Tuesday", "last week") name a created_at window in local time whose
        memories rank higher (evidence, not a filter: ``hit.lifts`` names it) unless ``dates=False``
        or since/until are given (those filter); ``result.dates`` says how they were read.

        ``scope``: the memories the caller may see, for a caller who must learn nothing about the
        others (a server's pinned user: ``Filters.of(user="alice", shared=True)``, and/or a
        conversation; nothing else). The search finds only memories inside it, whatever the filters
        say, and every statistic its scores count (how many memories there are and hold each word,
        their mean length) is that of the scope's memories alone; without it, of the whole store.
        """
        from remem.core.search import run  # noqa: PLC0415 - lazy: `list` and `add` never rank

        text = arguments.text(query, "query", self.max_text_chars, "query")
        mode = arguments.choice(SearchMode, mode, "mode")
        threshold = arguments.min_score(min_score)
        chosen, k = arguments.filters(where, filters), arguments.count(k, "k", minimum=1)
        chosen = arguments.scoped(chosen, scope)
        dates = checks.flag(dates, "dates") and chosen.since is None and chosen.until is None
        wanted = run.Wanted(text, k, chosen, mode, threshold, scope, datetime.now(LOCAL) if dates else None)
        return run.search_with_retry(self.backend, self.embedder, self._reload_model, wanted)

    def list(
        self,
        *,
        limit: int = DEFAULT_LIST_LIMIT,
        where: Filters | None = None,
        after: tuple[str, int] | None = None,
        **filters: Any,
    ) -> list[Memory]:
        """Up to ``limit`` memories the filters select, newest first (as old: the higher id first);
        with ``after`` — a (created_at, id) such as the last memory of a page — only those past it
        in that order: the next page, which costs the same at any depth."""
        chosen, limit = arguments.filters(where, filters), arguments.count(limit, "limit")
        return self.backend.newest(chosen, limit, arguments.position(after))

    def get(self, memory_id: int) -> Memory:
        """One memory; MemoryNotFoundError if there is none (TypeError if ``memory_id`` is no int)."""
        found = self.backend.get_many(arguments.stored_ids([checks.integer(memory_id, "memory_id")]))
        if memory_id not in found:
            raise MemoryNotFoundError([memory_id])
        return found[memory_id]

    def history(self, memory_id: int) -> builtins.list[Memory]:
        """A memory's chain, oldest first: the memories it superseded (and they theirs), itself, and
        those that superseded it in turn; MemoryNotFoundError if there is none."""
        return superseding.history(self.backend, self.get(memory_id))

    def get_many(self, memory_ids: Sequence[int]) -> dict[int, Memory]:
        """The memories with these ids (ints; missing ids are absent)."""
        return self.backend.get_many(arguments.stored_ids(checks.ids(memory_ids, "memory_ids")))

    def iter(self, *, where: Filters | None = None, **filters: Any) -> Iterator[Memory]:
        """Every memory the filters select, in id order, streamed."""
        return self.backend.iter_all(arguments.filters(where, filters))

    def context(
        self,
        query: str | None = None,
        *,
        recent: int = 10,
        similar: int = 5,
        merge_as: Merge | str = Merge.APPEND,
        min_score: float | None = None,
        where: Filters | None = None,
        dates: bool = True,
        **filters: Any,
    ) -> builtins.list[ContextItem]:
        """What an assistant should see: the ``recent`` newest memories and the ``similar`` most
        similar to ``query`` (hybrid search, time words read as in ``search``; the reading goes to
        ``notes``), merged as asked, each memory once."""
        chosen, how = arguments.filters(where, filters), arguments.choice(Merge, merge_as, "merge_as")
        recent, similar = arguments.count(recent, "recent"), arguments.count(similar, "similar")
        query, min_score = checks.optional_string(query, "query"), arguments.min_score(min_score)
        dates = checks.flag(dates, "dates")
        newest = self.backend.newest(chosen, recent) if recent else []
        found: list[Memory] = []
        if similar and query is not None and self.backend.model is not None:
            hits = self.search(query, k=similar, min_score=min_score, where=chosen, dates=dates)
            self.notes.extend(hits.notes)
            found = [hit.memory for hit in hits]
        return merge(newest, found, how)

    # --- changing --------------------------------------------------------------------------------

    def edit(
        self,
        memory_id: int,
        text: str | None = None,
        *,
        tags: Sequence[str] | None = None,
        meta: Mapping[str, str] | None = None,
        user: str | None = None,
        no_user: bool = False,
    ) -> Memory:
        """Change a memory, keeping its id and created_at and setting updated_at: its text
        (re-embedded), its tags, its meta, its user (``no_user``: none) — what is given (None: kept;
        InvalidInputError if nothing is). MemoryNotFoundError if there is none (nothing is loaded or
        changed); EditConflictError if another edit changed it while this one was embedding;
        InvalidInputError for a move ``core.owners`` refuses (nothing is changed)."""
        memory_id = checks.integer(memory_id, "memory_id")
        change = arguments.change(text, tags, meta, self.max_text_chars, (user, no_user))
        before = self.backend.get_many(arguments.stored_ids([memory_id])).get(memory_id)
        if before is None:
            raise MemoryNotFoundError([memory_id])
        owners.check_move(self.backend, before, change.owner, change.text)
        return turns.edit(self.backend, self._stores_embedder, before, change)

    def forget(
        self, ids: Iterable[int] | None = None, *, where: Filters | None = None, dry_run: bool = False
    ) -> ForgetResult:
        """Delete memories by id, or every memory ``where`` selects (at least one filter). With
        ``dry_run`` nothing is deleted. The turns after a forgotten turn of a conversation get their
        new context (and vectors). The result names what was (would be) forgotten and the ids asked
        for that do not exist."""
        ids, where, dry_run = arguments.to_forget(ids, where, dry_run)
        chosen = sorted(set(ids or [])) if where is None else self.backend.candidate_ids(where.everything())
        found = self.backend.get_many(arguments.stored_ids(chosen))
        missing = tuple(sorted(set(chosen) - set(found)))
        ids = sorted(found)
        if ids and not dry_run:
            ids = turns.forget(self.backend, self._stores_embedder, [found[i] for i in ids])
        return reports.ForgetResult(tuple(found[i] for i in ids), missing, dry_run)

    def forget_expired(self, *, dry_run: bool = False) -> ForgetResult:
        """Delete every memory whose ``expires_at`` has passed, as ``forget`` does (``dry_run``: none)."""
        return self.forget(superseding.expired_ids(self.backend), dry_run=checks.flag(dry_run, "dry_run"))

    # --- moving and maintaining ------------------------------------------------------------------

    def export(
        self, *, with_vectors: bool = False, where: Filters | None = None, **filters: Any
    ) -> Iterator[dict[str, Any]]:
        """Every memory the filters select, superseded and expired ones too, in id order, as remem's
        lossless JSON records (what ``import_`` reads back, links included); ``with_vectors`` adds
        each memory's window vectors and their model."""
        chosen, with_vectors = arguments.filters(where, filters), checks.flag(with_vectors, "with_vectors")
        return upkeep.export_records(self.backend, chosen.everything(), with_vectors)

    def reindex(
        self,
        *,
        index: str | None = None,
        hnsw: tuple[int | None, int | None, int | None] = (None, None, None),
        model: str | None = None,
        force: bool = False,
        progress: ProgressFn | None = None,
    ) -> upkeep.ReindexOutcome:
        """Rebuild the derived indexes and turns' contexts (``index``: exact, hnsw or auto; ``hnsw``:
        m, ef_construction, ef_search); with ``model`` re-embed every memory with that model first
        (staged, resumable, swapped in at once; with ``force`` even with the store's own model).
        ``seconds``: the whole of it, the model's loading and the re-embedding included."""
        asked = (index, hnsw, model, force)
        outcome = upkeep.reindex(self.backend, self.catalog, self._stores_embedder, asked, progress)
        if model is not None:
            self._reload_model()
        return outcome

    def index_advice(self) -> str | None:
        """One line (naming the command) when the store has outgrown its exact index: asked to be
        ``auto``, it holds as many vectors as ``auto`` builds HNSW for, but builds it only at a reindex;
        None otherwise (always on PostgreSQL). A write crossing that size, or its double, notes it."""
        return growth.advice(growth.state_of(self.backend))

    def compact(self) -> CompactReport:
        """Write a local store's lagging vector index file and behind keyword heads (``remem
        compact``, for cron): vectors caught up, terms' heads taken; zeros with nothing to do."""
        return self.backend.compact()

    def stats(self) -> StoreStats:
        """Counts by user, conversation, tag and role; model, index, disk size, oldest and newest
        (``StoreStats.record()`` is its JSON, as ``remem stats --json`` prints it)."""
        return self.backend.stats()

    def doctor(self, *, repair: bool = False) -> DoctorReport:
        """Check the store and its model files; with ``repair`` first rebuild what can be derived."""
        return upkeep.doctor(self.backend, self.catalog, self.embedder, checks.flag(repair, "repair"))
