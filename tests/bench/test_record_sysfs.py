"""bench/gpu/record_sysfs.py, the recorder of NIC fixtures, at smoke size: it records a
replayed fixture tree, replays its own recording and finds the same reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.gpu import record_sysfs
from peerwatch.probes.nvidia import sysfs_tree

FIXTURE = Path(__file__).parents[1] / "fixtures/sysfs/node_exporter_ib.json"


def test_a_recording_replays_to_the_same_reading(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = sysfs_tree.replay(sysfs_tree.load(FIXTURE), tmp_path / "root")
    assert record_sysfs.main(["--root", str(root), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "replay matches the live reading" in out
    assert "nic mlx4_0 0000:03:00.0 0 [(0, 'PIX')]" in out
    recorded = json.loads((tmp_path / "out/sysfs_nics.json").read_text())
    assert recorded["files"]["sys/class/infiniband/mlx4_0/ports/1/rate"] == "40 Gb/sec (4X QDR)"
    assert recorded["links"]["sys/class/infiniband/mlx4_0/device"] == (
        "../../../devices/pci0000:00/0000:00:02.0/0000:03:00.0")


def test_a_host_without_rdma_devices_is_skipped(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert record_sysfs.main(["--root", str(tmp_path), "--out", str(tmp_path / "o")]) == 0
    assert "skipped: no RDMA devices" in capsys.readouterr().out
