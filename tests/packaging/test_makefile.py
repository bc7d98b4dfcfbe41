"""`make` and the Python it runs on: a `.venv` left by a too-old Python is rebuilt, and a
too-old `PYTHON=` gets the one command to run instead of pip's "requires a different Python".

Needs an older CPython (3.8-3.10) on this machine to play the wrong one; the rebuild is
stopped at its first `pip install` (no index), since only the repair is under test.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.packaging
REPO = Path(__file__).resolve().parents[2]
MIN_PYTHON = (3, 11)


def _older_python() -> str | None:
    names = [shutil.which(f"python3.{minor}") for minor in (10, 9, 8)]
    names += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[0]*/bin/python3")))
    for exe in filter(None, names):
        probe = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2] < (3, 11))"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == "True":
            return exe
    return None


@pytest.fixture(scope="module")
def old_python() -> str:
    exe = _older_python()
    if exe is None:
        pytest.skip("no Python older than 3.11 on this machine to play the wrong one")
    return exe


def make_install(venv: Path, python: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": ""}
    return subprocess.run(["make", "--no-print-directory", "install", f"VENV={venv}",
                           f"PYTHON={python}"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_too_old_python_gets_the_command_to_run(tmp_path: Path, old_python: str) -> None:
    result = make_install(tmp_path / ".venv", old_python)
    assert result.returncode != 0
    assert result.stdout.strip().splitlines() == [
        f"make: peerwatch needs Python >= 3.11, and '{old_python}' is "
        f"{subprocess.check_output([old_python, '-V'], text=True).strip()}. "
        "Run: make PYTHON=python3.11 (or any newer python3)"]
    assert not (tmp_path / ".venv").exists()


def test_a_venv_of_a_too_old_python_is_rebuilt(tmp_path: Path, old_python: str) -> None:
    venv = tmp_path / ".venv"
    subprocess.run([old_python, "-m", "venv", "--without-pip", str(venv)], check=True)
    result = make_install(venv, sys.executable)
    assert "older than 3.11: rebuilding it with" in result.stdout, result.stdout
    rebuilt = subprocess.check_output([str(venv / "bin" / "python"), "-c",
                                       "import sys; print(*sys.version_info[:2])"], text=True)
    assert tuple(map(int, rebuilt.split())) >= MIN_PYTHON
