"""The installed tool as users run it: real processes, real stdin/stdout, lazy imports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import FAKE_MODEL, fake_vector
from remem import NewMemory
from remem.backends.local import LocalBackend

pytestmark = pytest.mark.slow  # real processes, kills or races (the slow tier)

REMEM = shutil.which("remem")


def _run(args: list[str], store: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "REMEM_HOME": str(store)}
    return subprocess.run(args, input=stdin, capture_output=True, env=env, timeout=120, check=False)


@pytest.mark.skipif(REMEM is None, reason="the remem console script is not installed")
def test_console_script_pipeline(store_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert REMEM is not None
    monkeypatch.setenv("REMEM_MODELS", str(tmp_path / "models"))  # a machine that has said no tip yet
    added = _run([REMEM, "add", "-"], store_dir, stdin=b"Postgres 16 runs on the main box\n")
    assert (added.returncode, added.stdout) == (0, b"1\n")
    said = added.stderr.decode().splitlines()  # said once, in two lines
    assert said == [
        f"New store at {store_dir}, using the bundled model all-minilm-l6-v2 (English).",
        "Better search: `remem model pull bge-small-en-v1.5` (134 MB), "
        "then `remem reindex --model bge-small-en-v1.5`.",
    ]
    again = _run([REMEM, "add", "--tag", "auth", "The login sequence uses short-lived JWTs."], store_dir)
    assert (again.returncode, again.stderr) == (0, b"")
    found = _run([REMEM, "search", "-k", "1", "--json", "auth flow"], store_dir)
    assert found.returncode == 0
    assert json.loads(found.stdout)["text"] == "The login sequence uses short-lived JWTs."
    nothing = _run([REMEM, "search", "--min-score", "0.999", "auth flow"], store_dir)
    assert (nothing.returncode, nothing.stdout) == (1, b"")


def test_python_dash_m_and_one_line_errors(store_dir: Path) -> None:
    version = _run([sys.executable, "-m", "remem", "--version"], store_dir)
    assert version.returncode == 0 and version.stdout.startswith(b"remem ")
    bad = _run([sys.executable, "-m", "remem", "add", "-"], store_dir, stdin=b"\xff\xfe")
    assert bad.returncode == 2
    assert bad.stderr == b"Error: stdin is not valid UTF-8 (byte 0xff at offset 0)\n"
    usage = _run([sys.executable, "-m", "remem", "search", "-k", "zero", "q"], store_dir)
    assert usage.returncode == 2
    assert usage.stderr.startswith(b"Error: ") and usage.stderr.count(b"\n") == 1
    assert b"Traceback" not in usage.stderr


def test_unexpected_errors_never_print_a_traceback(store_dir: Path) -> None:
    script = (
        "import sys; import remem.backends.local.store as s\n"
        "def boom(*a, **k): raise ValueError('secret memory text')\n"
        "s.LocalBackend.newest = boom\n"
        "from remem.cli import main; sys.exit(main(['list']))\n"
    )
    store_dir.mkdir()
    _run([sys.executable, "-m", "remem", "add", "x"], store_dir)
    result = _run([sys.executable, "-c", script], store_dir)
    assert result.returncode == 2
    assert result.stderr.startswith(b"Error: unexpected ValueError")
    assert b"Traceback" not in result.stderr and result.stderr.count(b"\n") == 1


def _loaded_modules(args: list[str], store: Path) -> set[str]:
    script = (
        "import sys, io, contextlib\n"
        "from remem.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main({args!r})\n"
        "print(code, ' '.join(sorted(sys.modules)))\n"
    )
    result = _run([sys.executable, "-c", script], store)
    code, modules = result.stdout.decode().split(" ", 1)
    assert int(code) in (0, 1), result.stderr
    return set(modules.split())


def _loaded_packages(args: list[str], store: Path) -> set[str]:
    return {name.split(".")[0] for name in _loaded_modules(args, store)}


def test_help_list_export_and_tokens_do_not_load_onnxruntime_faiss_or_the_mcp_sdk(store_dir: Path) -> None:
    _run([sys.executable, "-m", "remem", "add", "a memory so list has something"], store_dir)
    for args in (
        ["--help"],
        ["list"],
        ["list", "--json", "-k", "3", "--user", "ann", "--tag", "a", "--tag", "b"],
        ["export"],
        ["export", "-f", "csv"],
        ["add", "--help"],
        ["model", "list"],
        ["model", "path", "all-minilm-l6-v2"],
        ["mcp", "--help"],
        ["token", "add", "--user", "ann"],
        ["token", "list"],
    ):
        loaded = _loaded_packages(args, store_dir)
        assert not loaded & {"onnxruntime", "faiss", "tokenizers", "numpy", "mcp", "pydantic", "ijson"}, args
    searched = _loaded_packages(["search", "-k", "2", "memory"], store_dir)
    assert "onnxruntime" in searched
    assert "faiss" not in searched  # an exact index is scored in numpy (backends/local/flat.py)
    assert "pydantic" not in searched  # Typer's adapters only for values that need them (params.py)
    _run([sys.executable, "-m", "remem", "reindex", "--force", "--index", "hnsw"], store_dir)
    assert "faiss" in _loaded_packages(["search", "-k", "2", "memory"], store_dir)


def test_list_imports_only_the_list_command_and_no_write_path(store_dir: Path) -> None:
    _run([sys.executable, "-m", "remem", "add", "a memory so list has something"], store_dir)
    loaded = _loaded_modules(["list"], store_dir)
    assert "remem.commands.memories" in loaded
    others = {f"remem.commands.{name}" for name in ("search", "transfer", "recall", "changes", "models")}
    write_path = {"remem.core.bulk", "remem.core.turns", "remem.reports", "remem.ingest"}
    assert not loaded & (others | write_path | {"remem.backends.local.changes", "http.client", "ssl"})
    assert "platformdirs" not in loaded  # the store is given; the model cache is never looked up


def test_export_into_a_closed_pipe_is_quiet(store_dir: Path) -> None:
    with LocalBackend.open(store_dir, create=True) as store:  # ~200 kB of export, more than a pipe holds
        for i in range(100):
            text = f"memory number {i} " + "padding " * 250
            store.add(NewMemory(text=text), fake_vector(text), FAKE_MODEL)
    pipeline = f"'{sys.executable}' -m remem export | head -c 10"
    result = subprocess.run(
        ["bash", "-c", pipeline],
        capture_output=True,
        env={**os.environ, "REMEM_HOME": str(store_dir)},
        timeout=120,
        check=False,
    )
    assert result.returncode == 0
    assert b"Traceback" not in result.stderr and b"Error" not in result.stderr
