"""A newcomer's first minutes, as the README tells them: a fresh virtual environment, `pip install .`
from this checkout, a first `remem add` typed in a real terminal (tmux) that leaves no progress bar
behind, and the README's tour printing what the README shows (times and scores masked) — all with
the installed package, not the checkout's source."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from doc_support import doc_blocks

pytestmark = pytest.mark.slow  # real processes, kills or races (the slow tier)

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a fresh venv with remem installed as the README says (`pip install .`)."""
    venv = tmp_path_factory.mktemp("newcomer") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if pip.returncode != 0 and "Could not find a version" in pip.stderr + pip.stdout:
        pytest.skip(f"no package index reachable to install remem's dependencies: {pip.stderr[-300:]}")
    assert pip.returncode == 0, pip.stderr[-3000:]
    return venv / "bin"


def _home(root: Path, bin_dir: Path) -> doc_blocks.Home:
    """A fresh home in which `remem` is the installed command (no checkout source on the path)."""
    home = doc_blocks.Home(root)
    home.env.pop("PYTHONPATH", None)
    home.env["PATH"] = f"{bin_dir}{os.pathsep}/usr/bin:/bin"
    return home


def test_the_installed_package_runs_the_readme_tour_as_the_readme_shows_it(
    installed: Path, tmp_path: Path
) -> None:
    home = _home(tmp_path, installed)
    assert home.run("command -v remem")[1].strip() == str(installed / "remem")
    (tour,) = [b for b in doc_blocks.blocks(README) if b.lang == "console" and b.not_run is None]
    printed = "".join(
        f"$ {step.command}\n" + home.run(step.command)[1] for step in doc_blocks.steps(tour.code)
    )
    assert doc_blocks.mask(printed) == doc_blocks.mask(tour.code)
    assert "src/remem" not in home.run("python3 -c 'import remem; print(remem.__file__)'")[1]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt install tmux)")
def test_a_first_add_in_a_real_terminal_leaves_no_progress_bar(installed: Path, tmp_path: Path) -> None:
    home = _home(tmp_path, installed)
    socket, env = str(tmp_path / "tmux.sock"), {**home.env, "TERM": "xterm-256color"}
    command = "remem add 'The deploy key rotates every 90 days'; echo EXIT=$?; sleep 60"
    tmux = ["tmux", "-S", socket]
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "160", "-y", "40", "-c", str(home.home), "bash", "-c", command],
        env=env,
        check=True,
        timeout=30,
    )
    try:
        screen = ""
        deadline = time.monotonic() + 120
        while "EXIT=" not in screen and time.monotonic() < deadline:
            time.sleep(0.2)
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-J"], env=env, capture_output=True, text=True, check=True
            ).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, check=False, timeout=30)
    lines = [line for line in screen.splitlines() if line.strip()]
    assert lines == [
        "New store at ~/.local/share/remem, using the bundled model all-minilm-l6-v2 (English).".replace(
            "~", str(home.home)
        ),
        "Better search: `remem model pull bge-small-en-v1.5` (134 MB), then "
        "`remem reindex --model bge-small-en-v1.5`.",
        "1",
        "EXIT=0",
    ], screen
