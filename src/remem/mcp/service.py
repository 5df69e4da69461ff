"""The one ``Memories`` a server shares between its tool calls, and its warm-up.

The SDK runs each tool call on a worker thread, and they share one ``Memories`` (which is safe under
threads: each call a transaction of its own) at the same time; ``close`` waits for the calls under
way (``Service.run`` counts them). The store is opened on the first call, never before
the server answers, and opening it (connecting, for PostgreSQL) holds no lock a call waits on: one
attempt at a time, and a call that finds one under way takes its outcome — the store, or the same
error — so no call waits for more than one attempt, even when the server does not answer (the
retired bench/mcp_unreachable.py: 3 calls at once against a server that never answers took 20.5,
30.5 and 40.5 s over 4 connections when each connected in turn, now 10.4 s each over 1).
The warm-up runs on its own thread once the server has answered its first request: it opens the
store (trying again every few seconds while it cannot) and picks the model, loads the ONNX session
(the slow part: onnxruntime sessions are thread-safe, and the session is cached per process), then
loads the vector index and becomes ``ready``; last it embeds the memories stored without vectors
meanwhile (or by an earlier run), a batch at a time.
A search that arrives before then (a client that starts the server for one call) starts the warm-up
at once and waits for it for at most ``SEARCH_WAIT_SECONDS`` counted from the
first such search; after that, searches use the keyword lane until it is ready, saying so. Adds
never wait: they store memories pending, embedded by the warm-up.
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, TypeVar

from remem.errors import (
    ConnectionLostError,
    ModelMismatchError,
    RememError,
    StoreCorruptError,
    StoreError,
    StoreNotFoundError,
)
from remem.mcp.limits import OUT_OF_RESOURCES

if TYPE_CHECKING:
    import remem

T = TypeVar("T")

#: Memories embedded per transaction when the backlog is worked off after warm-up.
BACKLOG_BATCH = 64
#: Without a first request, the warm-up starts this long after the server did.
START_AT_THE_LATEST = 2.0
#: How often a warm-up waiting for a store that does not exist yet (--read-only) looks again.
STORE_POLL_SECONDS = 1.0
#: How often a warm-up that cannot open the store (a database that does not answer) tries again.
STORE_RETRY_SECONDS = 5.0
#: How long the first searches wait, at most, for the warm-up to load the model (and embed what was
#: added meanwhile) before answering from the keyword lane; counted from the first search that waits,
#: so later ones wait no longer. The bundled model's warm-up (store, ONNX session, index) took
#: 0.9-1.2 s with a warm page cache and 1.0-1.6 s with it dropped, on 2 cores busy with twice as much
#: work as they have (the retired bench/mcp_first_call.py; about 0.45 s on an idle machine): 3 s is twice the
#: worst of these, and shorter than the handshake took on that busy machine.
SEARCH_WAIT_SECONDS = 3.0
#: How long a call that needs the model (edit) waits for the warm-up before loading it itself.
READY_WAIT_SECONDS = 120.0
#: A warm-up that failed for a reason that passes tries again after this long, the pause doubling
#: up to ``WARM_UP_RETRY_MAX`` (a server out of descriptors for a minute is ready soon after).
WARM_UP_RETRY_SECONDS = 0.5
WARM_UP_RETRY_MAX = 30.0
#: OSError numbers that pass: out of descriptors (the process's, the system's), a resource busy
#: for now, out of memory or buffers for now, an interrupted call.
PASSING_ERRNOS = OUT_OF_RESOURCES | {errno.EAGAIN, errno.EINTR}


def passing(exc: BaseException) -> bool:
    """Whether ``exc``, or an error it was raised from, is a failure that passes: a lost connection
    to the store, or an OSError of ``PASSING_ERRNOS``. A model file that fails its check, a missing
    extra, a damaged store do not: trying again would fail again."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ConnectionLostError):
            return True
        if isinstance(cause, OSError) and cause.errno in PASSING_ERRNOS:
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _reason(exc: BaseException) -> str:
    """A failure in one line: a RememError's message, an OSError's, else only its kind."""
    if isinstance(exc, RememError | OSError):
        return " ".join(str(exc).split())
    return f"unexpected {type(exc).__name__}"


class Service:
    """The store of one server, opened lazily by ``opener``, and the warm-up state."""

    def __init__(
        self,
        opener: Callable[[], remem.Memories],
        *,
        read_only: bool = False,
        note: Callable[[str], None] = lambda message: None,
        name: str = "remem mcp",
    ) -> None:
        """Serve the store ``opener`` opens (StoreNotFoundError when absent); ``read_only``: the
        warm-up never writes; ``note`` receives one-line messages for a person (stderr), each
        starting with the command's ``name``."""
        self.read_only = read_only
        self.name = name
        self._calls = threading.Condition()  # guards _running and what was passed on to note
        self._running = 0  # calls under way on the open store
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
        self._asked = threading.Event()  # a search waits: start the warm-up now
        self._changed = threading.Condition()  # notified when the warm-up settles, is stuck or stops
        self._stuck = False  # the warm-up cannot open the store (absent, or not answering)
        self._patience: float | None = None  # when searches stop waiting for the model (monotonic)

    # --- calls -----------------------------------------------------------------------------------

    def run(self, work: Callable[[remem.Memories], T]) -> T:
        """``work(memories)``, the store opened first if need be (``store``), while other calls run
        too; what the store said meanwhile (notes, self-repairs) goes to ``note``."""
        while True:
            memories = self.store()
            with self._calls:
                if memories is not self._memories:
                    continue  # closed meanwhile: open it again
                self._running += 1
            try:
                return work(memories)
            finally:
                with self._calls:
                    self._running -= 1
                    self._pass_on(memories)
                    self._calls.notify_all()

    def store(self) -> remem.Memories:
        """The open store, opened now if need be (holding no lock a call waits on): one attempt at a time;
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
    def failure(self) -> str | None:
        """Why the warm-up could not load the model (searches use the keyword lane), or None."""
        return self._failure

    @property
    def waiting_note(self) -> str:
        """Why searches use the keyword lane only (while not ``ready``)."""
        if self._failure is not None:
            return f"model unavailable ({self._failure}); keyword results only"
        return "model loading; keyword results only"

    def wait_ready(self, timeout: float = READY_WAIT_SECONDS) -> None:
        """Block while the warm-up loads the model, until it succeeded or failed,
        or ``timeout`` passed; return at once when it is not loading it (not started, or still
        waiting for the store: then the caller meets the store's own error)."""
        if self._thread is not None and self._loading.is_set():
            self._settled.wait(timeout)

    def wait_for_model(self, timeout: float = SEARCH_WAIT_SECONDS) -> None:
        """Block until the warm-up has loaded the model and embedded what was
        added meanwhile, or failed, or ``timeout`` after the first search that waited (later ones
        wait no longer); start the warm-up now if it waits for the server's first answer. Return at
        once without a warm-up, after it, while it cannot open the store (the caller meets the
        store's own error), and when the server stops."""
        if self._thread is None or self._settled.is_set():
            return
        with self._changed:
            if self._patience is None:
                self._patience = time.monotonic() + timeout
            self._asked.set()
            self._changed.wait_for(self._no_wait, max(0.0, self._patience - time.monotonic()))

    def _no_wait(self) -> bool:
        """Whether a search has nothing to wait for (``wait_for_model``)."""
        return self._settled.is_set() or self._stuck or self._stop.is_set()

    def _changed_state(self, *, stuck: bool | None = None) -> None:
        """Wake the searches waiting for the model to look at the warm-up's state again."""
        with self._changed:
            self._stuck = self._stuck if stuck is None else stuck
            self._changed.notify_all()

    def _pass_on(self, memories: remem.Memories) -> None:
        """Hand what ``memories`` (the open store; the caller holds ``_calls``) said since to ``note``."""
        notes, warnings = self._told
        for message in memories.notes[notes:]:
            self._note(message)
        for warning in memories.warnings[warnings:]:
            self._note(f"Warning: {warning}")
        self._told = (len(memories.notes), len(memories.warnings))

    # --- warm-up ---------------------------------------------------------------------------------

    def start_warm_up(self, begin: threading.Event | None = None) -> None:
        """Warm up on a background thread, once ``begin`` is set or a search waits for the model
        (``wait_for_model``), or after ``START_AT_THE_LATEST``."""
        self._stop.clear()

        def after_begin() -> None:
            deadline = time.monotonic() + START_AT_THE_LATEST
            while begin is not None and not begin.is_set() and not self._asked.is_set():
                if time.monotonic() >= deadline:
                    break
                if self._stop.wait(0.05):
                    return
            if not self._stop.is_set():
                self.warm_up()

        self._thread = threading.Thread(target=after_begin, name="remem-mcp-warm-up", daemon=True)
        self._thread.start()

    def warm_up(self) -> None:
        """Load the model and the index, then embed pending memories; blocks (a thread's job).
        A failure that passes (``passing``: descriptors ran out, a lost connection) is said once and
        the warm-up tried again after a pause that doubles from ``WARM_UP_RETRY_SECONDS`` up to
        ``WARM_UP_RETRY_MAX``, until it succeeds or the server stops; any other failure is noted
        once and leaves the server on the keyword lane."""
        started, pause, first = time.perf_counter(), WARM_UP_RETRY_SECONDS, True
        try:
            while not self._warmed_up(started, say=first):
                if self._stop.wait(pause):
                    return
                pause, first = min(2 * pause, WARM_UP_RETRY_MAX), False
        except Exception as exc:  # whatever it was, the server goes on with the keyword lane
            self._failure = _reason(exc)
            self._note(f"{self.name}: {self.waiting_note}")
        finally:
            self._settled.set()
            self._changed_state()

    def _warmed_up(self, started: float, *, say: bool) -> bool:
        """One attempt of the warm-up: True when it ended (ready, or the server stops), False after
        a failure that passes (noted when ``say``); any other failure is raised."""
        try:
            embedder = self._wait_for_store()
            if embedder is None:
                return True
            self._loading.set()
            embedder.embed_queries(["warm up"])  # loads the ONNX session: the slow part
            if not self.run(self._load_index):
                return True
            embedded = 0 if self.read_only else self._embed_backlog()  # read-only never writes
        except Exception as exc:
            if not passing(exc):
                raise
            if say:
                self._note(f"{self.name}: loading the model failed for now ({_reason(exc)}); trying again")
            return False
        pending = f"; {embedded} pending {'memory' if embedded == 1 else 'memories'} embedded"
        ready = f"{self.name}: model ready in {time.perf_counter() - started:.1f} s"
        self._note(ready + (pending if embedded else ""))
        return True

    def _load_index(self, memories: remem.Memories) -> bool:
        """Read the vector index (the session is loaded) and become ``ready``; False when the
        server is stopping."""
        if self._stop.is_set():
            return False
        memories.warm_up()
        self._ready = True  # from now on adds are embedded at once
        return True

    def _embed_backlog(self) -> int:
        """Embed what was added before the model was ready (now or by an earlier run), a batch per
        transaction, so that a stop is not kept waiting."""
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
                embedder = self.run(lambda memories: memories.embedder())
                self._changed_state(stuck=False)
                return embedder
            except StoreNotFoundError:
                self._changed_state(stuck=True)
                self._stop.wait(STORE_POLL_SECONDS)
            except (StoreCorruptError, ModelMismatchError):
                raise
            except StoreError as exc:
                self._changed_state(stuck=True)
                if not said:
                    reason, every = " ".join(str(exc).split()), f"{STORE_RETRY_SECONDS:g} s"
                    unavailable = f"the store is unavailable ({reason}); trying again every {every}"
                    self._note(f"{self.name}: {unavailable}")
                    said = True
                self._stop.wait(STORE_RETRY_SECONDS)
        return None

    def close(self) -> None:
        """Stop the warm-up, close the store; a later call opens it again (and a later
        ``start_warm_up`` warms up again)."""
        self._stop.set()
        self._changed_state()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        with self._calls:
            self._calls.wait_for(lambda: self._running == 0)  # the calls under way finish first
            if self._memories is not None:
                self._pass_on(self._memories)
                self._memories.close()
                with self._state:
                    self._memories = None
            self._ready, self._failure = False, None
            self._loading.clear()
            self._settled.clear()
            self._asked.clear()
            self._stuck, self._patience = False, None
