"""The local keyword lane under filters: a filter on user, conversation or role that selects few
memories is checked against its memories listed once (``fts.conditions``) instead of each match's
memory row; what the lane finds, and every score, stay those of FTS5's ``bm25()`` over the filtered
matches (the row-by-row form, computed here straight in SQL)."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

import remem
from helpers import FakeEmbedder
from remem import Filters, NewMemory
from remem.backends.analyzer import CONTEXT_WEIGHT, term_queries
from remem.backends.local import LocalBackend, filtering, fts, keywords

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "E1045"]
SIZE = 600


def _text(rng: random.Random, i: int) -> str:
    """3-14 words drawn unevenly (the first words far more often), and an item number."""
    words = [WORDS[min(int(rng.expovariate(0.4)), len(WORDS) - 1)] for _ in range(rng.randint(3, 14))]
    return " ".join(words) + f" item{i}"


@pytest.fixture
def store(store_dir: Path) -> Path:
    """SIZE memories: user ann holds a few (a 30th), bob most, some no user (shared); conversation
    ``few`` holds a 40th, ``many`` most; every third turn by role Ann (with a context); some
    superseded, some expired."""
    rng = random.Random(5)
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        memories.add_many(
            NewMemory(
                text=_text(rng, i),
                user=None if i % 23 == 1 else "ann" if i % 30 == 0 else "bob",
                conversation="few" if i % 40 == 0 else "many",
                role="Ann" if i % 3 == 0 else None,
                tags=(f"g{i % 4}",),
                expires_at="2001-01-01T00:00:00Z" if i % 37 == 5 else None,
            )
            for i in range(SIZE)
        )
        for old in (1, 41, 121):  # a newer text for a few of them
            memory = memories.get(old)
            memories.add(
                f"{memory.text} iota", user=memory.user, conversation=memory.conversation, supersedes=old
            )
    return store_dir


def _reference(
    conn: sqlite3.Connection, query: str, filters: Filters, limit: int, among: Sequence[int] | None = None
) -> list[tuple[int, float]]:
    """FTS5's ``bm25()`` top ``limit`` over the matches that pass the filters, each match's memory
    row read (the lane's form before the listing)."""
    where, params = filtering.where(filters, per_row=True, memory_id="f.rowid")
    if among is not None:
        where += " AND f.rowid IN (SELECT value FROM json_each(?))"
        params = [*params, json.dumps(list(among))]
    rows = conn.execute(
        f"SELECT f.rowid, -bm25(memories_fts, 1.0, {CONTEXT_WEIGHT}) AS score FROM memories_fts f "
        f"JOIN memories m ON m.id = f.rowid WHERE memories_fts MATCH ? AND {where} "
        "ORDER BY score DESC, f.rowid LIMIT ?",
        [" OR ".join(term_queries(query)), *params, limit],
    )
    return [(int(mid), float(score)) for mid, score in rows]


FILTERS = [
    Filters(user="ann"),
    Filters(user="ann", shared=True),
    Filters(conversation="few"),
    Filters(conversation="few", role="Ann"),
    Filters(conversation="few", tags=("g0",)),
    Filters(user="bob", conversation="few"),  # few through one column's index, most through the other
    Filters(user="bob", shared=True, role="Ann"),
    Filters(user="ann", include_superseded=True, include_expired=True),
    Filters(conversation="few", include_expired=True),
    Filters(user="bob"),  # most memories: each match's row is read, as before
    Filters(role="Ann"),
]
QUERIES = ["alpha", "zeta iota", "E1045 gamma", "kappa theta eta beta", "item0 alpha"]


@pytest.fixture(params=[0, 50, SIZE], ids=["bound-30", "bound-50", "bound-all"])
def listed_min(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many memories a filter may select and still be listed (at least a 20th of SIZE: 30):
    at 50, ann's (20), ann's and the shared ones (46) and conversation few's (15); at SIZE every
    filter on user, conversation or role."""
    monkeypatch.setattr(fts, "LISTED_MIN", request.param)
    return int(request.param)


@pytest.mark.parametrize("filters", FILTERS, ids=repr)
def test_a_filtered_keyword_search_is_fts5s_bm25_over_the_filtered_matches(
    store: Path, filters: Filters, listed_min: int
) -> None:
    conn = sqlite3.connect(store / "memories.sqlite3")
    for query in QUERIES:
        match = " OR ".join(term_queries(query))
        for limit in (1, 5, SIZE):
            assert fts.search(conn, match, filters, limit) == _reference(conn, query, filters, limit)
        whole = _reference(conn, query, filters, SIZE)
        assert fts.holders(conn, match, filters) == sorted(mid for mid, _ in whole)
        among = list(range(1, SIZE, 7))
        assert fts.search(conn, match, filters, 10, among) == _reference(conn, query, filters, 10, among)


@pytest.mark.parametrize("scope", FILTERS, ids=repr)
def test_a_scopes_holders_are_counted_as_row_by_row(store: Path, scope: Filters, listed_min: int) -> None:
    """What a scope's statistics count (``fts.count``: its memories holding a term) is what the
    row-by-row form finds."""
    conn = sqlite3.connect(store / "memories.sqlite3")
    for query in QUERIES:
        for term in term_queries(query):
            assert fts.count(conn, term, scope) == len(_reference(conn, term.strip('"'), scope, SIZE))


def test_few_memories_are_listed_and_many_read_row_by_row(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fts, "LISTED_MIN", 50)
    conn = sqlite3.connect(store / "memories.sqlite3")
    assert fts.listed_through(conn, Filters(conversation="few")) == "conversation"
    assert fts.listed_through(conn, Filters(user="ann", shared=True)) == "user"
    assert fts.listed_through(conn, Filters(user="bob", conversation="few")) == "conversation"  # the fewer
    assert fts.listed_through(conn, Filters(user="ann", conversation="few")) == "conversation"
    assert fts.listed_through(conn, Filters(user="bob")) is None
    assert fts.listed_through(conn, Filters(tags=("g0",))) is None  # no user, conversation or role
    assert fts.listed_through(conn, Filters(conversation="few", since="2000-01-01T00:00:00Z")) is None


SCOPE = Filters(user="ann", shared=True)


@pytest.mark.parametrize(
    "filters",
    [SCOPE, Filters(user="ann", shared=True, conversation="few"), Filters(user="ann", role="Ann")],
    ids=repr,
)
def test_the_lane_with_a_scope_finds_the_filtered_memories_as_before(
    store: Path, filters: Filters, listed_min: int
) -> None:
    """A scope (a caller's memories) with filters that list few: the scoped statistics' path
    (``fts.holders``) finds every filtered match, as the row-by-row form does."""
    conn = sqlite3.connect(store / "memories.sqlite3")
    with LocalBackend.open(store, create=False) as backend:
        for query in QUERIES:
            found = backend.keyword_top(query, filters, SIZE, scope=SCOPE)
            assert {mid for mid, _ in found} == {mid for mid, _ in _reference(conn, query, filters, SIZE)}


def test_a_filter_every_memory_passes_is_left_out_until_one_does_not(store_dir: Path) -> None:
    """A user's filter on a store of that user's memories alone ranks as no filter does (no row
    read per match), until a memory of another user comes: then it leaves that memory out."""
    rng = random.Random(9)
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        memories.add_many(NewMemory(text=_text(rng, i), user="ann", conversation="talk") for i in range(80))
    conn = sqlite3.connect(store_dir / "memories.sqlite3")
    counts = keywords.KeywordCounts()
    mine = Filters(user="ann", conversation="talk")
    ours = Filters(user="ann", shared=True)
    assert counts.needed(conn, counts.stamp(conn), mine) == Filters()
    assert counts.needed(conn, counts.stamp(conn), Filters(user="bob")) == Filters(user="bob")
    before = keywords.top_and_rest(conn, counts, "alpha zeta", mine, 10)[0]
    assert before == _reference(conn, "alpha zeta", mine, 10) == _reference(conn, "alpha zeta", Filters(), 10)
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        bobs = memories.add("alpha alpha zeta zeta", user="bob", conversation="talk").id
        shared = memories.add("alpha zeta zeta alpha", conversation="talk").id
    assert counts.needed(conn, counts.stamp(conn), mine) == Filters(user="ann")  # all still talk
    assert counts.needed(conn, counts.stamp(conn), Filters(user="ann", shared=True)) == ours
    after = keywords.top_and_rest(conn, counts, "alpha zeta", mine, 10)[0]
    assert after == _reference(conn, "alpha zeta", mine, 10) and bobs not in {mid for mid, _ in after}
    found = keywords.top_and_rest(conn, counts, "alpha zeta", ours, 10)[0]
    assert found == _reference(conn, "alpha zeta", ours, 10) and shared in {mid for mid, _ in found}


@pytest.mark.parametrize(
    "people",
    [[("ann", "Ann")], [("ann", "Ann"), (None, "Ann")], [("aaa", "Ann"), ("ann", "Ann")],
     [("ann", "Ann"), ("bob", None)], [("ann", None), (None, "Bo")]],
    ids=repr,
)  # fmt: skip
def test_whether_every_memory_passes_a_filter_is_what_each_row_says(
    store_dir: Path, people: list[tuple[str | None, str | None]]
) -> None:
    """``fts.selects_every`` (seeks into the columns' indexes for a memory that fails) answers as
    reading every memory row does: a user or role before or after the filter's in sort order, or
    none (the team's, taken only with ``shared``), makes the filter select less than the store."""
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        memories.add_many(
            NewMemory(text=f"alpha {i}", user=user, role=role, conversation="talk")
            for i, (user, role) in enumerate(people)
        )
    conn = sqlite3.connect(store_dir / "memories.sqlite3")
    for filters in [
        Filters(user="ann"), Filters(user="ann", shared=True), Filters(role="Ann"),
        Filters(user="ann", role="Ann"), Filters(user="ann", conversation="talk", shared=True),
        Filters(conversation="talk"), Filters(conversation="other"), Filters(tags=("g0",)),
    ]:  # fmt: skip
        clauses, params = filtering.columns(filters)
        every = bool(clauses) and all(
            row[0] == 1 for row in conn.execute(f"SELECT ({' AND '.join(clauses)}) FROM memories m", params)
        )
        assert fts.selects_every(conn, filters) is every, filters
