"""Commands that change stored memories: edit and forget.

An id that names no memory is one rule everywhere (``show``, ``edit``, ``forget``): when no named
memory exists the command changes nothing and fails with ``Error: there is no memory N``, exit 1
(``remem.cli`` maps ``MemoryNotFoundError``); ``forget`` of several ids forgets the ones that exist
and warns about the others.
"""

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

import remem
from remem import render
from remem.commands import options as opt
from remem.commands.common import EXIT_NOTHING_FOUND, note, open_memories, print_results, stdin, warn
from remem.errors import InvalidInputError, MemoryNotFoundError
from remem.inputs import MAX_TEXT_CHARS, clean_tags, parse_meta, read_text, within_limit

T = TypeVar("T")


def register(app: typer.Typer) -> None:
    """Add these commands to the app."""
    app.command()(edit)
    app.command(context_settings=opt.IDS_MAY_BE_NEGATIVE)(forget)


def edit(
    memory_id: Annotated[int, typer.Argument(metavar="ID", help="The memory to change.")],
    text: Annotated[
        list[str] | None,
        typer.Argument(metavar="TEXT", help="Its new text (words are joined); - reads stdin."),
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag", "-t", metavar="TAG", help="Its tags from now on (repeatable): replace them all."
        ),
    ] = None,
    meta: Annotated[
        list[str] | None,
        typer.Option("--meta", "-m", metavar="KEY=VALUE", help="Its metadata from now on (repeatable)."),
    ] = None,
    no_tags: Annotated[bool, typer.Option("--no-tags", help="Remove all its tags.")] = False,
    no_meta: Annotated[bool, typer.Option("--no-meta", help="Remove all its metadata.")] = False,
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            "-u",
            metavar="NAME",
            help="Move it to this user (not a conversation's turn, nor one of a chain of replaced memories).",
        ),
    ] = None,
    no_user: Annotated[bool, typer.Option("--no-user", help="Make it a memory of no user (shared).")] = False,
    max_chars: opt.MaxCharsOption = MAX_TEXT_CHARS,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Change a memory: its text (re-embedded), its tags, its metadata, its user; keeps its id and
    created_at, records updated_at. Exit 1 if there is no such memory."""
    new_text = (
        within_limit(read_text(text, stdin(), limit=max_chars), max_chars, "memory text") if text else None
    )
    tags = _replacing(tag, no_tags, "--tag", "--no-tags", clean_tags)
    new_meta = _replacing(meta, no_meta, "--meta", "--no-meta", parse_meta)
    if user is not None and no_user:
        raise InvalidInputError("--user and --no-user exclude each other: give one")
    if new_text is None and tags is None and new_meta is None and user is None and not no_user:
        raise InvalidInputError("give a new TEXT, --tag, --meta, --user, --no-tags, --no-meta or --no-user")
    with open_memories(store, create=False) as memories:
        if memories is None:
            raise MemoryNotFoundError([memory_id])
        memories.max_text_chars = max_chars
        memory = memories.edit(memory_id, new_text, tags=tags, meta=new_meta, user=user, no_user=no_user)
    print_results([memory], json_out, render.memory_record, render.memories_table)


def _replacing(
    values: list[str] | None, none: bool, option: str, flag: str, parse: Callable[[Any], T]
) -> T | None:
    """What ``option`` (repeatable) or ``flag`` (none of them) makes of a field, parsed; None when
    neither is given; both is an error."""
    if values and none:
        raise InvalidInputError(f"{option} and {flag} exclude each other: give one")
    return parse(values or None) if values or none else None


@opt.with_filters(*opt.SELECTING)
def forget(
    ids: Annotated[list[int] | None, typer.Argument(metavar="ID", help="Memories to delete.")] = None,
    where: Annotated[bool, typer.Option("--where", help="Delete every memory the filters select.")] = False,
    expired: Annotated[
        bool, typer.Option("--expired", help="Delete every memory whose --expires time has passed (cron).")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be deleted.")] = False,
    everything: Annotated[bool, typer.Option("--all", hidden=True)] = False,
    include_superseded: Annotated[bool, typer.Option("--include-superseded", hidden=True)] = False,
    include_expired: Annotated[bool, typer.Option("--include-expired", hidden=True)] = False,
    filters: remem.Filters = opt.NO_FILTERS,
    wide: opt.WideOption = False,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Delete memories by id, with --where every memory the filters select (at least one filter),
    or with --expired every memory whose expiry has passed (exit 0 when none has: for cron).

    Prints what was deleted (with --dry-run: what would be). Exit 1 if nothing matched.
    Forgetting a memory that superseded another makes that one current again.
    """
    if include_superseded or include_expired:  # from search and list; without these, read as ids
        raise InvalidInputError(
            "forget selects superseded and expired memories too: "
            "drop --include-superseded and --include-expired"
        )
    _check_forget(bool(ids), where, expired, everything, filters)
    with open_memories(store, create=False) as memories:
        if memories is None:
            raise typer.Exit(EXIT_NOTHING_FOUND)
        if expired:
            result = memories.forget_expired(dry_run=dry_run)
        else:
            result = memories.forget(
                None if where else ids, where=filters if where else None, dry_run=dry_run
            )
    if not result.forgotten:
        if result.missing:
            raise MemoryNotFoundError(list(result.missing))
        if expired:
            note("No memory has expired.")
            return
        raise typer.Exit(EXIT_NOTHING_FOUND)
    for missing in result.missing:
        warn(f"there is no memory {missing}")
    print_results(list(result.forgotten), json_out, render.memory_record, render.memories_table, wide)
    count = len(result.forgotten)
    verb = "Would forget" if result.dry_run else "Forgot"
    note(f"{verb} {count} {'expired ' if expired else ''}memor{'y' if count == 1 else 'ies'}.")


def _check_forget(ids: bool, where: bool, expired: bool, everything: bool, filters: remem.Filters) -> None:
    """Refuse what forget cannot do: ids, --where with filters, or --expired alone — one of them."""
    if everything:  # a guess from other tools; without this option it would be read as an id
        raise InvalidInputError(
            "forget takes memory ids, or --where with filters (--tag, --user, --since…); there is no "
            "--all: to forget everything, delete the store"
        )
    if expired:
        if ids or where or not filters.is_empty():
            raise InvalidInputError("--expired forgets every expired memory: give no ids, --where or filters")
        return
    if ids == where:
        raise InvalidInputError("give memory ids, or --where with filters (not both)")
    if not where and not filters.is_empty():
        raise InvalidInputError("filters only apply with --where")
