"""Build step that puts the top-level `migrations/` and `frontend/` into the wheel.

They stay at the repository's top level (Alembic and the dashboard are edited there); the
wheel carries copies as package data under `app/_assets/`, which `app.assets.asset_dir` finds
through importlib.resources. Everything else about the package is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
ASSET_DIRS = ("migrations", "frontend")  # as app.assets.ASSET_DIRS
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")


class BuildWithAssets(build_py):
    """build_py, then copy each asset folder to <build_lib>/app/_assets/<name>/."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's folders directly
        for name in ASSET_DIRS:
            target = Path(self.build_lib) / "app" / "_assets" / name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(ROOT / name, target, ignore=SKIP)


setup(cmdclass={"build_py": BuildWithAssets})
