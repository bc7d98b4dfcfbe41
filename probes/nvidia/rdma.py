"""What GPUDirect RDMA needs of a host, read from /sys and /proc (no lspci, no root writes).

A NIC can DMA straight into GPU memory when (NVIDIA's GPUDirect RDMA guide; gpud's
peermem and ACS checks):
- a peer-memory path exists: the `nvidia_peermem` module (or Mellanox's older
  `nv_peer_mem`) loaded *and* registered with `ib_core` (gpud reads ib_core's users in
  lsmod; here /sys/module/ib_core/holders or /proc/modules' used-by column), or dma-buf:
  the open kernel module on a kernel of 5.12 or later hands GPU memory out as dma-buf
  without peermem;
- the NIC is close on PCIe (the inventory's nearest NIC and path level, `sysfs.py`);
- no bridge between them redirects peer traffic: PCIe ACS (extended capability 0x000D,
  read from the device's config space in sysfs) with P2P Request Redirect, Completion
  Redirect or Egress Control on sends every peer write up to the root complex. The same
  holds for bridges between two GPUs;
- the NIC's port is up (/sys/class/infiniband/*/ports/*/state, else the netdev operstate).

Reading config space past the first 64 bytes needs root (the kernel hides the rest): such
a bridge is listed as unread, never as clear. Everything absent is None, never an error.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from peerwatch.probes.nvidia.sysfs import Sysfs
from peerwatch.probes.topology import normalize_bus_id

ACS_CAP_ID = 0x000D
EXT_CAP_START = 0x100
# ACS Control register bits (PCIe base spec 7.7.8.3), lspci's names in comments.
ACS_CTL_BITS = (
    (0x01, "source_validation"),  # SrcValid
    (0x02, "translation_blocking"),  # TransBlk
    (0x04, "p2p_request_redirect"),  # ReqRedir
    (0x08, "p2p_completion_redirect"),  # CmpltRedir
    (0x10, "upstream_forwarding"),  # UpstreamFwd
    (0x20, "p2p_egress_control"),  # EgressCtrl
    (0x40, "direct_translated_p2p"),  # DirectTrans
)
REDIRECT_MASK = 0x04 | 0x08 | 0x20  # what routes peer traffic through the root complex
PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")
_BDF = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


class ConfigUnreadable(Exception):
    """Config space shorter than the extended capabilities (not root) or not readable."""


def acs_control(config: bytes) -> int | None:
    """The ACS Control register from a device's config space, None when it has no ACS
    capability; ConfigUnreadable when the extended space (from 0x100) is not in `config`."""
    if len(config) <= EXT_CAP_START:
        raise ConfigUnreadable(f"only {len(config)} bytes of config space readable")
    offset, seen = EXT_CAP_START, set()
    while offset and offset not in seen and offset + 8 <= len(config):
        seen.add(offset)
        header = int.from_bytes(config[offset:offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == ACS_CAP_ID:
            return int.from_bytes(config[offset + 6:offset + 8], "little")
        offset = (header >> 20) & 0xFFC
    return None


def acs_names(control: int) -> list[str]:
    return [name for bit, name in ACS_CTL_BITS if control & bit]


def bridges_between(a: tuple[str, ...], b: tuple[str, ...]) -> list[str]:
    """PCI bridges a peer transfer between the devices at sysfs paths `a` and `b` crosses:
    each one's ancestors below the deepest shared one, and that shared one when it is a PCI
    device (not the root complex). Devices on different root complexes: every ancestor."""
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    shared = [a[common - 1]] if common >= 2 and _BDF.fullmatch(a[common - 1]) else []
    out = [*a[common:-1], *shared, *reversed(b[common:-1])]
    return [c for c in dict.fromkeys(out) if _BDF.fullmatch(c)]


class RdmaReader:
    """The RDMA facts of one host's GPUs, over a `Sysfs` (its root is injectable)."""

    def __init__(self, sysfs: Sysfs) -> None:
        self.sysfs = sysfs
        self.root = sysfs.root

    def read(self, bus_id: str, peers: dict[int, str]) -> dict[str, Any]:
        """RdmaInfo's optional fields for the GPU at `bus_id`; `peers`: the other GPUs'
        NVML bus ids by index (for ACS between GPU pairs)."""
        out: dict[str, Any] = {"peermem_registered": self.peermem_registered(),
                               "dmabuf": self.dmabuf()}
        gpu_path = self.sysfs.pci_path(bus_id)
        nic = self.sysfs.nearest_nic(bus_id)
        unread: list[str] = []
        if gpu_path is not None and nic is not None:
            nic_path = self.sysfs.nic_path(nic[0])
            if nic_path is not None:
                bridges = bridges_between(gpu_path, nic_path)
                out["path_bridges"] = bridges
                out["acs_redirect"] = self._redirecting(bridges, unread)
            out["nic_port_state"] = self.port_state(nic[0])
        peer_acs = {}
        for index, peer_bus in sorted(peers.items()):
            peer_path = self.sysfs.pci_path(peer_bus)
            if gpu_path is None or peer_path is None:
                continue
            on = self._redirecting(bridges_between(gpu_path, peer_path), unread)
            if on:
                peer_acs[index] = on
        out["peer_acs_redirect"] = peer_acs
        out["acs_unread"] = sorted(set(unread))
        return out

    def _redirecting(self, bridges: list[str], unread: list[str]) -> list[str]:
        on = []
        for bdf in bridges:
            try:
                control = acs_control(self.config(bdf))
            except ConfigUnreadable:
                unread.append(bdf)
                continue
            if control is not None and control & REDIRECT_MASK:
                on.append(bdf)
        return on

    def config(self, bdf: str) -> bytes:
        try:
            return (self.root / "sys/bus/pci/devices" / bdf / "config").read_bytes()
        except OSError as exc:
            raise ConfigUnreadable(f"{bdf}: {exc}") from exc

    def acs_of(self, bus_id: str) -> tuple[str, int | None] | None:
        """(bdf, ACS control or None when no ACS capability) of one device; None unread."""
        bdf = normalize_bus_id(bus_id)
        if bdf is None:
            return None
        try:
            return bdf, acs_control(self.config(bdf))
        except ConfigUnreadable:
            return None

    # ------------------------------------------------------------------ modules, ports

    def peermem_registered(self) -> bool | None:
        """A peer-memory module registered with ib_core (gpud's check); None: cannot tell."""
        holders = self.root / "sys/module/ib_core/holders"
        if holders.is_dir():
            return any((holders / m).exists() for m in PEERMEM_MODULES)
        try:
            modules = (self.root / "proc/modules").read_text()
        except OSError:
            return None
        for line in modules.splitlines():
            fields = line.split()
            if fields and fields[0] == "ib_core":
                users = fields[3].split(",") if len(fields) > 3 else []
                return any(m in users for m in PEERMEM_MODULES)
        return False  # no ib_core: no RDMA stack for a peer-memory module to serve

    def dmabuf(self) -> bool | None:
        """Whether the driver can export GPU memory as dma-buf: the open kernel module
        (its version banner says so) on a kernel of 5.12 or later."""
        try:
            banner = (self.root / "proc/driver/nvidia/version").read_text()
            release = (self.root / "proc/sys/kernel/osrelease").read_text().strip()
        except OSError:
            return None
        numbers = re.match(r"(\d+)\.(\d+)", release)
        if numbers is None:
            return None
        new_kernel = (int(numbers[1]), int(numbers[2])) >= (5, 12)
        return new_kernel and "Open Kernel Module" in banner

    def port_state(self, nic: str) -> str | None:
        """The best state of the NIC's ports ("ACTIVE" beats "DOWN"), else its netdev's."""
        base = self.root / "sys/class/infiniband" / nic
        states = []
        for state in sorted((base / "ports").glob("*/state")):
            text = _read(state)
            if text:
                states.append(text.split(":", 1)[-1].strip())
        if states:
            return "ACTIVE" if "ACTIVE" in states else states[0]
        for oper in sorted((base / "device/net").glob("*/operstate")):
            if text := _read(oper):
                return text
        return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None
