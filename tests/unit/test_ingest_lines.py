"""Parsing many memories reads the input one line at a time (no second copy of it)."""

from __future__ import annotations

import tracemalloc

from remem.ingest import parse_export, parse_jsonl, parse_lines
from remem.types import NewMemory


def test_lines_split_as_splitlines() -> None:
    data = b"one\r\ntwo\rthree\n\nfour\n\r\nfive"
    parsed = parse_lines(data, NewMemory(text=""))
    assert [(e.line, e.memory.text) for e in parsed.entries] == [
        (1, "one"),
        (2, "two"),
        (3, "three"),
        (5, "four"),
        (7, "five"),
    ]
    assert [e.line for e in parse_jsonl(b'{"text": "a"}\n\n{"text": "b"}\n', NewMemory(text="")).entries] == [
        1,
        3,
    ]


def test_a_large_input_is_not_copied_whole() -> None:
    # 1,000 bad lines of 10 kB: each yields a short error, so what parsing keeps is small; a list of
    # every line (bytes.splitlines) would hold the 10 MB a second time.
    data = (b"x" * 10_000 + b"\n") * 1_000
    for parse in (parse_export, lambda d: parse_jsonl(d, NewMemory(text=""))):
        tracemalloc.start()
        try:
            parsed = parse(data)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert len(parsed.errors) == 1_000
        assert peak < len(data) // 4, peak
