"""A list page with a tag, read by walking the list's order (``backends.local.tagged_pages``), is
the page the tag-driven statement reads: the same rows in the same order, for tags common among
the newest, held only by old memories, rare, or two at once; with a user and the shared memories;
from the first page and past positions, ties of one created_at included — with the walk's bounds
made small so that every way of reading a branch is taken."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import remem
from remem.backends import listing
from remem.backends.local import records, tagged_pages
from remem.testing import FakeEmbedder
from remem.types import Filters, NewMemory

SIZE = 400


def _tags(n: int) -> tuple[str, ...]:
    tags = ["common"] if n % 2 else []
    tags += ["old"] if n < 60 and n % 3 == 0 else []
    tags += ["rare"] if n in (5, 201, 390) else []
    tags += ["third"] if n % 3 == 0 else []
    return tuple(tags)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tagged") / "store"
    minute = lambda n: f"2026-03-{1 + n // 1440:02d}T{n // 60 % 24:02d}:{n % 60:02d}:00.000Z"  # noqa: E731
    new = [
        NewMemory(
            f"memory {n}",
            user=(None, "alice", "bob")[n // 7 % 3],
            tags=_tags(n),
            role=("user", "assistant")[n % 2],
            conversation=f"c{n % 3}",
            meta={"kind": ("note", "todo")[n // 2 % 2]},
            created_at=minute(n * 37 % SIZE // 4 * 4),  # not in id order; four a minute: ties
        )
        for n in range(SIZE)
    ]
    with remem.open(path, embedder=FakeEmbedder()) as memories:
        memories.add_many(new)
    return path


CASES = (
    [
        Filters(tags=tags, user=user, shared=shared)
        for tags, (user, shared) in itertools.product(
            [("common",), ("old",), ("rare",), ("common", "third"), ("old", "third")],
            [(None, False), ("alice", False), ("alice", True)],
        )
    ]
    + [
        Filters(tags=("common",), conversation="c1"),
        Filters(tags=("old",), since="2026-03-01T00:30:00Z", until="2026-03-01T05:00:00Z"),
    ]
    + [  # beside what a walk would check row by row, the tags drive
        Filters(tags=("common",), meta={"kind": "note"}),
        Filters(tags=("common",), role="user"),
        Filters(tags=("common",), user="alice", conversation="c1"),
    ]
)


@pytest.mark.parametrize("filters", CASES, ids=str)
def test_each_page_is_the_tag_driven_page(
    store: Path, filters: Filters, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tagged_pages, "WALK_MIN", 8)
    monkeypatch.setattr(tagged_pages, "WALK_PER_ROW", 2)
    with remem.open(store, embedder=FakeEmbedder()) as memories:
        conn = memories.backend.records.conn  # type: ignore[attr-defined]
        source = records._LISTED
        seen = 0
        for limit in (1, 3, 7, 50):
            after = None
            while True:
                expected = conn.execute(
                    *listing.page_query(source, filters, after, limit, records._DIALECT)
                ).fetchall()
                assert tagged_pages.newest(conn, source, filters, after, limit, records._DIALECT) == expected
                if len(expected) < limit:
                    break
                after, seen = (expected[-1][3], expected[-1][0]), seen + (limit == 1)
        every = conn.execute(*listing.page_query(source, filters, None, SIZE, records._DIALECT)).fetchall()
        assert seen == len(every)  # one page of one memory each: every position was read from
