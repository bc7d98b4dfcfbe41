"""The package map, and a build step that puts the top-level `migrations/` and `frontend/` into the wheel.

They stay at the repository's top level (Alembic and the dashboard are edited there); the
wheel carries copies as package data under `app/_assets/`, which `app.runtime.assets.asset_dir` finds
through importlib.resources. Everything else about the package is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
ASSET_DIRS = ("migrations", "frontend")  # as app.runtime.assets.ASSET_DIRS
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")
PACKAGE_DIRS = {"peerwatch.app": "app", "peerwatch.probes": "probes"}


def packages() -> list[str]:
    """Every package under each mapped folder, named as installed."""
    found = []
    for name, folder in PACKAGE_DIRS.items():
        found += [name, *(f"{name}.{sub}" for sub in find_packages(str(ROOT / folder)))]
    return found


class BuildWithAssets(build_py):
    """build_py, then copy each asset folder to <build_lib>/peerwatch/app/_assets/<name>/."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's folders directly
        for name in ASSET_DIRS:
            target = Path(self.build_lib) / "peerwatch" / "app" / "_assets" / name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(ROOT / name, target, ignore=SKIP)


setup(packages=packages(), package_dir=PACKAGE_DIRS, cmdclass={"build_py": BuildWithAssets})
