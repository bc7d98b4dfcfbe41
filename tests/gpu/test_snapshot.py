"""`peerwatch snapshot --json --fabric nvml` on a real GPU host: quick, and it has the GPUs.

Skipped where NVML sees no GPU (CI, a laptop). The budget is the reading's own time
(`took_s`, under 1 s): the prolog's whole command also pays interpreter start-up and imports,
which `bench/gpu/snapshot.py` reports apart.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from peerwatch.probes.errors import FabricUnavailable


def _nvml_gpu_count() -> int:
    try:
        from peerwatch.probes.nvidia.nvml import Nvml

        nvml = Nvml()
    except FabricUnavailable as exc:
        pytest.skip(f"no GPU here: {exc}")
    try:
        return nvml.gpu_count()
    finally:
        nvml.close()


def test_snapshot_of_the_real_fabric_is_quick_and_has_every_gpu() -> None:
    gpus = _nvml_gpu_count()
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "peerwatch.app.cli", "snapshot", "--json",
                           "--fabric",
                           "nvml"], capture_output=True, text=True, timeout=60, check=False,
                          cwd=Path(__file__).resolve().parents[2])
    wall = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    snap = json.loads(done.stdout)
    print(f"snapshot: reading {snap['took_s']:.3f} s, command {wall:.3f} s, {gpus} GPU(s)")
    assert snap["took_s"] < 1.0
    assert len(snap["inventory"]["gpus"]) == gpus
    assert snap["host"]["fabric"] == "nvml"
    assert all(g["uuid"].startswith("GPU-") for g in snap["inventory"]["gpus"]), snap["errors"]
