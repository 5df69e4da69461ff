"""Memories that change, the same on both back-ends: what a supersede may link, how a re-added
retired memory becomes current again, and how a forget keeps the links of the memories it leaves
consistent.

A superseded memory names the memory that replaced it (``superseded_by``) and when
(``superseded_at``); a memory may replace several. The rules:

- a memory supersedes only one of the same user and the same conversation (a memory pinned to a
  user cannot retire another user's, nor a shared one);
- a link never closes a loop: a memory cannot supersede one that its own chain leads back to (the
  memory that replaced it, or a later one), which would hide both for good;
- a memory superseded once stays so: superseding it again (by another memory) is refused, naming
  the memory that replaced it, so two assistants correcting the same fact at once cannot both win
  (adding the same supersede again, by the same text, is not an error);
- the same text added again while its memory is retired (superseded, or expired) makes that memory
  current again (``revival``): its own link is cleared, it takes the expiry the add gives (none
  without one), and it supersedes the current head of the chain that had replaced it (and the
  memory the add names in ``supersedes``), so the fact that changed back is the one found, with its
  history intact (a revived memory may thus supersede a later one);
- forgetting a memory splices its chain: those it superseded point to the first memory after it
  that is not forgotten, or become current again when there is none (forgetting a correction brings
  back the fact it corrected).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
    expires_at: str | None = None

    def retired(self, now: str) -> bool:
        """Whether it is out of every read unless included: superseded, or expired at ``now``."""
        return self.superseded_by is not None or (self.expires_at is not None and self.expires_at <= now)


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


#: Reads a memory's ``Target`` inside the writing transaction (None if there is none).
Read = Callable[[int], "Target | None"]


def needs_link(link: Link, target: Target | None, leads_back: bool = False) -> bool:
    """Whether ``link`` may be written over ``target`` (its old memory as stored, None if there is
    none; ``leads_back``: the new memory's chain reaches it, ``loops``): True when it is to be
    written, False when it is there already; MemoryNotFoundError when there is no such memory,
    InvalidInputError when the rules (the module docstring) refuse it. Nothing is written either way."""
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
    if target.superseded_by == new_id:
        return False
    if leads_back:
        raise InvalidInputError(
            f"supersedes: memory {new_id} holds this same text and was itself replaced, through its "
            f"chain, by memory {target.id}; a link cannot close a loop",
            parameter="supersedes",
        )
    if target.superseded_by is not None:
        raise InvalidInputError(
            f"supersedes: memory {target.id} was already superseded by memory {target.superseded_by}; "
            f"supersede {target.superseded_by} instead",
            parameter="supersedes",
        )
    return True


def loops(link: Link, read: Read) -> bool:
    """Whether the chain after ``link``'s new memory (``superseded_by`` after ``superseded_by``, as
    ``read`` finds them) reaches its old one: writing the link would close a loop."""
    seen: set[int] = set()
    after: int | None = link.new
    while after is not None and after not in seen:
        if after == link.old:
            return True
        seen.add(after)
        found = read(after)
        after = None if found is None else found.superseded_by
    return False


@dataclass(frozen=True)
class Revival:
    """What making a stored memory current again writes: whether it was retired (then its own link
    is cleared and it takes the add's expiry) and the memories it is to supersede (ascending)."""

    id: int
    retired: bool
    supersedes: tuple[int, ...]


def revival(memory: Target, read: Read, supersedes: int | None, at: str) -> Revival:
    """What the same text added again writes over its stored ``memory`` (read inside the writing
    transaction, as ``read`` reads the others; ``at``: now). A retired memory (``Target.retired``)
    is to supersede the current head of the chain that had replaced it; with ``supersedes``, the
    memory named too, as ``needs_link`` allows once the memory's own link is cleared (it raises
    what that refuses). Nothing is written here."""
    retired = memory.retired(at)
    olds: set[int] = set()
    head, seen = memory.superseded_by, {memory.id}
    while head is not None and head not in seen:  # forward to the memory that is current now
        seen.add(head)
        found = read(head)
        if found is None:
            break
        if found.superseded_by is None:
            olds.add(found.id)
        head = found.superseded_by
    if supersedes is not None:
        link = Link(supersedes, memory.id, memory.user, memory.conversation, at)
        if needs_link(link, read(supersedes)):
            olds.add(supersedes)
    return Revival(memory.id, retired, tuple(sorted(olds)))


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
