"""A folder of Markdown notes (Obsidian, a wiki, a docs repository): every ``*.md`` file under it,
in path order, hidden folders (``.obsidian``, ``.git``) left out.

A note becomes one memory; a long one (more than ``SECTION_CHARS`` characters after its front
matter) one memory per section, split before each heading of level 1 to 3 outside code blocks (a
heading with nothing under it goes with the section after it). Each memory has its file's time
(mtime) as created_at, the tags ``source:markdown`` and its front matter's ``tags`` (a list or a
comma-separated string; inline ``#tags`` are not read), and in meta: ``path`` (relative to the
folder), ``title`` (the front matter's title, else the first ``# heading``, else the file name),
``section`` (its heading, for a section), ``links`` (a JSON list of the [[wikilinks]] and relative
[text](links) it holds) and ``source_id`` (path, and ``#`` and the section's number).

A front matter this subset of YAML cannot read (``frontmatter.py``) is kept as text, with a note
naming the file and line; a file that is not UTF-8 is skipped with a note.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from remem.core.sources.frontmatter import FrontMatterError, Note, split, words
from remem.core.sources.shape import Item, Tally
from remem.times import utc_iso

#: Notes longer than this (characters, after the front matter) are split at their headings: about
#: two windows of the bundled model, whose 256 tokens hold about 1,000 characters of English.
SECTION_CHARS = 2_000
#: A file bigger than this is not read as a note (it would be held whole): skipped and noted.
MAX_FILE_BYTES = 64 << 20
#: The tag every imported note gets.
TAG = "source:markdown"

_HEADING = re.compile(r"^ {0,3}(#{1,3})\s+(.+?)\s*#*\s*$")
_H1 = re.compile(r"^ {0,3}#\s+(.+?)\s*#*\s*$", re.M)
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_WIKILINK = re.compile(r"\[\[([^\]|#\n]+)(?:#[^\]|\n]*)?(?:\|[^\]\n]*)?\]\]")
_LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def read(path: Path, given: str, tally: Tally) -> Iterator[Item]:
    """The notes (or sections) of every Markdown file under the folder ``path``, in path order
    (see the module docstring); ``given`` names the folder in notes."""
    root = path.resolve()
    for file in sorted(path.rglob("*.md")):
        relative = file.relative_to(path).as_posix()
        if any(part.startswith(".") for part in Path(relative).parts) or not file.is_file():
            continue
        shown = f"{given.rstrip('/')}/{relative}"
        if not file.resolve().is_relative_to(root):  # a cloned folder's link to ~/.ssh/… stays out
            tally.skip("links to files outside the folder")
            tally.note(f"{shown}: skipped: a link to a file outside {given}")
            continue
        try:
            stat = file.stat()
            if stat.st_size > MAX_FILE_BYTES:
                tally.skip("files over 64 MB")
                tally.note(f"{shown}: skipped: {stat.st_size:,} bytes, more than a note's {MAX_FILE_BYTES:,}")
                continue
            raw, mtime = file.read_bytes().decode("utf-8").removeprefix("\ufeff"), stat.st_mtime
        except (OSError, UnicodeDecodeError) as exc:
            tally.skip("unreadable files")
            tally.note(f"{shown}: skipped: {exc.strerror if isinstance(exc, OSError) else 'not UTF-8'}")
            continue
        yield from _note(raw.replace("\r\n", "\n"), relative, shown, mtime, tally)


def _note(raw: str, relative: str, shown: str, mtime: float, tally: Tally) -> Iterator[Item]:
    try:
        note = split(raw)
    except FrontMatterError as exc:
        tally.note(f"{shown}: {exc}: a front matter remem does not read; the note is kept as text")
        note = Note({}, raw)
    fields = note.fields
    given_title = fields.get("title")
    heading = _H1.search(note.body)
    title = given_title if isinstance(given_title, str) and given_title else None
    title = title or (heading.group(1) if heading else Path(relative).stem)
    tags = (TAG, *words(fields.get("tags", fields.get("tag"))))
    created = utc_iso(datetime.fromtimestamp(mtime, tz=timezone.utc))
    sections = _sections(note.body) if len(note.body) > SECTION_CHARS else [(None, note.body)]
    if not any(body.strip() for _, body in sections):
        tally.skip("empty notes")
        return
    for number, (section, body) in enumerate(sections, start=1):
        meta = {"path": relative, "title": title, "source_id": relative}
        if len(sections) > 1:
            meta.update({"source_id": f"{relative}#{number}", **({"section": section} if section else {})})
        links = _links(body)
        if links:
            meta["links"] = json.dumps(links, ensure_ascii=False)
        yield Item(body, f"{shown}#{number}" if len(sections) > 1 else shown, None, None, created, tags, meta)


def _sections(body: str) -> list[tuple[str | None, str]]:
    """(heading, text) of each section of ``body``, split before headings of level 1 to 3 outside
    fenced code; a heading with nothing under it joins the section after it."""
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    fenced = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        found = None if fenced else _HEADING.match(line)
        current = sections[-1]
        if found and any(text.strip() and not _HEADING.match(text) for text in current[1]):
            sections.append((found.group(2), [line]))
        else:
            if found:  # the section so far is headings only: named by the last
                sections[-1] = (found.group(2), current[1])
            current[1].append(line)
    return [(heading, "\n".join(lines).strip()) for heading, lines in sections if "".join(lines).strip()]


def _links(body: str) -> list[str]:
    """The notes ``body`` links to: [[wikilinks]]' targets and relative [text](targets), in order,
    each once."""
    found = [match.group(1).strip() for match in _WIKILINK.finditer(body)]
    found += [
        target
        for match in _LINK.finditer(body)
        if not _SCHEME.match(target := match.group(1)) and target[0] != "#"
    ]
    return list(dict.fromkeys(link for link in found if link))
