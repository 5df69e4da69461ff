"""remem's own exceptions. Library code raises these; only the CLI turns them into exit codes."""


class RememError(Exception):
    """Base of every error remem reports to the user as one line."""


class InvalidInputError(RememError):
    """The user's input (text, option value, stdin) cannot be used; nothing was changed."""


class StoreError(RememError):
    """The store directory or database cannot be opened, read or written."""


class StoreCorruptError(StoreError):
    """A store file exists but is damaged beyond what remem repairs by itself."""


class ModelMismatchError(StoreError):
    """The store's vectors were made by a different model than the one asked to use it."""


class EmbedderError(RememError):
    """The embedding model cannot be loaded, verified or run."""


class DownloadError(EmbedderError):
    """A model file could not be downloaded or failed verification; nothing unverified was installed."""
