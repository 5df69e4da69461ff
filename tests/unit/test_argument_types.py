"""Arguments of any type, at every entry point: ``remem.open``'s are checked before anything is
opened, and whatever a Python caller passes to ``Memories``, ``Filters`` or ``NewMemory`` comes back
as a result, a TypeError or an InvalidInputError naming the argument — never another exception, and
never a change to the store when it is refused. (test_argument_checks.py holds the table of the
exact classes; tests/contract/test_argument_types_contract.py those a back-end takes part in.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import remem
from remem import Filters, Memories, NewMemory
from remem.errors import InvalidInputError
from remem.testing import FakeEmbedder
from remem.types import memory_record

#: Values of every kind a caller might pass by mistake (or on purpose).
ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=6),
    st.sampled_from(["1d", "2026-01-01", " alice ", "hybrid", "append", "0.5", ""]),
    st.binary(max_size=3),
    st.datetimes(),
    st.lists(st.one_of(st.integers(), st.text(max_size=3), st.booleans()), max_size=3),
    st.tuples(st.text(max_size=3), st.text(max_size=3)),
    st.dictionaries(st.text(max_size=3), st.one_of(st.integers(), st.text(max_size=3)), max_size=2),
)

#: (argument named in an error, a call giving it ``value``).
CALLS: list[tuple[str, Callable[[Memories, Any], Any]]] = [
    *((name, lambda m, v, n=name: m.add("hypothesis", **{n: v}))
      for name in ("user", "conversation", "role", "tags", "meta", "created_at", "embed")),
    ("text", lambda m, v: m.add(v)),
    *((name, lambda m, v, n=name: m.search("memo", **{n: v}))
      for name in ("k", "mode", "min_score", "where", "dates", "since", "until", "user", "tags", "meta")),
    ("query", lambda m, v: m.search(v)),
    ("limit", lambda m, v: m.list(limit=v)),
    ("memory_id", lambda m, v: m.get(v)),
    ("memory_ids", lambda m, v: m.get_many(v)),
    ("ids", lambda m, v: m.forget(v, dry_run=True)),
    ("query", lambda m, v: m.context(v)),
    ("merge_as", lambda m, v: m.context("memo", merge_as=v)),
    ("recent", lambda m, v: m.context(None, recent=v)),
    ("limit", lambda m, v: m.embed_pending(limit=v)),
    ("memories", lambda m, v: m.add_many(v)),
    ("memories", lambda m, v: m.add_many([v])),
    *((name, lambda m, v, n=name: m.list(where=Filters(**{n: v})))
      for name in ("user", "conversation", "role", "tags", "meta", "since", "until")),
    *((name, lambda m, v, n=name: m.add_many([NewMemory("hypothesis", **{n: v})]))
      for name in ("user", "tags", "meta", "created_at", "updated_at", "id")),
]  # fmt: skip


@pytest.fixture
def memories(tmp_path: Path) -> Iterator[Memories]:
    with remem.open(tmp_path / "store", embedder=FakeEmbedder(), models_dir=tmp_path / "models") as opened:
        opened.add("a memo for alice", user="alice", tags=["ops"])
        yield opened


def _names(message: str, argument: str) -> bool:
    """Whether the message names the argument (``--min-score`` for min_score, ``--tag`` for tags,
    "no memory 7" for memory_id)."""
    stem = argument.removesuffix("s").removesuffix("_id").replace("_", "-")
    return argument in message or stem in message


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(range(len(CALLS))), ANYTHING)
def test_any_value_is_taken_or_refused_by_name(memories: Memories, which: int, value: Any) -> None:
    argument, call = CALLS[which]
    before = [memory_record(m) for m in memories.iter()], memories.pending_count()
    try:
        call(memories, value)
    except (TypeError, InvalidInputError) as exc:
        assert _names(str(exc), argument), f"{argument}={value!r}: {exc}"
        assert "\n" not in str(exc)
        assert ([memory_record(m) for m in memories.iter()], memories.pending_count()) == before


@pytest.mark.parametrize(
    ("arguments", "error", "named"),
    [
        ({"store": 5}, TypeError, "store"),
        ({"store": ""}, InvalidInputError, "store"),
        ({"store": "  "}, InvalidInputError, "store"),
        ({"create": "no"}, TypeError, "create"),
        ({"model_dir": 3}, TypeError, "model_dir"),
        ({"models_dir": ["a"]}, TypeError, "models_dir"),
        ({"embedder": "fake"}, TypeError, "embedder"),
        ({"environ": [("REMEM_HOME", "x")]}, TypeError, "environ"),
    ],
)
def test_open_refuses_a_bad_argument_before_opening_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arguments: dict[str, Any], error: type, named: str
) -> None:
    monkeypatch.chdir(tmp_path)
    given_ = {"store": tmp_path / "store", **arguments}
    with pytest.raises(error) as raised:
        remem.open(**given_)
    assert type(raised.value) is error and named in str(raised.value)
    assert list(tmp_path.iterdir()) == [], "nothing may be created"


def test_numpy_numbers_are_numbers(memories: Memories) -> None:
    import numpy as np

    (memory,) = memories.list()
    assert memories.get(np.int64(memory.id)).id == memory.id
    assert list(memories.get_many(np.array([memory.id, 99]))) == [memory.id]
    assert [m.id for m in memories.forget([np.int32(memory.id)], dry_run=True).forgotten] == [memory.id]
    assert len(memories.search("memo", k=np.int64(1), min_score=np.float32(0.0), mode="vector")) == 1
    with pytest.raises(TypeError, match="memory_id"):
        memories.get(np.bool_(True))


def test_model_catalog_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="models_dir"):
        remem.model_catalog(models_dir=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="environ"):
        remem.model_catalog(environ="REMEM_MODELS=x")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["\x00", "a query\x00", "a\ud800"])
def test_a_query_that_cannot_be_stored_is_refused_by_name(memories: Memories, bad: str) -> None:
    """A NUL or a lone surrogate in a search's or context's query names the query (hypothesis met
    ``search("\\x00")`` saying only "the text")."""
    for call in (lambda: memories.search(bad), lambda: memories.context(bad)):
        with pytest.raises(InvalidInputError) as refused:
            call()
        assert str(refused.value).startswith("the query ") and refused.value.parameter == "query"
