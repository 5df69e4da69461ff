"""Where remem keeps its data and which settings it reads. Pure: the CLI passes the environment in."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from remem.errors import InvalidInputError

APP_NAME = "remem"
#: Environment variable that overrides the default store directory.
HOME_ENV = "REMEM_HOME"
#: Environment variable that overrides where pulled models are kept.
MODELS_ENV = "REMEM_MODELS"
#: Environment variable naming a Hugging Face mirror for `remem model pull`.
ENDPOINT_ENV = "REMEM_HF_ENDPOINT"
#: Environment variable naming a directory with a user's own model (like --model-dir).
MODEL_DIR_ENV = "REMEM_MODEL_DIR"
#: The model a new store starts with (a name from `remem model list`).
MODEL_ENV = "REMEM_MODEL"
DEFAULT_ENDPOINT = "https://huggingface.co"
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


def is_store_url(value: str) -> bool:
    """True when ``value`` names a PostgreSQL store (``postgresql://…`` or ``postgres://…``)."""
    return value.strip().lower().startswith(("postgresql://", "postgres://"))


def looks_like_store_url(value: str) -> bool:
    """True when ``value`` starts as a PostgreSQL URL does (``postgresql:`` or ``postgres:``)."""
    return value.strip().lower().startswith(("postgresql:", "postgres:"))


def resolve_store(option: str | Path | None, environ: Mapping[str, str]) -> str | Path:
    """Pick the store: the --store option, else $REMEM_HOME, else the user data dir. A PostgreSQL
    URL comes back as the string; a directory as an absolute path (``~`` expanded). A string that
    starts as a PostgreSQL URL but has no ``://`` (``postgres:/x``) is an InvalidInputError, not a
    directory of that name (a ``Path``, or ``./postgres:x``, names one)."""
    chosen = option if option is not None else environ.get(HOME_ENV, "").strip() or None
    if isinstance(chosen, str) and is_store_url(chosen):
        return chosen.strip()
    if isinstance(chosen, str) and looks_like_store_url(chosen):
        scheme = chosen.strip().partition(":")[0]
        raise InvalidInputError(
            f"store {scheme}:… is not a PostgreSQL URL: one looks like "
            "postgresql://[user[:password]@][host][:port]/[database][?schema=NAME] "
            "(for a directory of that name, write ./ before it)"
        )
    return resolve_store_dir(None if chosen is None else Path(chosen), environ)


def debug_enabled(environ: Mapping[str, str]) -> bool:
    """True when the user asked for tracebacks of unexpected errors."""
    return environ.get(DEBUG_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def resolve_models_dir(environ: Mapping[str, str]) -> Path:
    """Where pulled models live: $REMEM_MODELS, else ``models`` in the user cache directory."""
    if environ.get(MODELS_ENV, "").strip():
        return Path(environ[MODELS_ENV].strip()).expanduser().absolute()
    import platformdirs  # noqa: PLC0415 - only needed when models are looked up

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False)) / "models"


def resolve_endpoint(environ: Mapping[str, str]) -> str:
    """The Hugging Face endpoint `remem model pull` downloads from ($REMEM_HF_ENDPOINT or the hub)."""
    return environ.get(ENDPOINT_ENV, "").strip().rstrip("/") or DEFAULT_ENDPOINT


def resolve_model_dir(option: Path | None, environ: Mapping[str, str]) -> Path | None:
    """A user's own model directory: the --model-dir option, else $REMEM_MODEL_DIR, else None."""
    if option is None and environ.get(MODEL_DIR_ENV, "").strip():
        option = Path(environ[MODEL_DIR_ENV].strip())
    return None if option is None else option.expanduser().absolute()


def resolve_model(option: str | None, environ: Mapping[str, str]) -> str | None:
    """The model a new store starts with: the --model option, else $REMEM_MODEL, else None (the
    default choice)."""
    if option is None and environ.get(MODEL_ENV, "").strip():
        option = environ[MODEL_ENV]
    return None if option is None else option.strip()
