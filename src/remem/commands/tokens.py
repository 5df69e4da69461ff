"""`remem token …`: add, list and revoke the bearer tokens of `remem serve`.

A token's secret is printed once, by `add`, alone on stdout; the store keeps only its hash, so
`list` can never show it.
"""

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any

import typer

import remem
from remem import render
from remem.commands import options as opt
from remem.commands.common import note, open_memories, print_results
from remem.errors import InvalidInputError
from remem.inputs import parse_expiry

token_app = typer.Typer(
    name="token",
    help="Bearer tokens of `remem serve`: add (shown once), list, revoke.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def register(app: typer.Typer) -> None:
    """Add the `token` command group to the app."""
    app.add_typer(token_app)


def token_record(token: remem.Token) -> dict[str, Any]:
    """A token as a JSON-ready dict: its fields (never a secret or a hash: it has neither)."""
    return asdict(token)


def _access(token: remem.Token) -> str:
    return "read-only" if token.read_only else "read-write"


def _sees(token: remem.Token) -> str:
    return "everything" if token.admin else "own only" if token.private else "own + shared"


def _table(tokens: Sequence[remem.Token], width: int | None) -> str:
    if not tokens:
        return "No tokens."
    rows = [
        [
            render.visible(t.name),
            "admin" if t.user is None else render.visible(t.user),
            render.visible(t.conversation or ""),
            _access(t),
            _sees(t),
            _moment(t.created_at),
            _expires(t),
        ]
        for t in tokens
    ]
    return render.table(["NAME", "USER", "CONVERSATION", "ACCESS", "SEES", "CREATED", "EXPIRES"], rows, width)


def _moment(iso: str) -> str:
    """A stored UTC time to the minute, as the table shows it."""
    return iso[:16].replace("T", " ")


def _expires(token: remem.Token) -> str:
    """When a token stops working: ``never``, the time, or ``expired`` with the time."""
    if token.expires_at is None:
        return "never"
    return ("expired " if token.expired() else "") + _moment(token.expires_at)


def _summary(token: remem.Token) -> str:
    """What a token lets its holder do, in one sentence for a person."""
    if token.user is None:
        scope = "(admin): every user's memories"
    else:
        whose = "only their own memories" if token.private else "their memories and the shared ones"
        scope = f"for user {render.visible(token.user)}: {whose}"
    where = "" if token.conversation is None else f" in conversation {render.visible(token.conversation)}"
    until = "" if token.expires_at is None else f", until {_moment(token.expires_at)} UTC"
    return f'Token "{token.name}" {scope}{where}, {_access(token)}{until}.'


@token_app.command()
def add(
    user: Annotated[
        str | None,
        typer.Option("--user", "-u", metavar="NAME", help="The user every call with it is pinned to."),
    ] = None,
    admin: Annotated[
        bool, typer.Option("--admin", help="A token of no user: it sees and changes every user's memories.")
    ] = False,
    name: Annotated[
        str | None,
        typer.Option(
            "--name", metavar="LABEL", help="Its name, for `token revoke` [default: the user's, or admin]."
        ),
    ] = None,
    conversation: Annotated[
        str | None,
        typer.Option("--conversation", "-c", metavar="ID", help="Pin every call to this conversation too."),
    ] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="No add, edit or forget.")] = False,
    private: Annotated[
        bool, typer.Option("--private", help="With --user: its own memories only, not the shared ones.")
    ] = False,
    expires: Annotated[
        str | None,
        typer.Option(
            "--expires",
            metavar="WHEN",
            help="It stops working at WHEN: 30m, 12h, 30d, 2w from now, or an ISO date/time (UTC "
            "without an offset) [default: never].",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the token to FILE, a new file only its owner can read (0600), not stdout.",
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help='Print one JSON object: "token" and the token\'s fields.')
    ] = False,
    store: opt.StoreOption = None,
) -> None:
    """Make a bearer token and print it, once, alone on stdout (the store keeps only its hash);
    with --output FILE write it to that new file, readable by its owner only.

    Give exactly one of --user NAME (calls see that user's memories and the shared ones) or
    --admin (calls see every memory). Clients send it as the HTTP header
    `Authorization: Bearer <token>`.
    """
    if (user is None) == (not admin):
        raise InvalidInputError(
            "--user and --admin exclude each other: give one"
            if admin
            else "give --user NAME (a token for one user) or --admin "
            "(a token that sees every user's memories)"
        )
    # Every value checked as a Token checks it, before a store is made for a bad one.
    now = datetime.now(timezone.utc)
    expiry = parse_expiry(expires, "expires_at", now)
    ends = None if expiry is None else expiry.isoformat()
    remem.Token(name or "unnamed", user, conversation, read_only, private, now.isoformat(), ends)
    with _token_file(output) as write, open_memories(store, create=True) as memories:
        assert memories is not None  # create=True: a store, or an error
        secret, token = memories.tokens.add(
            user=user,
            name=name,
            conversation=conversation,
            read_only=read_only,
            private=private,
            expires_at=expires,
        )
        write(secret)
    shown = {"token": secret} if output is None else {"output": str(output)}
    if json_out or output is None:
        typer.echo(render.json_line({**shown, **token_record(token)}) if json_out else secret)
    holder = "its holder" if token.user is None else render.visible(token.user)
    note(_summary(token))
    note(
        f"It is shown only this once: give it to {holder} (as an HTTP header: Authorization: Bearer <token>)."
    )


@contextlib.contextmanager
def _token_file(path: Path | None) -> Iterator[Callable[[str], None]]:
    """A ``write(token)`` for ``--output``: into ``path``, created new (never a file or link that
    exists) with mode 0600 before the token is made; removed again when no token was written.
    Without a path, ``write`` does nothing (the token goes to stdout)."""
    if path is None:
        yield lambda secret: None
        return
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InvalidInputError(
            f"--output {render.visible(str(path))} exists: a token goes only into a new file"
        ) from None
    written = False
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:

            def write(secret: str) -> None:
                nonlocal written
                file.write(f"{secret}\n")
                file.flush()
                written = True

            yield write
    finally:
        if not written:
            path.unlink(missing_ok=True)


@token_app.command("list")
def list_tokens(json_out: opt.JsonOption = False, store: opt.StoreOption = None) -> None:
    """The store's tokens by name: user (or admin), conversation, access, what they see, created,
    when they expire (an expired one is refused, as a revoked one; revoke it to remove it).

    Never a token itself: the store keeps only hashes.
    """
    with open_memories(store, create=False) as memories:
        tokens = [] if memories is None else memories.tokens.list()
    print_results(tokens, json_out, token_record, _table)


@token_app.command()
def revoke(
    name: Annotated[str, typer.Argument(metavar="NAME", help="A token's name from `remem token list`.")],
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Remove a token: every server on the store refuses it from its next call on.

    Exit 1 when no token has that name (nothing changes).
    """
    with open_memories(store, create=False, if_missing="fail") as memories:
        assert memories is not None  # if_missing="fail": a store, or an error
        token = memories.tokens.revoke(name)
    if json_out:
        typer.echo(render.json_line({**token_record(token), "revoked": True}))
    note(f'Revoked token "{token.name}".')
