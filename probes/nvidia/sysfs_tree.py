"""A recorded piece of a host's /sys as one JSON file, and its replay as a directory tree.

`bench/gpu/record_sysfs.py` records what the NIC and RDMA readers look at (every RDMA
device with its ports and counters, the PCI functions and bridges from each root complex
down to every NIC and NVIDIA GPU, the peer-memory modules); the CPU tests replay it into a
temporary root and run the very readers a host runs (`Sysfs(root)`), so a reading that
passes on a fixture is the reading a host would make of the same files.

Format: {"note": where it came from, "files": {path: text}, "links": {path: target}} with
paths relative to the root ("sys/class/infiniband/mlx5_0/fw_ver") and link targets as the
kernel writes them (relative to the link's folder). A path that climbs out of the root is
refused: a fixture never writes outside its folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath
from typing import Any


class BadTree(ValueError):
    """A recorded tree that cannot be replayed (names the path that was wrong)."""


def _safe(rel: str) -> PurePosixPath:
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise BadTree(f"path {rel!r} is not a relative path inside the tree")
    return path


def load(source: Path) -> dict[str, Any]:
    """The recorded tree of `source`; BadTree naming what is missing."""
    try:
        tree = json.loads(source.read_text())
    except (OSError, ValueError) as exc:
        raise BadTree(f"{source}: not a readable JSON tree: {exc}") from exc
    if not isinstance(tree, dict) or not isinstance(tree.get("files"), dict):
        raise BadTree(f"{source}: needs a 'files' object of path -> text")
    return tree


def replay(tree: dict[str, Any], root: Path) -> Path:
    """Write `tree` below `root` (files, then links) and return `root`."""
    for rel, text in sorted(tree["files"].items()):
        path = root / _safe(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text if text.endswith("\n") or not text else text + "\n")
    for rel, target in sorted(tree.get("links", {}).items()):
        path = root / _safe(rel)
        resolved = (path.parent / target).resolve()
        if not resolved.is_relative_to(root.resolve()):
            raise BadTree(f"link {rel!r} -> {target!r} leaves the tree")
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_symlink():
            os.symlink(target, path)
    return root


def record_file(root: Path, path: Path, files: dict[str, str]) -> None:
    """Keep one file's text (an unreadable one is recorded as missing: left out)."""
    base = root if path.is_relative_to(root) else root.resolve()
    try:
        files[str(path.relative_to(base))] = path.read_text(errors="replace").strip()
    except OSError:
        pass


def record_link(root: Path, path: Path, links: dict[str, str]) -> None:
    """Keep a link, its target rewritten relative to the link's folder as recorded (the
    kernel's own target is relative to the link's real folder, which may be elsewhere: a
    /sys/class entry is itself a link into /sys/devices). One leading out of `root` is
    left out."""
    target = path.resolve()
    if target.is_relative_to(root.resolve()):
        rel = os.path.relpath(root.resolve() / target.relative_to(root.resolve()),
                              root.resolve() / path.parent.relative_to(root))
        links[str(path.relative_to(root))] = rel
