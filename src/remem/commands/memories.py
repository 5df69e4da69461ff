"""Commands that add and list memories."""

import contextlib
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

import remem
from remem import render
from remem.commands import options as opt
from remem.commands.common import (
    EXIT_NOTHING_FOUND,
    note,
    open_memories,
    print_results,
    progress_bar,
    selecting_none,
    stdin,
    warn,
)
from remem.errors import InvalidInputError, RememError
from remem.inputs import (
    MAX_TEXT_CHARS,
    clean_name,
    clean_tags,
    expiry_iso,
    parse_meta,
    read_text,
    within_limit,
)

DEFAULT_LIST_LIMIT = 20
#: A text longer than this (characters) shows a progress bar while its windows are embedded.
LONG_TEXT_CHARS = 50_000


def register(app: typer.Typer) -> None:
    """Add these commands to the app."""
    app.command()(add)
    app.command("list")(list_memories)


def add(
    text: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="TEXT", help="The memory (words are joined); - reads stdin (remem add - < FILE)."
        ),
    ] = None,
    lines: Annotated[
        str | None,
        typer.Option("--lines", metavar="FILE", help="Add one memory per non-empty line (- is stdin)."),
    ] = None,
    jsonl: Annotated[
        str | None,
        typer.Option("--jsonl", metavar="FILE", help="Add one memory per JSON object line (- is stdin)."),
    ] = None,
    skip_invalid: Annotated[
        bool,
        typer.Option("--skip-invalid", help="With --lines/--jsonl: add the good lines, report bad ones."),
    ] = False,
    literal: Annotated[
        bool,
        typer.Option("--literal", help="TEXT is the words themselves, even when it names a file."),
    ] = False,
    tag: opt.TagOption = None,
    user: opt.UserOption = None,
    conversation: opt.ConversationOption = None,
    role: opt.RoleOption = None,
    meta: Annotated[
        list[str] | None,
        typer.Option("--meta", "-m", metavar="KEY=VALUE", help="key=value metadata; repeatable."),
    ] = None,
    supersedes: Annotated[
        int | None,
        typer.Option(
            "--supersedes",
            metavar="ID",
            min=1,
            help="This memory replaces memory ID (same user and conversation): ID is left out of "
            "search, list and context from now on; it takes ID's user, conversation, tags and "
            "metadata unless given.",
        ),
    ] = None,
    expires: Annotated[
        str | None,
        typer.Option(
            "--expires",
            metavar="WHEN",
            help="Leave it out from WHEN on: 30m, 12h, 30d, 2w from now, or an ISO date/time (UTC "
            "without an offset); `remem forget --expired` deletes it then.",
        ),
    ] = None,
    max_chars: opt.MaxCharsOption = MAX_TEXT_CHARS,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Store a memory and print its id; or many at once with --lines / --jsonl.

    A TEXT that names an existing file is refused (to store the file: `remem add - < FILE`; the
    words themselves: --literal). The same text in the same user/conversation is stored once:
    adding it again prints the existing id (and says so on stderr) without loading the model; if
    that memory was superseded or expired, it is current again (with this --expires). A stored
    memory that says nearly the same is named on stderr (--json: "similar"); add the text again
    with --supersedes ID if it replaces that one. A batch (--lines, --jsonl) is one transaction:
    all of it is added, or nothing; the options give every memory of it their values.
    """
    defaults = remem.NewMemory(
        text="",
        user=clean_name(user, "--user"),
        conversation=clean_name(conversation, "--conversation"),
        role=clean_name(role, "--role"),
        tags=clean_tags(tag),
        meta=parse_meta(meta),
        expires_at=expiry_iso(expires, "expires_at"),
    )
    if lines is not None or jsonl is not None:
        if text or (lines is not None and jsonl is not None):
            raise InvalidInputError("give TEXT, --lines FILE or --jsonl FILE (only one)")
        if supersedes is not None:
            raise InvalidInputError("--supersedes goes with one TEXT, not with --lines or --jsonl")
        _add_batch(lines, jsonl, defaults, (skip_invalid, max_chars), json_out, store)
        return
    named = None if literal else _named_file(text)
    if named is not None:
        shown = render.visible(shlex.quote(named))
        raise InvalidInputError(
            f"{shown} is a file: to store its contents, `remem add - < {shown}`; "
            f"to store the words themselves, `remem add --literal {shown}`"
        )
    body = within_limit(read_text(text, stdin(), limit=max_chars), max_chars, "memory text")
    result, similar = _add_one(body, replace(defaults, supersedes=supersedes), max_chars, store)
    _print_added(result, similar, supersedes, json_out)


def _add_one(
    body: str, memory: remem.NewMemory, max_chars: int, store: str | None
) -> tuple[remem.AddResult, dict[int, remem.Memory]]:
    """Add ``body`` with the fields of ``memory``; the result, and the similar memories it names."""
    long_text = len(body) > LONG_TEXT_CHARS  # a short text takes no time to embed: no bar to leave behind
    bar = progress_bar(1, "Embedding") if long_text else contextlib.nullcontext(None)
    with open_memories(store, create=True) as memories, bar as progress:
        assert memories is not None
        memories.max_text_chars, m = max_chars, memory
        result = memories.add(
            body,
            user=m.user,
            conversation=m.conversation,
            role=m.role,
            tags=m.tags or None,  # none given: a superseding memory takes the old one's
            meta=m.meta or None,
            progress=progress,
            supersedes=m.supersedes,
            expires_at=m.expires_at,
        )
        try:  # the memory is stored: a failed read of the similar ones only leaves them unnamed
            return result, memories.get_many([similar.id for similar in result.similar])
        except RememError as exc:
            warn(f"Memory {result.id} is stored; the similar memories could not be read: {exc}")
            return result, {}


def _print_added(
    result: remem.AddResult, similar: dict[int, remem.Memory], supersedes: int | None, json_out: bool
) -> None:
    """The id (--json: a record with the similar memories), and on stderr what else happened."""
    if json_out:
        shown = [{"id": s.id, "score": s.score} for s in result.similar]
        record = {"id": result.id, "duplicate": result.duplicate, "supersedes": supersedes}
        again = {"current_again": result.current_again, "superseded": list(result.superseded)}
        typer.echo(render.json_line({**record, **again, "similar": shown}))
    else:
        typer.echo(str(result.id))
    if result.current_again:
        note(f"Memory {result.id} is current again{_superseding(result.superseded)}.")
    elif result.duplicate:
        now = f"; it supersedes memory {supersedes} now" if supersedes is not None else ""
        note(f"Already stored as memory {result.id}; not added again{now}.")
    elif supersedes is not None:
        note(f"Memory {result.id} supersedes memory {supersedes}.")
    for found in result.similar:
        if found.id in similar:  # forgotten meanwhile: nothing to say
            quoted = render.excerpt(similar[found.id].text)
            note(
                f'Similar to memory {found.id} ({found.score:.2f}): "{quoted}"; '
                f"to replace it: remem add --supersedes {found.id} …"
            )


def _superseding(ids: tuple[int, ...]) -> str:
    """``, superseding memory 2`` (or memories 2 and 5); nothing for none."""
    if not ids:
        return ""
    named = " and ".join([", ".join(map(str, ids[:-1])), str(ids[-1])] if len(ids) > 1 else [str(ids[0])])
    return f", superseding memor{'ies' if len(ids) > 1 else 'y'} {named}"


def _named_file(text: list[str] | None) -> str | None:
    """The only TEXT when it names an existing file (the user likely meant its contents), else None."""
    if not text or len(text) != 1 or text[0] == "-" or len(text[0]) > 4096 or "\n" in text[0]:
        return None
    try:
        return text[0] if Path(text[0]).is_file() else None
    except (OSError, ValueError):
        return None


def _add_batch(
    lines: str | None,
    jsonl: str | None,
    defaults: remem.NewMemory,
    checks: tuple[bool, int],
    json_out: bool,
    store: str | None,
) -> None:
    from remem.commands.bulk import ingest, print_report  # noqa: PLC0415
    from remem.ingest import jsonl_entries, line_entries  # noqa: PLC0415 - `list` needs neither

    skip_invalid, max_chars = checks
    kind = line_entries if lines is not None else jsonl_entries
    report = ingest(
        lines or jsonl or "-", lambda read: kind(read, defaults, max_chars), skip_invalid, max_chars, store
    )
    print_report(report, json_out)


@opt.with_filters()
def list_memories(
    limit: opt.LimitOption = DEFAULT_LIST_LIMIT,
    filters: remem.Filters = opt.NO_FILTERS,
    wide: opt.WideOption = False,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Show memories, newest first. Exit 1 if there are none, saying why."""
    with open_memories(store, create=False) as memories:
        found = [] if memories is None else memories.list(limit=limit, where=filters)
    if not found:
        if memories is not None:
            note(selecting_none(filters))
        raise typer.Exit(EXIT_NOTHING_FOUND)
    print_results(found, json_out, render.memory_record, render.memories_table, wide)
