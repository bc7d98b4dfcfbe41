"""GPUDirect RDMA reads from /sys and /proc: ACS from real-shaped PCIe config space, the
bridges between a GPU and its NIC (or a peer GPU), peermem registered with ib_core (gpud's
check), dma-buf from the driver banner, and the NIC's port state, on fake trees shaped like
the real ones (a PCIe switch with a GPU and a NIC below it; the one-H200 VM's flat bus)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from peerwatch.probes.nvidia.nvml import Nvml
from peerwatch.probes.nvidia.rdma import (
    ConfigUnreadable,
    RdmaReader,
    acs_control,
    acs_names,
    bridges_between,
)
from peerwatch.probes.nvidia.sysfs import Sysfs
from peerwatch.probes.report import PathLevel
from tests.probes.fake_pynvml import FakePynvml


def ext_cap(cap_id: int, version: int, nxt: int) -> bytes:
    return struct.pack("<I", cap_id | version << 16 | nxt << 20)


def bridge_config(acs_ctl: int | None, size: int = 4096) -> bytes:
    """A PCIe switch downstream port's config space as the kernel shows it to root: type 1
    header, then the extended capabilities AER (0x100) -> Power Budgeting (0x148) -> ACS
    (0x170, capability 0x5f) when `acs_ctl` is given."""
    cfg = bytearray(size)
    cfg[0:4] = struct.pack("<HH", 0x10B5, 0xC010)  # vendor, device (a PEX switch port)
    cfg[0x0E] = 0x01  # header type 1: a bridge
    cfg[0x34] = 0x40  # capabilities pointer (PCI Express capability at 0x40)
    if size > 0x100:
        cfg[0x100:0x104] = ext_cap(0x0001, 2, 0x148)  # AER
        cfg[0x148:0x14C] = ext_cap(0x0004, 1, 0x170 if acs_ctl is not None else 0)
        if acs_ctl is not None:
            cfg[0x170:0x174] = ext_cap(0x000D, 1, 0)
            cfg[0x174:0x178] = struct.pack("<HH", 0x005F, acs_ctl)
    return bytes(cfg)


def test_acs_control_from_config_space() -> None:
    ctl = acs_control(bridge_config(0x001D))  # SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+
    assert ctl == 0x1D
    assert acs_names(ctl) == ["source_validation", "p2p_request_redirect",
                              "p2p_completion_redirect", "upstream_forwarding"]
    assert acs_control(bridge_config(None)) is None  # no ACS capability in the chain
    assert acs_control(bridge_config(0)) == 0  # present, everything off
    with pytest.raises(ConfigUnreadable):
        acs_control(bridge_config(0x1D, size=64))  # what a non-root reader gets
    with pytest.raises(ConfigUnreadable):
        acs_control(bridge_config(None, size=256))  # conventional PCI: no extended space
    looped = bytearray(bridge_config(None))
    looped[0x148:0x14C] = ext_cap(0x0004, 1, 0x100)  # a chain pointing back: ends, no hang
    assert acs_control(bytes(looped)) is None


def test_bridges_between_devices() -> None:
    root, r = "pci0000:00", "0000:00:01.0"
    gpu = (root, r, "0000:01:00.0", "0000:02:08.0", "0000:05:00.0")
    nic = (root, r, "0000:01:00.0", "0000:02:10.0", "0000:06:00.0")
    assert bridges_between(gpu, nic) == ["0000:02:08.0", "0000:01:00.0", "0000:02:10.0"]
    flat = (root, "0000:00:06.0")  # the one-H200 VM: on the root bus
    assert bridges_between(flat, (root, "0000:00:03.0")) == []
    other = ("pci0000:80", "0000:80:01.0", "0000:81:00.0")
    assert bridges_between(gpu, other) == ["0000:00:01.0", "0000:01:00.0", "0000:02:08.0",
                                           "0000:80:01.0"]


def _device(root: Path, chain: list[str], config: bytes | None = None) -> Path:
    real = root / "sys/devices" / Path(*chain)
    real.mkdir(parents=True, exist_ok=True)
    (real / "numa_node").write_text("0\n")
    if config is not None:
        (real / "config").write_bytes(config)
    link = root / "sys/bus/pci/devices" / chain[-1]
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to(real)
    return real


SWITCH = ["pci0000:00", "0000:00:01.0", "0000:01:00.0"]


def switch_host(root: Path, acs_on: str | None = None, peermem: bool = True,
                port: str = "4: ACTIVE") -> None:
    """Two GPUs and a ConnectX NIC below one PCIe switch; ACS redirect on `acs_on`."""
    for chain in (SWITCH[:2], SWITCH):
        _device(root, chain, bridge_config(None))
    for down in ("0000:02:08.0", "0000:02:0c.0", "0000:02:10.0"):
        _device(root, [*SWITCH, down], bridge_config(0x1D if down == acs_on else 0))
    _device(root, [*SWITCH, "0000:02:08.0", "0000:05:00.0"])
    _device(root, [*SWITCH, "0000:02:0c.0", "0000:07:00.0"])
    nic = _device(root, [*SWITCH, "0000:02:10.0", "0000:06:00.0"])
    ib = root / "sys/class/infiniband/mlx5_0"
    (ib / "ports/1").mkdir(parents=True)
    (ib / "ports/1/state").write_text(port + "\n")
    (ib / "device").symlink_to(nic)
    holders = root / "sys/module/ib_core/holders"
    holders.mkdir(parents=True)
    (root / "sys/module/nvidia").mkdir()
    if peermem:
        (root / "sys/module/nvidia_peermem").mkdir()
        (holders / "nvidia_peermem").mkdir()
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15\n")
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/osrelease").write_text("5.15.0-105-generic\n")


def test_a_switch_host_with_acs_on_the_gpu_port(tmp_path: Path) -> None:
    switch_host(tmp_path, acs_on="0000:02:08.0")
    got = RdmaReader(Sysfs(tmp_path)).read("00000000:05:00.0", {1: "00000000:07:00.0"})
    assert got["path_bridges"] == ["0000:02:08.0", "0000:01:00.0", "0000:02:10.0"]
    assert got["acs_redirect"] == ["0000:02:08.0"]
    assert got["peer_acs_redirect"] == {1: ["0000:02:08.0"]}
    assert got["peermem_registered"] is True
    assert got["dmabuf"] is False  # the proprietary module's banner
    assert got["nic_port_state"] == "ACTIVE"
    assert got["acs_unread"] == []


def test_a_clean_switch_host(tmp_path: Path) -> None:
    switch_host(tmp_path, port="1: DOWN")
    got = RdmaReader(Sysfs(tmp_path)).read("00000000:05:00.0", {1: "00000000:07:00.0"})
    assert got["acs_redirect"] == [] and got["peer_acs_redirect"] == {}
    assert got["nic_port_state"] == "DOWN"
    assert Sysfs(tmp_path).nearest_nic("00000000:05:00.0") == ("mlx5_0", PathLevel.PIX)


def test_peermem_loaded_but_not_registered_and_proc_modules(tmp_path: Path) -> None:
    switch_host(tmp_path, peermem=False)
    (tmp_path / "sys/module/nvidia_peermem").mkdir()  # loaded, ib_core does not list it
    assert RdmaReader(Sysfs(tmp_path)).peermem_registered() is False
    proc = tmp_path / "other"
    (proc / "proc").mkdir(parents=True)
    (proc / "proc/modules").write_text(  # lsmod's source, gpud's test shape
        "nvidia_peermem 16384 0 - Live 0x0\n"
        "ib_core 434176 9 rdma_cm,ib_ipoib,nvidia_peermem,iw_cm,mlx5_ib, Live 0x0\n"
        "nvidia 56717312 447 nvidia_uvm,nvidia_peermem, Live 0x0\n")
    assert RdmaReader(Sysfs(proc)).peermem_registered() is True
    (proc / "proc/modules").write_text("nvidia_peermem 16384 0 - Live 0x0\n"
                                       "ib_core 434176 9 rdma_cm,mlx5_ib, Live 0x0\n")
    assert RdmaReader(Sysfs(proc)).peermem_registered() is False


def test_unreadable_config_is_named_not_called_clear(tmp_path: Path) -> None:
    switch_host(tmp_path)
    short = tmp_path / "sys/devices" / Path(*SWITCH) / "0000:02:08.0" / "config"
    short.write_bytes(bridge_config(0x1D)[:64])  # not root: the kernel shows 64 bytes
    got = RdmaReader(Sysfs(tmp_path)).read("00000000:05:00.0", {})
    assert got["acs_unread"] == ["0000:02:08.0"] and got["acs_redirect"] == []


def device_machine(root: Path) -> None:
    """The one-H200 VM (device_discovery.txt): GPU 0000:00:06.0 on the root bus with a 4096
    byte config space and no ACS, a virtio NIC only, nvidia but no peermem, the open kernel
    module 580.159.04 on kernel 6.18."""
    _device(root, ["pci0000:00", "0000:00:06.0"], bridge_config(None))
    _device(root, ["pci0000:00", "0000:00:03.0"], bridge_config(None, size=256))
    for m in ("nvidia", "nvidia_uvm", "ib_core", "mlx5_core", "mlx5_ib"):
        (root / "sys/module" / m).mkdir(parents=True)
    (root / "sys/module/ib_core/holders").mkdir()
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\n")
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/osrelease").write_text("6.18.44-fc-v973-gpu\n")


def test_the_device_machine_shape(tmp_path: Path) -> None:
    device_machine(tmp_path)
    reader = RdmaReader(Sysfs(tmp_path))
    got = reader.read("00000000:00:06.0", {})
    assert got == {"peermem_registered": False, "dmabuf": True, "peer_acs_redirect": {},
                   "acs_unread": []}
    assert Sysfs(tmp_path).peermem_loaded() is False
    assert reader.acs_of("00000000:00:06.0") == ("0000:00:06.0", None)  # no ACS capability


def test_nvml_fills_the_rdma_fields(tmp_path: Path) -> None:
    device_machine(tmp_path)
    nvml = Nvml(module=FakePynvml.from_dump(), sysfs=Sysfs(tmp_path))
    try:
        rdma = nvml.gpu(0).rdma
    finally:
        nvml.close()
    assert rdma.nearest_nic is None and rdma.peermem_loaded is False
    assert rdma.dmabuf is True and rdma.path_bridges is None
