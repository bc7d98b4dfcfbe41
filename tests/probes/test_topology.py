"""Decoding rules (probes/topology.py) and the sysfs reader (probes/nvidia/sysfs.py), fake /sys."""

from __future__ import annotations

from pathlib import Path

import pytest

from peerwatch.probes.nvidia.sysfs import Sysfs
from peerwatch.probes.report import LinkState, NvLinkPort, PathLevel, RemoteType
from peerwatch.probes.topology import (
    cpulist,
    normalize_bus_id,
    nvlink_version,
    nvlink_width,
    path_level,
    sysfs_path_level,
    topology_label,
)


@pytest.mark.parametrize(("mask", "text"), [
    ([0xFFFFFFFF], "0-31"),
    ([0xFFFFFFFF, 0xFFFFFFFF], "0-31,64-95"),
    ([0b1011], "0-1,3"),
    ([0, 1], "64"),
    ([0], None),
])
def test_cpulist(mask: list[int], text: str | None) -> None:
    assert cpulist(mask) == text


def test_enums() -> None:
    assert (nvlink_version(6), nvlink_version(7), nvlink_version(0)) == ("4.0", "5.0", None)
    assert [path_level(c) for c in (0, 10, 20, 30, 40, 50)] == list(PathLevel)
    assert topology_label(18, PathLevel.PHB) == "NV18"
    assert topology_label(0, PathLevel.SYS) == "SYS"


def test_bus_ids() -> None:
    assert normalize_bus_id("00000000:00:06.0") == "0000:00:06.0"
    assert normalize_bus_id(b"00000000:1A:00.0\x00") == "0000:1a:00.0"
    assert normalize_bus_id("FFFFFFFF:FF:FF.0") is None
    assert normalize_bus_id("garbage") is None


def _port(gpu: int, link: int, up: bool, kind: RemoteType, peer: int | None = None) -> NvLinkPort:
    return NvLinkPort(gpu=gpu, link=link, state=LinkState.UP if up else LinkState.DOWN,
                      remote_type=kind, remote_gpu=peer)


def test_width_on_a_direct_mesh_counts_links_to_that_peer() -> None:
    src = [_port(0, i, True, RemoteType.GPU, 1 if i < 4 else 2) for i in range(6)]
    dst = [_port(1, i, True, RemoteType.GPU, 0) for i in range(4)]
    assert nvlink_width(0, 1, src, dst) == (4, False)
    assert nvlink_width(0, 2, src, []) == (2, False)
    assert nvlink_width(0, 3, src, []) == (0, False)


def test_width_through_switches_ignores_down_links() -> None:
    src = [_port(0, i, i != 0, RemoteType.NVSWITCH) for i in range(18)]
    dst = [_port(1, i, True, RemoteType.NVSWITCH) for i in range(18)]
    assert nvlink_width(0, 1, src, dst) == (17, True)


@pytest.mark.parametrize(("a", "b", "level"), [
    (["pci0000:00", "0000:00:06.0"], ["pci0000:00", "0000:00:07.0"], PathLevel.PHB),
    (["pci0000:00", "R", "U", "D1", "gpu"], ["pci0000:00", "R", "U", "D2", "nic"], PathLevel.PIX),
    (["pci0000:00", "R", "U", "D1", "U2", "D3", "gpu"], ["pci0000:00", "R", "U", "D2", "nic"],
     PathLevel.PXB),
])
def test_sysfs_path_levels(a: list[str], b: list[str], level: PathLevel) -> None:
    assert sysfs_path_level(a, b, 0, 0) is level


def test_other_root_complex_is_node_or_sys() -> None:
    a, b = ["pci0000:00", "gpu"], ["pci0000:80", "nic"]
    assert sysfs_path_level(a, b, 0, 0) is PathLevel.NODE
    assert sysfs_path_level(a, b, 0, 1) is PathLevel.SYS


def _device(root: Path, chain: list[str], numa: int) -> Path:
    real = root / "sys/devices" / Path(*chain)
    real.mkdir(parents=True)
    (real / "numa_node").write_text(f"{numa}\n")
    link = root / "sys/bus/pci/devices" / chain[-1]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(real)
    return real


def test_nearest_nic_and_peermem_from_a_fake_sys(tmp_path: Path) -> None:
    _device(tmp_path, ["pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:08.0",
                       "0000:05:00.0"], 0)
    near = _device(tmp_path, ["pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:10.0",
                              "0000:06:00.0"], 0)
    far = _device(tmp_path, ["pci0000:80", "0000:80:01.0", "0000:81:00.0"], 1)
    for name, dev in (("mlx5_0", near), ("mlx5_1", far)):
        ib = tmp_path / "sys/class/infiniband" / name
        ib.mkdir(parents=True)
        (ib / "device").symlink_to(dev)
    (tmp_path / "sys/module/nvidia_peermem").mkdir(parents=True)
    sysfs = Sysfs(tmp_path)
    assert sysfs.numa_node("00000000:05:00.0") == 0
    assert sysfs.nearest_nic("00000000:05:00.0") == ("mlx5_0", PathLevel.PIX)
    assert sysfs.peermem_loaded() is True


def test_an_empty_sys_answers_absent(tmp_path: Path) -> None:
    sysfs = Sysfs(tmp_path)
    assert sysfs.nearest_nic("00000000:05:00.0") is None
    assert sysfs.numa_node("00000000:05:00.0") is None
    assert sysfs.peermem_loaded() is None
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/modules").write_text("nvidia_uvm 1 0 - Live 0x0\n")
    assert sysfs.peermem_loaded() is False
