"""remem runs where POSIX-only modules and names are missing (issue 53 #4: Windows and macOS), checked
on Linux: every process here starts with a ``sitecustomize`` that refuses remem's own imports of
fcntl, termios, pwd, grp, resource and the like (as Windows would), and removes from ``os``, ``mmap``
and ``signal`` the names Windows lacks (``os.fchmod``, ``os.statvfs``, ``O_NOFOLLOW``, ``PROT_READ``,
``MADV_*``, ``SIGKILL`` ...). The commands people run — add, search, list, show, edit, forget, export,
import, reindex, compact, doctor, stats, token add, ``remem mcp`` and ``remem serve`` through the MCP
SDK's own clients — must still succeed, with the real bundled model.

The refusal is for imports *made by remem's modules*: the standard library and the cross-platform
packages remem uses import fcntl or pwd on Linux in their own platform branches (``subprocess``,
``filelock``), and take the Windows branch on Windows; refusing those here would only break Linux.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from serve_support import call, serve_process, session

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: Run first in every process: the simulation of a system without POSIX-only modules and names.
SITECUSTOMIZE = """
import builtins
import mmap
import os
import signal

POSIX_ONLY = {"fcntl", "termios", "tty", "pty", "pwd", "grp", "resource", "posix", "syslog", "crypt"}
MISSING = {
    os: ["fchmod", "fchown", "lchown", "statvfs", "fstatvfs", "O_NOFOLLOW", "O_CLOEXEC", "O_DIRECTORY",
         "getuid", "geteuid", "getgid", "getegid", "sched_getaffinity", "killpg", "setsid", "getpgid",
         "sync", "mkfifo", "getloadavg"],
    mmap: ["PROT_READ", "PROT_WRITE", "PROT_EXEC", "MAP_SHARED", "MAP_PRIVATE", "MAP_ANONYMOUS"]
    + [name for name in dir(mmap) if name.startswith("MADV_")],
    signal: ["SIGKILL", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGPIPE", "SIGCHLD"],
}
for module, names in MISSING.items():
    for name in names:
        if hasattr(module, name):
            delattr(module, name)

_import = builtins.__import__


def _as_on_windows(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__") or ""
    if level == 0 and name.partition(".")[0] in POSIX_ONLY and importer.partition(".")[0] == "remem":
        with open(os.environ["REMEM_TEST_REFUSED"], "a") as refused:
            refused.write(f"{importer} imports {name}\\n")
        raise ModuleNotFoundError(f"No module named {name!r} (as on Windows)", name=name)
    return _import(name, globals, locals, fromlist, level)


builtins.__import__ = _as_on_windows
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of a process that runs as if on a system without POSIX-only calls."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "REMEM_TEST_REFUSED": str(tmp_path / "refused.txt")}


def _refused(env: dict[str, str]) -> str:
    refused = Path(env["REMEM_TEST_REFUSED"])
    return refused.read_text() if refused.exists() else ""


def _remem(env: dict[str, str], store: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "remem", *args, "--store", str(store)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, (args, done.stderr, _refused(env))
    return done.stdout


def test_the_simulation_refuses_remems_imports_and_removes_names(env: dict[str, str], tmp_path: Path) -> None:
    probe = (
        "import mmap, os, sys\n"
        "assert not hasattr(os, 'fchmod') and not hasattr(os, 'statvfs') and not hasattr(mmap, 'PROT_READ')\n"
        "import fcntl  # the standard library's own platform branches still work\n"
        "try:\n"
        "    exec('import fcntl', {'__name__': 'remem.probe'})\n"
        "except ModuleNotFoundError:\n"
        "    pass\n"
        "else:\n"
        "    sys.exit('remem.probe imported fcntl')\n"
        "from pathlib import Path\n"
        "from remem.embedders.locks import directory_lock\n"
        f"with directory_lock(Path({str(tmp_path / 'models' / 'm')!r})):\n"
        "    pass\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert _refused(env) == "remem.probe imports fcntl\n"


def test_the_commands_run_without_posix_only_calls(env: dict[str, str], tmp_path: Path) -> None:
    store, copy = tmp_path / "store", tmp_path / "copy"
    assert _remem(env, store, "add", "the deploy key rotates every ninety days", "-t", "ops").strip() == "1"
    lines = "".join(json.dumps({"text": f"note {n} about the staging database"}) + "\n" for n in range(20))
    _remem(env, store, "add", "--jsonl", "-", stdin=lines)
    _remem(env, store, "reindex")  # writes the index file, which a search then maps
    assert "deploy key" in _remem(env, store, "search", "when does the key rotate", "--json")
    assert "deploy key" in _remem(env, store, "search", "rotates", "--mode", "keyword")
    assert "staging database" in _remem(env, store, "list")
    _remem(env, store, "edit", "2", "note 0 about the production database")
    _remem(env, store, "forget", "3")
    assert "production" in _remem(env, store, "show", "2")
    exported = tmp_path / "export.jsonl"
    _remem(env, store, "export", "--output", str(exported))
    _remem(env, copy, "import", str(exported))
    assert _remem(env, copy, "export") == exported.read_text()
    for command in ("compact", "doctor", "stats"):
        _remem(env, store, command)
    _remem(env, store, "token", "add", "--user", "alice", "--output", str(tmp_path / "alice.token"))
    assert (tmp_path / "alice.token").read_text().strip()
    assert _refused(env) == ""


def test_mcp_and_serve_run_without_posix_only_calls(env: dict[str, str], tmp_path: Path) -> None:
    store = tmp_path / "store"
    token = _remem(env, store, "token", "add", "--user", "alice").strip()

    async def over_stdio() -> None:
        command = StdioServerParameters(
            command=sys.executable, args=["-m", "remem", "mcp", "--store", str(store)], env=env
        )
        with (tmp_path / "mcp.log").open("w") as errlog:
            async with stdio_client(command, errlog=errlog) as streams, ClientSession(*streams) as mcp:
                await mcp.initialize()
                await _add_and_find(mcp, "the standup moved to ten")

    async def over_http(url: str) -> None:
        async with session(url, token) as mcp:
            await _add_and_find(mcp, "the retro is on fridays")

    anyio.run(over_stdio)
    with serve_process(store, env=env) as served:
        anyio.run(over_http, served.url)
    # the one import of a POSIX-only module, where it may be missing: serve then keeps its limits
    assert _refused(env) == "remem.portable imports resource\n", (tmp_path / "mcp.log").read_text()


async def _add_and_find(mcp: ClientSession, text: str) -> None:
    added: dict[str, Any] = await call(mcp, "memory_add", {"text": text})
    found = await call(mcp, "memory_search", {"query": text, "mode": "keyword"})
    assert [hit["id"] for hit in found["hits"]][:1] == [added["id"]]
