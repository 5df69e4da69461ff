"""Moving a memory to another user (``Memories.edit(..., user=...)``): what may move, and what not.

A memory moves alone, and only when nothing ties it to its user: a turn of a conversation belongs to
that conversation's user (its context is the turns before it), and a chain of replaced memories keeps
one user (``add --supersedes`` gives the new memory the old one's user), so both are refused; so is a
move to a user who already holds the same text (one text is one memory per user). Refusals change
nothing and name what is in the way, never a memory's text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from remem.core.superseding import history
from remem.errors import InvalidInputError
from remem.types import text_sha256

if TYPE_CHECKING:
    from remem.backends.base import Backend
    from remem.types import Memory


def check_move(
    backend: Backend, memory: Memory, owner: tuple[str | None] | None, text: str | None = None
) -> None:
    """InvalidInputError (parameter ``user``) unless ``memory`` may move to the user ``owner`` names
    (``(None,)``: no user; None, or its own user: no move, nothing to check) holding its text, or
    ``text`` when the same edit gives it a new one."""
    if owner is None or owner[0] == memory.user:
        return
    user = owner[0]
    if memory.conversation is not None:
        raise InvalidInputError(
            f"memory {memory.id} is a turn of conversation {memory.conversation!r}, which stays with its "
            "user; to file it elsewhere add its text again with that user and forget this one",
            parameter="user",
        )
    chain = history(backend, memory)
    if len(chain) > 1:
        ids = ", ".join(str(m.id) for m in chain)
        raise InvalidInputError(
            f"memory {memory.id} is one of a chain of replaced memories ({ids}), which keeps one user; "
            "not moved",
            parameter="user",
        )
    sha256 = memory.sha256 if text is None else text_sha256(text)
    (holder,) = backend.find_keys([(sha256, user, None)])
    if holder is not None and holder != memory.id:
        whose = "the memories without a user hold" if user is None else f"user {user!r} already holds"
        raise InvalidInputError(f"{whose} this text as memory {holder}; not moved", parameter="user")
