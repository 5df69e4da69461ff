"""`remem model …` against a local stand-in for the hub, and how stores choose and keep a model.

The successful pulls use a registered test model whose files are the bundled ONNX file described
with the BGE recipe (CLS pooling, the BGE query prefix, a 512-token window), so the whole path —
download, verification, a new store choosing it, searching with it — runs on real files.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import run_cli
from hub_server import HubServer, hub_server
from remem.backends.local import LocalBackend
from remem.embedders import registry
from remem.embedders.registry import BGE_SMALL_EN_V1_5, BUNDLED_MODEL, bundled_files
from remem.embedders.spec import ModelFile, ModelSpec, file_sha256

REVISION = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[HubServer]:
    """The stand-in hub as REMEM_HF_ENDPOINT, and an empty model cache as REMEM_MODELS."""
    with hub_server() as server:
        monkeypatch.setenv("REMEM_HF_ENDPOINT", server.endpoint)
        monkeypatch.setenv("REMEM_MODELS", str(tmp_path / "models"))
        yield server


@pytest.fixture
def test_model(monkeypatch: pytest.MonkeyPatch, hub: HubServer) -> ModelSpec:
    """A downloadable BGE-recipe model served by the hub, registered and preferred for new stores."""
    files = bundled_files()
    spec = dataclasses.replace(
        BGE_SMALL_EN_V1_5,
        name="bge-recipe-test",
        dim=BUNDLED_MODEL.dim,
        model=ModelFile(file_sha256(files.model), files.model.stat().st_size, "onnx/model.onnx"),
        tokenizer=ModelFile(file_sha256(files.tokenizer), files.tokenizer.stat().st_size, "tokenizer.json"),
        repo="test/bge-recipe",
        revision=REVISION,
    )
    for file, path in ((spec.model, files.model), (spec.tokenizer, files.tokenizer)):
        hub.files[f"/{spec.repo}/resolve/{REVISION}/{file.repo_path}"] = path.read_bytes()
    monkeypatch.setitem(registry._KNOWN, spec.name, spec)
    monkeypatch.setattr(registry, "PREFERRED_MODEL", spec)
    return spec


def _rows() -> dict[str, dict[str, object]]:
    listed = run_cli(["model", "list", "--json"])
    assert listed.code == 0, listed.stderr
    return {row["name"]: row for row in map(json.loads, listed.stdout.splitlines())}


def test_list_shows_every_model_and_what_is_installed(hub: HubServer) -> None:
    rows = _rows()
    assert rows["all-minilm-l6-v2"]["state"] == "bundled"
    assert (rows["all-minilm-l6-v2"]["document_tokens"], rows["all-minilm-l6-v2"]["max_tokens"]) == (128, 256)
    assert rows["bge-small-en-v1.5"] | {"size_bytes": 0} == {
        "name": "bge-small-en-v1.5",
        "dim": 384,
        "pooling": "cls",
        "max_tokens": 512,
        "document_tokens": 512,
        "size_bytes": 0,
        "state": "not installed",
        "store": False,
        "license": "MIT",
        "source": "https://huggingface.co/BAAI/bge-small-en-v1.5",
        "languages": ["en"],
    }
    assert rows["bge-base-en-v1.5"]["dim"] == 768
    assert rows["multilingual-e5-small"]["languages"] == ["multilingual"]
    assert rows["multilingual-e5-small"]["state"] == "not installed"
    table = run_cli(["model", "list"]).stdout
    assert "bge-small-en-v1.5      384  cls" in table and "not installed" in table
    assert "LANGUAGES" in table and "  en  " in table and "  128/256  " in table
    assert hub.requests == []  # listing never touches the network


def test_pull_installs_verified_files_then_everything_uses_them(
    test_model: ModelSpec, hub: HubServer
) -> None:
    name = test_model.name
    assert run_cli(["model", "path", name]).code == 1
    pulled = run_cli(["model", "pull", name])
    assert pulled.code == 0, pulled.stderr
    directory = Path(pulled.stdout.strip())
    assert file_sha256(directory / "model.onnx") == test_model.model_sha256
    assert sorted(p.name for p in directory.iterdir()) == [".lock", "model.onnx", "tokenizer.json"]
    assert "sha256 verified" in pulled.stderr
    assert _rows()[name]["state"] == "installed"
    assert run_cli(["model", "path", name]).stdout.strip() == str(directory / "model.onnx")
    verified = run_cli(["model", "verify", name])
    assert verified.code == 0 and verified.stdout.count("ok  ") == 2
    again = len(hub.requests)
    assert run_cli(["model", "pull", name]).code == 0
    assert len(hub.requests) == again  # already installed and intact: nothing downloaded


def test_a_damaged_install_fails_verify_and_a_pull_repairs_it(test_model: ModelSpec) -> None:
    installed = Path(run_cli(["model", "pull", test_model.name]).stdout.strip()) / "tokenizer.json"
    installed.write_bytes(installed.read_bytes()[:-10] + b"0123456789")
    verified = run_cli(["model", "verify"])
    assert verified.code == 2
    assert f"FAIL  {test_model.name}: {installed}: sha256" in verified.stdout
    assert "ok    all-minilm-l6-v2" in verified.stdout  # the bundled model is intact
    assert run_cli(["model", "pull", test_model.name]).code == 0
    assert run_cli(["model", "verify", test_model.name]).code == 0


def test_a_new_store_chooses_the_pulled_model_and_keeps_it(test_model: ModelSpec, store_dir: Path) -> None:
    assert run_cli(["model", "pull", test_model.name]).code == 0
    first = run_cli(["add", "The login sequence uses OAuth device codes"], store_dir)
    assert first.code == 0, first.stderr
    assert first.stderr == f"New store at {store_dir}, using the model {test_model.name} (English).\n"
    second = run_cli(["add", "Lunch is at noon on Fridays"], store_dir)
    assert "New store" not in second.stderr
    with LocalBackend.open(store_dir, create=False) as store:
        assert store.model is not None and store.model.name == test_model.name
        assert store.model.pooling == "cls"
        assert store.model.sha256 == test_model.model_sha256  # the pulled file itself, nothing built
    assert _rows()[test_model.name]["state"] == "installed"
    directory = Path(run_cli(["model", "path", test_model.name]).stdout.strip()).parent
    assert sorted(p.name for p in directory.iterdir()) == [".lock", "model.onnx", "tokenizer.json"]
    found = run_cli(["search", "auth flow", "--json", "--mode", "vector", "-k", "1"], store_dir)
    assert json.loads(found.stdout)["text"].startswith("The login sequence")
    assert _rows()[test_model.name]["store"] is False  # no --store given: the ambient store
    listed = run_cli(["model", "list", "--json"], store_dir)
    marked = [json.loads(line)["name"] for line in listed.stdout.splitlines() if json.loads(line)["store"]]
    assert marked == [test_model.name]


TIP = (
    "Better search: `remem model pull bge-small-en-v1.5` (134 MB), "
    "then `remem reindex --model bge-small-en-v1.5`."
)


def _new_store(store: Path) -> str:
    return f"New store at {store}, using the bundled model all-minilm-l6-v2 (English).\n"


def test_a_new_store_without_the_better_model_uses_the_bundled_one_and_says_how(
    hub: HubServer, store_dir: Path
) -> None:
    """Issue 26 #2: one plain line says where the new store is and which model it uses, and one line
    how to get the better model (each under 110 characters but the store's path)."""
    first = run_cli(["add", "Postgres 16 runs on the main box"], store_dir)
    assert (first.code, first.stderr) == (0, _new_store(store_dir) + TIP + "\n")
    assert len(TIP) <= 110 and len(_new_store(store_dir)) - len(str(store_dir)) <= 110
    assert run_cli(["add", "Another note"], store_dir).stderr == ""


def test_the_better_model_is_suggested_once_per_machine(hub: HubServer, tmp_path: Path) -> None:
    """The first new store says how to get the better model; a later new store (with the same model
    cache, as on one machine) says only where it is. -q says nothing and remembers nothing."""
    quiet = run_cli(["-q", "add", "first"], tmp_path / "quiet")
    assert (quiet.code, quiet.stderr) == (0, "")
    first = run_cli(["add", "first"], tmp_path / "one")
    assert first.stderr == _new_store(tmp_path / "one") + TIP + "\n"
    for name in ("two", "three"):
        later = run_cli(["add", "later"], tmp_path / name)
        assert (later.code, later.stderr) == (0, _new_store(tmp_path / name))
    assert (tmp_path / "models" / "tips-said").read_text(encoding="utf-8") == "pull-bge-small-en-v1.5\n"


def test_the_library_gives_every_new_store_the_tip_and_writes_nothing(hub: HubServer, tmp_path: Path) -> None:
    """Once per machine is the front-ends' choice: remem.open says it every time, remembers nothing."""
    import remem

    for name in ("one", "two"):
        with remem.open(tmp_path / name) as memories:
            memories.add("a memory")
            assert memories.notes == [_new_store(tmp_path / name).strip(), TIP]
            tip = memories.notes[1]
            assert isinstance(tip, remem.Tip) and tip.key == "pull-bge-small-en-v1.5"
            assert not isinstance(memories.notes[0], remem.Tip)
    assert not (tmp_path / "models").exists()


def test_a_model_cache_that_cannot_be_written_only_repeats_the_tip(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("not a directory", encoding="utf-8")
    monkeypatch.setenv("REMEM_MODELS", str(tmp_path / "a-file" / "models"))  # even root cannot write it
    for name in ("one", "two"):
        added = run_cli(["add", "a memory"], tmp_path / name)
        said = _new_store(tmp_path / name) + TIP + "\n"
        assert (added.code, added.stdout, added.stderr) == (0, "1\n", said)
    assert run_cli(["search", "memory", "--json"], tmp_path / "two").code == 0


def test_a_store_whose_model_is_not_installed_says_how_to_get_it(
    test_model: ModelSpec, store_dir: Path
) -> None:
    directory = Path(run_cli(["model", "pull", test_model.name]).stdout.strip())
    assert run_cli(["add", "a memory"], store_dir).code == 0
    (directory / "model.onnx").unlink()
    failed = run_cli(["search", "memory", "--mode", "vector"], store_dir)
    assert failed.code == 2
    assert f"run `remem model pull {test_model.name}`" in failed.stderr


def test_a_refused_file_is_an_error_and_installs_nothing(hub: HubServer, tmp_path: Path) -> None:
    failed = run_cli(["model", "pull", "bge-small-en-v1.5"])
    assert failed.code == 2
    assert "HTTP 404" in failed.stderr and failed.stderr.count("\n") == 1
    assert not (tmp_path / "models" / "bge-small-en-v1.5").exists()  # no empty directory, no lock
    assert run_cli(["model", "pull", "all-minilm-l6-v2"]).code == 2  # bundled: nothing to pull


def test_a_cut_download_resumes_and_a_wrong_file_leaves_nothing_behind(
    hub: HubServer, tmp_path: Path
) -> None:
    spec = BGE_SMALL_EN_V1_5
    path = f"/{spec.repo}/resolve/{spec.revision}/{spec.model.repo_path}"
    hub.files[path] = bytes(spec.model.size)  # the right size, the wrong bytes
    hub.cut[path] = 1_000_000
    directory = tmp_path / "models" / spec.name / spec.revision
    cut = run_cli(["model", "pull", spec.name])
    assert cut.code == 2 and "again" in cut.stderr
    assert (directory / "model.onnx.part").stat().st_size == 1_000_000
    del hub.cut[path]
    wrong = run_cli(["model", "pull", spec.name])
    assert wrong.code == 2 and "sha256" in wrong.stderr
    assert hub.requests[-1] == (path, "bytes=1000000-")
    assert not directory.exists()  # nothing but the lock was left: gone with it
    assert _rows()[spec.name]["state"] == "not installed"


def test_searching_a_store_without_vectors_chooses_no_model(hub: HubServer, store_dir: Path) -> None:
    LocalBackend.open(store_dir, create=True).close()
    for mode in ("vector", "hybrid"):
        found = run_cli(["search", "anything", "--mode", mode], store_dir)
        assert (found.code, found.stdout, found.stderr) == (1, "", "the store holds no memory yet\n")
    with LocalBackend.open(store_dir, create=False) as store:
        assert store.model is None


def test_reindex_moves_a_store_to_a_pulled_model_windows_and_all(
    test_model: ModelSpec, store_dir: Path
) -> None:
    long_text = " ".join(
        f"Note {i}: the build server in rack {i % 5} was patched on day {i}." for i in range(60)
    )
    for text in ["The login sequence uses OAuth device codes", long_text]:
        assert run_cli(["add", text], store_dir).code == 0
    with LocalBackend.open(store_dir, create=False) as store:
        assert store.model is not None and store.model.name == BUNDLED_MODEL.name
        before = len(store.records.vectors_of_memories([2])[2])
    assert run_cli(["model", "pull", test_model.name]).code == 0
    moved = run_cli(["reindex", "--model", test_model.name], store_dir)
    assert moved.code == 0, moved.stderr
    assert f"Re-embedded 2 memories with {test_model.name}" in moved.stderr
    with LocalBackend.open(store_dir, create=False) as store:
        assert store.model is not None and store.model.name == test_model.name
        after = len(store.records.vectors_of_memories([2])[2])
    assert before > after >= 2  # 256-token windows before, 512-token windows now
    found = run_cli(["search", "auth flow", "--mode", "vector", "--json", "-k", "1"], store_dir)
    assert json.loads(found.stdout)["id"] == 1
    assert run_cli(["doctor"], store_dir).code == 0
