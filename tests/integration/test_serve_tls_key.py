"""`remem serve` with an encrypted TLS key (issue 46, finding 9e): it never prompts for the
passphrase, not even on a terminal (a server must not block on a prompt); without
--tls-key-password-file it says in one line that the key is encrypted and how to pass it; with the
file it serves HTTPS to the SDK's own client. The certificate and keys are committed test data
(tests/data/tls), so that no `cryptography` package or `openssl` command is needed."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp.server.mcpserver")

from serve_support import add_token, call, remem_cli, serve_process, session

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TLS = Path(__file__).parent.parent / "data" / "tls"
CERT, PASSPHRASE = TLS / "cert.pem", "correct horse"
KEYS = [TLS / "key-encrypted.pem", TLS / "key-legacy-encrypted.pem"]
ENCRYPTED = (
    "Error: cannot load the TLS certificate and key: the key is encrypted: pass its passphrase in a file "
    "with --tls-key-password-file"
)

#: Run as ``python -c``: make stdin (a terminal) the controlling terminal, then exec the command.
TAKE_THE_TERMINAL = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def _on_a_terminal(argv: list[str], seconds: float = 60) -> tuple[int | None, str]:
    """Run ``argv`` with a new pseudo-terminal as its controlling terminal and its stdin, stdout and
    stderr (where OpenSSL would prompt); its exit code (None: still running, so killed) and output."""
    main, side = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-c", TAKE_THE_TERMINAL, *argv],
        stdin=side,
        stdout=side,
        stderr=side,
        start_new_session=True,
    )
    os.close(side)
    output, deadline = b"", time.monotonic() + seconds
    try:
        while process.poll() is None and time.monotonic() < deadline:
            if select.select([main], [], [], 0.1)[0]:
                try:
                    output += os.read(main, 4096)
                except OSError:
                    break
        code = process.wait(timeout=30) if time.monotonic() < deadline else None
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(main)
    return code, output.decode(errors="replace")


@pytest.mark.slow
@pytest.mark.parametrize("key", KEYS, ids=["pkcs8", "traditional"])
def test_an_encrypted_key_is_never_prompted_for_and_the_error_says_how_to_pass_it(
    tmp_path: Path, key: Path
) -> None:
    store = tmp_path / "store"
    add_token(store, "--user", "alice")
    argv = [sys.executable, "-m", "remem", "serve", "--store", str(store), "--port", "0"]
    code, output = _on_a_terminal([*argv, "--tls-cert", str(CERT), "--tls-key", str(key)])
    assert "pass phrase" not in output.lower(), output  # OpenSSL's prompt, which would block a server
    assert (code, output.strip()) == (2, ENCRYPTED)


@pytest.mark.slow
@pytest.mark.parametrize("key", KEYS, ids=["pkcs8", "traditional"])
def test_with_its_passphrase_in_a_file_it_serves_https(tmp_path: Path, key: Path) -> None:
    store = tmp_path / "store"
    secret = add_token(store, "--user", "alice")
    wrong, right, absent = tmp_path / "wrong", tmp_path / "right", tmp_path / "absent"
    wrong.write_text("horse battery\n")
    right.write_text(PASSPHRASE + "\n")
    tls = ["serve", "--port", "0", "--tls-cert", str(CERT), "--tls-key", str(key), "--tls-key-password-file"]
    refused = remem_cli(store, *tls, str(wrong), check=False)
    assert (refused.returncode, refused.stderr.strip()) == (
        2,
        "Error: cannot load the TLS certificate and key: the passphrase does not open the key",
    )
    missing = remem_cli(store, *tls, str(absent), check=False)
    assert missing.returncode == 2
    assert missing.stderr.strip() == "Error: cannot read --tls-key-password-file: No such file or directory"
    assert PASSPHRASE not in refused.stderr + missing.stderr
    with serve_process(store, *tls[3:], str(right)) as served:
        assert served.url.startswith("https://127.0.0.1:")

        async def scenario(url: str) -> None:
            async with session(url, secret, verify=str(CERT)) as alice:
                await call(alice, "memory_add", {"text": "an encrypted key serves HTTPS"})
                found = await call(alice, "memory_search", {"query": "encrypted key", "mode": "keyword"})
                assert [hit["text"] for hit in found["hits"]] == ["an encrypted key serves HTTPS"]

        anyio.run(scenario, served.url)
        assert not any("pass phrase" in line.lower() for line in served.lines)
