"""A search's pool on every back-end (``core/search/pool.gather``): what fusion reads of each
candidate — both lanes' raw scores, the share of the query's weight it covers, its turn, whether it
is from the window the query's time words name — is the same on each, and the pure ``fuse.rank``
of that pool is the search's ranking."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from helpers import fewest_statements
from remem.core.search import fuse
from remem.core.search.pool import Asked, gather
from remem.core.search.query import read
from remem.core.search.run import run_search
from remem.reports import SearchResult
from remem.testing import FAKE_MODEL, fake_vector
from remem.times import utc_iso
from remem.types import Filters, NewMemory, SearchMode

if TYPE_CHECKING:
    from remem.backends.base import Backend

NOW = datetime(2026, 12, 7, 15, 0, tzinfo=timezone.utc)  # a Monday
FRIDAY = NOW - timedelta(days=3)
MEMORIES = [
    NewMemory(
        "We do not deploy on Fridays: nobody is on call.", created_at=utc_iso(NOW - timedelta(days=40))
    ),
    NewMemory("Ordered pizza for the team lunch.", created_at=utc_iso(FRIDAY)),
    NewMemory("Ordered sushi for the team lunch.", created_at=utc_iso(NOW - timedelta(days=6))),
    NewMemory("Gina: the lunch place was full", conversation="c", role="Gina", created_at=utc_iso(FRIDAY)),
    NewMemory("Jon: then we order pizza again", conversation="c", role="Jon", created_at=utc_iso(FRIDAY)),
]


@pytest.fixture
def ids(backend: Backend) -> list[int]:
    vectors = [fake_vector(m.text).reshape(1, -1) for m in MEMORIES]
    return [result.id for result in backend.add_many(MEMORIES, vectors, FAKE_MODEL)]


@pytest.mark.parametrize("mode", list(SearchMode))
def test_the_pool_carries_what_fusion_reads_and_its_ranking_is_the_search(
    backend: Backend, ids: list[int], mode: SearchMode
) -> None:
    text = "what did we order for lunch on Friday"
    query = read(text, now=NOW)
    assert query.window is not None and query.text == "what did we order for lunch"
    pool = gather(Asked(backend, fake_vector, Filters(), 10), query, mode)
    by_id = {c.id: c for c in pool.candidates}
    assert set(by_id) == set(ids) if mode is not SearchMode.KEYWORD else set(by_id) <= set(ids)
    assert {mid for mid, c in by_id.items() if c.in_window} == {ids[1], ids[3], ids[4]} & set(by_id)
    if mode is not SearchMode.KEYWORD:
        assert by_id[ids[1]].vector is not None
        assert by_id[ids[1]].vector.score == pytest.approx(
            float(fake_vector(query.text) @ fake_vector(MEMORIES[1].text))
        )
    if mode is SearchMode.HYBRID:
        assert by_id[ids[0]].keyword is None and by_id[ids[2]].keyword is not None  # "lunch"
        assert pool.weight is not None and 0 < by_id[ids[2]].share <= 1
        assert {mid for mid, c in by_id.items() if c.turn is not None} == {ids[3], ids[4]}
    ranked = [r.id for r in fuse.rank(pool, mode)]
    found = run_search(backend, text, fake_vector, 10, Filters(), mode=mode, now=NOW)
    assert [hit.memory.id for hit in found] == ranked
    assert found.dates is not None and not found.dates.all_time


def test_the_window_stays_within_the_filters(backend: Backend, ids: list[int]) -> None:
    before_friday = Filters(until=utc_iso(FRIDAY - timedelta(days=1)))
    found = run_search(
        backend, "lunch on Friday", fake_vector, 10, before_friday, mode=SearchMode.HYBRID, now=NOW
    )
    assert {hit.memory.id for hit in found} == {ids[0], ids[2]}  # never a memory the filters leave out
    assert found.dates is not None and found.dates.all_time  # nothing they select is from then


#: One hybrid query of each kind: no name, a speaker, a required phrase, an identifier (held by a
#: memory), time words; and one whose identifier no memory holds (then ``why`` looks it up once).
KINDS = {
    "plain": "what did we order for lunch",
    "speaker": "what did Gina say about lunch",
    "phrase": 'the "team lunch" order',
    "identifier": "lunch E1046",
    "time words": "what did we order for lunch on Friday",
    "unheld identifier": "lunch E1047",
}
#: Round trips of a hybrid search on PostgreSQL, once the store's statistics for its terms are
#: counted and its words stemmed (a search of the same words before, the store unchanged), whatever
#: the query: BEGIN (with the snapshot's stamp); the keyword lane's top, with its top within the
#: window the query's time words name and the turns among them when it may name speakers, in one
#: statement; the vector lane's likewise; the pooled memories' facts (turns, coverage, texts, the
#: cosines of the keyword matches beyond the vector top and the BM25 of the vector hits beyond the
#: keyword top); the hits' memories; COMMIT. A required phrase adds the look-up of its holders (the
#: lanes then rank only those); an identifier no hit holds the look-up that says so (``why``). The
#: same when the vector lane walks the HNSW graph: its search settings are set by the keyword lane's
#: statement, the window's few memories scored exactly in the walk's.
#: Before the pool was one call: 12, 12, 11, 12, 14, 14; then 8, 9, 9, 9, 10, 11.
ROUND_TRIPS = {
    "plain": 6,
    "speaker": 6,
    "phrase": 7,
    "identifier": 6,
    "time words": 6,
    "unheld identifier": 7,
}


class Counting:
    """A back-end whose method calls are counted by name (the vector lane's too)."""

    def __init__(self, inner: Backend, calls: list[str]) -> None:
        self.inner, self.calls = inner, calls

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            found = value(*args, **kwargs)
            return Counting(found, self.calls) if name == "vector_lane" else found

        return call


@pytest.mark.parametrize("lane", ["exact", "graph"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_hybrid_search_asks_the_back_end_for_its_pool_once(
    backend: Backend, ids: list[int], kind: str, lane: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if lane == "graph":  # more memories than a lane's depth (100), too many to score exactly
        if not hasattr(backend, "exact_candidates"):
            pytest.skip("only PostgreSQL's vector lane walks a graph past the vectors it scores exactly")
        monkeypatch.setattr(backend, "exact_candidates", 50)  # the window's 3 still are
        fillers = [NewMemory(f"filler {n}") for n in range(150)]
        backend.add_many(fillers, [fake_vector(m.text).reshape(1, -1) for m in fillers], FAKE_MODEL)
    backend.add_many(
        [NewMemory("E1046 broke the lunch order form")], [fake_vector("E1046").reshape(1, -1)], FAKE_MODEL
    )
    text = KINDS[kind]

    def search(store: Backend) -> SearchResult:
        return run_search(store, text, fake_vector, 10, Filters(), mode=SearchMode.HYBRID, now=NOW)

    assert search(backend)  # the statistics of its terms are counted once

    def counted_search() -> tuple[list[str], SearchResult]:
        calls: list[str] = []
        return calls, search(Counting(backend, calls))

    (calls, found), statements = fewest_statements(counted_search)
    why = ["keyword_top"] if kind == "unheld identifier" else []
    assert calls == ["snapshot", "pool", "get_many", *why]
    assert bool(found.notes) == (kind in ("time words", "unheld identifier"))
    if type(backend).__name__ == "PostgresBackend":
        assert len(statements) == ROUND_TRIPS[kind], statements
    else:
        assert not statements
