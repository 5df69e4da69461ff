"""The keyword lane's heads kept in the store (``heads``: ``keyword_heads``): a process meeting a word
for the first time gets the full query's top through them, to the bit; they stop serving when an
edit or too many adds make them wrong or stale, and ``compact``, a long-lived process's upkeep,
``reindex`` and ``doctor --repair`` take them again; ``doctor`` finds a wrong one."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_heads import WORDS, _queries, _texts

import remem
from helpers import FakeEmbedder, run_cli
from remem import Filters, NewMemory
from remem.backends.analyzer import term_queries
from remem.backends.local import fts, heads, stored_heads
from remem.backends.local.background import Paced
from remem.backends.local.transactions import atomic


@pytest.fixture
def memories(store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[remem.Memories]:
    """2,000 memories, a third of them turns (their context column holds terms); heads used and
    stored from the first memory on, for every word more than 40 memories hold."""
    monkeypatch.setattr(heads, "PRUNE_FROM", 0)
    monkeypatch.setattr(heads, "CHEAP_HOLDERS", 40)
    with remem.open(store_dir, embedder=FakeEmbedder()) as opened:
        opened.add_many(
            NewMemory(text, conversation=f"c{i % 9}", role="Ann") if i % 3 == 0 else NewMemory(text)
            for i, text in enumerate(_texts(2_000, seed=3))
        )
        yield opened


@pytest.fixture
def conn(store_dir: Path, memories: remem.Memories) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(store_dir / "memories.sqlite3", isolation_level=None)  # as the store's
    yield connection
    connection.close()


def _first_sight(conn: sqlite3.Connection, queries: list[str], limit: int = 10) -> int:
    """Each query's top through heads met for the first time (a new process: a new cache) must be
    the full query's; how many the heads gave."""
    given = 0
    for query in queries:
        terms = term_queries(query)
        held = [fts.count(conn, term) for term in terms]
        found = heads.top(conn, heads.Heads(), terms, held, Filters(), limit)
        if found is not None:
            assert found == fts.search(conn, " OR ".join(terms), Filters(), limit), query
            given += 1
    return given


def test_words_are_looked_up_by_the_tokens_the_keyword_table_holds(conn: sqlite3.Connection) -> None:
    made = fts.tokens_of(conn, ["procedure", "E1045", "don't", "", "w12"])
    assert made == ["procedur", "e1045", None, None, "w12"]
    cache = heads.Heads()
    assert cache.tokens(conn, ['"Procedures"', "9f3c2ab*"]) == ["procedur", None]


@pytest.mark.parametrize("limit", [10, 100])
def test_stored_heads_give_a_new_process_the_full_querys_top(
    memories: remem.Memories, conn: sqlite3.Connection, limit: int
) -> None:
    queries = _queries(1)
    assert stored_heads.behind(conn)
    assert _first_sight(conn, queries, limit) < 10  # nothing stored: words met once run the full query
    done = memories.compact()
    assert done.vectors == 0 and done.keyword_heads >= 40
    assert not stored_heads.behind(conn) and not memories.compact()
    assert _first_sight(conn, queries, limit) >= 30


def test_added_memories_are_candidates_until_the_heads_are_stale(
    memories: remem.Memories, conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stored_heads, "REFRESH_AFTER", 50)
    memories.compact()
    queries = _queries(2)
    # short memories, each holding a rare word twice: a share above every head's rest
    memories.add_many(NewMemory(f"{word} {word}") for word in WORDS[30:60])
    assert not stored_heads.behind(conn)
    assert _first_sight(conn, queries) >= 30
    memories.add_many(NewMemory(f"{word} {word} again") for word in WORDS[30:60])
    assert stored_heads.behind(conn)
    assert memories.compact().keyword_heads
    assert _first_sight(conn, queries) >= 30


def test_an_edited_memory_is_a_candidate_and_many_edits_take_them_again(
    memories: remem.Memories, conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fts, "REWRITES_KEPT", 20)
    monkeypatch.setattr(stored_heads, "REFRESH_REWRITES", 10)
    memories.compact()
    queries = ["w45", "w45 w50", *_queries(3)]
    outside = next(m.id for m in memories.list(limit=2_000) if "w45" not in m.text)
    memories.edit(outside, "w45 w45")  # short, holding w45 twice: the top share, outside every head
    assert not stored_heads.behind(conn)
    assert _first_sight(conn, queries) >= 30
    found = heads.top(conn, heads.Heads(), ['"w45"'], [fts.count(conn, '"w45"')], Filters(), 10)
    assert found is not None and found[0][0] == outside
    listed = [m.id for m in memories.list(limit=40) if m.id != outside]
    for memory_id in listed[:12]:  # 13 rewrites: past REFRESH_REWRITES, within REWRITES_KEPT
        memories.edit(memory_id, tags=["edited"])
    assert stored_heads.behind(conn)
    assert _first_sight(conn, queries) >= 30
    for memory_id in listed[12:24]:  # 25: the log no longer holds what the heads need
        memories.edit(memory_id, tags=["edited", "again"])
    assert _first_sight(conn, queries) < 10
    assert memories.compact().keyword_heads
    assert _first_sight(conn, queries) >= 30


def test_a_long_lived_process_takes_them_again_after_its_writes(
    memories: remem.Memories, conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stored_heads, "REFRESH_AFTER", 50)
    memories.backend._heads_pace = Paced(1.0)  # due again as soon as the last has ended
    memories.warm_up()
    memories.add(_texts(1, seed=9)[0])  # the first write finds none stored
    memories.backend._upkeep.join(30)
    assert not stored_heads.behind(conn)
    memories.add_many(NewMemory(text) for text in _texts(60, seed=10))
    memories.backend._upkeep.join(30)
    assert not stored_heads.behind(conn)
    assert _first_sight(conn, _queries(4)) >= 30


def test_a_heads_taken_earlier_never_replace_heads_taken_later(
    memories: remem.Memories, conn: sqlite3.Connection
) -> None:
    early = stored_heads.take_all(conn)
    memories.add_many(NewMemory(text) for text in _texts(20, seed=11))
    later = stored_heads.take_all(conn)
    with atomic(conn):
        assert stored_heads.save(conn, later) > 0
        assert stored_heads.save(conn, early) == 0
    assert _first_sight(conn, _queries(5)) >= 30


def test_doctor_finds_a_wrong_head_and_repair_takes_them_again(
    store_dir: Path, memories: remem.Memories, conn: sqlite3.Connection
) -> None:
    memories.compact()
    assert memories.doctor().ok
    found = {check.name: check for check in memories.doctor().checks}["keyword heads"]
    assert found.ok and "checked" in found.detail
    # every stored head now claims the worst holders, and that no other memory scores more than 0
    worst, nothing = heads.packed("q", range(1, 9)), heads.packed("d", [0.0] * 9)
    with atomic(conn):
        conn.execute("UPDATE keyword_heads SET ids = ?, shares = ?", (worst, nothing))
    report = memories.doctor()
    found = {check.name: check for check in report.checks}["keyword heads"]
    assert not found.ok and found.repairable and "wrong" in found.detail
    cli = run_cli(["doctor"], store_dir)
    assert cli.code != 0 and "keyword heads" in cli.stdout + cli.stderr
    repaired = memories.doctor(repair=True)
    assert repaired.ok and "took the keyword heads again" in repaired.repaired
    assert _first_sight(conn, _queries(6)) >= 30


def test_a_paced_task_waits_for_its_share_of_the_time(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr("remem.backends.local.background.time.monotonic", lambda: clock[0])
    paced = Paced(0.1)

    def work() -> str:
        clock[0] += 2.0  # a run of 2 s
        return "done"

    assert paced.due() and paced.run(work) == "done"
    clock[0] += 17.0  # 19 s since it began: 20 s are its share
    assert not paced.due()
    clock[0] += 1.0
    assert paced.due()


def test_a_big_ingest_ends_with_its_heads_taken(
    memories: remem.Memories, conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stored_heads, "REFRESH_AFTER", 500)
    assert stored_heads.behind(conn)
    memories.add_many(NewMemory(text) for text in _texts(2_100, seed=12))  # staged: more than a batch
    assert not stored_heads.behind(conn)
    assert _first_sight(conn, _queries(7)) >= 30
    memories.add_many(NewMemory(text) for text in _texts(400, seed=13))  # fewer: left to compact
    assert not stored_heads.behind(conn)


def test_random_edits_leave_every_top_exact(memories: remem.Memories, conn: sqlite3.Connection) -> None:
    """Texts, tags and users edited at random between searches: through the heads a process keeps
    and through the stored ones met for the first time, every top is the full query's."""
    memories.compact()
    rng, cache, queries = random.Random(14), heads.Heads(), _queries(15, count=12)
    ids = [m.id for m in memories.list(limit=2_000)]
    for round_ in range(6):
        for memory_id in rng.sample(ids, 15):
            roll = rng.random()
            if roll < 0.5:
                memories.edit(memory_id, " ".join(rng.choices(WORDS[20:70], k=rng.randint(1, 4))))
            else:
                memories.edit(memory_id, tags=rng.sample(WORDS[30:60], 2) if roll < 0.8 else [])
        assert _first_sight(conn, queries) >= 8, round_
        for query in queries:
            terms = term_queries(query)
            held = [fts.count(conn, term) for term in terms]
            for _ in range(2):  # the second time a word is met its head is taken
                found = heads.top(conn, cache, terms, held, Filters(), 10)
                assert found is None or found == fts.search(conn, " OR ".join(terms), Filters(), 10), query
