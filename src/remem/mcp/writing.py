"""The tools that write: memory_add, memory_edit, memory_forget (absent with ``--read-only``).

Forgetting by filter is two calls: a dry run lists the memories the filters select and gives a
``confirm`` token naming exactly those (a hash of their ids, creation times and texts); the real call
passes it back and forgets them, or nothing if the filters now select anything else.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace

import remem
from remem.errors import InvalidInputError, MemoryNotFoundError
from remem.inputs import expiry_iso
from remem.mcp.schemas import (
    ANY_MEMORY,
    AddOut,
    Confirm,
    DryRun,
    EditMeta,
    EditTags,
    Expires,
    ForgetIds,
    ForgetOut,
    MemoryId,
    MemoryOut,
    Meta,
    NewConversation,
    NewRole,
    NewText,
    SimilarOut,
    Supersedes,
    Tags,
    Text,
)
from remem.mcp.scope import Scope
from remem.mcp.service import Service


def memory_add(
    service: Service,
    scope: Scope,
    text: Text,
    tags: Tags = None,
    meta: Meta = None,
    role: NewRole = None,
    conversation: NewConversation = None,
    supersedes: Supersedes = None,
    expires: Expires = None,
) -> AddOut:
    """Remember a text (a fact, decision or preference worth keeping); the same text is kept once,
    and is current again if it was superseded or expired. If it updates a stored memory, pass that
    one's id as supersedes (see similar)."""

    expires_at = expiry_iso(expires, "expires")  # named as this tool names it

    def add(memories: remem.Memories) -> AddOut:
        if supersedes is not None and not scope.changeable(memories.get_many([supersedes])):
            raise InvalidInputError(f"supersedes: there is no memory {supersedes}", parameter="supersedes")
        embed = service.ready  # while the model loads, store it now and embed it once loaded
        result = memories.add(
            text,
            user=scope.user,
            conversation=scope.conversation if scope.conversation is not None else conversation,
            role=role,
            tags=tags,
            meta=meta,
            embed=embed,
            supersedes=supersedes,
            expires_at=expires_at,
            written_by=scope.writer,  # the server's, never an argument's
        )
        return AddOut(
            id=result.id,
            duplicate=result.duplicate,
            embedded=embed and not result.duplicate,
            supersedes=supersedes,
            current_again=result.current_again,
            superseded=list(result.superseded),
            similar=[SimilarOut(id=similar.id, score=similar.score) for similar in result.similar],
        )

    return service.run(add)


def memory_edit(
    service: Service,
    scope: Scope,
    id: MemoryId,
    text: NewText = None,
    tags: EditTags = None,
    meta: EditMeta = None,
) -> MemoryOut:
    """Change a memory's text, tags or meta (what is given replaces it), keeping its id and
    creation time."""
    if text is not None:
        service.wait_ready()  # the new text is embedded: let the warm-up load the model, not this call

    def edit(memories: remem.Memories) -> remem.Memory:
        if not scope.changeable(memories.get_many([id])):
            raise MemoryNotFoundError([id])
        return memories.edit(id, text, tags=tags, meta=meta)

    return MemoryOut.of(service.run(edit))


def memory_forget(
    service: Service,
    scope: Scope,
    ids: ForgetIds = None,
    dry_run: DryRun = False,
    confirm: Confirm = None,
    where: remem.Filters = ANY_MEMORY,
) -> ForgetOut:
    """Forget memories by id, or those the filters select: first with dry_run, which lists them and
    gives a confirm token, then with the same filters and that confirm to forget exactly those."""
    filtering = where != scope.filters()  # a filter beyond the pin was asked for
    if (ids is None) == (not filtering):
        raise InvalidInputError("give ids, or at least one filter (not both)")
    if confirm is not None and (ids is not None or dry_run):
        raise InvalidInputError("confirm goes with filters and without dry_run (ids are forgotten as given)")
    if ids is not None:
        return service.run(lambda memories: _forget_ids(scope, memories, ids, dry_run))
    own = replace(where, shared=False)  # a pinned user sees the shared memories, but forgets only its own
    return service.run(lambda memories: _forget_where(memories, own, dry_run, confirm))


def _forget_ids(scope: Scope, memories: remem.Memories, ids: list[int], dry_run: bool) -> ForgetOut:
    """Forget the memories of ``ids`` inside the pin; the others are missing (InvalidInputError, and
    nothing forgotten, when one is a shared memory the caller sees but may not change)."""
    asked = sorted(set(ids))
    mine = sorted(scope.changeable(memories.get_many(asked)))
    missing = sorted(set(asked) - set(mine))
    if dry_run or not mine:
        return ForgetOut(dry_run=dry_run, count=len(mine), forgotten=mine, missing=missing)
    done = memories.forget(mine)
    forgotten = [memory.id for memory in done.forgotten]
    missing = sorted(missing + list(done.missing))
    return ForgetOut(dry_run=False, count=len(forgotten), forgotten=forgotten, missing=missing)


def _forget_where(
    memories: remem.Memories, where: remem.Filters, dry_run: bool, confirm: str | None
) -> ForgetOut:
    """Forget what ``where`` selects when ``confirm`` names exactly those memories (``plan_token``)."""
    plan = memories.forget(where=where, dry_run=True).forgotten
    ids, token = [memory.id for memory in plan], plan_token(plan)
    if dry_run:
        return ForgetOut(dry_run=True, count=len(ids), forgotten=ids, missing=[], confirm=token)
    if not ids:  # nothing to forget, so nothing to confirm
        return ForgetOut(dry_run=False, count=0, forgotten=[], missing=[])
    if confirm is None:
        raise InvalidInputError(
            f"{_match(len(ids))}; nothing was forgotten: list them with dry_run, then call again with "
            "the same filters and its confirm"
        )
    if confirm != token:
        raise InvalidInputError(
            f"confirm does not match what these filters select now ({_match(len(ids))}): the memories "
            "changed since its dry run, or it came from another one; nothing was forgotten: check them "
            "again with dry_run"
        )
    done = memories.forget(ids)
    forgotten = [memory.id for memory in done.forgotten]
    missing = list(done.missing)  # forgotten by someone else since this call's check
    return ForgetOut(dry_run=False, count=len(forgotten), forgotten=forgotten, missing=missing)


def plan_token(plan: Sequence[remem.Memory]) -> str:
    """A short token naming exactly these memories: their ids, creation times and texts (so a memory
    added, forgotten, edited, or imported again under a reused id since gives another token)."""
    digest = hashlib.sha256()
    for memory in sorted(plan, key=lambda memory: memory.id):
        digest.update(f"{memory.id}\t{memory.created_at}\t{memory.sha256}\n".encode())
    return digest.hexdigest()[:16]


def _match(count: int) -> str:
    return "1 memory matches" if count == 1 else f"{count} memories match"
