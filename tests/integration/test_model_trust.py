"""The model files remem runs are trusted only by their content: the real bundled model's cached
files, damaged by flipping, zeroing, randomising or cutting bytes, give an error or are built again —
never a different vector in a store; `model verify` and `doctor` name them; a file cut short under a
running process does not kill it; a build killed half-way leaves nothing a later one does not remove."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from helpers import run_cli
from remem.backends.local import LocalBackend
from remem.embedders import calibrated, sessions
from remem.embedders.registry import BUNDLED_MODEL
from remem.types import Filters

TEXT = "The login sequence uses OAuth device codes"


def _model_dir(models: Path) -> Path:
    return models / BUNDLED_MODEL.name / "bundled"


def _stored(store: Path) -> np.ndarray:
    """The vector(s) the store holds for its memory 1."""
    with LocalBackend.open(store, create=False) as backend:
        (blob,) = backend.vectors_of_memories([1])[1]
    return np.frombuffer(blob, dtype="<f4")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, np.ndarray]:
    """A model cache as a first store builds it (variant, calibrated variant, cached graph), a store
    made with it, and the vector that store holds for ``TEXT``."""
    root = tmp_path_factory.mktemp("built")
    os.environ["REMEM_MODELS"] = str(root / "models")  # the module fixture runs before monkeypatch
    try:
        assert run_cli(["add", TEXT], root / "store").code == 0
    finally:
        del os.environ["REMEM_MODELS"]
    return root / "models", root / "store", _stored(root / "store")


@pytest.fixture
def models(built: tuple[Path, Path, np.ndarray], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the built cache for this test, in use."""
    copy = tmp_path / "models"
    shutil.copytree(built[0], copy)
    monkeypatch.setenv("REMEM_MODELS", str(copy))
    sessions.load_session.cache_clear()
    return copy


def _cached_graph(models: Path) -> Path:
    (graph,) = _model_dir(models).glob("model.int8c.optimized-*.onnx")
    return graph


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for at in range(len(data) // 3, len(data), max(1, len(data) // 50)):
        data[at] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "graph-flipped": lambda models: _flip(_cached_graph(models)),
    "weights-flipped": lambda models: _flip(sessions.weights_file(_cached_graph(models))),
    "weights-zeroed": lambda models: (w := sessions.weights_file(_cached_graph(models))).write_bytes(
        bytes(w.stat().st_size)
    ),
    "weights-random": lambda models: (w := sessions.weights_file(_cached_graph(models))).write_bytes(
        np.random.default_rng(7).bytes(w.stat().st_size)
    ),
    "weights-cut": lambda models: os.truncate(sessions.weights_file(_cached_graph(models)), 4096),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_cached_graph_is_reported_then_built_again_never_a_wrong_vector(
    built: tuple[Path, Path, np.ndarray], models: Path, tmp_path: Path, damage: str
) -> None:
    _, made, expected = built
    store = tmp_path / "store"
    shutil.copytree(made, store)
    graph = _cached_graph(models)
    DAMAGE[damage](models)
    verified = run_cli(["model", "verify", BUNDLED_MODEL.name])
    assert verified.code == 2 and graph.stem in verified.stdout, verified.stdout
    assert f"`remem model optimize {BUNDLED_MODEL.name}`" in verified.stdout
    doctor = run_cli(["doctor"], store)
    assert doctor.code == 2 and graph.stem in doctor.stdout + doctor.stderr
    assert run_cli(["add", TEXT], tmp_path / "new").code == 0  # a new store: the graph is built again
    np.testing.assert_allclose(_stored(tmp_path / "new"), expected, rtol=0, atol=1e-6)
    assert run_cli(["model", "verify", BUNDLED_MODEL.name]).code == 0
    assert run_cli(["doctor"], store).code == 0


def test_a_damaged_variant_file_is_an_error_not_a_vector(
    built: tuple[Path, Path, np.ndarray], models: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    shutil.copytree(built[1], store)
    for path in _model_dir(models).glob("model.int8c.optimized-*"):
        path.unlink()  # the calibrated file itself must be read now
    source = _model_dir(models) / calibrated.CALIBRATED_FILE
    _flip(source)
    added = run_cli(["add", "another memory"], store)
    assert added.code == 2 and added.stderr.count("\n") == 1, added.stderr
    assert f"{source} is damaged" in added.stderr and "`remem model verify`" in added.stderr
    with LocalBackend.open(store, create=False) as backend:
        assert backend.candidate_ids(Filters()) == [1]  # nothing was added
    verified = run_cli(["model", "verify", BUNDLED_MODEL.name])
    assert verified.code == 2 and calibrated.CALIBRATED_FILE in verified.stdout
    assert run_cli(["model", "optimize"]).code == 0
    assert run_cli(["add", "another memory"], store).code == 0
    assert run_cli(["model", "verify", BUNDLED_MODEL.name]).code == 0


def test_a_missing_calibrated_file_is_built_again_for_a_store_made_with_it(
    built: tuple[Path, Path, np.ndarray], models: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    shutil.copytree(built[1], store)
    (_model_dir(models) / calibrated.CALIBRATED_FILE).unlink()
    found = run_cli(["search", "auth flow", "-k", "1"], store)
    assert found.code == 0 and TEXT in found.stdout, found.stderr
    assert (_model_dir(models) / calibrated.CALIBRATED_FILE).is_file()
    assert run_cli(["model", "verify", BUNDLED_MODEL.name]).code == 0


_SERVER = """
import sys, numpy as np, remem
with remem.open(sys.argv[1], create=False) as memories:
    embedder = memories.embedder()
    first = embedder.embed_queries(["probe"]).vectors[0]
    print("ready", flush=True)
    sys.stdin.readline()
    again = embedder.embed_queries(["probe", "a longer probe than the first one"]).vectors[0]
    print("same" if np.array_equal(first, again) else "different", flush=True)
"""


def test_files_cut_short_under_a_running_process_neither_kill_it_nor_change_its_vectors(
    built: tuple[Path, Path, np.ndarray], models: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    shutil.copytree(built[1], store)
    env = {**os.environ, "REMEM_MODELS": str(models), "PYTHONPATH": os.pathsep.join(sys.path)}
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stdin is not None
        assert server.stdout.readline() == "ready\n"
        for path in _model_dir(models).iterdir():
            if path.name.startswith("model.int8"):
                os.truncate(path, 0)
        server.stdin.write("\n")
        server.stdin.flush()
        assert server.stdout.readline() == "same\n"
        assert server.wait(timeout=60) == 0  # not -SIGBUS
    finally:
        server.kill()
        server.wait()


def _leftovers(directory: Path) -> list[str]:
    """Every name under ``directory`` that starts with a dot, the lock file aside."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob(".*") if p.name != ".lock")


@pytest.mark.parametrize("attempt", range(3))
def test_a_build_killed_half_way_leaves_nothing_after_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attempt: int
) -> None:
    models = tmp_path / "models"
    monkeypatch.setenv("REMEM_MODELS", str(models))
    env = {**os.environ, "REMEM_HOME": str(tmp_path / "one"), "PYTHONPATH": os.pathsep.join(sys.path)}
    build = subprocess.Popen([sys.executable, "-m", "remem", "add", "a memory"], env=env)
    deadline = time.monotonic() + 300
    while not list(models.rglob(".*.tmp")):  # a file being written: the variant's, half-way
        assert build.poll() is None and time.monotonic() < deadline, "the build ended before it was caught"
        time.sleep(0.005)
    os.kill(build.pid, signal.SIGKILL)
    build.wait()
    assert _leftovers(_model_dir(models))  # what the killed build was writing
    sessions.load_session.cache_clear()
    assert run_cli(["add", "a memory"], tmp_path / "two").code == 0
    assert _leftovers(_model_dir(models)) == []
    assert run_cli(["model", "verify", BUNDLED_MODEL.name]).code == 0
