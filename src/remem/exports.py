"""Export formats besides JSON Lines (``Memories.export``): spreadsheet-safe CSV and Markdown."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from enum import Enum

from remem import render
from remem.types import Memory

#: A spreadsheet treats a cell starting with one of these as a formula (CSV injection).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: The JSON fields, with the long hash moved last.
CSV_COLUMNS = (*(f for f in render.MEMORY_FIELDS if f != "sha256"), "sha256")


class ExportFormat(str, Enum):
    """What ``remem export`` writes."""

    JSONL = "jsonl"
    CSV = "csv"
    MARKDOWN = "markdown"


def _safe_cell(value: str) -> str:
    """A cell a spreadsheet shows as text: formula-like values get a leading apostrophe."""
    return "'" + value if value.startswith(_FORMULA_STARTS) else value


def csv_lines(memories: Iterable[Memory]) -> Iterator[str]:
    """A header, then one CSV row per memory (RFC 4180 quoting, formula-safe cells)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    yield buffer.getvalue()
    for memory in memories:
        buffer.seek(0)
        buffer.truncate()
        record = render.memory_record(memory)
        record["tags"] = ",".join(memory.tags)
        record["meta"] = render.json_line(memory.meta)
        writer.writerow([_safe_cell("" if record[c] is None else str(record[c])) for c in CSV_COLUMNS])
        yield buffer.getvalue()


def _markdown_item(memory: Memory) -> str:
    details = [memory.created_at[:16].replace("T", " ")]
    details += [
        f"{label}: {value}" for label, value in (("user", memory.user), ("role", memory.role)) if value
    ]
    if memory.tags:
        details.append("tags: " + ", ".join(memory.tags))
    text = memory.text.replace("\n", "\n  ")
    return f"- **#{memory.id}** ({'; '.join(details)})  \n  {text}\n"


def markdown_lines(memories: Iterable[Memory]) -> Iterator[str]:
    """Memories grouped by conversation (conversations in order of first appearance), id order within."""
    groups: dict[str | None, list[Memory]] = {}
    for memory in memories:
        groups.setdefault(memory.conversation, []).append(memory)
    yield "# remem export\n"
    for conversation, members in groups.items():
        yield f"\n## {'Conversation: ' + conversation if conversation else 'No conversation'}\n\n"
        yield from (_markdown_item(memory) for memory in members)
