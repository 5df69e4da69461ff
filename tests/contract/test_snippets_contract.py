"""A search hit on a long memory shows which part matched (issue 26 #5): the core picks the snippet
from the text both back-ends return, so every back-end gives the same one, with offsets into the text."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from remem.core.memories import Memories
from remem.core.search.snippets import LONG_TEXT, SNIPPET_CHARS
from remem.embedders.catalog import ModelCatalog
from remem.testing import FakeEmbedder
from remem.types import Snippet

if TYPE_CHECKING:
    from remem.backends.base import Backend

_WORDS = ["alpha", "beta", "gamma", "delta", "report", "status", "queue", "build", "plan"]
#: The matching sentence, near the end of the long text.
_NEEDLE = "the zanzibar vault key rotates on fridays"


#: Long enough that printing it whole is no answer; PostgreSQL cannot yet index the terms of a 2 MB
#: text of ordinary words (its tsvector input is limited to 1 MB), so the 2 MB case runs on the local
#: store in tests/cli and tests/mcp.
LONG = 600_000


def _long_text(size: int = LONG) -> tuple[str, int]:
    """About ``size`` characters of filler, "vault" alone near the start, and ``_NEEDLE`` near the
    end, followed by a little more filler; also where the needle starts."""
    chance = random.Random(26)
    filler = " ".join(chance.choice(_WORDS) for _ in range(size // 6))
    text = f"{filler[:1_000]} vault {filler[1_000 : size - 2_000]} {_NEEDLE} {filler[:1_500]}"
    return text, text.index(_NEEDLE)


@pytest.fixture
def memories(backend: Backend, tmp_path: Path) -> Memories:
    found = Memories(backend, ModelCatalog(tmp_path / "models"), embedder=FakeEmbedder())
    found.max_text_chars = 1_000_000
    return found


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_word_near_the_end_of_a_long_memory_gives_a_snippet_around_it(
    memories: Memories, mode: str
) -> None:
    text, where = _long_text()
    long_id = memories.add(text).id
    short_id = memories.add("a short note on the zanzibar vault").id
    hits = {hit.memory.id: hit for hit in memories.search("zanzibar vault rotation", mode=mode, k=5)}
    snippet = hits[long_id].snippet
    assert snippet is not None
    assert hits[long_id].memory.text[snippet.start : snippet.end] == snippet.text
    # around the words, not the early "vault"
    assert snippet.start <= where and where + len(_NEEDLE) <= snippet.end
    assert len(snippet.text) <= SNIPPET_CHARS
    assert hits[short_id].snippet is None  # short enough to show whole


def test_a_long_memory_found_without_its_words_shows_its_start(memories: Memories) -> None:
    text = " ".join(["deploy the payments service to staging"] * 20)
    assert len(text) > LONG_TEXT
    found_id = memories.add(text).id
    (hit,) = memories.search("payments deploy staging service", mode="vector", k=1)
    assert hit.memory.id == found_id and hit.snippet is not None
    assert hit.snippet.text.startswith("deploy the payments")
    (hit,) = memories.search("qqqq", mode="vector", k=1)  # a vector hit holding none of the terms
    assert hit.snippet == Snippet(text[: hit.snippet.end], 0, hit.snippet.end)
    assert 0 < hit.snippet.end <= SNIPPET_CHARS and text[hit.snippet.end] == " "  # ends between words
