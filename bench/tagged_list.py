"""What a list page filtered by a tag costs a local store: walked in the list's order, checking the
tags of each row (``backends.local.tagged_pages``), against the tag-driven statement (every holder
of the tag read and sorted: what every page did before) measured in the same run, same store: with
``WALK_MIN`` and ``WALK_PER_ROW`` 0 each branch's walk reads no row and its tag-driven statement runs
(two statements of no cost more, ~0.03 ms).

    python bench/tagged_list.py [--memories 200000] [--runs 7] [--store DIR] [--quick]

``--quick``: 20,000 memories in a temporary store.

The store (built once in ``--store``, with the fake embedder) holds memories a minute apart, tagged
``tenth`` (every tenth), ``early`` (a third of the oldest 5 %: a common tag no new memory has),
``rare`` (one in 10,000) and, with ``tenth``, ``both`` (one in 30). For each tag: the first page
and the page past the middle holder of the tag (a cursor, as `remem list` pages), 20 memories; the
median of ``--runs``; both ways must give the same memories.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import _harness
import remem
from remem.backends.local import tagged_pages
from remem.testing import FakeEmbedder
from remem.types import NewMemory

TAGS: dict[str, tuple[str, ...]] = {
    "tenth": ("tenth",),
    "tenth + both": ("tenth", "both"),
    "early": ("early",),
    "rare": ("rare",),
}


def _tags(n: int, count: int) -> tuple[str, ...]:
    tags = ["tenth"] * (n % 10 == 0) + ["both"] * (n % 30 == 0) + ["rare"] * (n % 10_000 == 0)
    return (*tags, *(["early"] * (n < count // 20 and n % 3 == 0)))


def minute(n: int) -> str:
    """The ``n``-th minute after a fixed day, as a created_at."""
    return time.strftime("%Y-%m-%dT%H:%M:00.000Z", time.gmtime(1_600_000_000 + 60 * n))


def build(store: Path, count: int) -> None:
    """``count`` memories a minute apart (done once: a store already built is used as it is)."""
    if (store / "built").exists():
        return
    started = time.perf_counter()
    new = (
        NewMemory(f"memory {n} of the list", tags=_tags(n, count), created_at=minute(n)) for n in range(count)
    )
    with remem.open(store, embedder=FakeEmbedder()) as memories:
        memories.add_many(new, expected=count)
    (store / "built").touch()
    _harness.note(f"built {count} memories in {time.perf_counter() - started:.0f} s")


def page_ms(
    memories: remem.Memories, tags: tuple[str, ...], after: Any, runs: int
) -> tuple[float, list[int]]:
    """Median ms of one page of 20, and its ids."""
    times, ids = [], []
    for _ in range(runs):
        started = time.perf_counter()
        ids = [m.id for m in memories.list(tags=list(tags), limit=20, after=after)]
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times), ids


def main() -> None:
    parser = _harness.parser(__doc__)
    parser.add_argument("--memories", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--store", type=Path, default=None, help="[/tmp/tagged-list-N]")
    args = parser.parse_args()
    count = 20_000 if args.quick else args.memories
    print(_harness.machine())
    with tempfile.TemporaryDirectory() as scratch:
        store = args.store or (Path(scratch) / "store" if args.quick else Path(f"/tmp/tagged-list-{count}"))
        build(store, count)
        rows = measure(store, count, args.runs)
    _harness.table(
        ["tag (memories)", "page", "tag-driven ms", "walked ms", "walked / tag-driven"],
        rows,
        f"A list page of 20 by tag, {count} memories",
    )


def measure(store: Path, count: int, runs: int) -> list[list[str]]:
    """Each tag's first page and the page past its middle holder, both ways: the table's rows."""
    walking = (tagged_pages.WALK_MIN, tagged_pages.WALK_PER_ROW)
    rows = []
    with remem.open(store, embedder=FakeEmbedder()) as memories:
        for name, tags in TAGS.items():
            held = memories.list(tags=list(tags), limit=count)
            middle = held[len(held) // 2] if held else None
            for page, after in (("first", None), ("middle", middle and (middle.created_at, middle.id))):
                tagged_pages.WALK_MIN = tagged_pages.WALK_PER_ROW = 0  # walks of no row: the tag drives
                base, expected = page_ms(memories, tags, after, runs)
                tagged_pages.WALK_MIN, tagged_pages.WALK_PER_ROW = walking
                took, ids = page_ms(memories, tags, after, runs)
                assert ids == expected, (name, page)
                rows.append(
                    [f"{name} ({len(held)})", page, f"{base:.2f}", f"{took:.2f}", _harness.times(took, base)]
                )
    return rows


if __name__ == "__main__":
    main()
