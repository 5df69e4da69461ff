"""The local keyword lane through the terms' heads (``heads``): the same top as the full FTS5 query,
to the bit and in the same order, as the store grows, its mean length changes and memories are
edited in place; the full query runs when the heads cannot show it."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import remem
from helpers import FakeEmbedder
from remem import Filters, NewMemory
from remem.backends.analyzer import term_queries
from remem.backends.local import fts, heads, keywords

WORDS = [f"w{i}" for i in range(80)]
EVERY = Filters()


def _texts(count: int, seed: int, longest: int = 18) -> list[str]:
    """Texts of 3-``longest`` words drawn Zipf-like from WORDS (some repeated within a text)."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    return [" ".join(rng.choices(WORDS, weights, k=rng.randint(3, longest))) for _ in range(count)]


def _queries(seed: int, count: int = 40) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(WORDS[2:60], rng.randint(1, 5))) for _ in range(count)]


@pytest.fixture
def memories(store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[remem.Memories]:
    """2,000 memories, a third of them turns of conversations (their context column holds terms);
    the heads used from the first memory on."""
    monkeypatch.setattr(heads, "PRUNE_FROM", 0)
    with remem.open(store_dir, embedder=FakeEmbedder()) as opened:
        opened.add_many(
            NewMemory(
                text,
                conversation=f"c{i % 9}" if i % 3 == 0 else None,
                role="Ann" if i % 3 == 0 else None,
                tags=(f"t{i % 3}",),
            )
            for i, text in enumerate(_texts(2_000, seed=3))
        )
        yield opened


@pytest.fixture
def conn(store_dir: Path, memories: remem.Memories) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(store_dir / "memories.sqlite3")
    yield connection
    connection.close()


def _agree(
    conn: sqlite3.Connection, cache: heads.Heads, queries: list[str], limit: int, filters: Filters = EVERY
) -> int:
    """Assert that every query's top through the heads, when given, is the full query's; returns how
    many the heads gave."""
    counts = keywords.KeywordCounts()
    given = 0
    for query in queries:
        terms = term_queries(query)
        expected = fts.search(conn, " OR ".join(terms), filters, limit)
        held = [counts.holders(conn, counts.stamp(conn), term) for term in terms]
        found = heads.top(conn, cache, terms, held, filters, limit)
        if found is not None:
            assert found == expected, query
            given += 1
    return given


@pytest.mark.parametrize("limit", [10, 100])
def test_the_heads_top_is_the_full_querys_to_the_bit(conn: sqlite3.Connection, limit: int) -> None:
    cache = heads.Heads()
    assert _agree(conn, cache, ["w2 w3"], limit) == 0  # terms many memories hold: no head at first sight
    _agree(conn, cache, _queries(1), limit)
    assert _agree(conn, cache, _queries(1), limit) >= 30


def test_memories_added_since_a_head_are_candidates(
    memories: remem.Memories, conn: sqlite3.Connection
) -> None:
    cache = heads.Heads()
    queries = _queries(2)
    _agree(conn, cache, queries, 10)
    assert _agree(conn, cache, queries, 10) >= 30
    kept = {term: cache.get((term, None)) for query in queries for term in term_queries(query)}
    # short memories, each holding a rare word twice: a share above every head's rest
    memories.add_many(NewMemory(f"{word} {word}") for word in WORDS[30:60])
    conn.rollback()
    assert _agree(conn, cache, queries, 10) >= 30
    assert all(cache.get((term, None)) is head for term, head in kept.items())  # none taken again


def test_a_longer_mean_still_bounds(memories: remem.Memories, conn: sqlite3.Connection) -> None:
    cache = heads.Heads()
    queries = _queries(3)
    _agree(conn, cache, queries, 10)
    before = heads.state(conn).mean
    memories.add_many(NewMemory(text) for text in _texts(1_000, seed=5, longest=100))
    conn.rollback()
    assert heads.state(conn).mean > before * 1.3
    assert _agree(conn, cache, queries, 10) >= 20


def test_a_memory_edited_in_place_is_a_candidate_of_the_heads_it_had(
    memories: remem.Memories, conn: sqlite3.Connection
) -> None:
    cache = heads.Heads()
    queries = ["w45", "w45 w50"]
    _agree(conn, cache, queries, 10)
    assert _agree(conn, cache, queries, 10) == 2
    old = cache.get(('"w45"', None))
    assert old is not None and old.rest > 0.0
    outside = next(m.id for m in memories.list(limit=2_000) if m.id not in old.ids and "w45" not in m.text)
    memories.edit(outside, "w45 w45")  # short, holding w45 twice: a top share, outside the head
    conn.rollback()
    assert fts.rewrites(conn) == old.rewrites + 1
    assert _agree(conn, cache, queries, 10) == 2  # the heads answer, exactly
    assert cache.get(('"w45"', None)) is old  # not taken again
    assert heads.top(conn, cache, ['"w45"'], [fts.count(conn, '"w45"')], EVERY, 10)[0][0] == outside  # type: ignore[index]


def test_a_rebuilt_keyword_table_takes_every_head_again(
    memories: remem.Memories, conn: sqlite3.Connection
) -> None:
    cache = heads.Heads()
    _agree(conn, cache, ["w45"], 10)
    assert _agree(conn, cache, ["w45"], 10) == 1
    old = cache.get(('"w45"', None))
    memories.reindex(force=True)  # every keyword row written again
    conn.rollback()
    assert old is not None and fts.rewrites(conn) > old.rewrites + fts.REWRITES_KEPT
    assert _agree(conn, cache, ["w45"], 10) == 1
    assert cache.get(('"w45"', None)) is not old  # taken again


def test_the_keyword_lane_answers_as_the_full_query(
    memories: remem.Memories, conn: sqlite3.Connection
) -> None:
    for query in _queries(4, count=20) * 2:
        expected = fts.search(conn, " OR ".join(term_queries(query)), Filters(), 10)
        assert memories.backend.keyword_top(query, Filters(), 10) == expected


def test_narrow_filters_and_deep_tops_take_the_full_query(conn: sqlite3.Connection) -> None:
    cache = heads.Heads()
    terms = term_queries("w10 w20")
    held = [fts.count(conn, term) for term in terms]
    heads.top(conn, cache, terms, held, Filters(), 10)  # few hold them: their heads are taken at once
    assert heads.top(conn, cache, terms, held, Filters(), 10) is not None
    assert heads.top(conn, cache, terms, held, Filters(conversation="c1"), 10) is None
    assert heads.top(conn, cache, terms, held, Filters(), heads.MAX_LIMIT + 1) is None


def test_heads_over_a_tag_are_its_top_and_taken_again_when_a_memory_gets_it(
    memories: remem.Memories, conn: sqlite3.Connection
) -> None:
    cache, tagged = heads.Heads(), Filters(tags=("t0",))
    queries = ["w45", "w45 w50", *_queries(5)]
    _agree(conn, cache, queries, 10, tagged)
    assert _agree(conn, cache, queries, 10, tagged) >= 30
    old = cache.get(('"w45"', heads.over(conn, tagged)[1]))
    assert old is not None and old.rest > 0.0
    outside = next(m.id for m in memories.list(limit=2_000) if "t0" not in m.tags and "w45" not in m.text)
    memories.edit(outside, tags=["t0", "w45"])  # now in the tag's memories, holding w45 among few words
    conn.rollback()
    assert _agree(conn, cache, queries, 10, tagged) >= 30
    assert memories.backend.keyword_top("w45", tagged, 10)[0][0] == outside
