"""`remem mcp` on a PostgreSQL store: the same tools, the warm-up's pending adds embedded on the
server, and another client (the CLI, another host) seeing the same memories."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import traceback
import urllib.parse
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_support import FIRST_STORED_PENDING, call, fail, memories, run, server, warm

from lost_connections import lost_after, own_database
from remem.mcp import service

pytest.importorskip("psycopg")


def test_the_tools_work_on_a_postgres_store(postgres_url: str) -> None:
    app = server(postgres_url)  # type: ignore[arg-type]

    async def scenario() -> None:
        async with Client(app) as client:
            added = await call(
                client, "memory_add", {"text": "The deploy key rotates every 90 days", "tags": ["ops"]}
            )
            assert added == FIRST_STORED_PENDING  # stored before the model
            found = await call(client, "memory_search", {"query": "deploy key"})
            assert found["mode"] == "keyword" and [h["id"] for h in found["hits"]] == [1]
            await warm(app)
            with memories(postgres_url) as other:  # type: ignore[arg-type]
                assert other.pending_count() == 0
                other.add("Backups run nightly at 02:00", user="ann")
            vector = await call(
                client, "memory_search", {"query": "rotates deploy key", "mode": "vector", "k": 1}
            )
            assert [h["id"] for h in vector["hits"]] == [1]
            hybrid = await call(client, "memory_search", {"query": "nightly backups", "user": "ann"})
            assert [h["id"] for h in hybrid["hits"]] == [2]
            edited = await call(
                client, "memory_edit", {"id": 1, "text": "The deploy key rotates every 30 days"}
            )
            assert "30 days" in edited["text"]
            listed = await call(client, "memory_list", {"tags": ["ops"]})
            assert [m["id"] for m in listed["memories"]] == [1]
            assert (await call(client, "memory_get", {"ids": [7]}))["missing"] == [7]
            assert await fail(client, "memory_edit", {"id": 7, "text": "nobody"}) == "there is no memory 7"
            await call(client, "memory_forget", {"ids": [2]})
            with memories(postgres_url) as other:  # type: ignore[arg-type]
                assert [m.id for m in other.list()] == [1]

    run(scenario)


class SilentServer:
    """A TCP port where a PostgreSQL server should answer and none does: it accepts connections and
    holds them without a word until ``drop`` (then closes them, and every later one at once), or,
    once ``forward`` names a real server's Unix socket, passes later connections on to it."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        self.accepted = 0
        self.dropping = False
        self.target: str | None = None
        self.changed = threading.Condition()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with self.changed:
                self.accepted += 1
                if self.target is not None:
                    _pass_on(connection, self.target)
                elif self.dropping:
                    connection.close()
                else:
                    self.held.append(connection)
                self.changed.notify_all()

    def wait_for(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.accepted >= count, timeout=60), self.accepted

    def drop(self) -> None:
        with self.changed:
            self.dropping = True
            for connection in self.held:
                connection.close()
            self.held.clear()

    def forward(self, unix_socket: str) -> None:
        with self.changed:
            self.target = unix_socket

    def close(self) -> None:
        self.drop()
        self.listener.close()


def _pass_on(connection: socket.socket, unix_socket: str) -> None:
    """Relay ``connection`` to the server listening on ``unix_socket``, both ways, until either ends."""
    server = socket.socket(socket.AF_UNIX)
    server.connect(unix_socket)

    def pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    threading.Thread(target=pump, args=(connection, server), daemon=True).start()
    threading.Thread(target=pump, args=(server, connection), daemon=True).start()


def _calls_inside_the_service() -> int:
    """Tool calls (worker threads, not the warm-up) now inside ``Service.run``: waiting for the store."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    inside = 0
    for ident, frame in sys._current_frames().items():
        if names.get(ident) == "remem-mcp-warm-up":
            continue
        stack = traceback.walk_stack(frame)
        inside += any(f.f_code is service.Service.run.__code__ for f, _ in stack)
    return inside


def test_calls_on_a_store_that_does_not_answer_wait_for_one_connection_attempt_at_most(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 24, finding 3: the warm-up connects to a server that does not answer; calls made
    meanwhile take the outcome of that attempt instead of queueing behind it, each for an attempt of
    its own (10 s, then 20 s…). Counted in connections, not seconds."""
    monkeypatch.setattr(service, "STORE_RETRY_SECONDS", 3600.0, raising=False)  # its next try: later
    silent = SilentServer()
    notes: list[str] = []
    url = f"postgresql://remem@127.0.0.1:{silent.port}/db?sslmode=disable"
    app = server(url, warm_up=True, note=notes.append)  # type: ignore[arg-type]
    errors: list[str] = []

    async def search(client: Client, query: str) -> None:
        errors.append(await fail(client, "memory_search", {"query": query}))

    async def scenario() -> None:
        async with Client(app) as client:
            await client.list_tools()  # the warm-up starts: it connects, and hangs
            await anyio.to_thread.run_sync(silent.wait_for, 1)
            async with anyio.create_task_group() as calls:
                for query in ("deploy key", "backups", "on-call"):
                    calls.start_soon(search, client, query)
                while _calls_inside_the_service() < 3:
                    await anyio.sleep(0.01)
                await anyio.sleep(0.2)  # let them reach the wait
                silent.drop()  # the server gives up on the warm-up's connection
            assert silent.accepted == 1  # no call made an attempt of its own after waiting for it
            await search(client, "after the failure")  # a new call tries again, once
            assert silent.accepted == 2

    try:
        run(scenario)
    finally:
        silent.close()
    assert len(errors) == 4 and all(f"cannot connect to {url}" in error for error in errors), errors
    assert any("the store is unavailable (cannot connect" in note for note in notes), notes


def test_a_server_started_while_the_database_is_down_serves_it_with_the_model_once_it_is_up(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm-up keeps trying to open the store instead of leaving the server on the keyword lane
    for good ("model unavailable (cannot connect …)") after its first attempt failed."""
    monkeypatch.setattr(service, "STORE_RETRY_SECONDS", 0.1, raising=False)
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(postgres_url).query))
    unix_socket = str(next(Path(query["host"]).glob(".s.PGSQL.*[0-9]")))
    door = SilentServer()
    door.drop()  # down: every connection is closed at once
    url = f"postgresql://postgres@127.0.0.1:{door.port}/postgres?sslmode=disable&schema={query['schema']}"
    app = server(url, warm_up=True)  # type: ignore[arg-type]

    async def scenario() -> None:
        async with Client(app) as client:
            assert "cannot connect" in await fail(client, "memory_add", {"text": "The deploy key rotates"})
            await anyio.to_thread.run_sync(door.wait_for, 3)  # the warm-up tried again, and again
            door.forward(unix_socket)  # the database is back
            for _ in range(600):
                found = await client.call_tool("memory_search", {"query": "deploy key", "mode": "vector"})
                if not found.is_error and (found.structured_content or {}).get("lane_note", 1) is None:
                    break
                await anyio.sleep(0.05)
            assert found.structured_content is not None and found.structured_content["mode"] == "vector"
            assert (await call(client, "memory_add", {"text": "The deploy key rotates"}))["embedded"]

    try:
        run(scenario)
    finally:
        door.close()


@pytest.mark.slow
def test_memory_add_whose_connection_is_lost_after_the_commit_says_stored(
    postgres_base: str, tmp_path: Path
) -> None:
    """The similar-memory look-up after memory_add's COMMIT finds the server gone: the tool still
    returns the stored id (it used to fail with "cannot connect", as if nothing were stored)."""
    with own_database(postgres_base, tmp_path) as url:
        app = server(url)  # type: ignore[arg-type]

        async def scenario() -> None:
            async with Client(app) as client:
                await warm(app)
                await call(client, "memory_add", {"text": "The deploy key rotates every 90 days"})
                backend = app.service.run(lambda m: m.backend)
                with lost_after(backend, "add_many", url) as committed:
                    added = await call(client, "memory_add", {"text": "The deploy key rotates every 60 days"})
                assert committed == ["add_many"]
                assert (added["id"], added["duplicate"], added["embedded"]) == (2, False, True)

        run(scenario)
        with memories(url) as again:  # type: ignore[arg-type]
            assert again.get(2).text == "The deploy key rotates every 60 days"
