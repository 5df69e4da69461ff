"""How remem reads a PostgreSQL store URL into libpq's keywords, the schema and the address it shows:
the password only ever in libpq's ``password`` keyword, never in what is shown or said."""

from __future__ import annotations

import pytest

from remem.backends.postgres.urls import parse
from remem.errors import InvalidInputError


def _keywords(conninfo: str) -> dict[str, str]:
    """libpq's ``key='value'`` pairs back into a dict (values as remem escaped them)."""
    found, rest = {}, conninfo
    while rest:
        key, _, rest = rest.partition("='")
        value, i = [], 0
        while rest[i] != "'":
            value.append(rest[i + 1] if rest[i] == "\\" else rest[i])
            i += 2 if rest[i] == "\\" else 1
        found[key.strip()], rest = "".join(value), rest[i + 1 :]
    return found


@pytest.mark.parametrize(
    ("url", "keywords", "shown"),
    [
        (
            "postgresql:///team?host=/run/pg",
            {"dbname": "team", "host": "/run/pg"},
            "postgresql:///team?host=/run/pg",
        ),
        ("postgresql://?service=team", {"service": "team"}, "postgresql://?service=team"),
        ("postgresql:///team", {"dbname": "team"}, "postgresql:///team"),
        ("postgres://ann@db.example/team", {"user": "ann", "host": "db.example", "dbname": "team"}, None),
        (
            "postgresql://ann:stro@ngRaw55@127.0.0.1/team",
            {"user": "ann", "password": "stro@ngRaw55", "host": "127.0.0.1", "dbname": "team"},
            "postgresql://ann@127.0.0.1/team",
        ),
        (
            "postgresql://app:Ab3/x+y=@db.example:6432/team",
            {"user": "app", "password": "Ab3/x+y=", "host": "db.example", "port": "6432", "dbname": "team"},
            "postgresql://app@db.example:6432/team",
        ),
        (
            "postgresql://u:a%3Ab%2Fc%40d%25@h/db",
            {"user": "u", "password": "a:b/c@d%", "host": "h", "dbname": "db"},
            "postgresql://u@h/db",
        ),
        (
            "postgresql://u:12?x#y@h/db?user=ann@corp",
            {"user": "ann@corp", "password": "12?x#y", "host": "h", "dbname": "db"},
            "postgresql://u@h/db?user=ann@corp",
        ),
        (
            "postgresql://[::1]:5433,%2Frun%2Fpg/db?ssl=true&password=pw&options=-c%20a%3Db",
            {
                "host": "::1,/run/pg",
                "port": "5433,",
                "dbname": "db",
                "sslmode": "require",
                "password": "pw",
                "options": "-c a=b",
            },
            "postgresql://[::1]:5433,%2Frun%2Fpg/db?ssl=true&options=-c%20a%3Db",
        ),
        (
            "postgresql://h/my%40db?connect_timeout=3",
            {"host": "h", "dbname": "my@db", "connect_timeout": "3"},
            None,
        ),
    ],
)
def test_a_url_becomes_libpqs_keywords(url: str, keywords: dict[str, str], shown: str | None) -> None:
    parsed = parse(url)
    assert _keywords(parsed.conninfo) == keywords
    assert parsed.shown == (shown or url)
    assert parsed.schema == "remem"


@pytest.mark.parametrize(
    ("given", "schema", "shown", "folded_from"),
    [
        ("Platform", "platform", "schema=platform", "Platform"),
        ("platform", "platform", "schema=platform", ""),
        ('"Platform"', "Platform", 'schema="Platform"', ""),
        ("remem", "remem", "", ""),
    ],
)
def test_a_schema_name_means_what_psql_means(given: str, schema: str, shown: str, folded_from: str) -> None:
    for parsed in (parse(f"postgresql://h/db?schema={given}"), parse("postgresql://h/db", schema=given)):
        assert (parsed.schema, parsed.folded_from) == (schema, folded_from)
        assert parsed.shown == "postgresql://h/db" + (f"?{shown}" if shown else "")
        assert "schema" not in _keywords(parsed.conninfo)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://h/db", "starts with postgresql://"),
        ("postgresql://h/db?schema=information_schema", "is PostgreSQL's own"),
        ("postgresql://h/db?schema=PG_Catalog", "schema pg_catalog in postgresql://h/db is PostgreSQL's own"),
        ("postgresql://h/db?schema=no;drop", "is not a plain identifier"),
        ("postgresql://h/db?connect_timeout=2.5", "is not a whole number of seconds"),
        ("postgresql://u:s3cr%ffet@h/db", "password in the PostgreSQL URL is not UTF-8"),
        ("postgresql://u:s3cret@bad host/db", "not a PostgreSQL URL of the form"),
        ("postgresql://u:s3cret:9x/db", "not a PostgreSQL URL of the form"),
    ],
)
def test_a_bad_url_is_one_line_without_the_password(url: str, message: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        parse(url)
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert "s3cr" not in str(refused.value)


@pytest.mark.parametrize(
    ("query", "repeated"),
    [
        ("schema=a&schema=b", "schema="),
        ("password=s3cret&password=s3cret2", "password="),
        ("sslmode=disable&ssl=true", "sslmode="),
        ("connect_timeout=5&application_name=x&connect_timeout=9", "connect_timeout="),
    ],
)
def test_a_parameter_given_twice_is_refused(query: str, repeated: str) -> None:
    """Issue 46, finding 9f: ``?schema=a&schema=b`` silently took b."""
    with pytest.raises(InvalidInputError) as refused:
        parse(f"postgresql://u:s3cret@h/db?{query}")
    message = str(refused.value)
    assert f"gives {repeated} more than once" in message and "\n" not in message
    assert "s3cr" not in message
