"""Memories that change, the same on both back-ends: what a supersede may link, and how a forget
keeps the links of the memories it leaves consistent.

A superseded memory names the memory that replaced it (``superseded_by``, always a later id: ids
only grow) and when (``superseded_at``); a memory may replace several. The rules:

- a memory supersedes only one of the same user and the same conversation (a memory pinned to a
  user cannot retire another user's, nor a shared one);
- a memory supersedes only an older one: the same text added again with ``supersedes`` links the
  memory that holds it, refused when that one is older than the memory it would supersede (the link
  would point back in time, and close a loop when it is the memory that was superseded);
- a memory superseded once stays so: superseding it again (by another memory) is refused, naming
  the memory that replaced it, so two assistants correcting the same fact at once cannot both win
  (adding the same supersede again, by the same text, is not an error);
- forgetting a memory splices its chain: those it superseded point to the first memory after it
  that is not forgotten, or become current again when there is none (forgetting a correction brings
  back the fact it corrected).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from remem.errors import InvalidInputError, MemoryNotFoundError
from remem.types import NewMemory


@dataclass(frozen=True)
class Target:
    """What a supersede reads of the memory it retires (inside the writing transaction)."""

    id: int
    user: str | None
    conversation: str | None
    superseded_by: int | None


@dataclass(frozen=True)
class Link:
    """A supersede to write: memory ``new`` (of ``user`` and ``conversation``) replaces ``old`` at ``at``."""

    old: int
    new: int
    user: str | None
    conversation: str | None
    at: str

    @classmethod
    def of(cls, memory: NewMemory, new_id: int, at: str) -> Link | None:
        """The link ``memory``, stored as ``new_id``, asks for (None unless it has ``supersedes``)."""
        if memory.supersedes is None:
            return None
        return cls(memory.supersedes, new_id, memory.user, memory.conversation, memory.created_at or at)


def needs_link(link: Link, target: Target | None) -> bool:
    """Whether ``link`` may be written over ``target`` (its old memory as stored, None if there is
    none): True when it is to be written, False when it is there already; MemoryNotFoundError when
    there is no such memory, InvalidInputError when the rules (the module docstring) refuse it.
    Nothing is written either way."""
    new_id = link.new
    if target is None:
        raise MemoryNotFoundError([link.old])
    if target.id == new_id:
        raise InvalidInputError(
            f"supersedes: memory {target.id} holds this same text; a memory cannot supersede itself",
            parameter="supersedes",
        )
    if (target.user, target.conversation) != (link.user, link.conversation):
        raise InvalidInputError(
            f"supersedes: memory {target.id} is not of the same user and conversation; a memory "
            "supersedes only one of its own user and conversation",
            parameter="supersedes",
        )
    if new_id < target.id:
        raise InvalidInputError(
            f"supersedes: memory {new_id} holds this same text and is older than memory {target.id}; "
            "a memory supersedes only an older one",
            parameter="supersedes",
        )
    if target.superseded_by == new_id:
        return False
    if target.superseded_by is not None:
        raise InvalidInputError(
            f"supersedes: memory {target.id} was already superseded by memory {target.superseded_by}; "
            f"supersede {target.superseded_by} instead",
            parameter="supersedes",
        )
    return True


def check_new_stored(link: Link, found: bool) -> None:
    """Raise MemoryNotFoundError unless ``link``'s new memory is stored (``found``, read inside the
    writing transaction): an import finds its links' memories before it writes them, and one may
    have been forgotten meanwhile (an add's new memory is its own insert)."""
    if not found:
        raise MemoryNotFoundError([link.new])


def spliced(
    pointed: set[int], forgotten: set[int], successor: Mapping[int, int | None]
) -> dict[int, int | None]:
    """For each forgotten memory that others point to (``pointed``), the first memory after it in
    its chain that is not forgotten (None: its chain ends with it); ``successor`` maps each of them,
    and each forgotten memory they lead to, to its ``superseded_by``."""
    result: dict[int, int | None] = {}
    for start in pointed:
        after = successor.get(start)
        while after is not None and after in forgotten:
            after = successor.get(after)
        result[start] = after
    return result


def chain_reads(pointed: set[int], forgotten: set[int], successor: Mapping[int, int | None]) -> list[int]:
    """The forgotten memories whose ``superseded_by`` ``spliced`` still needs read (none once the
    chains from ``pointed`` reach a memory that stays)."""
    wanted = [mid for mid in pointed if mid not in successor]
    wanted += [by for by in successor.values() if by is not None and by in forgotten and by not in successor]
    return sorted(set(wanted))
