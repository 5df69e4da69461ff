"""The pin: what one caller of the MCP tools may see and change.

``remem mcp --user U --conversation C`` pins every call of its server; on ``remem serve`` every call
is pinned by the bearer token it came with (``Scope.of_token``). A pinned field is a hard filter:
searches and lists add it whatever the arguments say, get, edit and forget treat the memories of
others as missing, and add stores the pinned values. A search passes the pin as its ``scope``, so
that its scores count only the memories the caller sees (``Scope.seen``). The tools do not even
offer the pinned arguments.

Memories without a user are the team's shared memories: a caller pinned to a user sees them too
(unless ``private``), but writes, edits and forgets only its own; an unpinned caller (an admin) sees
and changes everything. A ``read_only`` pin has no tools that write.

A pin also names who writes through it (``writer``, recorded as each new memory's ``written_by``):
a token's name on ``remem serve``, ``mcp`` for ``remem mcp`` over stdio. It comes from the server,
never from a tool's arguments, so no caller writes in another's name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from remem import Filters, Memory
from remem.errors import InvalidInputError

if TYPE_CHECKING:
    from remem import Token


@dataclass(frozen=True)
class Scope:
    """The user and conversation every call is confined to (None: not pinned), whether the user's
    pin leaves out the shared memories (``private``), whether the caller may write, and who it is
    (``writer``: None names nobody)."""

    user: str | None = None
    conversation: str | None = None
    private: bool = False
    read_only: bool = False
    writer: str | None = None

    @classmethod
    def of(
        cls,
        user: str | None = None,
        conversation: str | None = None,
        *,
        private: bool = False,
        read_only: bool = False,
        writer: str | None = None,
    ) -> Scope:
        """A validated pin (names stripped, never empty; ``private`` only with a user;
        InvalidInputError otherwise) whose writes name ``writer``."""
        checked = Filters.of(user=user, conversation=conversation)
        if private and checked.user is None:
            raise InvalidInputError("private goes with a user", parameter="private", mentions=("user",))
        return cls(checked.user, checked.conversation, private, read_only, writer)

    @classmethod
    def of_token(cls, token: Token) -> Scope:
        """The pin a token of ``remem serve`` stands for; its writes name the token."""
        private = token.private and token.user is not None
        return cls(token.user, token.conversation, private, token.read_only, token.name)

    @property
    def pinned(self) -> frozenset[str]:
        """The tool arguments the pin replaces (and that pinned tools therefore do not offer)."""
        names = {"user": self.user, "conversation": self.conversation}
        return frozenset(name for name, value in names.items() if value is not None)

    def filters(
        self,
        *,
        user: str | None = None,
        conversation: str | None = None,
        role: str | None = None,
        tags: Sequence[str] = (),
        since: str | None = None,
        until: str | None = None,
        writing: bool = False,
        written_by: str | None = None,
    ) -> Filters:
        """The filters a call asked for, validated, with the pinned fields in force: a pinned user's
        own memories and, unless ``private`` or ``writing`` (what a call may change), the shared ones."""
        pinned_user = self.user is not None
        return Filters.of(
            user=self.user if pinned_user else user,
            conversation=self.conversation if self.conversation is not None else conversation,
            role=role,
            tags=list(tags),
            since=since,
            until=until,
            shared=pinned_user and not (self.private or writing),
            written_by=written_by,
        )

    @property
    def seen(self) -> Filters | None:
        """What the caller may see, as a search's ``scope`` (``Memories.search``): the pinned user's
        memories and, unless ``private``, the shared ones; the pinned conversation's. None when
        nothing is pinned (an admin sees the whole store, and its statistics)."""
        return self.filters() if self.pinned else None

    def sees(self, memory: Memory) -> bool:
        """Whether ``memory`` lies inside the pin: the user's own or a shared one (unless private)."""
        user_ok = self.user is None or memory.user == self.user or (memory.user is None and not self.private)
        return user_ok and (self.conversation is None or memory.conversation == self.conversation)

    def owns(self, memory: Memory) -> bool:
        """Whether the caller may change ``memory``: it sees it, and it is not a shared memory seen
        by a pinned user (only an unpinned caller, an admin, changes those)."""
        return self.sees(memory) and (self.user is None or memory.user == self.user)

    def visible(self, found: Mapping[int, Memory]) -> dict[int, Memory]:
        """The memories of ``found`` inside the pin; the others count as missing."""
        return {memory_id: memory for memory_id, memory in found.items() if self.sees(memory)}

    def changeable(self, found: Mapping[int, Memory]) -> dict[int, Memory]:
        """The memories of ``found`` the caller may change; InvalidInputError when one of them is a
        shared memory it sees but may not change (the others of another user count as missing)."""
        shared = sorted(i for i, memory in found.items() if self.sees(memory) and not self.owns(memory))
        if shared:
            listed = ", ".join(map(str, shared))
            plural = "memories" if len(shared) > 1 else "memory"
            raise InvalidInputError(
                f"shared {plural} {listed} (no user) can be changed only without a user pin (an admin "
                "token); nothing was changed"
            )
        return {memory_id: memory for memory_id, memory in found.items() if self.owns(memory)}

    def describe(self) -> str:
        """The pin for a person: ``user alice and the shared memories, conversation c1``, or
        ``nothing pinned``."""
        if self.user is None and self.conversation is None:
            return "nothing pinned"
        parts = []
        if self.user is not None:
            parts.append(f"user {self.user}" + ("" if self.private else " and the shared memories"))
        if self.conversation is not None:
            parts.append(f"conversation {self.conversation}")
        return ", ".join(parts)
