"""The bundled model ships as one built file, pinned by sha256 and size, computing the vectors
recorded from its build; a store whose vectors came from another file of the model (stamped with
that file's sha256) is refused with the command that re-embeds it, and that command works."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import remem
from helpers import int8_kernels, run_cli
from remem.embedders.registry import BUNDLED_MODEL, bundled_files
from remem.embedders.runner import OnnxEmbedder
from remem.embedders.spec import file_sha256
from remem.testing import FakeEmbedder

DATA = Path(__file__).parent.parent / "data"
#: Query vectors of 45 varied sentences (tools/modelbuild/variant.py's check sentences and the fp32
#: reference's) as the shipped file computes them, recorded on a CPU with AVX-512 VNNI int8 kernels
#: (``helpers.int8_kernels``). With 7-bit weights no int8 kernel saturates, so an AVX2 CPU computes the
#: same integer sums (tests/model_build/test_same_vector_on_every_cpu.py).
REFERENCE = json.loads((DATA / "minilm_7bit_reference.json").read_text())
#: The file remem shipped before, with 8-bit weights (its vectors depend on the CPU's int8 kernels).
EARLIER_SHIPPED = "b5f035bc8a39f1dd8c54d1fe71fa07a98236a23b87070df346ca6a604fa93831"
EARLIER_CALIBRATED = "aa8babec6ca310e0cb3d5ab4cadb373332d6a827992f5a9bc3443b5caf65c03e"
#: Stamps of pre-release stores made with the plain int8 variant (per-run scales) and the upstream file.
EARLIER_PLAIN = "06e5a7930478046b558fd004ad95f9e0f373f6fefe34bcd8dae7d70ae7797294"
EARLIER_UPSTREAM = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TEXT = "The login sequence uses OAuth device codes"


def test_the_shipped_file_is_the_pinned_one() -> None:
    files = bundled_files()
    assert files.model.stat().st_size == BUNDLED_MODEL.model.size
    assert file_sha256(files.model) == BUNDLED_MODEL.model_sha256
    assert file_sha256(files.tokenizer) == BUNDLED_MODEL.tokenizer_sha256


def test_this_cpu_computes_the_vectors_recorded_from_the_shipped_file() -> None:
    assert REFERENCE["model_sha256"] == BUNDLED_MODEL.model_sha256
    embedder = OnnxEmbedder.of(BUNDLED_MODEL, bundled_files())
    vectors = embedder.embed_queries(REFERENCE["sentences"]).vectors
    recorded = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    if int8_kernels() == "vnni":  # the kernels the reference was recorded with: the same bytes
        assert np.array_equal(vectors, recorded)
    else:  # the same integer sums; the float parts' AVX2 code may round the last bits otherwise
        # (measured with the 8-bit graph, its AVX2 sums written out, against vectors recorded on a real
        # AVX2 machine: 5.2e-8 at most; test_same_vector_on_every_cpu.py)
        np.testing.assert_allclose(vectors, recorded, atol=1e-6)


def _restamp(store: Path | str, sha256: str) -> None:
    """Make ``store`` (a directory, or a PostgreSQL URL) look made with the file of this stamp."""
    if isinstance(store, Path):
        with sqlite3.connect(store / "memories.sqlite3") as db:
            db.execute("UPDATE store_meta SET value = ? WHERE key = 'model_sha256'", (sha256,))
        return
    import postgres_server

    schema = store.rsplit("schema=", 1)[1]
    postgres_server.psql(f"UPDATE {schema}.store_meta SET value = '{sha256}' WHERE key = 'model_sha256'")


def _stamp(store: Path | str) -> str:
    with remem.open(store, create=False, embedder=FakeEmbedder()) as memories:
        model = memories.stats().model
        assert model is not None
        return model.sha256


@pytest.fixture(params=["local", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """A new store of either back-end (its URL or directory)."""
    if request.param == "local":
        return tmp_path / "store"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.mark.parametrize("earlier", [EARLIER_SHIPPED, EARLIER_CALIBRATED, EARLIER_PLAIN, EARLIER_UPSTREAM])
def test_a_store_of_another_file_of_its_model_is_refused_with_the_command_that_fixes_it(
    store: Path | str, earlier: str
) -> None:
    assert run_cli(["add", TEXT], store).code == 0
    _restamp(store, earlier)
    fix = f"`remem reindex --model {BUNDLED_MODEL.name}`"
    refused = run_cli(["add", "Lunch is at noon on Fridays"], store)
    assert refused.code == 2 and fix in refused.stderr and refused.stderr.count("\n") == 1, refused.stderr
    keyword = run_cli(["search", "OAuth", "--mode", "keyword", "-k", "1"], store)
    assert keyword.code == 0 and TEXT in keyword.stdout  # what needs no model still works
    doctor = run_cli(["doctor"], store)
    assert doctor.code == 2 and fix in doctor.stdout + doctor.stderr
    fixed = run_cli(["reindex", "--model", BUNDLED_MODEL.name], store)
    assert fixed.code == 0, fixed.stderr
    assert _stamp(store) == BUNDLED_MODEL.model_sha256
    found = run_cli(["search", "auth flow", "--mode", "vector", "--json", "-k", "1"], store)
    assert found.code == 0 and json.loads(found.stdout)["text"] == TEXT
    assert run_cli(["add", "Lunch is at noon on Fridays"], store).code == 0
    assert run_cli(["doctor"], store).code == 0


def test_a_document_s_vectors_do_not_depend_on_the_documents_embedded_with_it() -> None:
    """The bundled model runs windows of one length together and pads nothing, so how an ingest cuts
    its documents into calls never changes a vector: each document's vectors are, to the bit, those
    it gets alone, for one-window documents of many lengths (turns with their contexts) and long
    ones of several windows."""
    embedder = OnnxEmbedder.of(BUNDLED_MODEL, bundled_files())
    words = REFERENCE["sentences"]
    documents = [
        "\n".join(f"user: {words[(n + k) % len(words)]}" for k in range(1 + n % 3)) for n in range(60)
    ]
    documents += [" ".join(words[n : n + 12]) for n in range(0, 24, 8)]  # several windows each
    together = embedder.embed_documents(documents).windows
    assert max(len(rows) for rows in together) > 1
    assert sum(len(rows) for rows in together) > len(documents)
    for document, rows in zip(documents, together, strict=True):
        (alone,) = embedder.embed_documents([document]).windows
        assert alone.tobytes() == rows.tobytes()
