"""PCIe AER counters of a GPU and of the bridge right above it, from sysfs.

Linux (4.19+, with AER enabled) keeps per-device totals in
/sys/bus/pci/devices/<BDF>/aer_dev_correctable, aer_dev_nonfatal and aer_dev_fatal: one
"<ErrorName> <count>" line per error type and a TOTAL_ERR_COR / TOTAL_ERR_NONFATAL /
TOTAL_ERR_FATAL line. They are lifetime totals (since boot), judged by their rate on the
server, as NVLink errors are. The upstream bridge is the device the GPU's sysfs path hangs
under (the switch's downstream port, or the root port): a link's errors may be logged at
either end. A device without the files (AER off, an old kernel, a VM's emulated bus) is
"not supported", named in `unread`, never an error.
"""

from __future__ import annotations

import re
from pathlib import Path

from peerwatch.probes.errors import NotSupported
from peerwatch.probes.gpu_health import AerCounts, PcieAer
from peerwatch.probes.nvidia.nvml_health import attempt
from peerwatch.probes.nvidia.sysfs import Sysfs
from peerwatch.probes.topology import normalize_bus_id

FILES = {"correctable": ("aer_dev_correctable", "TOTAL_ERR_COR"),
         "nonfatal": ("aer_dev_nonfatal", "TOTAL_ERR_NONFATAL"),
         "fatal": ("aer_dev_fatal", "TOTAL_ERR_FATAL")}
BDF = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


def parse_total(text: str, total: str) -> int:
    """The TOTAL_ERR_* line's count, else the sum of every line's (older kernels)."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    if not counts:
        raise ValueError("no '<name> <count>' line")
    return counts[total] if total in counts else sum(counts.values())


def read_counts(device: Path) -> AerCounts:
    """One PCI function's three totals; NotSupported where it has no AER files at all."""
    values: dict[str, int | None] = {}
    for kind, (name, total) in FILES.items():
        try:
            values[kind] = parse_total((device / name).read_text(), total)
        except (OSError, ValueError):
            values[kind] = None
    if all(v is None for v in values.values()):
        raise NotSupported(f"no readable aer_dev_* files under {device.name} (AER off?)")
    return AerCounts(**values)


def device_dir(sysfs: Sysfs, bus_id: str) -> Path | None:
    norm = normalize_bus_id(bus_id)
    path = None if norm is None else sysfs.root / "sys/bus/pci/devices" / norm
    return path if path is not None and path.exists() else None


def upstream_bridge(device: Path) -> Path | None:
    """The PCI device the GPU's real sysfs path sits under; None at a root bus."""
    parent = device.resolve().parent
    return parent if BDF.fullmatch(parent.name) else None


def read_aer(sysfs: Sysfs, gpu: int, bus_id: str) -> PcieAer:
    """GPU `gpu`'s AER counts and its upstream bridge's, each read alone."""
    unread: dict[str, str] = {}
    device = device_dir(sysfs, bus_id)
    if device is None:
        raise NotSupported(f"aer gpu={gpu}: {bus_id} is not in sysfs")
    bridge = upstream_bridge(device)
    own = attempt(unread, "device", lambda: read_counts(device))
    above = attempt(unread, "bridge", lambda: read_counts(bridge)) if bridge else None
    if bridge is None:
        unread["bridge"] = "not supported: the GPU sits on a root bus (no bridge above it)"
    return PcieAer(gpu=gpu, device=own, bridge=bridge.name if bridge else None,
                   bridge_counts=above, unread=unread)
