"""Where the Alembic migrations and the dashboard's files are, installed or in a checkout.

The repository keeps them at its top level (`migrations/`, `frontend/`, as the design fixes).
A built wheel carries copies as package data under `app/_assets/` (setup.py's build step), so
`pip install peerwatch` gives a server that can migrate and serve the dashboard; they are found
through `importlib.resources`. A checkout or an editable install has no `app/_assets/`, and
uses the top-level folders, so an edit to `frontend/` shows on the next reload.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

PACKAGED = "_assets"  # app/_assets/<name>/ inside a wheel; written by setup.py, never committed
ASSET_DIRS = ("migrations", "frontend")


def asset_dir(name: str) -> Path:
    """The folder `name` (one of ASSET_DIRS): the wheel's copy, else the checkout's."""
    if name not in ASSET_DIRS:
        raise ValueError(f"unknown asset folder {name!r} (one of {', '.join(ASSET_DIRS)})")
    packaged = resources.files("peerwatch.app") / PACKAGED / name
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"peerwatch's {name}/ is missing (looked in {packaged} and "
                            f"{checkout}); reinstall peerwatch")
