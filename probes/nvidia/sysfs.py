"""What Linux's /sys and /proc say about GPUs that NVML does not: NUMA node, RDMA NICs, peermem,
and which NVIDIA GPUs sit on the PCI bus (one that fell off the bus stays listed there).

GPUDirect RDMA needs the `nvidia_peermem` kernel module and a NIC close to the GPU on PCIe;
NVML knows neither. The root is injectable so tests build a small fake tree; where /sys shows
nothing (a VM without NICs, a container without /sys), every answer is absent, never an error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from peerwatch.probes.report import PathLevel, PciGpu
from peerwatch.probes.topology import PATH_ORDER, normalize_bus_id, sysfs_path_level

NVIDIA_VENDOR = "0x10de"
GPU_CLASSES = ("0x0300", "0x0302")  # VGA-compatible and 3D controllers (class code 0x03xxyy)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip().lower()
    except OSError:
        return None


def _driver(device_dir: Path) -> str | None:
    link = device_dir / "driver"
    return link.resolve().name if link.exists() else None


@dataclass(frozen=True)
class Nic:
    name: str  # e.g. "mlx5_0"
    path: tuple[str, ...]  # sysfs components from the root complex down to the device
    numa_node: int | None


class Sysfs:
    def __init__(self, root: str | Path = "/") -> None:
        self.root = Path(root)

    # ------------------------------------------------------------------ PCI devices

    def _device_dir(self, bus_id: str) -> Path | None:
        norm = normalize_bus_id(bus_id)
        if norm is None:
            return None
        path = self.root / "sys/bus/pci/devices" / norm
        return path if path.exists() else None

    def pci_path(self, bus_id: str) -> tuple[str, ...] | None:
        """Components of the device's real sysfs path below /sys/devices (root complex first)."""
        found = self._device_dir(bus_id)
        return None if found is None else self._components(found)

    def _components(self, device_dir: Path) -> tuple[str, ...] | None:
        real = device_dir.resolve()
        parts = real.parts
        for i, part in enumerate(parts):
            if part.startswith("pci") and i > 0 and parts[i - 1] == "devices":
                return tuple(parts[i:])
        return None

    def numa_node(self, bus_id: str) -> int | None:
        found = self._device_dir(bus_id)
        return None if found is None else self._read_numa(found)

    @staticmethod
    def _read_numa(device_dir: Path) -> int | None:
        try:
            node = int((device_dir / "numa_node").read_text().strip())
        except (OSError, ValueError):
            return None
        return node if node >= 0 else None  # -1: the kernel knows no node

    def nvidia_gpus(self) -> list[PciGpu] | None:
        """NVIDIA display and 3D controllers on the PCI bus (NVSwitches are bridges: not
        listed), in bus order; None where /sys shows no PCI bus at all (a container without
        /sys). A GPU bound to another driver (vfio-pci: passed to a VM) is not the host's to
        judge and is left out; one with no driver bound (it failed to start) is listed."""
        base = self.root / "sys/bus/pci/devices"
        if not base.is_dir():
            return None
        found = []
        for entry in sorted(base.iterdir()):
            if _read(entry / "vendor") != NVIDIA_VENDOR:
                continue
            if not (_read(entry / "class") or "").startswith(GPU_CLASSES):
                continue
            driver = _driver(entry)
            if driver in (None, "nvidia"):
                found.append(PciGpu(pci_bus_id=entry.name, device=_read(entry / "device"),
                                    driver=driver))
        return found

    # ------------------------------------------------------------------ this process

    def own_pids(self) -> set[int]:
        """This process's PID in every PID namespace /proc shows (NSpid), as NVML may list it."""
        pids = {os.getpid()}
        try:
            status = (self.root / "proc/self/status").read_text()
        except OSError:
            return pids
        for line in status.splitlines():
            if line.startswith("NSpid:"):
                pids |= {int(x) for x in line.split()[1:] if x.isdigit()}
        return pids

    # ------------------------------------------------------------------ RDMA

    def peermem_loaded(self) -> bool | None:
        """Whether nvidia_peermem is loaded; None when neither /sys/module nor /proc/modules."""
        sys_module = self.root / "sys/module"
        if sys_module.is_dir():
            return (sys_module / "nvidia_peermem").exists()
        try:
            modules = (self.root / "proc/modules").read_text()
        except OSError:
            return None
        return any(line.split(" ", 1)[0] == "nvidia_peermem" for line in modules.splitlines())

    def rdma_nics(self) -> list[Nic]:
        """RDMA devices under /sys/class/infiniband with their PCI location."""
        base = self.root / "sys/class/infiniband"
        if not base.is_dir():
            return []
        nics = []
        for entry in sorted(base.iterdir()):
            device = entry / "device"
            path = self._components(device) if device.exists() else None
            if path is not None:
                nics.append(Nic(entry.name, path, self._read_numa(device)))
        return nics

    def nic_path(self, nic: str) -> tuple[str, ...] | None:
        """Components of RDMA device `nic`'s PCI path (root complex first), None unknown."""
        device = self.root / "sys/class/infiniband" / nic / "device"
        return self._components(device) if device.exists() else None

    def nearest_nic(self, gpu_bus_id: str) -> tuple[str, PathLevel] | None:
        """The RDMA NIC nearest the GPU on PCIe and its path level; None where /sys shows none."""
        gpu_path = self.pci_path(gpu_bus_id)
        if gpu_path is None:
            return None
        gpu_numa = self.numa_node(gpu_bus_id)
        best: tuple[str, PathLevel] | None = None
        for nic in self.rdma_nics():
            level = sysfs_path_level(gpu_path, nic.path, gpu_numa, nic.numa_node)
            if best is None or PATH_ORDER.index(level) < PATH_ORDER.index(best[1]):
                best = (nic.name, level)
        return best
