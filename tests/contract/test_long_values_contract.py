"""Long values are kept on every back-end as the local store keeps them: a pasted token longer than
PostgreSQL indexes a word, names (user, conversation, role, tags) of thousands of characters, and a
memory with more distinct words than one tsvector holds — stored whole, found by keyword, filtered
by those names, exported and imported back unchanged."""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from remem.core.memories import Memories
from remem.embedders.catalog import ModelCatalog
from remem.testing import FakeEmbedder

if TYPE_CHECKING:
    from remem.backends.base import Backend

_RANDOM = random.Random(24)


def _token(length: int, alphabet: str = string.ascii_lowercase + string.digits) -> str:
    """Random letters and digits: one analyzer term, and nothing a server could compress."""
    return "".join(_RANDOM.choices(alphabet, k=length))


#: A 3,000-byte pasted token; 1,100 Cyrillic letters (2,200 bytes: over the limit in bytes, not in
#: characters); names of 3,000 characters.
TOKEN = "k" + _token(2999)
CYRILLIC = _token(1100, "абвгдежзийклмнопрстуфхцчшщэюя")
USER, CONVERSATION, ROLE, TAG = (_token(3000) for _ in range(4))


def _memories(backend: Backend, place: Path) -> Memories:
    return Memories(backend, ModelCatalog(place / "models"), embedder=FakeEmbedder())


@pytest.fixture
def memories(backend: Backend, tmp_path: Path) -> Memories:
    return _memories(backend, tmp_path)


def _keyword_ids(memories: Memories, query: str, **filters: object) -> list[int]:
    return [hit.memory.id for hit in memories.search(query, mode="keyword", k=10, **filters)]


def test_a_word_too_long_to_index_keeps_its_memory_whole_and_findable(memories: Memories) -> None:
    text = f"Pasted the deploy token {TOKEN} into the vault; the Cyrillic blob {CYRILLIC} came along"
    first = memories.add(text).id
    other = memories.add("The vault rotates every deploy token weekly").id
    assert memories.get(first).text == text
    assert _keyword_ids(memories, "pasted cyrillic blob") == [first]
    assert set(_keyword_ids(memories, "vault token")) == {first, other}
    assert _keyword_ids(memories, TOKEN) == [first]
    assert _keyword_ids(memories, CYRILLIC.upper()) == [first]
    assert _keyword_ids(memories, "k" + _token(2999)) == []  # another long word finds nothing


def test_long_names_are_stored_and_filter_every_read(memories: Memories) -> None:
    names = {"user": USER, "conversation": CONVERSATION, "role": ROLE}
    mine = memories.add("Rotated the staging keys", **names, tags=[TAG, "ops"]).id
    theirs = memories.add("Rotated the staging keys", user="bob", tags=["ops"]).id
    stored = memories.get(mine)
    assert (stored.user, stored.conversation, stored.role, stored.tags) == (
        USER,
        CONVERSATION,
        ROLE,
        (TAG, "ops"),
    )
    for name, value in [*names.items(), ("tags", [TAG])]:
        assert [m.id for m in memories.list(**{name: value})] == [mine], name
        assert _keyword_ids(memories, "staging keys", **{name: value}) == [mine], name
        hits = memories.search("staging keys", mode="vector", **{name: value})
        assert [hit.memory.id for hit in hits] == [mine], name
    assert {m.id for m in memories.list(tags=["ops"])} == {mine, theirs}
    assert memories.list(user=USER[:-1] + "!") == []
    again = memories.add("Rotated the staging keys", **names, tags=[TAG])
    assert (again.id, again.duplicate) == (mine, True)
    assert not memories.add("Rotated the staging keys", user=USER + "x", conversation=CONVERSATION).duplicate
    assert _keyword_ids(memories, TAG) == [mine]  # a memory's names are keyword terms too


def test_a_memory_with_more_words_than_a_tsvector_holds_is_kept_whole(memories: Memories) -> None:
    words = [_token(8, string.ascii_lowercase) for _ in range(120_000)]  # about 1.4 MB as a tsvector
    text = " ".join(words)
    memories.max_text_chars = len(text)
    stored = memories.add(text).id
    assert memories.get(stored).text == text
    assert _keyword_ids(memories, words[0]) == [stored]


def test_long_values_survive_export_and_import(
    open_backend: Callable[..., Backend], memories: Memories, tmp_path: Path
) -> None:
    memories.add(f"token {TOKEN} and {CYRILLIC}", tags=[TAG])
    memories.add("a turn of a long conversation", user=USER, conversation=CONVERSATION, role=ROLE)
    exported = list(memories.export(with_vectors=True))
    copy = _memories(open_backend("copy"), tmp_path)
    result = copy.import_(json.loads(json.dumps(exported)))
    assert (len(result.added), result.skipped) == (2, [])
    assert list(copy.export(with_vectors=True)) == exported
    assert [m.text for m in copy.list(conversation=CONVERSATION)] == ["a turn of a long conversation"]
    assert _keyword_ids(copy, TOKEN) == _keyword_ids(memories, TOKEN) != []
