"""The model file remem runs is trusted only by its content: the shipped file, damaged by flipping,
zeroing, randomising or cutting bytes, gives an error — never a vector in a store; `model verify` and
`doctor` name it; a file cut short under a running process neither kills it nor changes its vectors;
and nothing is built, written into the model cache, or imported from onnx when a store embeds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from helpers import run_cli
from remem.backends.local import LocalBackend
from remem.embedders import registry, sessions
from remem.embedders.registry import BUNDLED_MODEL
from remem.types import Filters

TEXT = "The login sequence uses OAuth device codes"


def _stored(store: Path) -> np.ndarray:
    """The vector(s) the store holds for its memory 1."""
    with LocalBackend.open(store, create=False) as backend:
        (blob,) = backend.vectors_of_memories([1])[1]
    return np.frombuffer(blob, dtype="<f4")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """A store made with the shipped file, and the vector it holds for ``TEXT``."""
    store = tmp_path_factory.mktemp("made") / "store"
    assert run_cli(["add", TEXT], store).code == 0
    return store, _stored(store)


@pytest.fixture
def shipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A copy of the bundled model's directory that this test's remem runs (its model file)."""
    copy = tmp_path / "shipped"
    shutil.copytree(registry.bundled_directory(), copy)
    monkeypatch.setattr(registry, "bundled_directory", lambda: copy)
    sessions.load_session.cache_clear()
    yield copy / "model.onnx"
    sessions.load_session.cache_clear()


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for at in range(len(data) // 3, len(data), max(1, len(data) // 50)):
        data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def _one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "one-bit": _one_byte,
    "flipped": _flip,
    "zeroed": lambda path: path.write_bytes(bytes(path.stat().st_size)),
    "random": lambda path: path.write_bytes(np.random.default_rng(7).bytes(path.stat().st_size)),
    "cut": lambda path: os.truncate(path, 4096),
    "missing": lambda path: path.unlink(),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_model_file_is_an_error_not_a_vector(
    made: tuple[Path, np.ndarray], shipped: Path, tmp_path: Path, damage: str
) -> None:
    store = tmp_path / "store"
    shutil.copytree(made[0], store)
    DAMAGE[damage](shipped)
    added = run_cli(["add", "another memory"], store)
    assert added.code == 2 and added.stderr.count("\n") == 1, added.stderr
    assert str(shipped) in added.stderr
    with LocalBackend.open(store, create=False) as backend:
        assert backend.candidate_ids(Filters()) == [1]  # nothing was added
    new = run_cli(["add", "a first memory"], tmp_path / "new")
    assert new.code == 2 and str(shipped) in new.stderr
    verified = run_cli(["model", "verify", BUNDLED_MODEL.name])
    assert verified.code == 2 and str(shipped) in verified.stdout, verified.stdout
    doctor = run_cli(["doctor"], store)
    assert doctor.code == 2 and str(shipped) in doctor.stdout + doctor.stderr


def test_the_intact_copy_gives_the_stored_vector(
    made: tuple[Path, np.ndarray], shipped: Path, tmp_path: Path
) -> None:
    """The control for the test above: the same copy, undamaged, embeds as the shipped file does."""
    assert run_cli(["add", TEXT], tmp_path / "new").code == 0
    np.testing.assert_allclose(_stored(tmp_path / "new"), made[1], rtol=0, atol=1e-6)
    assert run_cli(["model", "verify", BUNDLED_MODEL.name]).code == 0
    assert run_cli(["doctor"], made[0]).code == 0


_SERVER = """
import sys, numpy as np, pathlib, remem
from remem.embedders import registry
registry.bundled_directory = lambda: pathlib.Path(sys.argv[2])
with remem.open(sys.argv[1], create=False) as memories:
    embedder = memories.embedder()
    first = embedder.embed_queries(["probe"]).vectors[0]
    print("ready", flush=True)
    sys.stdin.readline()
    again = embedder.embed_queries(["probe", "a longer probe than the first one"]).vectors[0]
    print("same" if np.array_equal(first, again) else "different", flush=True)
"""


@pytest.mark.slow
def test_a_file_cut_short_under_a_running_process_neither_kills_it_nor_changes_its_vectors(
    made: tuple[Path, np.ndarray], shipped: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    shutil.copytree(made[0], store)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(store), str(shipped.parent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stdin is not None
        assert server.stdout.readline() == "ready\n"
        os.truncate(shipped, 0)
        server.stdin.write("\n")
        server.stdin.flush()
        assert server.stdout.readline() == "same\n"
        assert server.wait(timeout=60) == 0  # not -SIGBUS
    finally:
        server.kill()
        server.wait()


_FIRST_ADD = """
import sys, remem
with remem.open(sys.argv[1]) as memories:
    memories.add("a first memory")
    assert memories.search("first", k=1)[0].memory.text == "a first memory"
print(sorted(name for name in sys.modules if name == "onnx" or name.startswith("onnx.")))
"""


@pytest.mark.slow
def test_a_new_stores_first_add_writes_nothing_to_the_model_cache_and_never_imports_onnx(
    tmp_path: Path,
) -> None:
    models = tmp_path / "models"
    env = {**os.environ, "REMEM_MODELS": str(models), "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_ADD, str(tmp_path / "store")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"  # onnx (a build extra) was never imported
    assert not models.exists()  # nothing was written where pulled models live
