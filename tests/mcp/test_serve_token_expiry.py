"""Tokens that expire (issue 46, finding 9g): a real `remem serve` process honours a token made with
`remem token add --expires` until that time, and from its next request on refuses it exactly as it
refuses a revoked one (a bare 401), while a token without an expiry keeps working."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from serve_support import add_token, post, remem_cli, serve_process


@pytest.mark.slow
def test_an_expired_token_is_refused_by_a_running_server_as_a_revoked_one(tmp_path: Path) -> None:
    store = tmp_path / "store"
    lasting = add_token(store, "--user", "alice")
    brief = add_token(store, "--user", "bob", "--expires", "20s")
    made = time.monotonic()
    with serve_process(store) as served:
        assert post(served.url, lasting)[0] == 200
        assert post(served.url, brief)[0] == 200, time.monotonic() - made  # before its time: served
        time.sleep(max(0.0, made + 21 - time.monotonic()))
        refused = post(served.url, brief)
        remem_cli(store, "token", "revoke", "alice")
        revoked = post(served.url, lasting)
        assert refused[0] == 401 and refused[2] == b'{"error":"unauthorized"}'
        assert (refused[0], refused[2], refused[1]["www-authenticate"]) == (
            revoked[0],
            revoked[2],
            revoked[1]["www-authenticate"],
        )
    listed = remem_cli(store, "token", "list").stdout.splitlines()
    assert listed[1].split()[:2] == ["bob", "bob"] and "expired" in listed[1]
