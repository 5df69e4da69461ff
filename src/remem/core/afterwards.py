"""What runs after a write committed: the similar-memory look-up, the contexts (and vectors) of the
turns after new ones, an import's links. The write stands whatever happens there (a lost connection,
a server restarting), so an error in such a step becomes a note, never the call's error: a stored
memory is never reported as a failure, and ``ConnectionLostError.stored`` holds exactly."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from remem.errors import RememError


@contextlib.contextmanager
def afterwards(notes: list[str], step: str) -> Iterator[None]:
    """A block that runs after the call's write committed: a RememError in it ends the block and
    adds a note naming ``step`` (what was left undone, and the command that does it) to ``notes``."""
    try:
        yield
    except RememError as exc:
        notes.append(f"The write is stored, but {step} was left undone: {exc}")
