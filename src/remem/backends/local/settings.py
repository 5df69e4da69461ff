"""What a store records about itself: the model whose vectors it holds (its stamp), and how its
vector index is built — exact, HNSW, or chosen by size ("auto") at reindex time."""

from __future__ import annotations

from dataclasses import dataclass, field

from remem.backends.local.kinds import HnswParams, IndexKind
from remem.backends.local.records import Records
from remem.errors import StoreCorruptError
from remem.types import ModelInfo

#: With "auto", a reindex builds HNSW from this many vectors up, exact below (retired bench/index.py:
#: exact search of 50k 384-d vectors takes ≈5 ms, past that HNSW's sub-millisecond answers win).
#: Only a reindex switches: a store that grows past it is told so (``core/growth.py``).
AUTO_HNSW_THRESHOLD = 50_000


_INDEX_KEYS = ("hnsw_m", "hnsw_ef_construction", "hnsw_ef_search", "index_requested", "index_kind")


@dataclass(frozen=True)
class IndexSettings:
    """What the user asked for (``requested``), what was last built (``built_kind``), HNSW knobs."""

    requested: str = "auto"
    built_kind: IndexKind = IndexKind.EXACT
    hnsw: HnswParams = field(default_factory=HnswParams)

    @classmethod
    def read(cls, records: Records) -> IndexSettings:
        """The settings stored in the database (defaults for a store that never reindexed)."""
        default = cls()
        stored = records.get_metas(_INDEX_KEYS)  # one statement: read by every search and write
        hnsw = HnswParams(
            m=int(stored.get("hnsw_m") or default.hnsw.m),
            ef_construction=int(stored.get("hnsw_ef_construction") or default.hnsw.ef_construction),
            ef_search=int(stored.get("hnsw_ef_search") or default.hnsw.ef_search),
        )
        return cls(
            requested=stored.get("index_requested") or default.requested,
            built_kind=IndexKind(stored.get("index_kind") or default.built_kind.value),
            hnsw=hnsw,
        )

    def write(self, records: Records) -> None:
        """Store these settings (inside the caller's transaction)."""
        records.set_meta("index_requested", self.requested)
        records.set_meta("index_kind", self.built_kind.value)
        records.set_meta("hnsw_m", str(self.hnsw.m))
        records.set_meta("hnsw_ef_construction", str(self.hnsw.ef_construction))
        records.set_meta("hnsw_ef_search", str(self.hnsw.ef_search))

    def kind_for(self, vector_count: int) -> IndexKind:
        """The kind to build for this many vectors."""
        if self.requested == "auto":
            return IndexKind.HNSW if vector_count >= AUTO_HNSW_THRESHOLD else IndexKind.EXACT
        return IndexKind(self.requested)


_MAX_DIM = 65_536  # far above any embedding model's
_MODEL_KEYS = ("model_name", "model_dim", "model_pooling", "model_sha256")


def read_model(records: Records) -> ModelInfo | None:
    """The store's model stamp, or None while it holds no vectors."""
    stamp = records.get_metas(_MODEL_KEYS)
    name, dim, pooling, sha = (stamp.get(key) for key in _MODEL_KEYS)
    if name is None or dim is None or pooling is None or sha is None:
        return None
    if not dim.isdigit() or not 0 < int(dim) <= _MAX_DIM:
        raise StoreCorruptError(f"the store's model stamp is damaged (model_dim {dim[:20]!r})")
    return ModelInfo(name=name, dim=int(dim), pooling=pooling, sha256=sha)


def write_model(records: Records, model: ModelInfo) -> None:
    """Make ``model`` the store's model (inside the caller's transaction)."""
    for key, value in zip(_MODEL_KEYS, (model.name, model.dim, model.pooling, model.sha256), strict=True):
        records.set_meta(key, str(value))
