"""The page behind a TLS proxy: `remem serve` believes ``X-Forwarded-Proto`` only from the proxies
``--forwarded-allow-ips`` names, so the session cookie is Secure behind a proxy that terminates TLS,
and no other client (a local process included) can make the server think it was reached over HTTPS.
A real server (uvicorn on a thread), real HTTP."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from web_support import memories

from helpers import run_cli
from remem.errors import InvalidInputError
from remem.mcp.http import Listener
from serve_support import serving


def _signin_cookie(base: str, headers: dict[str, str]) -> str:
    request = urllib.request.Request(base + "/signin", headers=headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        cookies = answer.headers.get_all("set-cookie") or []
    [cookie] = [c for c in cookies if c.startswith("remem_signin=")]
    return cookie


@pytest.mark.parametrize(
    ("trusted", "secure"),
    [((), False), (("127.0.0.1",), True), (("10.0.0.0/8", "127.0.0.0/8"), True), (("10.1.2.3",), False)],
)
def test_x_forwarded_proto_counts_only_from_the_proxies_named(
    store_dir: Path, trusted: tuple[str, ...], secure: bool
) -> None:
    with memories(store_dir) as m:
        m.tokens.add(user="alice")
    with serving(store_dir, forwarded_allow_ips=trusted) as server:
        base = server.url.removesuffix("/mcp")
        assert "Secure" not in _signin_cookie(base, {})
        assert ("Secure" in _signin_cookie(base, {"X-Forwarded-Proto": "https"})) is secure


def test_a_proxy_address_that_is_none_is_refused(store_dir: Path) -> None:
    with pytest.raises(InvalidInputError, match="not an IP address or network"):
        Listener(forwarded_allow_ips=("proxy.example",)).check()
    with memories(store_dir) as m:
        m.tokens.add(user="alice")
    refused = run_cli(["serve", "--port", "0", "--forwarded-allow-ips", "10.0.0.1, nonsense"], store_dir)
    assert refused.code == 2 and "'nonsense' is not an IP address or network" in refused.stderr
