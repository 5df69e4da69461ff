"""The calibrated int8 variant: the variant with fixed activation scales, run in batches.

Built beside the variant (``model.int8c.onnx``) from it and the activation ranges remem ships for
it (``activations.KNOWN_RANGES``), on a new store's first use, once per machine, under the cache
lock; verified like the variant (mean cosine to the original on the built-in sentences at least
``MIN_AGREEMENT``) and recorded (``model.int8c.json``: the variant it was made from, its file's
sha256, its identity, its agreement). Its identity, not the variant's, is the stamp of a store made
with it. With fixed scales a window's vector does not depend on the windows run beside it, so
windows of one length run ``CALIBRATED_BATCH`` at a time, one batch per CPU
(``runner.uniform_batches``). Removed with the variant (``variants.remove_variant``).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from remem.embedders.activations import Ranges, ranges_for
from remem.embedders.spec import ModelFiles, ModelSpec, file_problem, file_sha256
from remem.embedders.variants import (
    CALIBRATED_FILE,
    CALIBRATED_RECORD,
    VariantRecord,
    install,
    measured_agreement,
    read_json_record,
    staged,
    variant_embedder,
)
from remem.errors import EmbedderError

if TYPE_CHECKING:
    from remem.embedders.cache import ModelCache
    from remem.embedders.runner import OnnxEmbedder

#: Windows of one length run together, up to this many (``runner.UNIFORM_BATCH_TOKENS`` caps longer
#: windows at fewer).
CALIBRATED_BATCH = 16


@dataclass(frozen=True)
class CalibratedRecord:
    """What a calibrated variant was made from and how it was verified."""

    variant_identity: str
    sha256: str
    size: int
    agreement: float
    identity: str

    def to_json(self) -> str:
        """The record as one JSON object."""
        return json.dumps(self.__dict__, sort_keys=True)


def calibrated_embedder(
    spec: ModelSpec,
    files: ModelFiles,
    *,
    file_sha256: str,
    sha256: str | None = None,
    graph_dir: Path | None = None,
) -> OnnxEmbedder:
    """An embedder of a calibrated file (``files.model``, run only if its bytes have ``file_sha256``;
    ``sha256``: its stamp): windows of one length in batches of up to ``CALIBRATED_BATCH``,
    ``variant_workers`` single-threaded batches at once."""
    return variant_embedder(
        spec, files, file_sha256=file_sha256, sha256=sha256, graph_dir=graph_dir, batch_size=CALIBRATED_BATCH
    )


def ensure_calibrated(
    cache: ModelCache, spec: ModelSpec, files: ModelFiles, variant: tuple[Path, VariantRecord]
) -> tuple[Path, CalibratedRecord] | str:
    """The calibrated file made from ``variant`` (its path and record) and its record, built now if
    need be (once per machine: a process that waited for another's build uses that one); or why
    there is none (no ranges for this variant, no onnx, refused). ``files`` are the original
    model's (the reference its vectors are checked against)."""
    from remem.embedders.locks import directory_lock  # noqa: PLC0415

    path, record = variant
    ranges = ranges_for(record.identity)
    if ranges is None:
        return f"remem has no activation ranges for this variant of {spec.name}"
    if (installed := installed_calibrated(cache, spec, record)) is not None:
        return installed
    try:
        with directory_lock(cache.directory(spec)):
            built = installed_calibrated(cache, spec, record)
            return built or _build(cache, spec, files, (path, record), ranges)
    except EmbedderError as exc:
        return str(exc)


def installed_calibrated(
    cache: ModelCache, spec: ModelSpec, variant: VariantRecord
) -> tuple[Path, CalibratedRecord] | None:
    """The calibrated file made from this variant and its record, or None; nothing is built here."""
    path = cache.directory(spec) / CALIBRATED_FILE
    record = read_calibrated(cache, spec)
    if record is None or record.variant_identity != variant.identity or not record.identity:
        return None
    with contextlib.suppress(OSError):
        if path.stat().st_size == record.size:
            return path, record
    return None


def read_calibrated(cache: ModelCache, spec: ModelSpec) -> CalibratedRecord | None:
    """The calibrated variant's record, or None when there is none (or it is unreadable)."""
    return read_json_record(cache.directory(spec) / CALIBRATED_RECORD, CalibratedRecord)


def verify_calibrated(cache: ModelCache, spec: ModelSpec) -> str | None:
    """None when the model has no calibrated variant or it is intact; else what is wrong with it."""
    record = read_calibrated(cache, spec)
    if record is None or not record.identity:
        return None
    return file_problem(cache.directory(spec) / CALIBRATED_FILE, record.sha256)


def cache_problem(cache: ModelCache, spec: ModelSpec, *, graphs: bool = False) -> str | None:
    """What is wrong with the model's variant and calibrated variant (re-hashed against their
    records) and, with ``graphs``, with their cached optimised graphs, and what to run about it;
    None when nothing is."""
    from remem.embedders.sessions import graph_problems  # noqa: PLC0415
    from remem.embedders.variants import verify_variant  # noqa: PLC0415

    problems = [found for found in (verify_variant(cache, spec), verify_calibrated(cache, spec)) if found]
    problems += graph_problems(cache.directory(spec)) if graphs else []
    return (
        f"{'; '.join(problems)}; `remem model optimize {spec.name}` builds them again" if problems else None
    )


def _build(
    cache: ModelCache,
    spec: ModelSpec,
    files: ModelFiles,
    variant: tuple[Path, VariantRecord],
    ranges: Ranges,
) -> tuple[Path, CalibratedRecord]:
    """Build into a staging file, check its agreement, then install it and its record. A refused
    one is recorded without an identity, so that it is not built again for the same variant."""
    from remem.embedders.optimize import build_calibrated_variant  # noqa: PLC0415

    source, made_from = variant
    if (problem := file_problem(source, made_from.sha256)) is not None:
        raise EmbedderError(
            f"the optimized {spec.name} is damaged: {problem}; `remem model optimize` rebuilds it"
        )
    path, record_path = cache.directory(spec) / CALIBRATED_FILE, cache.directory(spec) / CALIBRATED_RECORD
    earlier = read_calibrated(cache, spec)
    if earlier is not None and earlier.variant_identity == made_from.identity and not earlier.identity:
        raise EmbedderError(_refusal(spec, earlier.agreement))  # refused before (an accepted one is rebuilt)
    with staged(path, f"the calibrated {spec.name}") as staging:
        identity = build_calibrated_variant(source, staging, ranges)
        sha256, size = file_sha256(staging), staging.stat().st_size
        trial = calibrated_embedder(spec, replace(files, model=staging), file_sha256=sha256)
        agreement = measured_agreement(spec, files, trial)
        accepted = agreement >= _min_agreement()
        record = CalibratedRecord(made_from.identity, sha256, size, agreement, identity if accepted else "")
        install(staging if accepted else None, path, record_path, record.to_json())
    if not accepted:
        raise EmbedderError(_refusal(spec, agreement))
    return path, record


def _min_agreement() -> float:
    from remem.embedders.optimize import MIN_AGREEMENT  # noqa: PLC0415

    return MIN_AGREEMENT


def _refusal(spec: ModelSpec, agreement: float) -> str:
    return (
        f"the calibrated {spec.name} agrees only {agreement:.4f} (mean cosine) with the original, "
        f"below {_min_agreement()}"
    )
