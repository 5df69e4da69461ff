"""The page's export (JSONL, what ``remem export`` writes), streamed: a store of any size is sent
without being held in memory.

One thread reads the export (the store's rows are read on the thread that asked for them) and hands
it over in chunks of about ``CHUNK_BYTES`` through a queue of at most ``QUEUED_CHUNKS``: it waits
while the browser is slower, and stops when the browser goes away (before the first byte too). An
error before the first byte is raised to the route (its error page); one after it ends the download
with a last line that is no memory (``{"error": …}``), so `remem import` refuses the cut file
instead of importing part of it.
"""

from __future__ import annotations

import json
import queue
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio.to_thread

import remem
from remem.errors import RememError
from remem.mcp.service import Service

#: About how many bytes of JSONL each chunk holds.
CHUNK_BYTES = 1 << 16
#: Chunks read ahead of the browser at most.
QUEUED_CHUNKS = 4
#: How often a reader waiting for room looks whether the browser went away (seconds).
STOP_POLL_SECONDS = 0.2

_Item = bytes | BaseException | None  # a chunk, the error that ended the export, or its end


async def export_body(service: Service, where: remem.Filters) -> AsyncIterator[bytes]:
    """The JSONL export of the memories ``where`` selects, as chunks of bytes; the store's error
    (RememError) is raised here when it fails before the first chunk."""
    chunks: queue.Queue[_Item] = queue.Queue(QUEUED_CHUNKS)
    stop = threading.Event()
    reader = threading.Thread(
        target=_read, args=(service, where, chunks, stop), name="remem-page-export", daemon=True
    )
    reader.start()
    first = await anyio.to_thread.run_sync(chunks.get)
    if isinstance(first, BaseException):
        stop.set()
        raise first
    body = _rest(first, chunks, stop)
    # A response that never starts (the browser gone before its first byte) never runs the body's
    # ``finally``: dropping it stops the reader too, which would otherwise hold its snapshot for ever.
    weakref.finalize(body, stop.set)
    return body


async def _rest(first: _Item, chunks: queue.Queue[_Item], stop: threading.Event) -> AsyncIterator[bytes]:
    """``first`` and the chunks after it; an error ends it with its ``{"error": …}`` line."""
    try:
        item = first
        while item is not None:
            if isinstance(item, BaseException):
                reason = " ".join(str(item).split()) if isinstance(item, RememError) else "unexpected error"
                yield (json.dumps({"error": f"the export was cut: {reason}"}) + "\n").encode()
                return
            yield item
            item = await anyio.to_thread.run_sync(chunks.get)
    finally:
        stop.set()  # the browser went away, or the end was sent: the reader stops


def _read(service: Service, where: remem.Filters, chunks: queue.Queue[_Item], stop: threading.Event) -> None:
    """Put the export's chunks, then None (or the error that ended it), until ``stop``."""

    def put(item: _Item) -> bool:
        while not stop.is_set():
            try:
                chunks.put(item, timeout=STOP_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def export(memories: remem.Memories) -> None:
        for chunk in _chunks(memories.export(where=where)):
            if not put(chunk):
                return

    try:
        service.run(export)
    except BaseException as exc:  # whatever ended it is handed to the response (never left waiting)
        put(exc)
        return
    put(None)


def _chunks(records: Iterator[dict[str, Any]]) -> Iterator[bytes]:
    """The records as JSONL, about ``CHUNK_BYTES`` at a time (one record may make a larger one)."""
    lines: list[bytes] = []
    size = 0
    for record in records:
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
        lines.append(line)
        size += len(line)
        if size >= CHUNK_BYTES:
            yield b"".join(lines)
            lines, size = [], 0
    if lines:
        yield b"".join(lines)
