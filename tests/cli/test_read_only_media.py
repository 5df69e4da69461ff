"""A store on read-only media can be read (issue 15 #17): list, search, show, export, stats and
doctor work, writes say "read-only"; a full disk says the disk is full, not that the database is
unusable. Read-only is a read-only bind mount as root (chmod does not stop root), else chmod."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import run_cli


def _mount(*args: str) -> bool:
    if shutil.which("mount") is None:
        return False
    return subprocess.run(["mount", *args], capture_output=True, check=False).returncode == 0


@contextlib.contextmanager
def read_only_view(store: Path, view: Path) -> Iterator[Path]:
    """``store`` seen read-only at ``view`` (or made read-only in place when not root)."""
    if os.geteuid() != 0:
        paths = [store, *store.iterdir()]
        for path in paths:
            path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield store
        finally:
            for path in paths:
                path.chmod(0o700 if path.is_dir() else 0o600)
        return
    view.mkdir()
    if not _mount("--bind", str(store), str(view)):
        pytest.skip("cannot bind-mount here")
    try:
        if not _mount("-o", "remount,ro,bind", str(view)):
            pytest.skip("cannot remount read-only here")
        yield view
    finally:
        subprocess.run(["umount", str(view)], check=False)


@pytest.fixture
def stored(store_dir: Path) -> Path:
    for text in ("the kitchen sink leaks", "the garden gate squeaks"):
        assert run_cli(["add", "--tag", "home", text], store_dir).code == 0
    return store_dir


@pytest.mark.slow
@pytest.mark.parametrize("lagging_index", [False, True])
def test_reading_commands_work_on_a_read_only_store(
    stored: Path, tmp_path: Path, lagging_index: bool
) -> None:
    if lagging_index:
        (stored / "vectors.faiss").unlink()
    expected = run_cli(["export"], stored).stdout if not lagging_index else None
    with read_only_view(stored, tmp_path / "view") as view:
        assert not os.access(view, os.W_OK)
        for args in (["list"], ["search", "sink"], ["search", "--mode", "vector", "sink"], ["show", "1"],
                     ["stats"], ["context", "sink"], ["list", "--json", "-t", "home"]):  # fmt: skip
            result = run_cli(args, view)
            assert result.code == 0 and "Error" not in result.stderr, (args, result.stderr)
        exported = run_cli(["export"], view)
        assert exported.code == 0 and len(exported.stdout.splitlines()) == 2
        if expected is not None:
            assert exported.stdout == expected
            doctor = run_cli(["doctor"], view)
            assert doctor.code == 0 and "read-only" in doctor.stdout, doctor.stdout


@pytest.mark.slow
def test_writes_to_a_read_only_store_say_read_only(stored: Path, tmp_path: Path) -> None:
    before = run_cli(["export"], stored).stdout
    with read_only_view(stored, tmp_path / "view") as view:
        writes = [(["add", "new"], None), (["forget", "1"], None), (["edit", "1", "changed"], None)]
        writes += [(["reindex", "--force"], None), (["import", "-"], '{"text": "x"}\n')]
        for args, stdin in writes:
            result = run_cli(args, view, stdin=stdin)
            assert result.code == 2 and "is read-only" in result.stderr, (args, result.stderr)
            assert "not a usable" not in result.stderr and result.stderr.count("\n") == 1
    assert run_cli(["export"], stored).stdout == before


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_a_full_disk_says_the_disk_is_full(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    if not _mount("-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)):
        pytest.skip("cannot mount a tmpfs here")
    try:
        store = disk / "store"
        assert run_cli(["add", "hello world"], store).code == 0
        with open(disk / "filler", "wb") as filler, contextlib.suppress(OSError):
            while True:
                filler.write(b"\0" * 65536)
                filler.flush()
        lines = "".join(f'{{"text": "memory {i} {"word " * 200}"}}\n' for i in range(300))
        for args, stdin in ((["list"], None), (["add", "--jsonl", "-"], lines)):
            result = run_cli(args, store, stdin=stdin)
            assert result.code == 2 and "is full" in result.stderr, result.stderr
            assert "not a usable" not in result.stderr and "damaged" not in result.stderr
        (disk / "filler").unlink()
        assert run_cli(["doctor"], store).code == 0
        assert run_cli(["list"], store).code == 0
    finally:
        subprocess.run(["umount", str(disk)], check=False)


@pytest.mark.slow
def test_doctor_on_a_read_only_store_reports_an_interrupted_ingest(stored: Path, tmp_path: Path) -> None:
    import remem
    from remem.testing import FakeEmbedder

    def interrupted() -> Iterator[str]:
        yield from (f"staged line {n}" for n in range(3000))
        raise KeyboardInterrupt

    with remem.open(str(stored), embedder=FakeEmbedder()) as memories, pytest.raises(KeyboardInterrupt):
        memories.add_many(interrupted())
    with read_only_view(stored, tmp_path / "view") as view:
        doctor = run_cli(["doctor"], view)
        assert doctor.code == 0 and "1 ingest interrupted or running (2,048 entries staged" in doctor.stdout
        assert len(run_cli(["export"], view).stdout.splitlines()) == 2
