"""Pulled models in the user's cache directory: where each lives, pulling and re-verifying.

Layout: ``<root>/<name>/<revision>/model.onnx`` and ``tokenizer.json`` (for a model built from a
package, ``<root>/<name>/<package>-<version>/``). A file appears under its
final name only after its sha256 matched (see ``download.fetch_verified``); writers of one model
directory are serialised by a lock file in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from remem.embedders.registry import bundled_files
from remem.embedders.spec import ModelFile, ModelFiles, ModelSpec, file_sha256
from remem.errors import DownloadError, EmbedderError

if TYPE_CHECKING:
    from remem.embedders.download import ProgressFn

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"


@dataclass(frozen=True)
class FileCheck:
    """The outcome of re-hashing one installed file: ``problem`` is None when it is intact."""

    path: Path
    problem: str | None


@dataclass(frozen=True)
class ModelCache:
    """The directory pulled models live in (nothing is created until a pull)."""

    root: Path

    def directory(self, spec: ModelSpec) -> Path:
        """The directory a pulled model's files are (or would be) installed in."""
        return self.root / spec.name / (spec.revision or spec.package.replace("==", "-") or "bundled")

    def files(self, spec: ModelSpec) -> ModelFiles:
        """Where the model's files are or would be (bundled files for the bundled model)."""
        if not spec.pulled:
            return bundled_files(checked=False)
        directory = self.directory(spec)
        return ModelFiles(model=directory / MODEL_FILE, tokenizer=directory / TOKENIZER_FILE)

    def is_installed(self, spec: ModelSpec) -> bool:
        """True when both files are present (their bytes are checked by ``verify`` / at first use)."""
        if not spec.pulled:
            return True
        files = self.files(spec)
        return files.model.is_file() and files.tokenizer.is_file()

    def locate(self, spec: ModelSpec) -> ModelFiles:
        """The files of an installed model; EmbedderError saying how to pull it when it is not."""
        if not self.is_installed(spec):
            how = (
                f"builds it from the installed {spec.package.split('==')[0]} package, no download"
                if spec.built
                else f"downloads {spec.size / 1e6:.0f} MB once; remem never downloads by itself"
            )
            raise EmbedderError(
                f"model {spec.name} is not installed; run `remem model pull {spec.name}` ({how})"
            )
        return self.files(spec) if spec.pulled else bundled_files()

    def pull(
        self,
        spec: ModelSpec,
        endpoint: str,
        user_agent: str,
        progress: ProgressFn | None,
        proxies: Mapping[str, str] | None = None,
    ) -> ModelFiles:
        """Download and verify both files of a downloadable model (resuming, under the lock).

        Files already installed with the right sha256 are not downloaded again; a damaged one is
        replaced. Raises EmbedderError for the bundled model, DownloadError when a file fails
        (naming the endpoint and the mirror setting); a pull that got no byte leaves no directory.
        """
        from remem.embedders.download import fetch_verified  # noqa: PLC0415 - urllib
        from remem.embedders.locks import directory_lock  # noqa: PLC0415

        if not spec.pulled:
            raise EmbedderError(f"{spec.name} ships with remem; there is nothing to pull")
        files = self.files(spec)
        if spec.source_file is not None:
            return self._build(spec, spec.source_file, files)
        with directory_lock(self.directory(spec)):
            for file, dest in ((spec.model, files.model), (spec.tokenizer, files.tokenizer)):
                try:
                    fetch_verified(
                        spec.url(endpoint, file),
                        dest,
                        sha256=file.sha256,
                        size=file.size,
                        user_agent=user_agent,
                        progress=progress,
                        proxies=proxies,
                    )
                except DownloadError as exc:  # offline, or the hub blocked: a mirror may serve it
                    from urllib.parse import urlsplit  # noqa: PLC0415

                    host = urlsplit(endpoint).hostname or endpoint  # never a mirror's credentials
                    raise DownloadError(f"{exc} (from {host}; a mirror: set REMEM_HF_ENDPOINT)") from exc
        return files

    def _build(self, spec: ModelSpec, source: ModelFile, files: ModelFiles) -> ModelFiles:
        """Build a model's files from its package under the lock, unless both are installed intact."""
        from remem.embedders.e5.build import build_files  # noqa: PLC0415 - numpy
        from remem.embedders.locks import directory_lock  # noqa: PLC0415

        with directory_lock(self.directory(spec)):
            if not any(check.problem for check in self.verify(spec)) and self.is_installed(spec):
                return files
            build_files(spec, source, files)
        return files

    def verify(self, spec: ModelSpec) -> list[FileCheck]:
        """Re-hash each installed file against the pinned sha256 (nothing for a model not installed)."""
        if not self.is_installed(spec):
            return []
        files = self.files(spec)
        return [
            _check(path, pinned)
            for path, pinned in ((files.model, spec.model), (files.tokenizer, spec.tokenizer))
        ]


def _check(path: Path, pinned: ModelFile) -> FileCheck:
    try:
        actual = file_sha256(path)
    except EmbedderError as exc:
        return FileCheck(path, str(exc))
    if actual != pinned.sha256:
        return FileCheck(path, f"sha256 {actual[:12]}…, expected {pinned.sha256[:12]}…")
    return FileCheck(path, None)
