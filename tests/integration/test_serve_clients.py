"""The client set-ups of docs/serve.md work as printed, against a real `remem serve` process with a
token from `remem token add`: Claude Code's `claude mcp add` line (the real CLI from npm, in a fresh
home directory), Cursor's JSON (its url and headers given to the SDK's own client), and Claude
Desktop's JSON (the command it starts, mcp-remote from npm, spoken to over stdio by the SDK's
client). The MCP Inspector's lines are run by test_serve_process.py. Each test reads its snippet from
the page, so the page cannot drift from what is tested."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp.server.mcpserver")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from serve_docs import DOC_URL, json_config, line
from serve_support import add_token, call, remem_cli, serve_process, session

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: The Claude Code release line the page's `claude mcp add` was checked with.
CLAUDE_CODE = "@anthropic-ai/claude-code@2"
SHARED = "Deploys are frozen on Fridays"
ALICES = "alice's staging database listens on port 5433"


def _store(tmp_path: Path) -> tuple[Path, str]:
    """A store with a shared memory, one of alice's and one of bob's, and a token for alice."""
    store = tmp_path / "store"
    secret = add_token(store, "--user", "alice")
    remem_cli(store, "add", SHARED)
    remem_cli(store, "add", "--user", "alice", ALICES)
    remem_cli(store, "add", "--user", "bob", "bob's laptop is called hal")
    return store, secret


#: What a client process keeps of this one's environment: how to reach npm (proxy, certificates).
NETWORK = re.compile(r"(?i)(https?_proxy|no_proxy|node_extra_ca_certs|ssl_cert_(file|dir)|npm_config_.*)")


def _home(tmp_path: Path) -> dict[str, str]:
    """The environment of a client process: a fresh home directory, and of the user's only PATH and
    the network settings."""
    home = tmp_path / "home"
    home.mkdir()
    network = {name: value for name, value in os.environ.items() if NETWORK.fullmatch(name)}
    return network | {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "npm_config_yes": "true",
    }


async def _a_session_of_alice(mcp: ClientSession) -> None:
    """What alice's token must give any client: no user argument, her memories and the shared ones
    (never bob's), and her adds stored as hers."""
    tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
    assert len(tools) == 7 and "user" not in tools["memory_search"].input_schema["properties"]
    listed = await call(mcp, "memory_list", {"limit": 10})
    assert sorted(m["text"] for m in listed["memories"]) == sorted([SHARED, ALICES])
    found = await call(mcp, "memory_search", {"query": "when are deploys frozen", "k": 1})
    assert [hit["text"] for hit in found["hits"]] == [SHARED]
    added = await call(mcp, "memory_add", {"text": "alice prefers squash merges"})
    assert added["duplicate"] is False


def _stored_as_alices(store: Path) -> None:
    exported = [json.loads(record) for record in remem_cli(store, "export").stdout.splitlines()]
    assert [r["user"] for r in exported if r["text"] == "alice prefers squash merges"] == ["alice"]


def _install_claude_code(tmp_path: Path, env: dict[str, str]) -> Path:
    """The `claude` command of Claude Code, installed from npm into ``tmp_path`` (skip if it cannot be)."""
    if shutil.which("npm") is None:
        pytest.skip("npm (Node.js) is not installed")
    prefix = tmp_path / "npm-prefix"
    command = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", CLAUDE_CODE]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
    claude = prefix / "node_modules" / ".bin" / "claude"
    if done.returncode != 0:
        pytest.skip(f"Claude Code could not be installed from npm: {done.stderr[-300:]}")
    version = subprocess.run(
        [claude, "--version"], check=False, env=env, capture_output=True, text=True, timeout=99
    )
    if version.returncode != 0:
        pytest.skip(f"Claude Code does not run here: {(version.stderr or version.stdout)[-300:]}")
    return claude


def test_claude_code_records_the_server_with_its_header_and_connects(tmp_path: Path) -> None:
    store, secret = _store(tmp_path)
    env = _home(tmp_path)
    env |= {"npm_config_cache": str(tmp_path / "npm-cache"), "DISABLE_AUTOUPDATER": "1"}
    env |= {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    claude = _install_claude_code(tmp_path, env)
    env |= {"PATH": f"{claude.parent}{os.pathsep}{env['PATH']}", "TOKEN": secret}
    project = tmp_path / "project"
    project.mkdir()

    def run(script: str) -> str:
        done = subprocess.run(
            ["bash", "-c", script],
            check=False,
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    try:
        with serve_process(store) as served:
            served.wait_for(r"model ready")
            added = run(line("claude mcp add ").replace(DOC_URL, served.url))  # the page's line, via bash
            assert "Added HTTP MCP server remem" in added and secret not in added
            config = json.loads((Path(env["HOME"]) / ".claude.json").read_text(encoding="utf-8"))
            recorded = [p["mcpServers"]["remem"] for p in config["projects"].values() if "mcpServers" in p]
            assert recorded == [
                {"type": "http", "url": served.url, "headers": {"Authorization": f"Bearer {secret}"}}
            ]
            got = run("claude mcp get remem")
            assert "✔ Connected" in got and f"URL: {served.url}" in got, got
            assert f"{served.url} (HTTP) - ✔ Connected" in run("claude mcp list")
            remem_cli(store, "token", "revoke", "alice")  # in another process, while the server runs
            assert f"{served.url} (HTTP) - ✘ Failed to connect" in run("claude mcp list")
    finally:
        shutil.rmtree(tmp_path / "npm-prefix", ignore_errors=True)  # ~250 MB
        shutil.rmtree(tmp_path / "npm-cache", ignore_errors=True)


def _cursor_env(value: str, env: dict[str, str]) -> str:
    """A value of Cursor's mcp.json with its ``${env:NAME}`` references filled in, as Cursor does."""
    return re.sub(r"\$\{env:(\w+)\}", lambda match: env[match[1]], value)


def test_the_cursor_config_connects_with_its_url_and_headers(tmp_path: Path) -> None:
    entry = json_config('"url"')["mcpServers"]["remem"]
    assert set(entry) == {"url", "headers"} and entry["url"] == DOC_URL
    store, secret = _store(tmp_path)
    with serve_process(store) as served:
        served.wait_for(r"model ready")
        cursor_env = {"REMEM_TOKEN": secret}  # the environment Cursor was started in
        headers = {name: _cursor_env(value, cursor_env) for name, value in entry["headers"].items()}
        assert headers == {"Authorization": f"Bearer {secret}"}

        async def scenario() -> None:
            async with session(entry["url"].replace(DOC_URL, served.url), None, headers=headers) as mcp:
                await _a_session_of_alice(mcp)

        anyio.run(scenario)
    _stored_as_alices(store)


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx (Node.js) is not installed")
def test_the_claude_desktop_config_reaches_the_server_through_mcp_remote(tmp_path: Path) -> None:
    entry = json_config('"mcp-remote')["mcpServers"]["remem"]
    assert entry["command"] == "npx" and DOC_URL in entry["args"]
    assert entry["env"] == {"AUTH_HEADER": "Bearer <token>"}
    store, secret = _store(tmp_path)
    env = _home(tmp_path) | {name: value.replace("<token>", secret) for name, value in entry["env"].items()}
    stderr = tmp_path / "mcp-remote.log"
    with serve_process(store) as served:
        served.wait_for(r"model ready")
        args = [arg.replace(DOC_URL, served.url) for arg in entry["args"]]
        params = StdioServerParameters(command=str(shutil.which("npx")), args=args, env=env, cwd=tmp_path)

        async def scenario() -> None:
            with anyio.fail_after(600), stderr.open("w", encoding="utf-8") as errlog:
                async with stdio_client(params, errlog=errlog) as streams, ClientSession(*streams) as mcp:
                    await mcp.initialize()
                    await _a_session_of_alice(mcp)

        try:
            anyio.run(scenario)
        except Exception as exc:  # npm unreachable is a skip, anything else fails
            log = stderr.read_text(encoding="utf-8")
            if "npm" in log and ("ERR" in log or "ENOTFOUND" in log):
                pytest.skip(f"mcp-remote could not be installed from npm: {log[-300:]}")
            raise AssertionError(f"{exc!r}; mcp-remote said:\n{log[-2000:]}") from exc
    assert secret not in stderr.read_text(encoding="utf-8")  # mcp-remote logs no token
    _stored_as_alices(store)
