"""What every back-end shares around its rows: the checks made before anything is written (the shape
of the vectors handed to it, that they come from the model the store holds), a memory read back, a
bearer token as stored, and a vector index as sized."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from remem.errors import EmbedderError, ModelMismatchError, StoreError
from remem.types import Memory, Token

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.types import ModelInfo


def windows_of(vectors: Sequence[FloatArray] | FloatArray, count: int, dim: int) -> list[FloatArray]:
    """Each memory's vectors as a (w, dim) matrix with w ≥ 1, every one of them checked before any is
    written: StoreError on a wrong shape, EmbedderError when a vector is not finite or not of unit
    length (a damaged model gives such vectors; none is ever stored). Every write of vectors into a
    store, on either back-end, goes through here."""
    from remem.arrays import unit_rows  # noqa: PLC0415 - numpy: loaded already, the vectors are arrays

    if len(vectors) != count:
        raise StoreError(f"got vectors for {len(vectors)} memories, expected {count}")
    shaped = []
    for item in vectors:
        if item.size == 0 or item.size % dim or item.ndim > 2 or (item.ndim == 2 and item.shape[1] != dim):
            raise StoreError(f"vectors of shape {item.shape} do not fit a {dim}-d model")
        shaped.append(item.reshape(-1, dim))
    for matrix in shaped:
        if not unit_rows(matrix):
            raise EmbedderError(
                f"{_not_unit(matrix)}; nothing was stored (`remem model verify` checks the model files)"
            )
    return shaped


def _not_unit(matrix: FloatArray) -> str:
    """What is wrong with a matrix of vectors of which one is not finite or not of unit length."""
    import numpy as np  # noqa: PLC0415

    if not np.isfinite(matrix).all():
        return "the model gave a vector that is not finite (NaN or infinite)"
    lengths = np.linalg.norm(matrix, axis=1)
    worst = float(lengths[np.argmax(np.abs(lengths - 1.0))])
    return f"the model gave a vector that is not of unit length (length {worst:.4g})"


def check_same_model(location: str, recorded: ModelInfo | None, model: ModelInfo) -> None:
    """ModelMismatchError unless the store at ``location`` holds no vectors yet (``recorded`` is
    None) or was made by ``model``."""
    if recorded is not None and recorded != model:
        raise ModelMismatchError(
            f"the store at {location} holds vectors of model {recorded.name} "
            f"({recorded.dim}-d, {recorded.pooling} pooling, sha256 {recorded.sha256[:12]}…); "
            f"refusing to mix in {model.name} ({model.dim}-d, {model.pooling} pooling, "
            f"sha256 {model.sha256[:12]}…)"
        )


def stored_memory(row: Sequence[Any], tags: Iterable[str]) -> Memory:
    """A Memory from a row of (id, text, sha256, created_at, user, conversation, role, meta as JSON
    text, tags in the back-end's own form, updated_at, superseded_by, superseded_at, expires_at,
    written_by) and the tags read from it."""
    mid, text, sha, created, user, conversation, role, meta, _, updated, by, at, expires, writer = row
    return Memory(
        id=int(mid),
        text=text,
        sha256=sha,
        created_at=created,
        user=user,
        conversation=conversation,
        role=role,
        tags=tuple(tags),
        meta=json.loads(meta),
        updated_at=updated,
        superseded_by=None if by is None else int(by),
        superseded_at=at,
        expires_at=expires,
        written_by=writer,
    )


def contexts_of(contexts: Sequence[str] | None, memories: Sequence[object]) -> Sequence[str]:
    """One context per memory ("" for none); ValueError when the counts differ."""
    if contexts is None:
        return [""] * len(memories)
    if len(contexts) != len(memories):
        raise ValueError(f"{len(contexts)} contexts for {len(memories)} memories")
    return contexts


#: The columns of a stored token, the fields of ``TokenRecord`` in their order.
TOKEN_COLUMNS = ("name", "hash", "user", "conversation", "read_only", "private", "created_at", "expires_at")


@dataclass(frozen=True)
class IndexState:
    """A store's vector index whose kind is chosen by size at a reindex: the kind asked for
    (``requested``: exact, hnsw or auto), the kind built now (``kind``: exact or hnsw), how many
    vectors it holds, and from how many vectors a reindex under ``auto`` builds HNSW (``hnsw_from``)."""

    requested: str
    kind: str
    vectors: int
    hnsw_from: int


@dataclass(frozen=True)
class TokenRecord:
    """A bearer token as a store keeps it: its ``Token``'s fields and the sha256 (hex) of its secret,
    never the secret itself (the hash is left out of the repr: nothing prints it by accident)."""

    name: str
    hash: str = field(repr=False)
    user: str | None
    conversation: str | None
    read_only: bool
    private: bool
    created_at: str
    expires_at: str | None = None

    @classmethod
    def made(cls, token: Token, digest: str) -> TokenRecord:
        """The record of a new token whose secret hashes to ``digest``."""
        return cls(
            token.name,
            digest,
            token.user,
            token.conversation,
            token.read_only,
            token.private,
            token.created_at,
            token.expires_at,
        )

    @classmethod
    def of(cls, row: Sequence[Any]) -> TokenRecord:
        """The record of a row of ``TOKEN_COLUMNS`` read back (booleans as the back-end keeps them)."""
        name, digest, user, conversation, read_only, private, created_at, expires_at = row
        return cls(
            str(name),
            str(digest),
            user,
            conversation,
            bool(read_only),
            bool(private),
            str(created_at),
            None if expires_at is None else str(expires_at),
        )

    def row(self) -> tuple[str, str, str | None, str | None, bool, bool, str, str | None]:
        """The values of ``TOKEN_COLUMNS`` to insert."""
        return (
            self.name,
            self.hash,
            self.user,
            self.conversation,
            self.read_only,
            self.private,
            self.created_at,
            self.expires_at,
        )

    @property
    def token(self) -> Token:
        """The stored token (made, and checked, at each read: a server's calls read every record and
        need one token)."""
        return Token(
            self.name,
            self.user,
            self.conversation,
            self.read_only,
            self.private,
            self.created_at,
            self.expires_at,
        )
