"""A caller's own mistakes on a local store are told as what they are, in one line — never as "the
database … is damaged": a write while its own export is unfinished, reading on after close."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import remem
from remem.errors import StoreClosedError, StoreCorruptError, UsageError
from remem.testing import FakeEmbedder


@pytest.fixture
def memories(tmp_path: Path) -> Iterator[remem.Memories]:
    with remem.open(tmp_path / "s", embedder=FakeEmbedder()) as opened:
        for i in range(5):
            opened.add(f"memory number {i}")
        yield opened


WRITES = {
    "add": lambda m: m.add("added during the export"),
    "add_many": lambda m: m.add_many(["one during the export", "two during the export"]),
    "edit": lambda m: m.edit(2, "edited during the export"),
    "forget": lambda m: m.forget([3]),
    "waiting add": lambda m: m.add("stored without vectors", embed=False),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_while_an_export_is_unfinished_says_so_and_changes_nothing(
    memories: remem.Memories, write: str
) -> None:
    before = [m.text for m in memories.iter()]
    export = memories.export()
    next(export)
    with pytest.raises(UsageError, match="while an export of this store is still being read") as caught:
        WRITES[write](memories)
    assert not isinstance(caught.value, StoreCorruptError)
    assert len(list(export)) == 4  # the export reads on, unaffected
    assert [m.text for m in memories.iter()] == before
    WRITES[write](memories)  # once the export is finished, the write runs
    assert memories.doctor().ok


def test_an_unfinished_export_on_one_thread_does_not_stop_writes_on_another(memories: remem.Memories) -> None:
    export = memories.export()
    first = next(export)
    added: list[int] = []
    writer = threading.Thread(target=lambda: added.append(memories.add("added by another thread").id))
    writer.start()
    writer.join()
    assert [first["id"], *(r["id"] for r in export)] == [1, 2, 3, 4, 5]  # its snapshot: without it
    assert memories.get(added[0]).text == "added by another thread"


def test_reading_on_after_close_says_it_is_closed(memories: remem.Memories) -> None:
    memories.add_many([f"one of many memories, number {i}" for i in range(1200)])  # > one export chunk
    export, listing = memories.export(), memories.iter()
    next(export), next(listing)
    memories.close()
    for unfinished in (export, listing):
        with pytest.raises(StoreClosedError, match=r"^this Memories is closed \(the store at "):
            list(unfinished)
    with pytest.raises(StoreClosedError):
        memories.backend  # noqa: B018 - the property is what is tested


def test_the_back_end_itself_says_it_is_closed(tmp_path: Path) -> None:
    from remem.backends.local import LocalBackend

    backend = LocalBackend.open(tmp_path / "s", create=True)
    backend.close()
    for call in (lambda: backend.model, lambda: backend.newest(remem.Filters(), 5), backend.stats):
        with pytest.raises(StoreClosedError, match="this Memories is closed"):
            call()
    backend.close()
