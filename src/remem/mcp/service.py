"""The one ``Memories`` a server shares between its tool calls, behind one lock, and its warm-up.

``Memories`` is not thread-safe and the SDK runs each tool call on a worker thread, so every call
on it holds ``Service.lock`` (``Service.run``). The store is opened on the first call, never before
the server answers. The warm-up runs on its own thread once the server has answered its first
request: it opens the store and picks the model under the lock (quick), loads the ONNX session
outside it (the slow part: onnxruntime sessions are thread-safe, and the session is cached per
process), then, under the lock again, loads the vector index and becomes ``ready``; last it embeds
the memories stored without vectors meanwhile (or by an earlier run), a batch per lock hold. Until
it is ready, searches use the keyword lane and adds store memories pending, so no call waits for
the model.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from remem.errors import RememError, StoreNotFoundError

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
        self._opener = opener
        self._note = note
        self._memories: remem.Memories | None = None
        self._told = (0, 0)  # notes and warnings of the open Memories already passed on
        self._ready = False
        self._failure: str | None = None
        self._settled = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- calls -----------------------------------------------------------------------------------

    def run(self, work: Callable[[remem.Memories], T]) -> T:
        """``work(memories)`` under the lock, the store opened first if need be; what the store
        said meanwhile (notes, self-repairs) goes to ``note``."""
        with self.lock:
            memories = self._open()
            try:
                return work(memories)
            finally:
                self._pass_on(memories)

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
        """Block (without the lock) until the warm-up succeeded or failed, or ``timeout`` passed."""
        if self._thread is not None:
            self._settled.wait(timeout)

    def _open(self) -> remem.Memories:
        if self._memories is None:
            self._memories = self._opener()
            self._told = (0, 0)
        return self._memories

    def _pass_on(self, memories: remem.Memories) -> None:
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
            embedder.embed_queries(["warm up"])  # loads the ONNX session: slow, outside the lock
            with self.lock:
                if self._stop.is_set():
                    return
                memories = self._open()
                memories.warm_up()  # the session is loaded: this reads the vector index
                self._ready = True  # from now on adds are embedded at once
                self._pass_on(memories)
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

    def _embed_backlog(self) -> int:
        """Embed what was added before the model was ready (now or by an earlier run), a batch per
        lock hold, so tool calls are served in between."""
        embedded = 0
        while not self._stop.is_set():
            with self.lock:
                memories = self._open()
                done = memories.embed_pending(limit=BACKLOG_BATCH)
                self._pass_on(memories)
            embedded += done
            if done < BACKLOG_BATCH:
                break
        return embedded

    def _wait_for_store(self) -> remem.Embedder | None:
        """The store's embedder (its model chosen, not loaded), once the store exists; None when
        the server stops first."""
        while not self._stop.is_set():
            try:
                with self.lock:
                    memories = self._open()
                    try:
                        return memories.embedder()
                    finally:
                        self._pass_on(memories)
            except StoreNotFoundError:
                self._stop.wait(STORE_POLL_SECONDS)
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
                self._memories = None
            self._ready, self._failure = False, None
            self._settled.clear()
