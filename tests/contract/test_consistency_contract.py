"""What every back-end promises when several clients use one store: an edit that raced another
is refused, not lost, and the reads of one search all see one state of the store."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from remem.errors import EditConflictError, MemoryNotFoundError
from remem.testing import FAKE_MODEL, fake_vector
from remem.types import Filters, NewMemory, text_sha256

if TYPE_CHECKING:
    from remem.backends.base import Backend


def _vectors(text: str):  # type: ignore[no-untyped-def]
    return fake_vector(text, FAKE_MODEL.dim).reshape(1, -1)


def _add(backend: Backend, text: str) -> int:
    (result,) = backend.add_many([NewMemory(text)], [_vectors(text)], FAKE_MODEL)
    return result.id


def test_an_edit_of_a_memory_changed_meanwhile_is_refused(backend: Backend) -> None:
    memory_id = _add(backend, "the original text")
    read = text_sha256("the original text")
    backend.edit(memory_id, "first edit wins", _vectors("first edit wins"), FAKE_MODEL, expected_sha256=read)
    with pytest.raises(EditConflictError):
        backend.edit(memory_id, "second edit", _vectors("second edit"), FAKE_MODEL, expected_sha256=read)
    assert backend.get_many([memory_id])[memory_id].text == "first edit wins"
    with pytest.raises(MemoryNotFoundError):
        backend.edit(memory_id + 99, "nobody", _vectors("nobody"), FAKE_MODEL, expected_sha256=read)
    edited = backend.edit(memory_id, "unconditional", _vectors("unconditional"), FAKE_MODEL)
    assert edited.text == "unconditional"


def test_reads_inside_a_snapshot_see_one_state(open_backend: Callable[[], Backend]) -> None:
    reader, writer = open_backend(), open_backend()
    first = _add(writer, "there before the snapshot")
    with reader.snapshot():
        assert reader.candidate_ids(Filters()) == [first]
        later = _add(writer, "added during the snapshot")
        writer.forget([first])
        assert reader.candidate_ids(Filters()) == [first]
        assert list(reader.get_many([first, later])) == [first]
        assert reader.keyword_top("added during", Filters(), 5) == []
        with reader.snapshot():  # nested: joins the outer one
            assert reader.candidate_ids(Filters()) == [first]
    assert reader.candidate_ids(Filters()) == [later]


OTHER = FAKE_MODEL.__class__(name="fake-other-model", dim=32, pooling="cls", sha256="e" * 64)


def _other_vectors(rows: list[tuple[int, str]]) -> list:  # type: ignore[type-arg]
    return [fake_vector(text, OTHER.dim).reshape(1, -1) for _, text in rows]


def test_an_interrupted_reembed_resumes_where_it_stopped(backend: Backend) -> None:
    texts = [f"memory number {i} about re-embedding" for i in range(150)]
    backend.add_many([NewMemory(t) for t in texts], [_vectors(t) for t in texts], FAKE_MODEL)
    calls: list[int] = []

    def failing(batch: list[tuple[int, str]]) -> list:  # type: ignore[type-arg]
        calls.append(len(batch))
        if len(calls) == 2:
            raise KeyboardInterrupt  # the user pressed Ctrl-C during the second batch
        return _other_vectors(batch)

    with pytest.raises(KeyboardInterrupt):
        backend.reembed(OTHER, failing, None, False)
    assert backend.model == FAKE_MODEL  # nothing swapped: the old vectors still serve
    assert backend.vector_lane(FAKE_MODEL).top(_vectors(texts[3])[0], 1, Filters())[0][1] > 0.99
    report = backend.reembed(OTHER, _other_vectors, None, False)
    assert report.swapped and report.resumed_from == calls[0] and report.embedded == 150 - calls[0]
    assert backend.model == OTHER
    lane = backend.vector_lane(OTHER)
    assert all(lane.top(fake_vector(text, OTHER.dim), 1, Filters())[0][1] > 0.99 for text in texts[::37])


def test_keyword_scores_count_how_often_a_term_occurs(backend: Backend) -> None:
    once = _add(backend, "rollback plan for the payments service deploy today")
    thrice = _add(backend, "rollback the rollback of the rollback plan please")
    assert [mid for mid, _ in backend.keyword_top("rollback", Filters(), 2)] == [thrice, once]


def test_a_memorys_names_are_keyword_terms_its_text_unchanged(backend: Backend) -> None:
    text = "I just got back from a trip with my family in my new Prius"
    (said,) = backend.add_many(
        [NewMemory(text, role="Evan", user="team-a", tags=("travel-log",))], [_vectors(text)], FAKE_MODEL
    )
    _add(backend, "Sam says the weather was great")
    for query in ("What does Evan drive?", "team-a", "travel-log"):
        assert [mid for mid, _ in backend.keyword_top(query, Filters(), 1)] == [said.id], query
    assert backend.get_many([said.id])[said.id].text == text
    edited = "Back from a family trip in the new Prius"
    backend.edit(said.id, edited, _vectors(edited), FAKE_MODEL)
    assert [mid for mid, _ in backend.keyword_top("Evan", Filters(), 1)] == [said.id]  # kept by an edit
