"""What a simulated GPU's clocks and RDMA readiness look like, under the faults.

Clocks follow the one-H200 machine's figures when nothing is wrong (idle between tests:
clocks-event reason gpu_idle, SM 345 of 1980 MHz, 78 of 700 W, 37 C of a 89 C slowdown
threshold). A `ThrottledGpu` sets the header's bit for its reason (sw_power_cap,
sw_thermal_slowdown, hw_slowdown), pulls the SM clock down, and for a power cap draws at
its lower limit; its violation counter is what the fabric accumulated on its clock.

RDMA: the preset names each GPU's nearest NIC and path level; the bridge between them is
modelled as the port one bus number above the GPU. `AcsRedirect` turns ACS redirect on for
its bridge above its GPUs (so their NIC paths and the paths between them cross it), and
`PeermemMissing` takes away nvidia_peermem and dma-buf.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from peerwatch.probes.clocks import GpuClocks
from peerwatch.probes.report import PathLevel, RdmaInfo
from peerwatch.probes.sim.faults import AcsRedirect, Fault, PeermemMissing, ThrottledGpu
from peerwatch.probes.sim.nic_faults import NicPathSys, NicPortDown
from peerwatch.probes.sim.presets import Preset
from peerwatch.probes.topology import normalize_bus_id

IDLE = GpuClocks(gpu=0, reasons=0x1, reasons_supported=0x1FF, sm_clock_mhz=345,
                 sm_clock_max_mhz=1980, power_mw=78_250, power_limit_mw=700_000,
                 temperature_c=37, slowdown_temperature_c=89)
REASON_BIT = {"power": 0x4, "thermal": 0x20, "hw": 0x8}


def throttle_of(faults: Sequence[Fault], gpu: int) -> ThrottledGpu | None:
    return next((f for f in faults if isinstance(f, ThrottledGpu) and f.gpu == gpu), None)


def clocks(faults: Sequence[Fault], gpu: int, violation_ns: Mapping[tuple[int, str], float]
           ) -> GpuClocks:
    """GPU `gpu`'s sample now; `violation_ns`: (gpu, "power" | "thermal") -> ns held."""
    t = throttle_of(faults, gpu)
    sample = IDLE.model_copy(update={
        "gpu": gpu, "violation_power_ns": int(violation_ns.get((gpu, "power"), 0)),
        "violation_thermal_ns": int(violation_ns.get((gpu, "thermal"), 0))})
    if t is None:
        return sample
    update: dict[str, int] = {"reasons": REASON_BIT[t.reason],
                              "sm_clock_mhz": int(1980 * t.factor)}
    if t.reason == "power":
        update |= {"power_limit_mw": t.power_limit_w * 1000,
                   "power_mw": t.power_limit_w * 1000 - 1500}
    elif t.reason == "thermal":
        update |= {"temperature_c": 88}
    return sample.model_copy(update=update)


def bridge_of(bus_id: str) -> str:
    """The modelled bridge above a GPU: one bus number up, device 0."""
    norm = normalize_bus_id(bus_id) or "0000:00:00.0"
    domain, bus, _ = norm.split(":")
    return f"{domain}:{max(int(bus, 16) - 1, 0):02x}:00.0"


def first_nic(preset: Preset) -> str | None:
    return next((s.rdma.nearest_nic for s in preset.gpus if s.rdma.nearest_nic), None)


def rdma(preset: Preset, faults: Sequence[Fault], index: int,
         gpudirect: bool | None, nic_rate_bps: float | None = None) -> RdmaInfo:
    slot = preset.gpus[index]
    no_peermem = any(isinstance(f, PeermemMissing) for f in faults)
    acs = [f for f in faults if isinstance(f, AcsRedirect) and index in f.gpus]
    nic = slot.rdma.nearest_nic
    peermem = False if no_peermem else preset.rdma.peermem_loaded
    return RdmaInfo(
        gpudirect_supported=gpudirect, peermem_loaded=peermem,
        peermem_registered=peermem, dmabuf=None if peermem is None else not no_peermem,
        nearest_nic=nic, nic_path=PathLevel.SYS if any(
            isinstance(f, NicPathSys) and f.gpu == index for f in faults) else slot.rdma.nic_path,
        nic_port_state=(None if not nic else "DOWN" if any(
            isinstance(f, NicPortDown) and (f.nic or first_nic(preset)) == nic
            for f in faults) else "ACTIVE"),
        path_bridges=[bridge_of(slot.pci_bus_id)] if nic else None,
        acs_redirect=sorted({f.bridge for f in acs}) if nic else None,
        peer_acs_redirect={p: [f.bridge] for f in acs for p in f.gpus if p != index},
        nic_rate_bps=nic_rate_bps,
    )
