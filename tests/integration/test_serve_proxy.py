"""The reverse-proxy set-ups of docs/serve.md work as printed: nginx and Caddy terminate TLS in
front of a real `remem serve` on 127.0.0.1 and an MCP client (the SDK's own) works through them —
the token reaches the server, the JSON answers come back whole, and the Host the proxy forwards is
not checked. The page's blocks are used as they are, with only the certificate paths and ports
changed for a test. The page's systemd unit passes `systemd-analyze verify`. Each is skipped where
its program is not installed."""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp.server.mcpserver")

from serve_docs import block
from serve_support import add_token, call, remem_cli, self_signed, serve_process, session

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DOC_UPSTREAM = "127.0.0.1:8765"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def _running(command: list[str], health: str, cafile: Path, log: Path, env: dict[str, str]) -> Iterator[None]:
    """``command`` running once the proxy answers ``health`` over HTTPS trusting ``cafile`` (which
    the proxy may make as it starts); stopped afterwards."""
    with log.open("w", encoding="utf-8") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
    try:
        for _ in range(600):
            assert process.poll() is None, log.read_text(encoding="utf-8")
            try:
                context = ssl.create_default_context(cafile=str(cafile))
                with urllib.request.urlopen(health, context=context, timeout=5) as answer:
                    assert json.loads(answer.read())["status"] == "ok"
                    break
            except (urllib.error.URLError, OSError):  # not up yet (or its certificate not made yet)
                time.sleep(0.1)
        else:
            raise AssertionError(f"the proxy never answered:\n{log.read_text(encoding='utf-8')}")
        yield
    finally:
        process.terminate()
        process.wait(timeout=60)


def _through(url: str, secret: str, cafile: Path) -> None:
    """alice's token through the proxy: tools listed, a search, an add; no token: the bare 401."""

    async def scenario() -> None:
        async with session(url, secret, verify=ssl.create_default_context(cafile=str(cafile))) as alice:
            tools = await alice.list_tools()
            assert len(tools.tools) == 7
            found = await call(alice, "memory_search", {"query": "when are deploys frozen", "k": 1})
            assert [hit["text"] for hit in found["hits"]] == ["Deploys are frozen on Fridays"]
            await call(alice, "memory_add", {"text": "added through the proxy"})

    anyio.run(scenario)
    request = urllib.request.Request(url, b"{}", {"Content-Type": "application/json"}, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, context=ssl.create_default_context(cafile=str(cafile)), timeout=30)
    assert refused.value.code == 401 and refused.value.read() == b'{"error":"unauthorized"}'


def _store(tmp_path: Path) -> tuple[Path, str]:
    store = tmp_path / "store"
    secret = add_token(store, "--user", "alice")
    remem_cli(store, "add", "Deploys are frozen on Fridays")
    return store, secret


def _added_by_alice(store: Path) -> None:
    exported = [json.loads(record) for record in remem_cli(store, "export").stdout.splitlines()]
    assert [r["user"] for r in exported if r["text"] == "added through the proxy"] == ["alice"]


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed")
def test_nginx_as_the_page_configures_it(tmp_path: Path) -> None:
    store, secret = _store(tmp_path)
    cert, key = self_signed(tmp_path)
    port = _free_port()
    site = block("nginx")
    for line in site.splitlines():  # only the lines a test must change
        if line.strip().startswith(("listen ", "ssl_certificate")):
            name = line.split()[0]
            value = {"listen": f"127.0.0.1:{port} ssl", "ssl_certificate": cert, "ssl_certificate_key": key}[
                name
            ]
            site = site.replace(line, f"    {name} {value};")
    with serve_process(store) as served:
        served.wait_for(r"model ready")
        upstream = served.url.split("/")[2]
        conf = tmp_path / "nginx.conf"
        kinds = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")  # not the system's directories
        temporary = "".join(f"{kind}_temp_path {tmp_path}/{kind};\n" for kind in kinds)
        conf.write_text(
            f"daemon off;\npid {tmp_path}/nginx.pid;\nerror_log stderr;\nevents {{}}\n"
            f"http {{\naccess_log off;\n{temporary}{site.replace(DOC_UPSTREAM, upstream)}}}\n",
            encoding="utf-8",
        )
        command = ["nginx", "-p", str(tmp_path), "-e", "stderr", "-c", str(conf)]
        with _running(
            command, f"https://127.0.0.1:{port}/healthz", cert, tmp_path / "nginx.log", dict(os.environ)
        ):
            _through(f"https://127.0.0.1:{port}/mcp", secret, cert)
    _added_by_alice(store)


@pytest.mark.skipif(shutil.which("caddy") is None, reason="caddy is not installed")
def test_caddy_as_the_page_configures_it(tmp_path: Path) -> None:
    store, secret = _store(tmp_path)
    port = _free_port()
    site = block("caddyfile")
    assert site.startswith("memory.example.com {")
    options = "{\n\tadmin off\n\tskip_install_trust\n\tauto_https disable_redirects\n}\n"  # no system changes
    home = tmp_path / "home"
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "XDG_DATA_HOME": str(home / "data")}
    env["XDG_CONFIG_HOME"] = str(home / "config")
    with serve_process(store) as served:
        served.wait_for(r"model ready")
        upstream = served.url.split("/")[2]
        caddyfile = tmp_path / "Caddyfile"
        site = site.replace("memory.example.com", f"localhost:{port}").replace(DOC_UPSTREAM, upstream)
        caddyfile.write_text(options + site, encoding="utf-8")
        command = ["caddy", "run", "--config", str(caddyfile), "--adapter", "caddyfile"]
        root = home / "data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"
        with _running(command, f"https://localhost:{port}/healthz", root, tmp_path / "caddy.log", env):
            _through(f"https://localhost:{port}/mcp", secret, root)  # Host: localhost:PORT, not checked
    _added_by_alice(store)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_the_systemd_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    remem = shutil.which("remem")
    if remem is None:
        pytest.skip("no remem command on PATH (the unit must name an executable)")
    unit = tmp_path / "remem.service"
    unit.write_text(block("ini").replace("/opt/remem/.venv/bin/remem", remem), encoding="utf-8")
    done = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(unit)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout + done.stderr) == (0, "")  # an unknown key is only a warning
