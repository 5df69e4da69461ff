"""Every public method of ``Memories`` given a wrong type or a bad value: a wrong type is a
TypeError naming the argument, a bad value of the right type an InvalidInputError naming it, and the
store is left as it was (nothing added, embedded, forgotten or re-indexed, no model loaded).
``Filters`` and ``NewMemory`` are checked and cleaned however they are made. The argument is named
as the library names it (``min_score``, never the command line's ``--min-score``), and an
InvalidInputError carries it as its ``parameter``.

Each of these is refused by ``remem.core.arguments`` (``remem.checks``, ``Filters``, ``NewMemory``)
before the call reaches the back-end, so one local store runs them; the refusals a back-end takes
part in stay in tests/contract/test_argument_types_contract.py, run on every back-end."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import remem
from remem import Filters, Memories, NewMemory
from remem.errors import InvalidInputError, MemoryNotFoundError
from remem.testing import FakeEmbedder
from remem.types import memory_record

Call = Callable[[Memories], Any]
#: (id, call, the exception class it must raise, the argument its message must name).
BAD: list[tuple[str, Call, type[Exception], str]] = [
    # add
    ("add-text-none", lambda m: m.add(None), TypeError, "text"),
    ("add-text-bytes", lambda m: m.add(b"bytes"), TypeError, "text"),
    ("add-text-blank", lambda m: m.add("   "), InvalidInputError, "text"),
    ("add-user-int", lambda m: m.add("new", user=123), TypeError, "user"),
    ("add-user-blank", lambda m: m.add("new", user="  "), InvalidInputError, "user"),
    ("add-conversation-int", lambda m: m.add("new", conversation=5), TypeError, "conversation"),
    ("add-role-list", lambda m: m.add("new", role=["user"]), TypeError, "role"),
    ("add-tags-one-string", lambda m: m.add("new", tags="ops"), TypeError, "tags"),
    ("add-tags-ints", lambda m: m.add("new", tags=[1]), TypeError, "tags"),
    ("add-tags-empty-tag", lambda m: m.add("new", tags=["ok", " "]), InvalidInputError, "tag"),
    ("add-meta-pairs", lambda m: m.add("new", meta=[("k", "v")]), TypeError, "meta"),
    ("add-meta-int-value", lambda m: m.add("new", meta={"k": 1}), TypeError, "meta"),
    ("add-meta-int-key", lambda m: m.add("new", meta={1: "v"}), TypeError, "meta"),
    ("add-meta-blank-key", lambda m: m.add("new", meta={" ": "v"}), InvalidInputError, "meta"),
    ("add-created-at-int", lambda m: m.add("new", created_at=5), TypeError, "created_at"),
    ("add-created-at-empty", lambda m: m.add("new", created_at=""), InvalidInputError, "created_at"),
    ("add-embed-str", lambda m: m.add("new", embed="no"), TypeError, "embed"),
    ("add-progress-int", lambda m: m.add("new", progress=5), TypeError, "progress"),
    # add_many, add_entries, import_
    ("add-many-a-string", lambda m: m.add_many("abc"), TypeError, "memories"),
    ("add-many-id-past-bigint", lambda m: m.add_many([NewMemory("new", id=2**63)]), InvalidInputError, "id"),
    ("add-many-id-bool", lambda m: m.add_many([NewMemory("new", id=True)]), TypeError, "id"),
    ("add-many-id-zero", lambda m: m.add_many([NewMemory("new", id=0)]), InvalidInputError, "id"),
    ("add-many-progress", lambda m: m.add_many(["new"], progress="bar"), TypeError, "progress"),
    ("import-one-record", lambda m: m.import_({"text": "new"}), TypeError, "records"),
    ("import-a-string", lambda m: m.import_('{"text": "new"}'), TypeError, "records"),
    ("import-skip-str", lambda m: m.import_([], skip_invalid="yes"), TypeError, "skip_invalid"),
    # search
    ("search-query-none", lambda m: m.search(None), TypeError, "query"),
    ("search-k-str", lambda m: m.search("memo", k="3"), TypeError, "k"),
    ("search-k-bool", lambda m: m.search("memo", k=True), TypeError, "k"),
    ("search-k-float", lambda m: m.search("memo", k=2.0), TypeError, "k"),
    ("search-k-zero", lambda m: m.search("memo", k=0), InvalidInputError, "k"),
    ("search-mode-int", lambda m: m.search("memo", mode=3), TypeError, "mode"),
    ("search-mode-unknown", lambda m: m.search("memo", mode="fuzzy"), InvalidInputError, "mode"),
    ("search-min-score-str", lambda m: m.search("memo", min_score="0.5"), TypeError, "min_score"),
    ("search-min-score-bool", lambda m: m.search("memo", min_score=True), TypeError, "min_score"),
    ("search-min-score-2", lambda m: m.search("memo", min_score=2), InvalidInputError, "min_score"),
    ("search-min-score-negative", lambda m: m.search("memo", min_score=-0.3, mode="keyword"),
     InvalidInputError, "min_score"),
    ("search-where-dict", lambda m: m.search("memo", where={"user": "alice"}), TypeError, "where"),
    ("search-dates-str", lambda m: m.search("memo", dates="no"), TypeError, "dates"),
    ("search-since-int", lambda m: m.search("memo", since=5), TypeError, "since"),
    ("search-until-list", lambda m: m.search("memo", until=[]), TypeError, "until"),
    ("search-since-empty", lambda m: m.search("memo", since=""), InvalidInputError, "since"),
    ("search-user-int", lambda m: m.search("memo", user=123), TypeError, "user"),
    ("search-tags-ints", lambda m: m.search("memo", tags=[1]), TypeError, "tags"),
    ("search-meta-list", lambda m: m.search("memo", meta=["k=v"]), TypeError, "meta"),
    # list, get, get_many, iter, export
    ("list-limit-str", lambda m: m.list(limit="5"), TypeError, "limit"),
    ("list-limit-negative", lambda m: m.list(limit=-1), InvalidInputError, "limit"),
    ("list-where-dict", lambda m: m.list(where={"user": "alice"}), TypeError, "where"),
    ("list-role-int", lambda m: m.list(role=5), TypeError, "role"),
    ("get-true", lambda m: m.get(True), TypeError, "memory_id"),
    ("get-str", lambda m: m.get("1"), TypeError, "memory_id"),
    ("get-float", lambda m: m.get(1.0), TypeError, "memory_id"),
    ("get-many-str", lambda m: m.get_many("12"), TypeError, "memory_ids"),
    ("get-many-bools", lambda m: m.get_many([True]), TypeError, "memory_ids"),
    ("get-many-int", lambda m: m.get_many(1), TypeError, "memory_ids"),
    ("iter-where-str", lambda m: m.iter(where="user=alice"), TypeError, "where"),
    ("export-vectors-str", lambda m: m.export(with_vectors="yes"), TypeError, "with_vectors"),
    ("export-user-int", lambda m: m.export(user=5), TypeError, "user"),
    # context
    ("context-query-int", lambda m: m.context(5), TypeError, "query"),
    ("context-recent-str", lambda m: m.context("memo", recent="3"), TypeError, "recent"),
    ("context-similar-none", lambda m: m.context("memo", similar=None), TypeError, "similar"),
    ("context-merge-int", lambda m: m.context("memo", merge_as=1), TypeError, "merge_as"),
    ("context-merge-unknown", lambda m: m.context("memo", merge_as="shuffle"), InvalidInputError, "merge"),
    ("context-min-score-str", lambda m: m.context(None, min_score="0.5"), TypeError, "min_score"),
    ("context-dates-int", lambda m: m.context("memo", dates=1), TypeError, "dates"),
    # edit, forget
    ("edit-id-str", lambda m: m.edit("1", "changed"), TypeError, "memory_id"),
    ("edit-id-true", lambda m: m.edit(True, "changed"), TypeError, "memory_id"),
    ("edit-nothing", lambda m: m.edit(1, None), InvalidInputError, "text"),
    ("forget-ids-str", lambda m: m.forget("12"), TypeError, "ids"),
    ("forget-ids-bool", lambda m: m.forget([True]), TypeError, "ids"),
    ("forget-ids-float", lambda m: m.forget([1.0]), TypeError, "ids"),
    ("forget-ids-int", lambda m: m.forget(1), TypeError, "ids"),
    ("forget-where-dict", lambda m: m.forget(where={"tags": ["ops"]}), TypeError, "where"),
    ("forget-dry-run-str", lambda m: m.forget([1], dry_run="no"), TypeError, "dry_run"),
    ("forget-since-empty", lambda m: m.forget(where=Filters(since="")), InvalidInputError, "since"),
    # maintaining
    ("embed-pending-limit-str", lambda m: m.embed_pending(limit="3"), TypeError, "limit"),
    ("embed-pending-limit-negative", lambda m: m.embed_pending(limit=-1), InvalidInputError, "limit"),
    ("embed-pending-progress", lambda m: m.embed_pending(progress=5), TypeError, "progress"),
    ("reindex-index-int", lambda m: m.reindex(index=3), TypeError, "index"),
    ("reindex-index-unknown", lambda m: m.reindex(index="ivf"), InvalidInputError, "index"),
    ("reindex-hnsw-str", lambda m: m.reindex(hnsw="abc"), TypeError, "hnsw"),
    ("reindex-hnsw-two", lambda m: m.reindex(hnsw=(16, 64)), TypeError, "hnsw"),
    ("reindex-hnsw-strs", lambda m: m.reindex(hnsw=("16", None, None)), TypeError, "hnsw"),
    ("reindex-hnsw-m-one", lambda m: m.reindex(hnsw=(1, None, None)), InvalidInputError, "hnsw"),
    ("reindex-model-int", lambda m: m.reindex(model=5), TypeError, "model"),
    ("reindex-force-str", lambda m: m.reindex(force="yes"), TypeError, "force"),
    ("doctor-repair-str", lambda m: m.doctor(repair="yes"), TypeError, "repair"),
    # Filters and NewMemory made directly
    ("filters-tags-one-string", lambda m: m.list(where=Filters(tags="ops")), TypeError, "tags"),
    ("filters-user-int", lambda m: m.list(where=Filters(user=5)), TypeError, "user"),
    ("filters-user-blank", lambda m: m.list(where=Filters(user=" ")), InvalidInputError, "user"),
    ("filters-since-empty", lambda m: m.list(where=Filters(since="")), InvalidInputError, "since"),
    ("filters-since-datetime", lambda m: m.list(where=Filters(since=datetime.now())), TypeError, "since"),
    ("filters-since-after-until", lambda m: Filters(since="2h", until="1d"), InvalidInputError, "since"),
    ("filters-meta-single", lambda m: m.list(where=Filters(meta=(("k",),))), TypeError, "meta"),
    ("filters-of-since-int", lambda m: m.list(where=Filters.of(since=5)), TypeError, "since"),
    ("filters-of-meta-pairs", lambda m: m.list(where=Filters.of(meta=[("k", "v")])), TypeError, "meta"),
    ("new-memory-tags-string", lambda m: m.add_many([NewMemory("new", tags="ops")]), TypeError, "tags"),
    ("new-memory-meta-int", lambda m: m.add_many([NewMemory("new", meta={"k": 1})]), TypeError, "meta"),
    ("new-memory-user-blank", lambda m: m.add_many([NewMemory("new", user="")]), InvalidInputError, "user"),
    ("new-memory-text-int", lambda m: m.add_many([NewMemory(5)]), TypeError, "text"),
    ("new-memory-updated-int", lambda m: m.add_many([NewMemory("x", updated_at=1)]), TypeError, "updated_at"),
]  # fmt: skip


def _state(memories: Memories) -> tuple[Any, ...]:
    """Everything a call could have changed: every memory, what waits for vectors, the model."""
    return [memory_record(m) for m in memories.iter()], memories.pending_count(), memories.model


def _names(message: str, argument: str) -> bool:
    """The message names ``argument`` in the library's words, and no command-line option."""
    return argument in message and not re.search(r"(?<![\w-])--[a-z]", message)


@pytest.fixture
def memories(tmp_path: Path) -> Iterator[Memories]:
    """A local store holding a memory tagged o, p, s (alice's), one tagged ops and one waiting for
    its vectors; served by a fake embedder that counts its calls."""
    with remem.open(tmp_path / "store", embedder=FakeEmbedder(), models_dir=tmp_path / "models") as opened:
        opened.add("a memo tagged o p s", user="alice", tags=["o", "p", "s"])
        opened.add("a memo tagged ops", tags=["ops"])
        opened.add("a memo waiting for its vector", embed=False)
        yield opened


@pytest.mark.parametrize(("call", "error", "argument"), [row[1:] for row in BAD], ids=[row[0] for row in BAD])
def test_a_bad_argument_is_refused_by_name_and_changes_nothing(
    memories: Memories, call: Call, error: type[Exception], argument: str
) -> None:
    embedder = memories.embedder()
    assert isinstance(embedder, FakeEmbedder)
    before, calls = _state(memories), embedder.calls
    with pytest.raises(Exception) as raised:  # the exact class is asserted below
        result = call(memories)
        if hasattr(result, "__next__"):
            next(result)
    assert type(raised.value) is error or (error is InvalidInputError and isinstance(raised.value, error)), (
        f"{type(raised.value).__name__}: {raised.value}"
    )
    assert _names(str(raised.value), argument), str(raised.value)
    assert "\n" not in str(raised.value)
    if isinstance(raised.value, InvalidInputError) and not isinstance(raised.value, MemoryNotFoundError):
        parameter, message = raised.value.parameter, str(raised.value)
        assert parameter is not None and parameter in message, parameter
        assert argument in parameter or message.startswith(f"{parameter}["), parameter  # or an item of it
    assert _state(memories) == before
    assert embedder.calls == calls
