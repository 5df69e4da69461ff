"""PostgreSQL store addresses: ``postgresql://user[:password]@host[:port]/db[?schema=NAME&...]``.

A store is one schema of one database (default schema ``remem``), so several stores can share a
database. The password (from the URL, libpq's environment, a service file or ``~/.pgpass``) is
only ever handed to libpq: every message shows the address without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from remem.errors import InvalidInputError

SCHEMES = ("postgresql", "postgres")
DEFAULT_SCHEMA = "remem"
_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_SECRET_PARAMS = frozenset({"password", "sslpassword"})


@dataclass(frozen=True)
class StoreUrl:
    """A parsed store address: what libpq gets, the schema, and the address as it may be shown."""

    conninfo: str
    schema: str
    shown: str


def _without_password(netloc: str) -> str:
    if "@" not in netloc:
        return netloc
    userinfo, hosts = netloc.rsplit("@", 1)
    return f"{userinfo.split(':', 1)[0]}@{hosts}"


def parse(url: str, schema: str | None = None) -> StoreUrl:
    """Split a store URL into libpq's URL (without remem's ``schema`` parameter), the schema
    (``schema`` argument, else ``?schema=``, else ``remem``) and the address without its password.

    InvalidInputError for a URL that is not one, or a schema name that is not a plain identifier
    (letters, digits, ``_``; at most 63 characters).
    """
    try:
        parts = urlsplit(url.strip())
        params = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError as exc:
        raise InvalidInputError(f"not a PostgreSQL URL: {exc}") from None
    if parts.scheme.lower() not in SCHEMES:
        raise InvalidInputError("a PostgreSQL store URL starts with postgresql://")
    chosen = schema or next((v for k, v in params if k == "schema"), None) or DEFAULT_SCHEMA
    kept = [(k, v) for k, v in params if k != "schema"]
    shown_params = [(k, v) for k, v in kept if k not in _SECRET_PARAMS]
    conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(kept, safe="/:,"), ""))
    shown_query = urlencode(
        [*shown_params, *([("schema", chosen)] if chosen != DEFAULT_SCHEMA else [])], safe="/:,"
    )
    shown = urlunsplit((parts.scheme, _without_password(parts.netloc), parts.path, shown_query, ""))
    if not _SCHEMA_NAME.fullmatch(chosen):
        raise InvalidInputError(
            f"schema name {chosen!r} in {shown} is not a plain identifier (letters, digits, _; ≤ 63)"
        )
    return StoreUrl(conninfo=conninfo, schema=chosen, shown=shown)
