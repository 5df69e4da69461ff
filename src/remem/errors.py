"""remem's own exceptions, one tree under ``RememError``. Library code raises these; only the
front-ends turn them into exit codes or tool errors. Every message is one line for a person to read.
"""


class RememError(Exception):
    """Base of every error remem reports to the user as one line."""


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
