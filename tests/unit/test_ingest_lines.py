"""Reading many memories splits lines as ``str.splitlines`` does and reads the input one line at a
time (no second copy of it), through the stream the CLI's ``add --lines/--jsonl`` and ``import`` use."""

from __future__ import annotations

import io
import tracemalloc
from collections.abc import Iterable

from remem.ingest import Entry, LineError, export_entries, jsonl_entries, line_entries, read_lines
from remem.types import NewMemory


def _entries(items: Iterable[Entry | LineError]) -> list[Entry]:
    return [item for item in items if isinstance(item, Entry)]


def test_lines_split_as_splitlines() -> None:
    data = b"one\r\ntwo\rthree\n\nfour\n\r\nfive"
    entries = _entries(line_entries(read_lines(io.BytesIO(data)), NewMemory(text="")))
    assert [(e.line, e.memory.text) for e in entries] == [
        (1, "one"),
        (2, "two"),
        (3, "three"),
        (5, "four"),
        (7, "five"),
    ]
    jsonl = read_lines(io.BytesIO(b'{"text": "a"}\n\n{"text": "b"}\n'))
    assert [e.line for e in _entries(jsonl_entries(jsonl, NewMemory(text="")))] == [1, 3]


def test_a_large_input_is_not_copied_whole() -> None:
    # 1,000 bad lines of 10 kB: each yields a short error, so what parsing keeps is small; a list of
    # every line (bytes.splitlines) would hold the 10 MB a second time.
    data = (b"x" * 10_000 + b"\n") * 1_000
    for parse in (export_entries, lambda lines: jsonl_entries(lines, NewMemory(text=""))):
        tracemalloc.start()
        try:
            lines = read_lines(io.BytesIO(data), block=1 << 16)
            errors = [item for item in parse(lines) if isinstance(item, LineError)]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert len(errors) == 1_000
        assert peak < len(data) // 4, peak
