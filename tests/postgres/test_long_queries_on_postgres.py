"""A long query on PostgreSQL: its terms' counts (for IDF) in one statement, and at most
``MAX_QUERY_TERMS`` terms searched, however many the text holds (a 10,000-character CJK text is
~10,000 bigrams: one statement each took 15-24 s on a 2,000-memory store)."""

from __future__ import annotations

import pytest

import remem
from helpers import STATEMENT_TRIES, fewest_statements
from remem.testing import FakeEmbedder

#: 10,000 CJK characters, every bigram distinct.
LONG_CJK = "".join(chr(0x4E00 + n) for n in range(10_000))


@pytest.mark.parametrize("scoped", [False, True])
def test_a_long_query_costs_a_few_statements(postgres_url: str, scoped: bool) -> None:
    with remem.open(postgres_url, embedder=FakeEmbedder()) as memories:
        held = memories.add(f"holds {LONG_CJK[:2]} and {LONG_CJK[40:42]}", user="alice")
        memories.add(f"holds {LONG_CJK[5000:5002]}", user="alice")  # a bigram past the cap
        scope = remem.Filters.of(user="alice", shared=True) if scoped else None
        for mode in ("keyword", "hybrid"):  # the hybrid search the fewest of tries (another
            tries = 1 if mode == "keyword" else STATEMENT_TRIES  # transaction may end between them)
            found, statements = fewest_statements(
                lambda mode=mode: memories.search(LONG_CJK, k=5, mode=mode, scope=scope), tries
            )
            assert [hit.memory.id for hit in found if hit.keyword is not None] == [held.id]
            assert len(statements) <= 20, (mode, len(statements))
            counting = [sql for sql in statements if "count(*)" in sql and "@@" in sql]
            # every term's holders in one statement, kept while the store is unchanged
            assert len(counting) == (1 if mode == "keyword" else 0), counting
