"""Where remem keeps its data and which settings it reads. Pure: the CLI passes the environment in."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

APP_NAME = "remem"
#: Environment variable that overrides the default store directory.
HOME_ENV = "REMEM_HOME"
#: Environment variable that turns on tracebacks for unexpected errors (for bug reports).
DEBUG_ENV = "REMEM_DEBUG"

DEFAULT_SEARCH_LIMIT = 5
DEFAULT_LIST_LIMIT = 20


def default_store_dir() -> Path:
    """The per-user data directory remem uses when neither --store nor REMEM_HOME is given."""
    import platformdirs  # noqa: PLC0415 - only needed when no store was named

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def resolve_store_dir(option: Path | None, environ: Mapping[str, str]) -> Path:
    """Pick the store directory: the --store option, else $REMEM_HOME, else the user data dir.

    The result is absolute with ``~`` expanded; it is not created or checked here.
    """
    if option is not None:
        chosen = option
    elif environ.get(HOME_ENV, "").strip():
        chosen = Path(environ[HOME_ENV].strip())
    else:
        chosen = default_store_dir()
    return chosen.expanduser().absolute()


def debug_enabled(environ: Mapping[str, str]) -> bool:
    """True when the user asked for tracebacks of unexpected errors."""
    return environ.get(DEBUG_ENV, "").strip().lower() in {"1", "true", "yes", "on"}
