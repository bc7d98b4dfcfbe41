"""The wheel as a user gets it: built once per session, installed into fresh virtual
environments outside the checkout (a probe-only one and one with the `server` extra), run
from a working directory where the repository cannot be imported.

pip's own cache and index settings are used, so a second run installs from the cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.app.conftest import throwaway_pg_database

REPO = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT_S = 600


@dataclass(frozen=True)
class Venv:
    root: Path
    workdir: Path  # outside the checkout: `app` and `probes` come only from the wheel

    def bin(self, name: str) -> str:
        return str(self.root / "bin" / name)

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k != "PYTHONPATH" and not k.startswith("PEERWATCH_")}
        return {**env, "PEERWATCH_DATA_DIR": str(self.workdir / "data"), **extra}

    def run(self, *argv: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([self.bin(argv[0]), *argv[1:]], cwd=self.workdir, env=self.env(**env),
                              capture_output=True, text=True, timeout=timeout)


def _pip(*argv: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *argv, "-q", "--disable-pip-version-check"],
                   check=True, timeout=INSTALL_TIMEOUT_S, cwd=REPO)


# What the Dockerfile's wheel stage copies: the build sees these and nothing else, so no
# stale build/ output of the checkout can slip into the wheel.
SOURCES = ("pyproject.toml", "setup.py", "README.md", "MANIFEST.in", "alembic.ini", "app",
           "probes", "migrations", "frontend")


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    for name in SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__",
                                                                               "_assets"))
        else:
            shutil.copy2(source, tree / name)
    _pip("wheel", "--no-deps", "-w", str(out), str(tree))
    (built,) = out.glob("peerwatch-*.whl")
    return built


def _venv(tmp_path_factory: pytest.TempPathFactory, name: str, requirement: str) -> Venv:
    base = tmp_path_factory.mktemp(name)
    root, workdir = base / "venv", base / "work"
    workdir.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=120)
    subprocess.run([str(root / "bin" / "python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", requirement],
                   check=True, timeout=INSTALL_TIMEOUT_S, cwd=workdir)
    return Venv(root, workdir)


@pytest.fixture(scope="session")
def probe_venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Venv:
    """`pip install peerwatch`: the probe agent alone."""
    return _venv(tmp_path_factory, "probe-venv", str(wheel))


@pytest.fixture(scope="session")
def server_venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Venv:
    """`pip install 'peerwatch[server]'`."""
    return _venv(tmp_path_factory, "server-venv", f"{wheel}[server]")


@pytest.fixture
def empty_pg_url() -> Iterator[str]:
    """An empty PostgreSQL database (no schema), dropped afterwards."""
    with throwaway_pg_database("peerwatch_wheel") as url:
        yield url
