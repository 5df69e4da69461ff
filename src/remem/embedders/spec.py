"""Frozen descriptions of embedding models: everything that decides what a vector means."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from remem.errors import EmbedderError


class Pooling(str, Enum):
    """How token vectors become one sentence vector."""

    MEAN = "mean"  # average of the token vectors under the attention mask (sentence-transformers)
    CLS = "cls"  # the first ([CLS]) token's vector (BGE)


@dataclass(frozen=True)
class ModelFile:
    """One file of a model: its pinned sha256 and size, and its path in the source repository."""

    sha256: str
    size: int
    repo_path: str = ""  # e.g. "onnx/model.onnx"; empty when the file is not downloaded


@dataclass(frozen=True)
class ModelSpec:
    """What a model is: two specs with equal fields produce interchangeable vectors.

    ``query_prefix`` is prepended to search queries only, never to stored documents;
    ``document_prefix`` to every window of a stored text (e5's ``passage: ``), never to queries.
    ``max_tokens`` is the model window including the [CLS] and [SEP] tokens: a query is cut there.
    ``document_tokens`` > 0 is the longest window a stored text is cut into, where the model was
    trained on shorter texts than it accepts (``document_window``); 0: ``max_tokens``.
    ``repo`` and ``revision`` name the Hugging Face repository and commit the files are pulled
    from; both are empty for a model that is not downloaded (bundled, or a user's own).
    ``languages`` are the ISO 639-1 codes of the languages it was trained for ("multilingual" for
    many); empty when unknown. An English-only model's cosines across scripts are not trusted
    (see ``remem.core.scripts``).
    ``uniform_batch`` > 0: the file quantises activations with fixed scales, so windows of one length
    run together, up to that many, one single-threaded run per CPU (``runner.OnnxEmbedder.of``);
    0: padded batches, onnxruntime's threads.
    ``package`` and ``source_file`` name the PyPI package (``name==version``) and the file in it a
    model is built from on this machine by ``remem model pull`` (no download; the built files are
    pinned like downloaded ones); both empty otherwise.
    ``similar_cosine`` is the cosine from which a stored memory is named "similar" to an added one
    with this model (``remem.core.superseding``); 0: remem's default, measured for the bundled model.
    """

    name: str
    dim: int
    pooling: Pooling
    max_tokens: int
    model: ModelFile
    tokenizer: ModelFile
    license: str
    source: str
    query_prefix: str = ""
    document_prefix: str = ""
    repo: str = ""
    revision: str = ""
    languages: tuple[str, ...] = ()
    uniform_batch: int = 0
    package: str = ""
    source_file: ModelFile | None = None
    similar_cosine: float = 0.0
    document_tokens: int = 0

    @property
    def document_window(self) -> int:
        """The longest window of a stored text, [CLS] and [SEP] included (never above ``max_tokens``)."""
        return min(self.document_tokens or self.max_tokens, self.max_tokens)

    @property
    def model_sha256(self) -> str:
        """The pinned sha256 of the ONNX file (what a store's model stamp records)."""
        return self.model.sha256

    @property
    def tokenizer_sha256(self) -> str:
        """The pinned sha256 of tokenizer.json."""
        return self.tokenizer.sha256

    @property
    def size(self) -> int:
        """Bytes on disk of both files."""
        return self.model.size + self.tokenizer.size

    @property
    def downloadable(self) -> bool:
        """True when ``remem model pull`` fetches this model's files."""
        return bool(self.repo)

    @property
    def built(self) -> bool:
        """True when ``remem model pull`` builds this model's files from an installed package."""
        return self.source_file is not None

    @property
    def pulled(self) -> bool:
        """True when the files are installed by ``remem model pull`` (downloaded or built), not
        shipped inside remem."""
        return self.downloadable or self.built

    def url(self, endpoint: str, file: ModelFile) -> str:
        """Where ``file`` is downloaded from at the pinned revision, on a Hugging Face endpoint."""
        return f"{endpoint.rstrip('/')}/{self.repo}/resolve/{self.revision}/{file.repo_path}"


@dataclass(frozen=True)
class ModelFiles:
    """Where a model's files are on this machine."""

    model: Path
    tokenizer: Path


#: sha256 of files hashed by this process, by what identifies their bytes cheaply (``_stat_key``):
#: a file written, replaced or cut short since has another key and is hashed again.
_HASHED: dict[tuple[int, ...], str] = {}


def _stat_key(stat: os.stat_result) -> tuple[int, ...]:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes (read in chunks, or remembered from an earlier hash in this
    process of the same unchanged file); raises EmbedderError if it cannot be read."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            key = _stat_key(os.fstat(handle.fileno()))
            if (known := _HASHED.get(key)) is not None:
                return known
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise EmbedderError(f"cannot read model file {path}: {exc.strerror or exc}") from exc
    _HASHED[key] = digest.hexdigest()
    return _HASHED[key]


def read_hashed(path: Path) -> tuple[bytes, str]:
    """The bytes of the file at ``path`` and their hex sha256 (always computed from the bytes
    returned); EmbedderError if it cannot be read."""
    try:
        with path.open("rb") as handle:
            key, data = _stat_key(os.fstat(handle.fileno())), handle.read()
    except OSError as exc:
        raise EmbedderError(f"cannot read model file {path}: {exc.strerror or exc}") from exc
    sha256 = hashlib.sha256(data).hexdigest()
    if len(data) == key[2]:
        _HASHED[key] = sha256
    return data, sha256


def verified_bytes(path: Path, sha256: str) -> bytes:
    """The bytes of the file at ``path``, read once (what is hashed is what is used), when their sha256
    is ``sha256``; EmbedderError when it cannot be read or holds other bytes."""
    data, actual = read_hashed(path)
    if actual != sha256:
        raise EmbedderError(
            f"{path} is damaged or not the file it should be (sha256 {actual[:12]}…, expected "
            f"{sha256[:12]}…); `remem model verify` says how to replace it"
        )
    return data


def verify_model_files(spec: ModelSpec, files: ModelFiles) -> str:
    """Check both files against the spec's pinned sha256; return the model file's sha256.

    Raises EmbedderError naming the file when either is missing or has other bytes.
    """
    hint = f"run `remem model pull {spec.name}` to replace it" if spec.pulled else "reinstall remem"
    for path, expected in ((files.model, spec.model_sha256), (files.tokenizer, spec.tokenizer_sha256)):
        actual = file_sha256(path)
        if actual != expected:
            raise EmbedderError(
                f"{path} is damaged or not the {spec.name} file it should be "
                f"(sha256 {actual[:12]}…, expected {expected[:12]}…); {hint}"
            )
    return spec.model_sha256
