"""Export formats besides JSON Lines (``Memories.export``): spreadsheet-safe CSV and Markdown."""

from __future__ import annotations

import re
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


def _csv_field(value: str) -> str:
    """One RFC 4180 field: quoted (inner quotes doubled) when it holds a comma, a quote, a CR or a
    LF — the csv module leaves a bare CR unquoted when rows end in LF, which lets a spreadsheet
    start a new row there and run the next cell as a formula."""
    return '"' + value.replace('"', '""') + '"' if any(c in value for c in ',"\r\n') else value


def _csv_row(values: Iterable[str]) -> str:
    return ",".join(_csv_field(value) for value in values) + "\n"


def csv_lines(memories: Iterable[Memory]) -> Iterator[str]:
    """A header, then one CSV row per memory (RFC 4180 quoting, formula-safe cells)."""
    yield _csv_row(CSV_COLUMNS)
    for memory in memories:
        record = render.memory_record(memory)
        record["tags"] = ",".join(memory.tags)
        record["meta"] = render.json_line(memory.meta)
        yield _csv_row(_safe_cell("" if record[c] is None else str(record[c])) for c in CSV_COLUMNS)


#: Characters that make inline Markdown (links, HTML, emphasis, code, tables, strike-through).
_MD_INLINE = re.compile(r"([\\`*_\[\]<>|~])")
#: What makes a line a heading, quote, list item or rule when it starts the line.
_MD_LINE_START = re.compile(r"^(\s*)(?:([#>+=-])|(\d+)([.)]))")


def _md_line(line: str) -> str:
    """One line as literal Markdown: inline syntax escaped, and a leading block marker too."""
    escaped = _MD_INLINE.sub(r"\\\1", line)
    return _MD_LINE_START.sub(
        lambda m: m.group(1) + (f"\\{m.group(2)}" if m.group(2) else f"{m.group(3)}\\{m.group(4)}"), escaped
    )


def _md(text: str) -> str:
    """``text`` as literal Markdown on one line (names, tags, conversation headings)."""
    return _md_line(" ".join(text.split()))


def _md_block(text: str) -> str:
    """A memory's text as literal Markdown lines indented under its list item: every kind of line
    break (CR, CRLF, U+2028…) is a break, and every line is escaped, so no line can start a
    heading, a list item or a link of its own."""
    return "\n  ".join(_md_line(line) for line in text.splitlines())


def _markdown_item(memory: Memory) -> str:
    details = [memory.created_at[:16].replace("T", " ")]
    details += [
        f"{label}: {_md(value)}" for label, value in (("user", memory.user), ("role", memory.role)) if value
    ]
    if memory.tags:
        details.append("tags: " + ", ".join(_md(tag) for tag in memory.tags))
    if memory.superseded_by is not None:
        details.append(f"superseded by #{memory.superseded_by}")
    if memory.expires_at is not None:
        details.append(f"expires {memory.expires_at[:16].replace('T', ' ')}")
    return f"- **#{memory.id}** ({'; '.join(details)})  \n  {_md_block(memory.text)}\n"


def markdown_lines(memories: Iterable[Memory]) -> Iterator[str]:
    """Memories grouped by conversation (conversations in order of first appearance), id order within."""
    groups: dict[str | None, list[Memory]] = {}
    for memory in memories:
        groups.setdefault(memory.conversation, []).append(memory)
    yield "# remem export\n"
    for conversation, members in groups.items():
        yield f"\n## {'Conversation: ' + _md(conversation) if conversation else 'No conversation'}\n\n"
        yield from (_markdown_item(memory) for memory in members)
