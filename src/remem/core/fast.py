"""What a person is told about the int8 variant a built-in model runs as (``ModelCatalog``), and the
versions that build it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from remem.types import ModelInfo


def runtime() -> str:
    """The versions that build a variant (its bytes depend on them): onnxruntime and onnx."""
    from importlib import metadata  # noqa: PLC0415 - lazy: about 30 ms, only when a store embeds

    def version(package: str) -> str:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return "missing"

    return f"onnxruntime {version('onnxruntime')}, onnx {version('onnx')}"


def variant_note(name: str, agreement: float) -> str:
    """The sentence of a new store's note when it runs the model's int8 variant."""
    return (
        f"It embeds with the int8 variant of {name} (mean cosine {agreement:.4f} to the original "
        "file's vectors), about 2x faster."
    )


def opt_in_note(name: str) -> str:
    """The sentence of a new store's note when this machine has no int8 variant of its model."""
    return (
        f"`remem model optimize {name}` makes embedding about 2x faster for stores created after it on "
        "this machine (an int8 variant; its vectors are tied to this machine's onnx and onnxruntime)."
    )


def fallback_note(name: str, reason: str) -> str:
    """The sentence of a new store's note when the variant cannot be used: why, once."""
    return f"It embeds with the original {name} file: its faster int8 variant is not available ({reason})."


def unknown_file(location: str, recorded: ModelInfo, variant: str | None) -> str:
    """The error when a store's vectors came from a file of its model that is neither the original
    nor this machine's int8 variant (``variant``: its sha256; None when none could be built here)."""
    here = f"sha256 {variant[:12]}…" if variant else "none could be built here"
    return (
        f"the store at {location} holds vectors of model {recorded.name} ({recorded.dim}-d, "
        f"{recorded.pooling} pooling, sha256 {recorded.sha256[:12]}…), from neither its original file "
        f"nor this machine's int8 variant ({here}; one built by other onnx or onnxruntime versions "
        f"differs); refusing to mix in {recorded.name}: `remem reindex --model {recorded.name}` "
        "re-embeds the store"
    )
