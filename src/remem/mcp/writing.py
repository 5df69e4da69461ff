"""The tools that write: memory_add, memory_edit, memory_forget (absent with ``--read-only``).

Forgetting by filter is two calls: a dry run reports how many memories match, and the real one must
repeat that count as ``confirm_count`` — if the store changed meanwhile, nothing is forgotten.
"""

from __future__ import annotations

import remem
from remem.errors import InvalidInputError, MemoryNotFoundError
from remem.mcp.schemas import (
    ANY_MEMORY,
    AddOut,
    ConfirmCount,
    DryRun,
    ForgetIds,
    ForgetOut,
    MemoryId,
    MemoryOut,
    Meta,
    NewConversation,
    NewRole,
    Tags,
    Text,
)
from remem.mcp.service import Service


def memory_add(
    service: Service,
    text: Text,
    tags: Tags = (),
    meta: Meta = None,
    role: NewRole = None,
    conversation: NewConversation = None,
) -> AddOut:
    """Remember a text (a fact, decision or preference worth keeping); the same text is kept once."""
    scope = service.scope

    def add(memories: remem.Memories) -> AddOut:
        embed = service.ready  # while the model loads, store it now and embed it once loaded
        result = memories.add(
            text,
            user=scope.user,
            conversation=scope.conversation if scope.conversation is not None else conversation,
            role=role,
            tags=tags,
            meta=meta,
            embed=embed,
        )
        return AddOut(id=result.id, duplicate=result.duplicate, embedded=embed and not result.duplicate)

    return service.run(add)


def memory_edit(service: Service, id: MemoryId, text: Text) -> MemoryOut:
    """Replace a memory's text, keeping its id and creation time."""
    service.wait_ready()  # the new text is embedded: let the warm-up load the model, not this call

    def edit(memories: remem.Memories) -> remem.Memory:
        if not service.scope.visible(memories.get_many([id])):
            raise MemoryNotFoundError([id])
        return memories.edit(id, text)

    return MemoryOut.of(service.run(edit))


def memory_forget(
    service: Service,
    ids: ForgetIds = None,
    dry_run: DryRun = False,
    confirm_count: ConfirmCount = None,
    where: remem.Filters = ANY_MEMORY,
) -> ForgetOut:
    """Forget memories by id, or every memory the filters select: first with dry_run to get the
    count, then again with confirm_count set to it."""
    filtering = where != service.scope.filters()  # a filter beyond the pin was asked for
    if (ids is None) == (not filtering):
        raise InvalidInputError("give ids, or at least one filter (not both)")
    if ids is not None:
        return service.run(lambda memories: _forget_ids(service, memories, ids, dry_run))
    return service.run(lambda memories: _forget_where(memories, where, dry_run, confirm_count))


def _forget_ids(service: Service, memories: remem.Memories, ids: list[int], dry_run: bool) -> ForgetOut:
    """Forget the memories of ``ids`` inside the pin; the others are missing."""
    asked = sorted(set(ids))
    mine = sorted(service.scope.visible(memories.get_many(asked)))
    missing = sorted(set(asked) - set(mine))
    if dry_run or not mine:
        return ForgetOut(dry_run=dry_run, count=len(mine), forgotten=mine, missing=missing)
    done = memories.forget(mine)
    forgotten = [memory.id for memory in done.forgotten]
    missing = sorted(missing + list(done.missing))
    return ForgetOut(dry_run=False, count=len(forgotten), forgotten=forgotten, missing=missing)


def _forget_where(
    memories: remem.Memories, where: remem.Filters, dry_run: bool, confirm_count: int | None
) -> ForgetOut:
    """Forget what ``where`` selects when ``confirm_count`` is how many that is."""
    plan = [memory.id for memory in memories.forget(where=where, dry_run=True).forgotten]
    if dry_run:
        return ForgetOut(dry_run=True, count=len(plan), forgotten=plan, missing=[])
    if confirm_count is None:
        raise InvalidInputError(
            f"{_match(len(plan))}; nothing was forgotten: to forget them, call again with "
            f"confirm_count={len(plan)}"
        )
    if confirm_count != len(plan):
        raise InvalidInputError(
            f"{_match(len(plan))} now, not {confirm_count}; nothing was forgotten: check them again "
            "with dry_run"
        )
    done = memories.forget(plan) if plan else None
    forgotten = [memory.id for memory in done.forgotten] if done else []
    return ForgetOut(dry_run=False, count=len(forgotten), forgotten=forgotten, missing=[])


def _match(count: int) -> str:
    return "1 memory matches" if count == 1 else f"{count} memories match"
