"""PostgreSQL store addresses: ``postgresql://[user[:password]@][host][:port][,…]/[database][?param=value&…]``.

A store is one schema of one database (default schema ``remem``), so several stores can share a
database. remem reads the URL itself and hands libpq its parts as keywords, never the URL, so a
password is only ever libpq's ``password`` and no message can hold it; messages show the address
without it (``shown``). The URL may leave out anything libpq finds by itself (``postgresql:///db``
with ``PGHOST``, ``postgresql:///db?host=/run/postgresql``, ``postgresql://?service=NAME``). A user
name or password may hold ``@``, ``:`` or ``%``-escapes; one holding ``/``, ``?`` or ``#`` is read
right too, as long as the database name holds no ``@`` (write it ``%40``).

A schema name means what psql means by it: unquoted it is folded to lower case (``Public`` is
``public``), in double quotes it is taken as it is; PostgreSQL's own schemas are refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from remem.errors import InvalidInputError

SCHEMES = ("postgresql", "postgres")
DEFAULT_SCHEMA = "remem"
_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]{0,62}"
_SCHEMA_NAME = re.compile(rf'(?P<plain>{_IDENTIFIER})|"(?P<quoted>{_IDENTIFIER})"')
_SECRET_PARAMS = frozenset({"password", "sslpassword"})
_HOST = r"(?:\[[^\[\]/?@#]*\]|[A-Za-z0-9._~%-]*)(?::[0-9]*)?"
_HOSTS = re.compile(rf"{_HOST}(?:,{_HOST})*")
_QUERY = re.compile(r"(?:[A-Za-z_]+=[^&]*(?:&[A-Za-z_]+=[^&]*)*)?")
_SHAPE = "postgresql://[user[:password]@][host][:port]/[database][?param=value&…]"


@dataclass(frozen=True)
class StoreUrl:
    """A parsed store address: libpq's keywords (a conninfo string), the schema (as PostgreSQL
    names it), the address as it may be shown, and the schema as written when folding changed it."""

    conninfo: str
    schema: str
    shown: str
    folded_from: str = ""


@dataclass(frozen=True)
class _Parts:
    """A URL cut at its separators, every part still as written (percent-escaped)."""

    credentials: str | None
    hosts: str
    path: str
    query: str


def _cut(rest: str, at: int | None) -> _Parts | None:
    """The parts when the credentials end at ``at`` (None: there are none); None when what follows
    is not hosts, then ``/database`` (holding no ``@``), then ``?key=value&…`` (keys of letters and
    ``_``)."""
    credentials = None if at is None else rest[:at]
    tail = rest if at is None else rest[at + 1 :]
    address, _, query = tail.partition("?")
    hosts, slash, path = address.partition("/")
    if not _HOSTS.fullmatch(hosts) or "@" in path or not _QUERY.fullmatch(query):
        return None
    return _Parts(credentials, hosts, slash + path, query)


def _parts(rest: str) -> _Parts:
    """Where the credentials end: at the last ``@`` before the first ``/`` or ``?`` (libpq's reading,
    with ``@`` allowed in a password), else at the first ``@`` after which the URL reads right (a
    password holding ``/`` or ``?``)."""
    end = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    last = rest.rfind("@", 0, end)
    parts = _cut(rest, last if last >= 0 else None)
    ats = (i for i, char in enumerate(rest) if char == "@")
    parts = parts or next((p for p in (_cut(rest, i) for i in ats) if p is not None), None)
    if parts is None:  # say nothing of it: a password may be anywhere in it
        raise InvalidInputError(f"not a PostgreSQL URL of the form {_SHAPE} (%-encode / ? @ in a password)")
    return parts


def _decoded(value: str, what: str) -> str:
    """A %-escaped part of the URL; InvalidInputError (not quoting it) unless it decodes to UTF-8."""
    try:
        return unquote(value, errors="strict")
    except UnicodeDecodeError:
        raise InvalidInputError(f"the {what} in the PostgreSQL URL is not UTF-8 once %-decoded") from None


def _host_and_port(entry: str) -> tuple[str, str]:
    """One ``host[:port]`` of the host list (``[…]`` around an IPv6 address), %-decoded."""
    if entry.startswith("["):
        host, _, port = entry[1:].partition("]")
        port = port.removeprefix(":")
    else:
        host, _, port = entry.partition(":")
    return _decoded(host, "host"), port


def _keywords(parts: _Parts) -> dict[str, str]:
    """libpq's keywords from the URL's parts (empty ones left to libpq: environment, service file)."""
    found: dict[str, str] = {}
    if parts.credentials is not None:
        user, colon, password = parts.credentials.partition(":")
        found["user"] = _decoded(user, "user name")
        if colon:
            found["password"] = _decoded(password, "password")
    hosts, ports = zip(*(_host_and_port(entry) for entry in parts.hosts.split(",")), strict=True)
    found.update(host=",".join(hosts), port=",".join(ports), dbname=_decoded(parts.path[1:], "database"))
    return {key: value for key, value in found.items() if value.strip(",")}


def _params(query: str) -> list[tuple[str, str, str]]:
    """The query's (key, value, as written) triples; ``ssl=true`` is libpq's ``sslmode=require``."""
    params = []
    for pair in query.split("&") if query else []:
        key, _, value = pair.partition("=")
        value = _decoded(value, key)
        params.append(("sslmode", "require", pair) if (key, value) == ("ssl", "true") else (key, value, pair))
    keys = [key for key, _, _ in params]
    repeated = next((key for key in keys if keys.count(key) > 1), None)
    if repeated is not None:  # which one would win is no one's guess: say so, show no value
        raise InvalidInputError(
            f"the PostgreSQL URL gives {repeated}= more than once: give each parameter once"
        )
    return params


def _schema(name: str, shown: str) -> tuple[str, str]:
    """The schema as PostgreSQL names it and, when folding to lower case changed it, as written."""
    match = _SCHEMA_NAME.fullmatch(name)
    if match is None:
        raise InvalidInputError(
            f"schema name {name!r} in {shown} is not a plain identifier (letters, digits, _; ≤ 63)"
        )
    schema = match["quoted"] or match["plain"].lower()
    if schema.startswith("pg_") or schema == "information_schema":
        raise InvalidInputError(f"schema {schema} in {shown} is PostgreSQL's own: choose another ?schema=")
    return schema, ("" if match["quoted"] or schema == name else name)


def shown_schema(schema: str) -> str:
    """How a schema is written in a URL: in double quotes when it has capitals."""
    return schema if schema == schema.lower() else f'"{schema}"'


def _conninfo(keywords: dict[str, str]) -> str:
    """libpq's ``key='value'`` form (``\\`` and ``'`` escaped)."""
    escaped = (value.replace("\\", "\\\\").replace("'", "\\'") for value in keywords.values())
    return " ".join(f"{key}='{value}'" for key, value in zip(keywords, escaped, strict=True))


def parse(url: str, schema: str | None = None) -> StoreUrl:
    """Split a store URL into libpq's keywords (without remem's ``schema`` parameter), the schema
    (``schema`` argument, else ``?schema=``, else ``remem``) and the address without its password.

    InvalidInputError for a URL that is not one, one giving a parameter twice, a
    ``connect_timeout`` that is not a whole number, or a schema name that is not a plain
    identifier (letters, digits, ``_``; at most 63 characters; in double quotes to keep capitals)
    or is PostgreSQL's own (``pg_…``, ``information_schema``).
    """
    scheme, separator, rest = url.strip().partition("://")
    if not separator or scheme.lower() not in SCHEMES:
        raise InvalidInputError("a PostgreSQL store URL starts with postgresql://")
    parts = _parts(rest)
    params = _params(parts.query)
    keywords = _keywords(parts) | {key: value for key, value, _ in params if key != "schema"}
    user = "" if parts.credentials is None else parts.credentials.partition(":")[0]
    shown = f"{scheme}://{user + '@' if user else ''}{parts.hosts}{parts.path}"
    query = [raw for key, _, raw in params if key not in _SECRET_PARAMS and key != "schema"]
    named = schema or next((value for key, value, _ in reversed(params) if key == "schema"), "")
    chosen, folded_from = _schema(named or DEFAULT_SCHEMA, shown + ("?" + "&".join(query) if query else ""))
    query += [f"schema={shown_schema(chosen)}"] if chosen != DEFAULT_SCHEMA else []
    shown += "?" + "&".join(query) if query else ""
    timeout = keywords.get("connect_timeout", "0").strip()
    if not timeout.removeprefix("-").isdigit():
        raise InvalidInputError(f"connect_timeout={timeout!r} in {shown} is not a whole number of seconds")
    return StoreUrl(conninfo=_conninfo(keywords), schema=chosen, shown=shown, folded_from=folded_from)
