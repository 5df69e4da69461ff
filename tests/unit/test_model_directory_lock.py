"""The model directory's lock (issue 53 #2): a directory left holding only its lock is removed when
the holder leaves, and a writer that was waiting on that lock file locks the new one — two writers
never hold the lock of one directory at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from remem.embedders.locks import LOCK_FILE, directory_lock


def test_an_unused_directory_goes_with_its_lock(tmp_path: Path) -> None:
    directory = tmp_path / "model" / "revision"
    with directory_lock(directory):
        assert (directory / LOCK_FILE).exists()
        (directory / "model.onnx.part").touch()  # an empty part: nothing to resume
    assert not (tmp_path / "model").exists()


def test_a_directory_with_a_file_or_a_part_stays(tmp_path: Path) -> None:
    directory = tmp_path / "model" / "revision"
    with directory_lock(directory):
        (directory / "model.onnx.part").write_bytes(b"x" * 10)
    assert sorted(p.name for p in directory.iterdir()) == [LOCK_FILE, "model.onnx.part"]


def test_a_waiting_writer_locks_the_new_lock_file(tmp_path: Path) -> None:
    directory = tmp_path / "model" / "revision"
    inside: list[str] = []
    overlap: list[tuple[str, str]] = []

    def writer(name: str, hold: float) -> None:
        with directory_lock(directory):
            if inside:
                overlap.append((inside[0], name))
            inside.append(name)
            time.sleep(hold)
            inside.remove(name)

    first = threading.Thread(target=writer, args=("first", 0.3))
    first.start()
    time.sleep(0.1)
    waiting = threading.Thread(target=writer, args=("waiting", 0.3))
    waiting.start()  # blocks on the lock file the first one removes as it leaves
    first.join()
    time.sleep(0.05)
    late = threading.Thread(target=writer, args=("late", 0.1))
    late.start()  # finds no lock file, makes one: must still wait for "waiting"
    waiting.join()
    late.join()
    assert overlap == []
