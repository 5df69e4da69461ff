"""Turning memories and hits into JSON records and human tables. Pure: returns strings."""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Sequence
from typing import Any

from remem.types import MEMORY_FIELDS, Hit, Lane, Memory, Snippet, memory_record

__all__ = [
    "MEMORY_FIELDS",
    "excerpt",
    "history_table",
    "hit_record",
    "hits_table",
    "json_line",
    "memories_table",
    "memory_record",
    "prompt_line",
    "shown_text",
    "status",
    "table",
    "visible",
]

SCORE_DECIMALS = 4
#: How many columns of a memory's text a one-line notice quotes.
EXCERPT_WIDTH = 60


def _lane(lane: Lane | None) -> dict[str, Any] | None:
    return None if lane is None else {"rank": lane.rank, "score": round(lane.score, 6)}


def _snippet(snippet: Snippet | None) -> dict[str, Any] | None:
    return None if snippet is None else {"text": snippet.text, "start": snippet.start, "end": snippet.end}


def hit_record(hit: Hit) -> dict[str, Any]:
    """A search hit: ``score`` (its calibrated relevance in [0, 1], 6 decimals) after ``id``, then
    the memory's fields (the text whole), then ``lanes``: each lane's rank and raw score for this
    memory (null where the lane did not rank it), then ``snippet``: the part of a long text that
    matched, with its character offsets in ``text`` (null for a text short enough to show whole).
    """
    record = memory_record(hit.memory)
    lanes = {"vector": _lane(hit.vector), "keyword": _lane(hit.keyword)}
    return {
        "id": record.pop("id"),
        "score": round(hit.score, 6),
        **record,
        "lanes": lanes,
        "snippet": _snippet(hit.snippet),
    }


def json_line(record: dict[str, Any]) -> str:
    """One compact JSON object on one line, UTF-8 text kept as is; strict JSON: a float that is
    not finite (a score from a damaged index) is ``null``, never a bare ``NaN``/``Infinity``."""
    return json.dumps(_finite(record), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float (in dicts, lists and tuples) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


#: Format characters left as they are: the zero-width joiner builds emoji (👨‍👩‍👧) and moves nothing.
_HARMLESS_FORMAT = frozenset("\u200d")


def visible(text: str, keep: str = "") -> str:
    """``text`` safe to print on a terminal: control characters (ESC, BEL, backspace, CR, C1…) and
    invisible format characters (bidi overrides, zero-width spaces, BOM) become visible escapes such
    as ``\\x1b`` or ``\\u202e``, as ``ls`` and git do; characters in ``keep`` stay. JSON output
    never goes through this: it stays exact."""
    out = []
    for char in text:
        category = unicodedata.category(char)
        if char in keep or not (category == "Cc" or (category == "Cf" and char not in _HARMLESS_FORMAT)):
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


def _one_line(text: str) -> str:
    return visible(" ".join(text.split()))


def display_width(text: str) -> int:
    """Terminal columns ``text`` occupies (rich's cell widths: wide CJK and emoji 2, zero-width 0)."""
    from rich.cells import cell_len  # noqa: PLC0415 - only tables need it

    return int(cell_len(text))


def _clip(text: str, width: int | None, at_word: bool = False) -> str:
    """``text`` in at most ``width`` columns, ending in ``…`` when cut; ``at_word`` cuts after the
    last whole word that fits (unless that leaves less than half the room: one long word, CJK)."""
    if width is None or display_width(text) <= width:
        return text
    from rich.cells import get_character_cell_size  # noqa: PLC0415

    used, kept = 0, []
    for char in text:
        used += get_character_cell_size(char)
        if used > width - 1:
            break
        kept.append(char)
    cut = "".join(kept)
    if at_word and not text[len(cut)].isspace():
        words = cut.rsplit(" ", 1)[0].rstrip()
        cut = words if len(words) >= len(cut) // 2 else cut
    return cut.rstrip() + "…"


#: On a terminal, the most columns a name column (user, tags) takes, and the fewest it is cut to
#: for the text to get ``TEXT_ROOM`` columns: the text gets the rest.
NAMES_WIDTH, NAMES_MIN, TEXT_ROOM = 12, 6, 30


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int | None,
    numeric: int = 0,
    names: Sequence[int] = (),
) -> str:
    """Columns separated by two spaces, the first ``numeric`` right-aligned; fitted to ``width``
    columns: the columns ``names`` at most ``NAMES_WIDTH`` wide and the last one (the text) given
    the rest, cut at a word with ``…``.

    ``width=None`` never cuts anything (output that is not a terminal, or ``--wide``).
    """
    if width is not None and names:
        rows = _names_fitted(headers, rows, width, names)
    sizes = [_width(headers, rows, i) for i in range(len(headers) - 1)]
    lead = sum(sizes) + 2 * len(sizes)
    room = None if width is None else max(width - lead, 10)

    def line(cells: Sequence[str]) -> str:
        parts = []
        for column, (cell, size) in enumerate(zip(cells, sizes, strict=False)):
            padding = " " * (size - display_width(cell))
            parts.append(padding + cell if column < numeric else cell + padding)
        return "  ".join([*parts, _clip(cells[-1], room, at_word=True)]).rstrip()

    return "\n".join([line(headers), *(line(r) for r in rows)])


def _width(headers: Sequence[str], rows: Sequence[Sequence[str]], column: int) -> int:
    return max([display_width(headers[column]), *(display_width(r[column]) for r in rows)])


def _names_fitted(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, names: Sequence[int]
) -> list[list[str]]:
    """``rows`` with the cells of the columns ``names`` cut to leave the text (the last column)
    ``TEXT_ROOM`` of ``width`` columns: at most ``NAMES_WIDTH`` each, at least ``NAMES_MIN``."""
    lead = sum(_width(headers, rows, i) for i in range(len(headers) - 1) if i not in names)
    lead += 2 * (len(headers) - 1)
    cap = max(NAMES_MIN, min(NAMES_WIDTH, (width - lead - TEXT_ROOM) // len(names)))
    return [[_clip(c, cap) if i in names else c for i, c in enumerate(r)] for r in rows]


def prompt_line(memory: Memory) -> str:
    """A memory as one prompt-ready line: ``[date time] (role, user) text``."""
    who = visible(", ".join(part for part in (memory.role, memory.user) if part))
    when = memory.created_at[:16].replace("T", " ")
    return f"[{when}]{f' ({who})' if who else ''} {_one_line(memory.text)}"


def _memory_cells(memory: Memory, text: str | None = None) -> list[str]:
    created = memory.created_at[:16].replace("T", " ")
    shown = _one_line(memory.text if text is None else text)
    return [created, _one_line(memory.user or ""), _one_line(",".join(memory.tags)), shown]


def shown_text(hit: Hit) -> str:
    """What a human sees of a hit's text: the whole text, or its snippet with ``…`` at each end
    where the text goes on."""
    snippet = hit.snippet
    if snippet is None:
        return hit.memory.text
    before = "…" if snippet.start > 0 else ""
    after = "…" if snippet.end < len(hit.memory.text) else ""
    return f"{before}{snippet.text.strip()}{after}"


def _hit_cells(hit: Hit) -> list[str]:
    return _memory_cells(hit.memory, shown_text(hit))


def _decimals(value: float | None) -> str:
    return "" if value is None else f"{value:.{SCORE_DECIMALS}f}"


def hits_table(hits: Sequence[Hit], width: int | None, with_cosine: bool = False) -> str:
    """Search results as a table: id, score (the calibrated relevance, 4 decimals), created, user,
    tags, text (a long text's snippet, ``shown_text``); ``with_cosine`` adds each hit's raw cosine
    after the score (blank where the vector lane did not rank it)."""
    if not with_cosine:
        rows = [[str(h.memory.id), _decimals(h.score), *_hit_cells(h)] for h in hits]
        return table(["ID", "SCORE", "CREATED", "USER", "TAGS", "TEXT"], rows, width, 2, names=(3, 4))
    rows = [
        [
            str(h.memory.id),
            _decimals(h.score),
            _decimals(h.vector.score if h.vector else None),
            *_hit_cells(h),
        ]
        for h in hits
    ]
    return table(["ID", "SCORE", "COSINE", "CREATED", "USER", "TAGS", "TEXT"], rows, width, 3, names=(4, 5))


def memories_table(memories: Sequence[Memory], width: int | None) -> str:
    """Memories as a table: id, created, user, tags, text."""
    rows = [[str(m.id), *_memory_cells(m)] for m in memories]
    return table(["ID", "CREATED", "USER", "TAGS", "TEXT"], rows, width, numeric=1, names=(2, 3))


def excerpt(text: str, width: int = EXCERPT_WIDTH) -> str:
    """The start of ``text`` on one line, safe to print, at most ``width`` columns (ending in … when cut)."""
    return _clip(_one_line(text), width)


def status(memory: Memory, now: str | None = None) -> str:
    """Where a memory stands: ``superseded by N``, ``expired``, ``expires …`` or ``current``."""
    if memory.superseded_by is not None:
        return f"superseded by {memory.superseded_by}"
    if memory.expires_at is not None:
        return "expired" if memory.expired(now) else f"expires {memory.expires_at[:16].replace('T', ' ')}"
    return "current"


def history_table(memories: Sequence[Memory], width: int | None) -> str:
    """A memory's chain (``Memories.history``), oldest first: id, created, status (``status``), text."""
    rows = [[str(m.id), m.created_at[:16].replace("T", " "), status(m), _one_line(m.text)] for m in memories]
    return table(["ID", "CREATED", "STATUS", "TEXT"], rows, width, numeric=1)


def _calibration(hit: Hit) -> dict[str, float] | None:
    found = hit.calibration
    if found is None:
        return None
    return {
        "ranking": round(found.ranking, 6),
        "cosine": round(found.cosine, 6),
        "keyword": round(found.keyword, 6),
        "rank": round(found.rank, 6),
        "relevance": round(found.relevance, 6),
    }


def explain_record(hit: Hit) -> dict[str, Any]:
    """Why a hit ranked where it did (``--explain``, MCP ``explain``): each lane's rank and raw score
    (``vector``: cosine, ``keyword``: BM25; null where the lane did not rank it), every lift
    applied besides them, in order: ``name`` and ``size`` (what it added to the ranking score; null
    for one that moved the hit ahead without a size, or, ``script``, put its cosine at the pool's
    lowest), and ``calibration``: the ``ranking`` score (hybrid: the fused z-score with its lifts),
    its ``cosine`` and ``keyword`` terms, its ``rank`` and the ``relevance`` shown as its score."""
    lifts = [
        {"name": lift.name, "size": None if lift.size is None else round(lift.size, 6)} for lift in hit.lifts
    ]
    return {
        "vector": _lane(hit.vector),
        "keyword": _lane(hit.keyword),
        "lifts": lifts,
        "calibration": _calibration(hit),
    }


def explain_line(hit: Hit) -> str:
    """``explain_record`` as one line for a person: ``4: vector #1 cosine 0.7051, keyword #2 BM25
    2.3100, time +1.0000, phrase first; ranking 1.2000 as cosine 0.5100, keyword 0.8000, rank 1 ->
    relevance 0.8100``."""
    parts = [
        f"{name} #{lane.rank} {measure} {lane.score:.{SCORE_DECIMALS}f}"
        for name, measure, lane in (("vector", "cosine", hit.vector), ("keyword", "BM25", hit.keyword))
        if lane is not None
    ]
    for lift in hit.lifts:
        if lift.size is not None:
            parts.append(f"{lift.name} {lift.size:+.{SCORE_DECIMALS}f}")
        else:
            parts.append(
                "script: cosine as the pool's lowest" if lift.name == "script" else f"{lift.name} first"
            )
    found, line = hit.calibration, f"{hit.memory.id}: {', '.join(parts)}"
    if found is None:
        return line
    return (
        f"{line}; ranking {found.ranking:.{SCORE_DECIMALS}f} as cosine {found.cosine:.{SCORE_DECIMALS}f}, "
        f"keyword {found.keyword:.{SCORE_DECIMALS}f}, rank {found.rank:g} "
        f"-> relevance {found.relevance:.{SCORE_DECIMALS}f}"
    )
