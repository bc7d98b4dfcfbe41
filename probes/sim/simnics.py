"""The RDMA NICs of a simulated host: one InfiniBand port per NIC a preset's GPUs name.

A preset says each GPU's nearest NIC and the PCIe path to it (`GpuSlot.rdma`); the NICs are
those names, each a ConnectX-7-like device (one port, 4X NDR: 400 Gb/s, InfiniBand link
layer). A GPU's path to a NIC other than its nearest is NODE on its own socket and SYS across
(`nvidia-smi topo -m` on an HGX board reads so). Counters grow on the fabric's clock: data
and packets at a light background rate, errors only under a fault (`nic_faults.py`), so a
healthy simulated port reads no error growth at all, as a healthy real one mostly does.
What no simulation can show: a real NIC's firmware, its hw_counters' meaning per driver,
and GPUDirect traffic through it (docs/network.md says what has not run on hardware).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from peerwatch.probes.nics import NicDevice, NicPort, PathName
from peerwatch.probes.sim.nic_faults import (
    NIC_WIDE,
    NicPathSys,
    NicPortDown,
    NicPortFlapping,
    NicRateDegraded,
    NicSymbolErrors,
)
from peerwatch.probes.sim.presets import Preset

LINE_RATE_GBPS = 400.0
# GPUDirect RDMA loopback (gdr_loopback) as modelled, not measured: ib_write_bw reaches
# about 0.88-0.95 of a 400G port from GPU memory on a PIX path; through the CPU (PHB) a
# little less, across the root complexes of one socket (NODE) and sockets (SYS) far less
# (NVIDIA's GPUDirect RDMA guide: peer traffic through the CPU is slow or unsupported).
LOOPBACK_EFFICIENCY = 0.88
PATH_FACTOR = {"X": 1.0, "PIX": 1.0, "PXB": 1.0, "PHB": 0.9, "NODE": 0.75, "SYS": 0.45}
BACKGROUND_BYTES_PER_S = 2e6  # subnet management and a little IPoIB: never zero, never much
PACKET_BYTES = 4096
HCA_TYPE, FW_VER = "MT4129", "28.39.1002"  # a ConnectX-7's type; a plausible firmware


def nic_names(preset: Preset) -> list[str]:
    """The NICs the preset's GPUs name, in order of first mention."""
    return list(dict.fromkeys(s.rdma.nearest_nic for s in preset.gpus if s.rdma.nearest_nic))


def _nic_of(fault: Any, names: list[str]) -> str | None:
    return fault.nic or (names[0] if names else None)


def path_level(preset: Preset, faults: Sequence[Any], gpu: int, nic: str) -> PathName:
    """PCIe path level GPU `gpu` -> `nic` (NicPathSys moves its nearest NIC across)."""
    slot = preset.gpus[gpu]
    if slot.rdma.nearest_nic == nic:
        if any(isinstance(f, NicPathSys) and f.gpu == gpu for f in faults):
            return "SYS"
        return cast(PathName, slot.rdma.nic_path.value) if slot.rdma.nic_path else "PHB"
    owner = next(s for s in preset.gpus if s.rdma.nearest_nic == nic)
    return "NODE" if owner.socket == slot.socket else "SYS"


class SimNics:
    """Counters of every simulated NIC port, advanced by the fabric (`advance`)."""

    def __init__(self, preset: Preset) -> None:
        self.preset = preset
        self.names = nic_names(preset)
        self.counts: dict[str, dict[str, float]] = {n: {} for n in self.names}

    def check(self, fault: Any) -> None:
        """ValueError where a fault names a NIC the preset does not have."""
        if isinstance(fault, NIC_WIDE) and fault.nic is not None and fault.nic not in self.names:
            raise ValueError(f"no NIC {fault.nic!r} on preset {self.preset.name} "
                             f"(its NICs: {', '.join(self.names) or 'none'})")

    def advance(self, faults: Sequence[Any], dt: float) -> None:
        down = {_nic_of(f, self.names) for f in faults if isinstance(f, NicPortDown)}
        for name in self.names:
            if name not in down:
                words = BACKGROUND_BYTES_PER_S * dt / 4  # port_*_data counts octets / 4
                for way in ("xmit", "rcv"):
                    self._add(name, f"port_{way}_data", words)
                    self._add(name, f"port_{way}_packets", words * 4 / PACKET_BYTES)
        for f in faults:
            nic = _nic_of(f, self.names) if isinstance(f, NIC_WIDE) else None
            if isinstance(f, NicPortFlapping) and nic:
                self._add(nic, "link_downed", dt / f.every_s)
                self._add(nic, "link_error_recovery", dt / f.every_s)
            elif isinstance(f, NicSymbolErrors) and nic:
                self._add(nic, "symbol_error", f.per_second * dt)
                self._add(nic, "port_rcv_errors", f.per_second * dt / 10)

    def _add(self, nic: str, counter: str, amount: float) -> None:
        bank = self.counts[nic]
        bank[counter] = bank.get(counter, 0.0) + amount

    def devices(self, faults: Sequence[Any]) -> list[NicDevice]:
        out = []
        for i, name in enumerate(self.names):
            owner = next(s for s in self.preset.gpus if s.rdma.nearest_nic == name)
            paths = {g: path_level(self.preset, faults, g, name)
                     for g in range(len(self.preset.gpus))}
            out.append(NicDevice(name=name, pci_bus_id=f"0000:{0x20 + 0x10 * i:02x}:00.0",
                                 hca_type=HCA_TYPE, fw_ver=FW_VER, board_id="MT_0000000838",
                                 numa_node=owner.socket, ports=[1], gpu_paths=paths))
        return out

    def rate_bps(self, name: str, faults: Sequence[Any]) -> float | None:
        """The port's rate in bytes per second; None while it is down."""
        port = self.port(name, faults)
        return None if port.rate_gbps is None else port.rate_gbps * 1e9 / 8

    def loopback(self, gpu: int, faults: Sequence[Any], pcie_bps: float | None) -> float:
        """What gdr_loopback measures on GPU `gpu`: its nearest NIC's rate (or its PCIe
        link, if slower) x the efficiency x its path's factor. ValueError without a NIC,
        RuntimeError when the port is down (ib_write_bw cannot connect)."""
        nic = self.preset.gpus[gpu].rdma.nearest_nic
        if nic is None:
            raise ValueError(f"no RDMA NIC near GPU{gpu}")
        rate = self.rate_bps(nic, faults)
        if rate is None:
            raise RuntimeError(f"{nic} port 1 is DOWN: the loopback cannot connect")
        line = min(rate, pcie_bps) if pcie_bps else rate
        level = path_level(self.preset, faults, gpu, nic)
        return line * LOOPBACK_EFFICIENCY * PATH_FACTOR[level]

    def carried(self, gpu: int, nbytes: float) -> None:
        """The loopback's bytes on its NIC's counters (both ways: it comes back in)."""
        nic = self.preset.gpus[gpu].rdma.nearest_nic
        if nic is not None:
            for way in ("xmit", "rcv"):
                self._add(nic, f"port_{way}_data", nbytes / 4)
                self._add(nic, f"port_{way}_packets", nbytes / PACKET_BYTES)

    def ports(self, faults: Sequence[Any]) -> list[NicPort]:
        return [self.port(name, faults) for name in self.names]

    def port(self, name: str, faults: Sequence[Any]) -> NicPort:
        mine = [f for f in faults if isinstance(f, NIC_WIDE) and _nic_of(f, self.names) == name]
        down = any(isinstance(f, NicPortDown) for f in mine)
        rate = next((f.gbps for f in mine if isinstance(f, NicRateDegraded)), LINE_RATE_GBPS)
        width = "4X" if rate >= LINE_RATE_GBPS else "2X"
        counters = {c: 0 for c in ("symbol_error", "port_rcv_errors", "link_downed",
                                   "link_error_recovery", "port_xmit_discards",
                                   "port_xmit_wait", "port_rcv_remote_physical_errors",
                                   "local_link_integrity_errors",
                                   "excessive_buffer_overrun_errors", "VL15_dropped")}
        counters.update({c: int(v) for c, v in self.counts[name].items()})
        return NicPort(device=name, port=1, state="DOWN" if down else "ACTIVE",
                       phys_state="Polling" if down else "LinkUp",
                       rate_gbps=None if down else rate,
                       rate_text=None if down else f"{rate:g} Gb/sec ({width} NDR)",
                       link_layer="InfiniBand", counters=counters,
                       hw_counters={"out_of_buffer": 0, "out_of_sequence": 0})
