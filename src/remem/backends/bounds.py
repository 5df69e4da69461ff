"""What bounds a keyword search of a big store, the same on both back-ends: near-zero-IDF terms.

BM25 scores every memory its query selects, so a term that nearly every memory holds makes every
search holding it score the whole store (a word in each of 1,000,000 memories: 650 ms locally),
while it adds next to nothing to any score: at most (k1 + 1) × its IDF = 2.2 × IDF, less than 2.2e-5
for an IDF of at most ``NEAR_ZERO_IDF``. Such a term held by more than ``COMMON_HOLDERS`` memories is
left out of the ranking query when the query has other terms (scores change by less than 2.2e-5 a
term: only the order of memories that close); memories holding only such terms come after the
others, ranked by BM25 among the ``WINDOW`` newest of them (by id, after the filters).

Which terms are that rare: SQLite's FTS5 gives every term that at least half the memories hold an
IDF of 1e-6 (it clamps ln((N - n + 0.5) / (n + 0.5)) there); PostgreSQL's BM25 (Lucene's
ln(1 + (N - n + 0.5) / (n + 0.5)), ≈ 0.5 / N for a term every memory holds) only a term (nearly)
every memory of a store of 50,000 or more holds.
"""

from __future__ import annotations

#: An IDF at most this is near zero: the term adds less than 2.2e-5 to any BM25 score. FTS5's 1e-6
#: for a term half the memories hold is; PostgreSQL's for a term every memory holds is 2.5e-6 at
#: 200,000 memories (1e-6 left it out only from 500,000 on).
NEAR_ZERO_IDF = 1e-5
#: A near-zero-IDF term is left out of the ranking query only when more than this many memories
#: hold it: scoring them costs ≥ 14 ms (0.7 µs each, FTS5 at 1M), and no store below 20,000 memories
#: (SciFact's 5,183, LoCoMo's 5,882, the memory-shaped set's 63) is ranked any differently.
COMMON_HOLDERS = 20_000
#: Memories holding only near-zero-IDF terms are ranked among the newest this many of them. Locally
#: each costs ≈5.5 µs (its instances from ``highlight()``, ≈2.3 µs; its length; BM25 in Python): 11.4
#: ms for 2,000 of the 1M store's "note", so 1,000 (≈6 ms).
WINDOW = 1_000


def near_zero(idf: float, holders: int) -> bool:
    """True for a term of IDF ``idf`` held by ``holders`` memories that a search leaves out of its
    ranking query (see the module docstring)."""
    return idf <= NEAR_ZERO_IDF and holders > COMMON_HOLDERS
