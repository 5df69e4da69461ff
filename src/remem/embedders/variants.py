"""Optimised variants of a model file: built once (on a new store's first use, or by ``remem model
optimize``), verified, cached.

A variant (``model.int8.onnx``, int8 per-channel weights) lives next to where the model's files are
pulled to, with a record (``model.int8.json``) of what it was made from, its file's sha256, its
identity (``quantize.model_identity``: the same for every build from the same file, whichever onnx
and onnxruntime build it) and how closely its vectors agree with the original's on a built-in
sentence set. A variant that agrees less than ``MIN_AGREEMENT`` is refused, nothing is kept, and a
marker (``model.int8.off``) stops it being tried again until ``remem model optimize``; ``--undo``
leaves the same marker. The original file is never touched. A store made with the variant records
its identity as the model stamp: its vectors agree with the original's at a mean cosine of at least
``MIN_AGREEMENT`` (0.99), they are not the same vectors, and a store never mixes the two.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from remem.atomic import atomic_writer
from remem.embedders.cache import ModelCache
from remem.embedders.spec import ModelFiles, ModelSpec, file_problem, file_sha256, verify_model_files
from remem.errors import EmbedderError

if TYPE_CHECKING:
    from remem.embedders.runner import OnnxEmbedder

VARIANT_FILE = "model.int8.onnx"
#: The variant embeds one window per run. Its activations are quantised to int8 with one scale per
#: run (onnxruntime's DynamicQuantizeLinear), so in a batch a text's vector would depend on the texts
#: beside it: measured on 2,000 chat turns, the same text alone and in a batch of 32 agreed at a
#: cosine of 0.953 at worst (0.990 mean). One at a time every text has one vector, closer to the
#: original's (mean cosine 0.9933 against 0.9930 batched). Runs go on side by side instead, one per
#: CPU, each on one thread (``variant_workers``).
VARIANT_BATCH = 1
_Record = TypeVar("_Record")
RECORD_FILE = "model.int8.json"
OFF_FILE = "model.int8.off"
#: The calibrated variant made from the variant and its record (``calibrated.py``): removed with it.
CALIBRATED_FILE = "model.int8c.onnx"
CALIBRATED_RECORD = "model.int8c.json"


def variant_workers() -> int:
    """How many one-text runs of a variant go on at once: one per CPU this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def variant_embedder(
    spec: ModelSpec,
    files: ModelFiles,
    *,
    file_sha256: str,
    sha256: str | None = None,
    graph_dir: Path | None = None,
    batch_size: int = VARIANT_BATCH,
) -> OnnxEmbedder:
    """An embedder of a variant file (``files.model``, run only if its bytes have ``file_sha256``;
    ``sha256``: its stamp) that runs it as it must run: one text per run (``VARIANT_BATCH``; a
    calibrated variant: windows of one length, up to ``batch_size``), ``variant_workers``
    single-threaded runs at once."""
    from remem.embedders.runner import OnnxEmbedder  # noqa: PLC0415

    return OnnxEmbedder(
        spec,
        files,
        sha256=sha256,
        file_sha256=file_sha256,
        graph_dir=graph_dir,
        batch_size=batch_size,
        threads=1,
        workers=variant_workers(),
        uniform=True,
    )


@dataclass(frozen=True)
class VariantRecord:
    """What a variant was made from and how it was verified. ``identity`` is empty in records of
    variants built before identities existed (onnxruntime's quantizer): their file's sha256 stands in."""

    source_sha256: str
    sha256: str
    size: int
    agreement: float
    runtime: str
    identity: str = ""

    @property
    def stamp(self) -> str:
        """What a store made with this variant records as its model's sha256."""
        return self.identity or self.sha256

    def to_json(self) -> str:
        """The record as one JSON object."""
        return json.dumps(self.__dict__, sort_keys=True)


def _paths(cache: ModelCache, spec: ModelSpec) -> tuple[Path, Path]:
    directory = cache.directory(spec)
    return directory / VARIANT_FILE, directory / RECORD_FILE


def read_record(cache: ModelCache, spec: ModelSpec) -> VariantRecord | None:
    """The record of the model's variant, or None when there is none (or it is unreadable)."""
    return read_json_record(_paths(cache, spec)[1], VariantRecord)


def read_json_record(path: Path, kind: type[_Record]) -> _Record | None:
    """A record file read into ``kind`` (a dataclass of its fields), or None when it is missing,
    unreadable or not such a record."""
    try:
        return kind(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def find_variant(cache: ModelCache, spec: ModelSpec) -> Path | None:
    """The variant file to run instead of the original, when one was made for these exact files.

    Cheap: it checks the record and the file size; ``verify_variant`` re-hashes the bytes.
    """
    variant, _ = _paths(cache, spec)
    record = read_record(cache, spec)
    if record is None or record.source_sha256 != spec.model_sha256:
        return None
    with contextlib.suppress(OSError):
        if variant.stat().st_size == record.size:
            return variant
    return None


def verify_variant(cache: ModelCache, spec: ModelSpec) -> str | None:
    """None when the model has no variant or it is intact; else what is wrong with it."""
    record = read_record(cache, spec)
    return None if record is None else file_problem(_paths(cache, spec)[0], record.sha256)


def remove_variant(cache: ModelCache, spec: ModelSpec) -> bool:
    """Delete the model's variant and its record, and the calibrated variant made from it; True when
    there was a variant."""
    found = False
    directory = cache.directory(spec)
    calibrated = (directory / CALIBRATED_RECORD, directory / CALIBRATED_FILE)
    for path in (*calibrated, *_paths(cache, spec)[::-1]):  # records first: without one a file is unused
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            found = found or path.name in (VARIANT_FILE, RECORD_FILE)
    for stem in (Path(VARIANT_FILE).stem, Path(CALIBRATED_FILE).stem):
        for graph in directory.glob(f"{stem}.optimized-*"):
            with contextlib.suppress(OSError):
                graph.unlink()  # sessions.py's cached graphs of the variants and their weights
    return found


def switched_off(cache: ModelCache, spec: ModelSpec) -> str | None:
    """Why new stores of the model run its original file (a refused variant, ``--undo``), or None."""
    try:
        marker = json.loads((cache.directory(spec) / OFF_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("source_sha256") != spec.model_sha256:
        return None  # made for other files of the model: try again
    return str(marker.get("reason") or "switched off")


def switch_off(cache: ModelCache, spec: ModelSpec, reason: str) -> None:
    """Remove the model's variant and keep new stores on its original file, saying ``reason``, until
    ``make_variant`` (``remem model optimize``)."""
    from remem.embedders.locks import directory_lock  # noqa: PLC0415

    with directory_lock(cache.directory(spec)):
        remove_variant(cache, spec)
        _write_off(cache, spec, reason)


def _write_off(cache: ModelCache, spec: ModelSpec, reason: str) -> None:
    marker = json.dumps({"source_sha256": spec.model_sha256, "reason": reason}, sort_keys=True)
    try:
        with atomic_writer(cache.directory(spec) / OFF_FILE, mode=0o644) as handle:
            handle.write(marker.encode() + b"\n")
    except OSError as exc:
        where = cache.directory(spec) / OFF_FILE
        raise EmbedderError(f"cannot write {where}: {exc.strerror or exc}") from exc


def make_variant(
    cache: ModelCache, spec: ModelSpec, files: ModelFiles, runtime: Callable[[], str]
) -> VariantRecord:
    """Build, verify and install the int8 per-channel variant of the model anew (under the cache
    lock), switching it back on; ``runtime`` says which versions build it, as for ``ensure_variant``.

    Raises EmbedderError, leaving nothing behind, when its vectors agree less than MIN_AGREEMENT
    with the original's on the built-in sentences.
    """
    from remem.embedders.locks import directory_lock  # noqa: PLC0415

    with directory_lock(cache.directory(spec)):
        with contextlib.suppress(FileNotFoundError):
            (cache.directory(spec) / OFF_FILE).unlink()
        return _build(cache, spec, files, runtime())


def installed_variant(cache: ModelCache, spec: ModelSpec) -> tuple[Path, VariantRecord] | None:
    """The variant this machine made for the model and its record, or None; nothing is built here."""
    variant = find_variant(cache, spec)
    record = read_record(cache, spec)
    return None if variant is None or record is None else (variant, record)


def ensure_variant(
    cache: ModelCache,
    spec: ModelSpec,
    files: ModelFiles,
    runtime: Callable[[], str],
    *,
    even_if_off: bool = False,
) -> tuple[Path, VariantRecord, bool]:
    """The model's variant, its record, and whether it was built by this call (once per machine,
    under the cache lock; a process that waited for another's build uses that one). ``runtime``
    says which versions build it (asked only when it is built).

    Raises EmbedderError saying why there is none: switched off (unless ``even_if_off``, for a store
    already made with it), refused now (then switched off, so it is not tried again), or not
    buildable here (no onnx, an unwritable cache: tried again next time).
    """
    from remem.embedders.locks import directory_lock  # noqa: PLC0415

    def available() -> tuple[Path, VariantRecord] | None:
        reason = None if even_if_off else switched_off(cache, spec)
        if reason is not None:  # off for new stores, even when built again for an older store
            raise EmbedderError(reason)
        return installed_variant(cache, spec)

    if (installed := available()) is not None:
        return (*installed, False)
    with directory_lock(cache.directory(spec)):
        if (installed := available()) is not None:
            return (*installed, False)
        try:
            record = _build(cache, spec, files, runtime())
        except _RefusedError as exc:
            with contextlib.suppress(EmbedderError):  # unwritable: it is tried again next time
                _write_off(cache, spec, str(exc))
            raise
        variant, _ = _paths(cache, spec)
        return variant, record, True


class _RefusedError(EmbedderError):
    """The variant's vectors agree too little with the original's."""


def _build(cache: ModelCache, spec: ModelSpec, files: ModelFiles, runtime: str) -> VariantRecord:
    """Build into a staging file, check its agreement, then install it and its record."""
    from remem.embedders.optimize import MIN_AGREEMENT, build_int8_variant  # noqa: PLC0415

    verify_model_files(spec, files)  # built only from the very files it is recorded as made from
    variant, record_path = _paths(cache, spec)
    with staged(variant, f"the optimised {spec.name}") as staging:
        identity = build_int8_variant(files.model, staging)
        sha256 = file_sha256(staging)
        trial = variant_embedder(spec, replace(files, model=staging), file_sha256=sha256)
        agreement = measured_agreement(spec, files, trial)
        if agreement < MIN_AGREEMENT:
            raise _RefusedError(
                f"the optimised {spec.name} agrees only {agreement:.4f} (mean cosine) with the original, "
                f"below {MIN_AGREEMENT}; refused, the original stays in use"
            )
        size = staging.stat().st_size
        record = VariantRecord(spec.model_sha256, sha256, size, agreement, runtime, identity)
        remove_variant(cache, spec)
        install(staging, variant, record_path, record.to_json())
    return record


@contextlib.contextmanager
def staged(dest: Path, what: str) -> Iterator[Path]:
    """A path for a file being built, in the private staging directory beside ``dest`` (the caller
    holds the directory's lock; ``locks.staging`` removes what killed builds left), removed afterwards
    whatever happens; an OSError meanwhile is an EmbedderError saying ``what`` could not be installed."""
    from remem.embedders.locks import staging  # noqa: PLC0415

    try:
        with staging(dest.parent) as area:
            yield area / dest.name
    except OSError as exc:
        raise EmbedderError(f"cannot install {what}: {exc.strerror or exc}") from exc


def install(staging: Path | None, dest: Path, record_path: Path, record: str) -> None:
    """Move a built file into place (unless ``staging`` is None: a refusal is only recorded), then
    write its record: without the record the file is never used."""
    if staging is not None:
        os.replace(staging, dest)
    with atomic_writer(record_path, mode=0o644) as handle:
        handle.write(record.encode() + b"\n")


def measured_agreement(spec: ModelSpec, files: ModelFiles, trial: OnnxEmbedder) -> float:
    """Mean cosine between the original file's (``files``) and ``trial``'s vectors of the built-in
    sentences (``optimize.AGREEMENT_SENTENCES``)."""
    from remem.embedders.optimize import AGREEMENT_SENTENCES, mean_agreement  # noqa: PLC0415
    from remem.embedders.runner import OnnxEmbedder  # noqa: PLC0415

    reference = OnnxEmbedder(spec, files).embed_queries(AGREEMENT_SENTENCES).vectors
    return mean_agreement(reference, trial.embed_queries(AGREEMENT_SENTENCES).vectors)
