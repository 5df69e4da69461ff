"""What a person is told about the int8 variant a built-in model runs as (``ModelCatalog``), and the
versions that build it (kept in its record for the curious; its identity does not depend on them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from remem.types import ModelInfo


def runtime() -> str:
    """The versions that build a variant (its file's bytes, not its identity, depend on them)."""
    from importlib import metadata  # noqa: PLC0415 - lazy: about 30 ms, only when a store embeds

    def version(package: str) -> str:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return "missing"

    return f"onnxruntime {version('onnxruntime')}, onnx {version('onnx')}"


def variant_note(name: str, agreement: float, *, built: bool) -> str:
    """The sentence of a new store's note when it runs the model's int8 variant (``built``: just now)."""
    how = "built once on this machine just now, " if built else ""
    return (
        f"It embeds with the int8 variant of {name} ({how}mean cosine {agreement:.4f} to the original "
        "file's vectors), about 2x faster."
    )


def fallback_note(name: str, reason: str) -> str:
    """The sentence of a new store's note when the variant cannot be used: why, once."""
    return f"It embeds with the original {name} file: its faster int8 variant is not available: {reason}."


def unknown_file(location: str, recorded: ModelInfo, variant: str | None, why: str = "") -> str:
    """The error when a store's vectors came from a file of its model that is neither the original
    nor the int8 variant this remem builds (``variant``: its stamp; None when none can be used here,
    ``why`` then says why)."""
    here = f"stamp {variant[:12]}…" if variant else "none can be used here"
    because = f" (here: {why})" if variant is None and why else ""
    return (
        f"the store at {location} holds vectors of model {recorded.name} ({recorded.dim}-d, "
        f"{recorded.pooling} pooling, sha256 {recorded.sha256[:12]}…), from neither its original file "
        f"nor the int8 variant this remem builds ({here}; a variant made by an older remem differs); "
        f"refusing to mix in {recorded.name}: `remem reindex --model {recorded.name}` re-embeds the "
        f"store{because}"
    )
