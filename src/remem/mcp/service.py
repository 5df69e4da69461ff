"""The one ``Memories`` a server shares between its tool calls, behind one lock, and its warm-up.

``Memories`` is not thread-safe and the SDK runs each tool call on a worker thread, so every call
on it holds ``Service.lock`` (``Service.run``). The store is opened on the first call, never before
the server answers, and opening it (connecting, for PostgreSQL) holds no lock a call waits on: one
attempt at a time, and a call that finds one under way takes its outcome — the store, or the same
error — so no call waits for more than one attempt, even when the server does not answer.
The warm-up runs on its own thread once the server has answered its first request: it opens the
store (trying again every few seconds while it cannot) and picks the model, loads the ONNX session
outside the lock (the slow part: onnxruntime sessions are thread-safe, and the session is cached
per process), then, under the lock, loads the vector index and becomes ``ready``; last it embeds
the memories stored without vectors meanwhile (or by an earlier run), a batch per lock hold. Until
it is ready, searches use the keyword lane and adds store memories pending, so no call waits for
the model.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, TypeVar

from remem.errors import ModelMismatchError, RememError, StoreCorruptError, StoreError, StoreNotFoundError

if TYPE_CHECKING:
    import remem
    from remem.mcp.scope import Scope

T = TypeVar("T")

#: Memories embedded per lock hold when the backlog is worked off after warm-up.
BACKLOG_BATCH = 64
#: Without a first request, the warm-up starts this long after the server did.
START_AT_THE_LATEST = 2.0
#: How often a warm-up waiting for a store that does not exist yet (--read-only) looks again.
STORE_POLL_SECONDS = 1.0
#: How often a warm-up that cannot open the store (a database that does not answer) tries again.
STORE_RETRY_SECONDS = 5.0
#: How long a call that needs the model (edit) waits for the warm-up before loading it itself.
READY_WAIT_SECONDS = 120.0


class Service:
    """The store of one server, opened lazily by ``opener``, with the pin and the warm-up state."""

    def __init__(
        self,
        opener: Callable[[], remem.Memories],
        scope: Scope,
        *,
        read_only: bool = False,
        note: Callable[[str], None] = lambda message: None,
    ) -> None:
        """Serve the store ``opener`` opens (StoreNotFoundError when absent) within ``scope``;
        ``note`` receives one-line messages for a person (stderr)."""
        self.scope = scope
        self.read_only = read_only
        self.lock = threading.Lock()
        self._state = threading.Lock()  # guards _memories and _opening; never held while opening
        self._opener = opener
        self._note = note
        self._memories: remem.Memories | None = None
        self._opening: Future[remem.Memories] | None = None
        self._told = (0, 0)  # notes and warnings of the open Memories already passed on
        self._ready = False
        self._failure: str | None = None
        self._loading = threading.Event()
        self._settled = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- calls -----------------------------------------------------------------------------------

    def run(self, work: Callable[[remem.Memories], T]) -> T:
        """``work(memories)`` under the lock, the store opened first if need be (``store``); what
        the store said meanwhile (notes, self-repairs) goes to ``note``."""
        while True:
            memories = self.store()
            with self.lock:
                if memories is not self._memories:
                    continue  # closed meanwhile: open it again
                try:
                    return work(memories)
                finally:
                    self._pass_on(memories)

    def store(self) -> remem.Memories:
        """The open store, opened now if need be without holding ``lock``: one attempt at a time;
        a caller that finds an attempt under way waits for it and takes its outcome (the store, or
        the same error), never for a second attempt."""
        with self._state:
            if self._memories is not None:
                return self._memories
            attempt, mine = self._opening, self._opening is None
            if attempt is None:
                attempt = self._opening = Future()
        if not mine:
            return attempt.result()
        try:
            memories = self._opener()
        except BaseException as exc:
            with self._state:
                self._opening = None
            attempt.set_exception(exc)
            raise
        with self._state:
            self._memories, self._opening, self._told = memories, None, (0, 0)
        attempt.set_result(memories)
        return memories

    @property
    def ready(self) -> bool:
        """True once the model and index are loaded: searches use every lane, adds embed at once."""
        return self._ready

    @property
    def waiting_note(self) -> str:
        """Why searches use the keyword lane only (while not ``ready``)."""
        if self._failure is not None:
            return f"model unavailable ({self._failure}); keyword results only"
        return "model loading; keyword results only"

    def wait_ready(self, timeout: float = READY_WAIT_SECONDS) -> None:
        """Block (without the lock) while the warm-up loads the model, until it succeeded or failed,
        or ``timeout`` passed; return at once when it is not loading it (not started, or still
        waiting for the store: then the caller meets the store's own error)."""
        if self._thread is not None and self._loading.is_set():
            self._settled.wait(timeout)

    def _pass_on(self, memories: remem.Memories) -> None:
        """Hand what ``memories`` (the open store; the caller holds the lock) said since to ``note``."""
        notes, warnings = self._told
        for message in memories.notes[notes:]:
            self._note(message)
        for warning in memories.warnings[warnings:]:
            self._note(f"Warning: {warning}")
        self._told = (len(memories.notes), len(memories.warnings))

    # --- warm-up ---------------------------------------------------------------------------------

    def start_warm_up(self, begin: threading.Event | None = None) -> None:
        """Warm up on a background thread, once ``begin`` is set (or ``START_AT_THE_LATEST``)."""
        self._stop.clear()

        def after_begin() -> None:
            deadline = time.monotonic() + START_AT_THE_LATEST
            while begin is not None and not begin.is_set() and time.monotonic() < deadline:
                if self._stop.wait(0.05):
                    return
            if not self._stop.is_set():
                self.warm_up()

        self._thread = threading.Thread(target=after_begin, name="remem-mcp-warm-up", daemon=True)
        self._thread.start()

    def warm_up(self) -> None:
        """Load the model and the index, then embed pending memories; blocks (a thread's job).
        A failure is noted and leaves the server on the keyword lane."""
        started = time.perf_counter()
        try:
            embedder = self._wait_for_store()
            if embedder is None:
                return
            self._loading.set()
            embedder.embed_queries(["warm up"])  # loads the ONNX session: slow, outside the lock
            if not self.run(self._load_index):
                return
            embedded = 0 if self.read_only else self._embed_backlog()  # read-only never writes
            pending = f"; {embedded} pending {'memory' if embedded == 1 else 'memories'} embedded"
            ready = f"remem mcp: model ready in {time.perf_counter() - started:.1f} s"
            self._note(ready + (pending if embedded else ""))
        except Exception as exc:  # whatever it was, the server goes on with the keyword lane
            reason = str(exc) if isinstance(exc, RememError) else f"unexpected {type(exc).__name__}"
            self._failure = " ".join(reason.split())
            self._note(f"remem mcp: {self.waiting_note}")
        finally:
            self._settled.set()

    def _load_index(self, memories: remem.Memories) -> bool:
        """Under the lock: read the vector index (the session is loaded) and become ``ready``;
        False when the server is stopping."""
        if self._stop.is_set():
            return False
        memories.warm_up()
        self._ready = True  # from now on adds are embedded at once
        return True

    def _embed_backlog(self) -> int:
        """Embed what was added before the model was ready (now or by an earlier run), a batch per
        lock hold, so tool calls are served in between."""
        embedded = 0
        while not self._stop.is_set():
            done = self.run(lambda memories: memories.embed_pending(limit=BACKLOG_BATCH))
            embedded += done
            if done < BACKLOG_BATCH:
                break
        return embedded

    def _wait_for_store(self) -> remem.Embedder | None:
        """The store's embedder (its model chosen, not loaded), once the store exists and opens;
        None when the server stops first. While it cannot be opened (a database that does not
        answer), it tries again every ``STORE_RETRY_SECONDS``, saying so once."""
        said = False
        while not self._stop.is_set():
            try:
                return self.run(lambda memories: memories.embedder())
            except StoreNotFoundError:
                self._stop.wait(STORE_POLL_SECONDS)
            except (StoreCorruptError, ModelMismatchError):
                raise
            except StoreError as exc:
                if not said:
                    reason, every = " ".join(str(exc).split()), f"{STORE_RETRY_SECONDS:g} s"
                    self._note(f"remem mcp: the store is unavailable ({reason}); trying again every {every}")
                    said = True
                self._stop.wait(STORE_RETRY_SECONDS)
        return None

    def close(self) -> None:
        """Stop the warm-up, close the store; a later call opens it again (and a later
        ``start_warm_up`` warms up again)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        with self.lock:
            if self._memories is not None:
                self._pass_on(self._memories)
                self._memories.close()
                with self._state:
                    self._memories = None
            self._ready, self._failure = False, None
            self._loading.clear()
            self._settled.clear()
