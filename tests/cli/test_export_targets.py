"""Where `remem export -o` writes (issue 15 #7): never through a planted file, never into the store,
in place on a device or a stream."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli


def test_export_output_never_goes_through_a_planted_file_and_never_into_the_store(
    small: Path, tmp_path: Path
) -> None:
    """Issue 15 #7: the temp file is unpredictable and exclusive; a symlink is followed to the file
    it names (the link stays); directories, dangling links and the store's own files are refused."""
    shared = tmp_path / "shared"
    shared.mkdir()
    secret = tmp_path / "attacker.txt"
    for pid in range(1, 70000, 997):  # the old predictable names: .backup.jsonl.<pid>.tmp
        (shared / f".backup.jsonl.{pid}.tmp").symlink_to(secret)
    assert run_cli(["export", "-o", str(shared / "backup.jsonl")], small).code == 0
    assert not secret.exists() and len((shared / "backup.jsonl").read_text().splitlines()) == 3
    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    (tmp_path / "link.jsonl").symlink_to(real)
    assert run_cli(["export", "-o", str(tmp_path / "link.jsonl")], small).code == 0
    assert (tmp_path / "link.jsonl").is_symlink() and len(real.read_text().splitlines()) == 3
    database = (small / "memories.sqlite3").read_bytes()
    for target, message in (
        (small / "memories.sqlite3", "is inside the store"),
        (small / "new.jsonl", "is inside the store"),
        (Path("."), "is a directory"),
        (Path(""), "is a directory"),
        (tmp_path, "is a directory"),
    ):
        refused = run_cli(["export", "-o", str(target)], small)
        assert refused.code == 2 and message in refused.stderr, (target, refused.stderr)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert "symbolic link to nothing" in run_cli(["export", "-o", str(tmp_path / "dangling")], small).stderr
    assert (small / "memories.sqlite3").read_bytes() == database and not (small / "new.jsonl").exists()


def test_export_to_a_device_or_stream_writes_in_place(small: Path, tmp_path: Path) -> None:
    """`-o /dev/stdout` reaches the reader and `-o /dev/null` stays a device, even for root. Tested
    on private stand-ins — a FIFO behind a symlink (what /dev/stdout is for a pipe) and a character
    device made with mknod where allowed — so a regression can never replace the machine's /dev."""
    import os
    import stat
    import threading

    fifo, link = tmp_path / "pipe", tmp_path / "stdout"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert run_cli(["export", "-o", str(link)], small).code == 0
    reader.join(timeout=30)
    assert (
        received
        and len(received[0].splitlines()) == 3
        and link.is_symlink()
        and stat.S_ISFIFO(os.stat(fifo).st_mode)
    )
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod is not allowed here (not root)")
    assert run_cli(["export", "-o", str(device)], small).code == 0
    assert stat.S_ISCHR(os.stat(device).st_mode)
