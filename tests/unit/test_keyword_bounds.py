"""The local keyword lane's bounds: BM25 computed as FTS5 computes it, near-zero-IDF terms left out
of the ranking query on big stores (``bounds.COMMON_HOLDERS``, made small here), memories holding
only such terms ranked among the newest of them (``bounds.WINDOW``), coverage decided by bounds, and
the counts kept per state of the keyword index."""

from __future__ import annotations

import math
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import remem
from helpers import FAKE_MODEL, FakeEmbedder, fake_vector
from remem import Filters, NewMemory
from remem.backends import bounds
from remem.backends.analyzer import CONTEXT_WEIGHT, term_queries
from remem.backends.local import LocalBackend, bm25, fts, keywords

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda"]


def _texts(count: int, seed: int = 7) -> list[str]:
    """Texts of 3-14 words drawn unevenly, every one holding "note" (some twice)."""
    rng = random.Random(seed)
    texts = []
    for i in range(count):
        words = [rng.choice(WORDS[: 2 + i % len(WORDS)]) for _ in range(rng.randint(2, 13))]
        words.insert(rng.randint(0, len(words)), "note")
        if i % 7 == 0:
            words.append("note")
        texts.append(" ".join(words) + f" item{i}")
    return texts


@pytest.fixture
def store(store_dir: Path) -> Iterator[LocalBackend]:
    """60 memories of two users, each holding "note"; a third of them turns of a conversation (so
    the context column holds terms too)."""
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        memories.add_many(
            NewMemory(
                text=text,
                user=("ann", "bob")[i % 2],
                conversation="talk" if i % 3 == 0 else None,
                role="Ann" if i % 3 == 0 else None,
            )
            for i, text in enumerate(_texts(60))
        )
    with LocalBackend.open(store_dir, create=False) as backend:
        yield backend


@pytest.fixture
def conn(store_dir: Path, store: LocalBackend) -> sqlite3.Connection:
    return sqlite3.connect(store_dir / "memories.sqlite3")


def _fts5(conn: sqlite3.Connection, query: str) -> dict[int, float]:
    """Every match's ``-bm25()`` straight from FTS5."""
    match = " OR ".join(term_queries(query))
    rows = conn.execute(
        f"SELECT rowid, -bm25(memories_fts, 1.0, {CONTEXT_WEIGHT}) FROM memories_fts "
        "WHERE memories_fts MATCH ?",
        (match,),
    )
    return {int(mid): float(score) for mid, score in rows}


@pytest.mark.parametrize("query", ["note", "alpha", "alpha note", "note theta iota", "kappa lambda beta"])
def test_bm25_in_python_is_fts5s_own_to_the_bit(conn: sqlite3.Connection, query: str) -> None:
    expected = _fts5(conn, query)
    rows, columns = fts.averages(conn)
    assert columns[1] > 0  # the conversation's turns have a context
    terms = term_queries(query)
    ids = sorted(expected)
    found = [bm25.instances(conn, term, ids, context=True) for term in terms]
    idfs = [bm25.idf(rows, fts.count(conn, term)) for term in terms]
    sizes = found[0][1] | {mid: size for _, more in found[1:] for mid, size in more.items()}
    for mid in ids:
        got = bm25.score(
            [instances.get(mid, (0, 0)) for instances, _ in found], idfs, sizes[mid], sum(columns) / rows
        )
        assert got == expected[mid], (query, mid)  # the same double, not merely close


def _unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounds, "COMMON_HOLDERS", 10**12)


def _bounded(monkeypatch: pytest.MonkeyPatch, window: int) -> None:
    monkeypatch.setattr(bounds, "COMMON_HOLDERS", 0)
    monkeypatch.setattr(bounds, "WINDOW", window)


@pytest.mark.parametrize("k", [1, 5, 20, 100])
@pytest.mark.parametrize(
    ("query", "filters", "among"),
    [
        ("note", Filters(), None),
        ("note", Filters(user="bob"), None),
        ("note", Filters(), range(1, 61, 3)),
        ("alpha note", Filters(), None),
        ("note theta iota", Filters(user="ann"), None),
        ("note item3 item17", Filters(), None),  # fewer matches than k besides "note"
        ("note item3 item17", Filters(), range(10, 40)),
    ],
)
def test_a_window_holding_every_match_gives_the_unbounded_ranking(
    store: LocalBackend,
    monkeypatch: pytest.MonkeyPatch,
    query: str,
    filters: Filters,
    among: range | None,
    k: int,
) -> None:
    """Left out of the ranking query, "note" (every memory holds it; "alpha" more than half of them)
    changes each score by less than 2.2e-6 a term, so the order only of memories that close (ties
    of the other terms that these broke); memories holding only such terms come after the others,
    scored exactly."""
    ids = None if among is None else list(among)
    _unbounded(monkeypatch)
    expected = store.keyword_top(query, filters, k, ids)
    unbounded = dict(store.keyword_top(query, filters, 100, ids))
    _bounded(monkeypatch, window=1_000)
    plan = keywords.plan(store.records.conn, keywords.KeywordCounts(), b"", query)
    assert '"note"' in plan.common
    bound = 2.2e-6 * len(plan.common)
    got = store.keyword_top(query, filters, k, ids)
    assert len(got) == len(expected) and got == sorted(got, key=lambda pair: (-pair[1], pair[0]))
    for place, (mid, score) in enumerate(got):
        assert score == pytest.approx(unbounded[mid], abs=bound)
        if score < bound:  # a memory holding only near-zero-IDF terms: its exact BM25
            assert score == unbounded[mid]
        if mid != expected[place][0]:  # only a near tie moves
            assert expected[place][1] == pytest.approx(unbounded[mid], abs=2 * bound)


def test_memories_holding_only_a_near_zero_idf_term_are_ranked_among_the_newest(
    store: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bounded(monkeypatch, window=8)
    assert sorted(mid for mid, _ in store.keyword_top("note", Filters(), 20)) == list(range(53, 61))
    bobs = store.keyword_top("note", Filters(user="bob"), 20)
    assert sorted(mid for mid, _ in bobs) == list(range(46, 61, 2))  # bob's newest 8
    assert store.keyword_top("note", Filters(), 20, among=[1, 2, 55]) == [
        pair for pair in store.keyword_top("note", Filters(), 20) if pair[0] == 55
    ]
    item3 = [mid for mid, _ in store.keyword_top("item3", Filters(), 20)]  # its own text, and turns after it
    top = [mid for mid, _ in store.keyword_top("note item3", Filters(), 10)]
    assert top[: len(item3)] == item3 and set(top[len(item3) :]) <= set(range(53, 61))  # then the window


def _exact_coverage(conn: sqlite3.Connection, query: str, ids: list[int]) -> tuple[dict[int, float], float]:
    """Each memory's share of the query's IDF weight, as it was computed before the bounds: every
    holder of every term read; and the whole weight."""
    total = fts.row_count(conn)
    weights, holders = [], []
    for term in term_queries(query):
        rows = {
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (f"terms : {term}",)
            )
        }
        weights.append(math.log(1 + (total - len(rows) + 0.5) / (len(rows) + 0.5)))
        holders.append(rows)
    whole = sum(weights)
    shares = {
        mid: sum(w for w, held in zip(weights, holders, strict=True) if mid in held) / (whole or 1.0)
        for mid in ids
    }
    return shares, whole


@pytest.mark.parametrize("lookups", ["walk", "seek"])
@pytest.mark.parametrize(
    "query", ["note", "alpha note", "theta iota kappa", "item3 note lambda", "zzz alpha", "the of"]
)
def test_coverage_by_bounds_gives_the_exact_shares_capped(
    store: LocalBackend, conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch, query: str, lookups: str
) -> None:
    monkeypatch.setattr(fts, "SEEK_FROM", 0 if lookups == "seek" else 10**12)
    monkeypatch.setattr(fts, "SEEK_POSTINGS", 0)
    ids = [*range(60, 0, -1), 999]  # any order, and an id the store does not hold
    exact, whole = _exact_coverage(conn, query, ids)
    for enough in {0.0, 0.1, 0.2, 0.35, 0.5, 1.0, *exact.values()}:  # also exactly at a memory's share
        found = store.keyword_coverage(query, ids, enough)
        assert list(found.shares) == ids  # in the order given
        assert found.shares == {mid: pytest.approx(min(exact[mid], enough), abs=1e-12) for mid in ids}
        assert found.weight == pytest.approx(whole)


def test_counts_are_counted_again_after_every_kind_of_write(
    store: LocalBackend, conn: sqlite3.Connection
) -> None:
    counts = store.records.keyword_counts  # the cache under test
    stamps = [counts.stamp(store.records.conn)]

    def exact(query: str) -> list[tuple[int, float]]:
        return fts.search(conn, " OR ".join(term_queries(query)), Filters(), 10)

    assert store.keyword_top("kappa", Filters(), 10) == exact("kappa")
    store.add_many([NewMemory(text=f"kappa kappa {i}") for i in range(5)], _vectors(5), FAKE_MODEL)
    stamps.append(counts.stamp(store.records.conn))
    assert store.keyword_top("kappa", Filters(), 10) == exact("kappa")
    store.edit(61, "lambda only now", _vectors(1)[0], FAKE_MODEL)
    stamps.append(counts.stamp(store.records.conn))
    assert store.keyword_top("kappa", Filters(), 10) == exact("kappa")
    store.forget([62, 63])
    stamps.append(counts.stamp(store.records.conn))
    assert store.keyword_top("kappa lambda", Filters(), 10) == exact("kappa lambda")
    assert len(set(stamps)) == len(stamps)


def _vectors(count: int) -> np.ndarray:
    return np.vstack([fake_vector(f"v{i}") for i in range(count)])
