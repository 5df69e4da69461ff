"""A search through the public API on PostgreSQL takes the round trips its pool takes
(tests/contract/test_search_pool_contract.py: 6 for a hybrid search) and no more: the store's model
is read in the search's own snapshot (from the snapshot's cache while the store is unchanged), not
in a transaction of its own before it (3 more round trips a search: BEGIN, the read, COMMIT)."""

from __future__ import annotations

import pytest

import remem
from helpers import fewest_statements
from remem.testing import FakeEmbedder

#: BEGIN (with the snapshot's stamp), the keyword lane's top, the vector lane's top, the pooled
#: memories' facts, the hits' memories, COMMIT; a vector search: BEGIN, its top, the hits, COMMIT; a
#: keyword search: BEGIN, its top, the texts (word order), the hits, COMMIT.
ROUND_TRIPS = {"hybrid": 6, "vector": 4, "keyword": 5}


@pytest.mark.parametrize("mode", list(ROUND_TRIPS))
def test_a_search_reads_the_model_in_its_own_snapshot(postgres_url: str, mode: str) -> None:
    with remem.open(postgres_url, embedder=FakeEmbedder()) as memories:
        wanted = memories.add("We never deploy on Fridays: nobody is on call.").id
        memories.add("Ordered pizza for the team lunch.")
        assert memories.search("why no deploys on Fridays", mode=mode)  # the words' statistics counted
        found, statements = fewest_statements(lambda: memories.search("why no deploys on Fridays", mode=mode))
    assert found[0].memory.id == wanted
    assert len(statements) == ROUND_TRIPS[mode], statements
