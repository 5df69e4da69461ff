"""Reading a PostgreSQL store stays light: ``list`` and ``export`` load neither the model runtime,
FAISS nor numpy (vectors are registered with the connection only when they are read or written)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import run_cli


def _loaded(args: list[str]) -> set[str]:
    script = (
        "import sys, io, contextlib\n"
        "from remem.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main({args!r})\n"
        "print(code, ' '.join(sorted(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120, check=False)
    code, modules = result.stdout.decode().split(" ", 1)
    assert int(code) == 0, result.stderr
    return {name.split(".")[0] for name in modules.split()}


@pytest.mark.slow
def test_list_and_export_of_a_postgres_store_load_no_numpy_faiss_or_onnxruntime(postgres_url: str) -> None:
    assert run_cli(["add", "a memory on the server"], postgres_url).code == 0  # type: ignore[arg-type]
    for args in (["list"], ["list", "--json"], ["export"], ["stats"]):
        loaded = _loaded([*args, "--store", postgres_url])
        assert not loaded & {"onnxruntime", "faiss", "tokenizers", "numpy"}, args
        assert "psycopg" in loaded
