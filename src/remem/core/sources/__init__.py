"""Other tools' histories as remem memories: a ChatGPT or Claude data export, a folder of Markdown.

Each source (``chatgpt.py``, ``claude.py``, ``markdown.py``) reads its input as a stream and yields
one shape, ``Item``: a conversation turn (conversation id, role, the message's own time) or a note
(path, title, tags, the file's time), with its identity in the source (``meta["source_id"]``). A
``History`` turns the items into the entries that ``Memories.add_entries`` stores, the path of
``add --jsonl`` and ``import``: deduplicated (text, user, conversation: a repeated import finds
every turn already there in one lookup per batch), embedded in batches, staged and resumed after an
interruption (``core/staged.py``), all or nothing.

What a source leaves out (system and tool messages, images, attachments, empty nodes) is counted
in ``History.skipped`` by what it was; what it could not read of one message or note (an unknown
content type, a front matter it cannot parse) is skipped or kept as text and said in one line in
``History.notes``, naming the file and the JSON path or line. An input that is not of the source's
shape at all (another format, a truncated file, a directory where a file is expected) is an
InvalidInputError naming the file, raised before or while reading: nothing is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from remem.core.sources.shape import Item, Tally
from remem.errors import InvalidInputError
from remem.inputs import MAX_TEXT_CHARS, clean_meta, clean_name, strip_text, within_limit
from remem.types import NewMemory

if TYPE_CHECKING:
    from remem.ingest import Entry

#: The sources ``read_history`` knows, as ``remem import --from`` names them.
SOURCES = ("chatgpt", "claude", "markdown")


#: A source: reads a path into items, counting and noting in the tally as it goes.
Reader = Callable[[Path, str, Tally], Iterator[Item]]


class History:
    """A source's items as entries for ``Memories.add_entries``, read once as a stream; after
    they were read, ``skipped`` and ``notes`` say what was left out."""

    def __init__(self, items: Iterator[Item], tally: Tally, user: str | None, max_chars: int) -> None:
        self._items, self._tally, self._user, self._max_chars = items, tally, user, max_chars

    @property
    def skipped(self) -> dict[str, int]:
        """How many of each kind of thing the source left out, most first."""
        return dict(self._tally.skipped.most_common())

    @property
    def notes(self) -> list[str]:
        """One line per message or note the source could not read as it is (at most ``MAX_NOTES``,
        then how many more)."""
        more = self._tally.unlisted
        return [*self._tally.notes, *([f"... and {more:,} more like these"] if more else [])]

    def entries(self) -> Iterator[Entry]:
        """The entries, numbered from 1 in the order the source gives them; an item whose text
        remem would refuse (too long, not valid Unicode) is skipped, counted and noted."""
        from remem.ingest import Entry  # noqa: PLC0415 - remem.ingest is below the core

        number = 0
        for item in self._items:
            try:
                memory = self._memory(item)
            except InvalidInputError as exc:
                self._tally.skip("refused texts")
                self._tally.note(f"{item.where}: skipped: {exc}")
                continue
            number += 1
            yield Entry(number, memory)

    def _memory(self, item: Item) -> NewMemory:
        text = within_limit(strip_text(item.text), self._max_chars)
        tags = tuple(sorted({name for tag in item.tags if (name := clean_name(tag, "a tag"))}))
        return NewMemory(
            text=text,
            user=self._user,
            conversation=clean_name(item.conversation, "the conversation"),
            role=item.role,
            tags=tags,
            meta=clean_meta(item.meta),
            created_at=item.created_at,
        )


def read_history(
    source: str, path: str | Path, *, user: str | None = None, max_chars: int = MAX_TEXT_CHARS
) -> History:
    """The history at ``path`` as read by ``source`` (chatgpt, claude or markdown; see the module
    docstring), each memory of ``user`` and of at most ``max_chars`` characters. The path is
    checked now (InvalidInputError: missing, a directory for a file source, a file for markdown);
    the content as ``History.entries`` is read."""
    reader = _reader(source)
    given = str(path)
    found = Path(path).expanduser()
    if source == "markdown":
        if not found.is_dir():
            raise InvalidInputError(
                f"{given}: not a directory; source markdown reads a folder of notes", mentions=("source",)
            )
    elif found.is_dir():
        raise InvalidInputError(
            f"{given}: a directory; source {source} reads the export's conversations.json",
            mentions=("source",),
        )
    elif given == "-" and not found.exists():
        raise InvalidInputError(
            f"{given}: stdin; source {source} reads a file, the export's conversations.json",
            mentions=("source",),
        )
    elif not found.exists():
        raise InvalidInputError(f"{given}: no such file")
    tally = Tally()
    return History(reader(found, given, tally), tally, clean_name(user, "user"), max_chars)


def _reader(source: str) -> Reader:
    """The reader of a source by its name (each imported only when used)."""
    if source == "chatgpt":
        from remem.core.sources.chatgpt import read  # noqa: PLC0415
    elif source == "claude":
        from remem.core.sources.claude import read  # noqa: PLC0415
    elif source == "markdown":
        from remem.core.sources.markdown import read  # noqa: PLC0415
    else:
        raise InvalidInputError(f"unknown source {source!r}; choose one of {', '.join(SOURCES)}")
    return read
