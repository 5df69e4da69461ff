"""The pin: ``remem mcp --user U --conversation C`` confines every tool call to those memories.

A pinned field is a hard filter: searches and lists add it whatever the arguments say, get, edit and
forget treat the memories of others as missing, and add stores the pinned values. The tools of a
pinned server do not even offer the pinned arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from remem import Filters, Memory


@dataclass(frozen=True)
class Scope:
    """The user and conversation every call is confined to (None: not pinned)."""

    user: str | None = None
    conversation: str | None = None

    @classmethod
    def of(cls, user: str | None = None, conversation: str | None = None) -> Scope:
        """A validated pin (names stripped, never empty; InvalidInputError otherwise)."""
        checked = Filters.of(user=user, conversation=conversation)
        return cls(checked.user, checked.conversation)

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
    ) -> Filters:
        """The filters a call asked for, validated, with the pinned fields in force."""
        return Filters.of(
            user=self.user if self.user is not None else user,
            conversation=self.conversation if self.conversation is not None else conversation,
            role=role,
            tags=list(tags),
            since=since,
            until=until,
        )

    def owns(self, memory: Memory) -> bool:
        """Whether ``memory`` lies inside the pin (every memory does when nothing is pinned)."""
        return (self.user is None or memory.user == self.user) and (
            self.conversation is None or memory.conversation == self.conversation
        )

    def visible(self, found: Mapping[int, Memory]) -> dict[int, Memory]:
        """The memories of ``found`` inside the pin; the others count as missing."""
        return {memory_id: memory for memory_id, memory in found.items() if self.owns(memory)}

    def describe(self) -> str:
        """The pin for a person: ``user alice, conversation c1``, or ``nothing pinned``."""
        pairs = (("user", self.user), ("conversation", self.conversation))
        return ", ".join(f"{name} {value}" for name, value in pairs if value) or "nothing pinned"
