"""remem's own exceptions, one tree under ``RememError``. Library code raises these; only the
front-ends turn them into exit codes or tool errors. Every message is one line for a person to read,
in the library's words: an argument is named as the Python API names it (``min_score``), and a
front-end that calls it otherwise (the CLI's ``--min-score``) rephrases the message (``phrased``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence


class RememError(Exception):
    """Base of every error remem reports to the user as one line.

    ``parameter`` is the argument the error is about as the library names it (``min_score``; a
    field of a tuple argument as ``hnsw.m``), or None when it is about no one argument; ``mentions``
    are the other arguments its message names (``mode`` in "min_score is a cosine; use it with mode
    vector or hybrid"). The message names each of them before any value it quotes.
    """

    parameter: str | None = None
    mentions: tuple[str, ...] = ()

    def __init__(self, *args: object, parameter: str | None = None, mentions: Sequence[str] = ()) -> None:
        """A message (one line), and the arguments it is about and names."""
        super().__init__(*args)
        self.parameter = parameter
        self.mentions = tuple(mentions)

    @property
    def names(self) -> tuple[str, ...]:
        """Every argument the message names: ``parameter`` first, then ``mentions``."""
        return self.mentions if self.parameter is None else (self.parameter, *self.mentions)

    def phrased(self, rename: Mapping[str, str]) -> str:
        """The message with the arguments it names called as a front-end calls them (``rename``:
        ``{"min_score": "--min-score"}``); an argument ``rename`` does not hold keeps its name."""
        return phrase(str(self), self.names, rename)


def phrase(message: str, names: Iterable[str], rename: Mapping[str, str]) -> str:
    """``message`` with the first mention of each of ``names`` (arguments as the library names
    them, each standing as a word of its own) replaced by what ``rename`` calls it; one pass, so a
    new name is never renamed again. Names ``rename`` does not hold stay as they are."""
    wanted = [name for name in dict.fromkeys(names) if name in rename]
    if not wanted:
        return message
    pattern = "|".join(re.escape(name) for name in sorted(wanted, key=len, reverse=True))
    done: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        name = match.group(0)
        if name in done:
            return name
        done.add(name)
        return rename[name]

    return re.sub(rf"(?<![\w.-])(?:{pattern})(?![\w-]|\.\w)", replace, message)


class InvalidInputError(RememError):
    """The caller's input (text, option value, argument, stdin) cannot be used; nothing was changed."""


class MemoryNotFoundError(InvalidInputError):
    """No memory has the id(s) asked for; nothing was changed. ``ids`` holds the missing ids."""

    def __init__(self, ids: list[int]) -> None:
        """Name the missing ids (ascending)."""
        self.ids = sorted(ids)
        listed = ", ".join(str(i) for i in self.ids)
        super().__init__(
            f"there is no memory {listed}" if len(self.ids) == 1 else f"there are no memories {listed}"
        )


class TokenNotFoundError(InvalidInputError):
    """No token has the name asked for; nothing was changed. ``name`` holds that name."""

    def __init__(self, name: str) -> None:
        """Name the missing token."""
        self.name = name
        shown = f'"{name}"' if name.isprintable() else repr(name)  # one line, whatever was asked for
        super().__init__(f"there is no token named {shown}", parameter="name")


class UsageError(RememError):
    """A call that cannot run in the state its caller left the ``Memories`` in (closed, or a write
    while one of its exports is still being read on the same thread); nothing was changed."""


class StoreClosedError(UsageError):
    """The ``Memories`` (its store) was closed; open the store again to use it."""

    def __init__(self, location: str) -> None:
        """Name the store (a URL without its password, or a directory)."""
        self.location = location
        super().__init__(f"this Memories is closed (the store at {location}); open the store again to use it")


class StoreError(RememError):
    """The store cannot be opened, read or written."""


class ConnectionLostError(StoreError):
    """The connection to the store's server was lost during a call (the next call connects again).
    ``stored`` says what became of the call's changes: False, none was stored (rolled back; also
    for a read); None, unknown (the connection was lost while committing and the server could not
    be asked)."""

    def __init__(self, message: str, stored: bool | None = False) -> None:
        """A one-line ``message`` and what became of the call's changes."""
        super().__init__(message)
        self.stored = stored


class StoreNotFoundError(StoreError):
    """No store exists where a call that does not create one was pointed."""


class StoreCorruptError(StoreError):
    """A store file exists but is damaged beyond what remem repairs by itself."""


class ModelMismatchError(StoreError):
    """The store's vectors were made by a different model than the one asked to use it."""


class EditConflictError(StoreError):
    """A memory changed (another process edited it) between reading it and writing its edit; nothing
    was changed by this edit."""


class ModelChangedError(StoreError):
    """The store was re-embedded with another model while a query was being embedded; retry."""


class EmbedderError(RememError):
    """The embedding model cannot be loaded, verified or run."""


class DownloadError(EmbedderError):
    """A model file could not be downloaded or failed verification; nothing unverified was installed."""
