"""The probe's GPU evidence: the NVIDIA GPUs sysfs lists on the PCI bus (a fake tree shaped
like the real one: an HGX board's GPUs and NVSwitches, a NIC, a GPU passed to a VM, one that
fell off the bus), the simulated fabric's PCI bus with a GPU lost from NVML (still listed,
or gone from the bus too), and the GPUs seen since boot kept across an agent restart and
forgotten at a reboot."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from peerwatch.probes.agent.gpus_seen import SeenSinceBoot
from peerwatch.probes.nvidia.sysfs import Sysfs
from peerwatch.probes.report import ReportKind
from peerwatch.probes.sim.faults import GpuLost
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import build_report

T0 = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
T1 = datetime(2026, 12, 1, 4, 0, tzinfo=UTC)


def pci_device(root: Path, bus: str, vendor: str, cls: str, device: str = "0x2335",
               driver: str | None = "nvidia") -> None:
    d = root / "sys/bus/pci/devices" / bus
    d.mkdir(parents=True)
    for name, value in (("vendor", vendor), ("class", cls), ("device", device)):
        (d / name).write_text(value + "\n")
    if driver is not None:
        target = root / "sys/bus/pci/drivers" / driver
        target.mkdir(parents=True, exist_ok=True)
        os.symlink(target, d / "driver")


def test_sysfs_lists_the_nvidia_gpus_on_the_pci_bus(tmp_path: Path) -> None:
    pci_device(tmp_path, "0000:18:00.0", "0x10de", "0x030200")  # an H100 SXM: 3D controller
    pci_device(tmp_path, "0000:2a:00.0", "0x10de", "0x030200")  # fell off: still listed
    pci_device(tmp_path, "0000:05:00.0", "0x10de", "0x068000", "0x22a3")  # NVSwitch: bridge
    pci_device(tmp_path, "0000:0c:00.0", "0x15b3", "0x020700", "0x1021", "mlx5_core")  # NIC
    pci_device(tmp_path, "0000:3a:00.0", "0x10de", "0x030000", "0x2684", "vfio-pci")  # a VM's
    pci_device(tmp_path, "0000:5d:00.0", "0x10de", "0x030000", "0x2684", None)  # no driver
    found = Sysfs(tmp_path).nvidia_gpus()
    assert found is not None
    assert [(g.pci_bus_id, g.device, g.driver) for g in found] == [
        ("0000:18:00.0", "0x2335", "nvidia"), ("0000:2a:00.0", "0x2335", "nvidia"),
        ("0000:5d:00.0", "0x2684", None)]
    assert Sysfs(tmp_path / "nowhere").nvidia_gpus() is None  # no /sys: could not look


def test_the_simulated_pci_bus_keeps_a_gpu_nvml_lost() -> None:
    fab = SimulatedFabric("hgx8", faults=[GpuLost(gpu=4)])
    inv = build_report(fab, ReportKind.INVENTORY).inventory
    assert [g.index for g in inv.gpus] == [0, 1, 2, 3, 5, 6, 7]
    assert inv.evidence is not None and len(inv.evidence.pci or []) == 8
    assert "0000:9a:00.0" in {p.pci_bus_id for p in inv.evidence.pci or []}
    gone = SimulatedFabric("hgx8", faults=[GpuLost(gpu=4, on_pci=False)])
    assert len(gone.pci_gpus()) == 7


def test_the_gpus_seen_since_boot_outlive_the_agent_and_not_a_reboot(tmp_path: Path) -> None:
    boot, path = tmp_path / "boot_id", tmp_path / "spool" / "gpus-seen.state"
    path.parent.mkdir()
    boot.write_text("1f0e\n")
    fab = SimulatedFabric("hgx8")
    gpus = build_report(fab, ReportKind.INVENTORY).inventory.gpus
    seen = SeenSinceBoot(path, boot)
    assert [g.index for g in seen.update(gpus, T0)] == list(range(8))
    assert json.loads(path.read_text())["boot_id"] == "1f0e"
    restarted = SeenSinceBoot(path, boot)  # GPU4 fell off, then the agent restarted
    listed = restarted.update([g for g in gpus if g.index != 4], T1)
    assert [g.index for g in listed] == list(range(8))
    assert listed[4].uuid == gpus[4].uuid and listed[4].first_seen_at == T0
    boot.write_text("77aa\n")  # a reboot: the set starts over
    assert [g.index for g in SeenSinceBoot(path, boot).update(gpus[:7], T1)] == list(range(7))


def test_an_unreadable_set_or_boot_id_never_stops_the_agent(tmp_path: Path) -> None:
    path = tmp_path / "gpus-seen.state"
    path.write_text("{not json")
    boot = tmp_path / "boot_id"
    boot.write_text("1f0e\n")
    gpus = build_report(SimulatedFabric("hgx8"), ReportKind.INVENTORY).inventory.gpus
    assert len(SeenSinceBoot(path, boot).update(gpus, T0)) == 8  # started afresh, rewritten
    assert json.loads(path.read_text())["boot_id"] == "1f0e"
    blind = SeenSinceBoot(tmp_path / "other.json", tmp_path / "no-boot-id")
    assert len(blind.update(gpus, T0)) == 8 and blind.boot_id() is None
    assert not (tmp_path / "other.json").exists()  # without a boot id: memory only
    readonly = SeenSinceBoot(tmp_path / "missing-dir" / "gpus-seen.state", boot)
    assert len(readonly.update(gpus, T0)) == 8  # cannot write: kept in memory, logged
