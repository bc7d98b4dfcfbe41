"""Topology presets for the simulated fabric, kept as data (one JSON file per machine).

A preset says what a machine *is*: its GPUs, which CPU socket each hangs off, how NVLink joins
them (through NVSwitch, directly, or not at all), the PCIe generation and paths, and which P2P
routes the chipset allows. How fast such a machine *runs* is not in the preset: that comes from
`calibration.json`, measured once on the real H200 pair and scaled by each pair's link rate,
so every preset inherits the same measured behaviour (size curve, efficiencies, latencies).

    load_preset("hgx8")      -> Preset (validated; unknown fields are errors)
    PRESET_NAMES             -> ("h100nvl2", "h200x2", "hgx8", "mesh4", "nvl72", "pcie4")
    rack_cluster_uuid("nvl72-a") -> the cluster UUID every tray of that simulated rack reports
"""

from __future__ import annotations

import json
import uuid
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from peerwatch.probes.errors import BadProbeRequest
from peerwatch.probes.report import P2PStatus, PathLevel

HERE = Path(__file__).parent
PRESET_NAMES: tuple[str, ...] = tuple(
    sorted(p.stem for p in HERE.glob("*.json") if p.stem != "calibration")
)


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GpuModel(_Data):
    name: str
    memory_total_bytes: int
    idle_memory_used_bytes: int = 0


class Socket(_Data):
    cpu_affinity: str | None = None
    numa_node: int | None = None


class GpuRdma(_Data):
    nearest_nic: str | None = None
    nic_path: PathLevel | None = None


class GpuSlot(_Data):
    socket: int = 0
    pci_bus_id: str
    uuid: str | None = None  # generated from preset and index when absent
    crc_data: list[int] | None = None  # lifetime counters per link; seeded 5-20 when absent
    ecc_data: list[int] | None = None
    rdma: GpuRdma = GpuRdma()


class NvLinkLayout(_Data):
    """How NVLink joins the GPUs: `nvswitch` (every link to the switch), `direct`, or `none`."""

    fabric: Literal["nvswitch", "direct", "none"]
    version: str | None = None
    speed_GBps: float = 0.0  # per link and direction
    links_per_gpu: int = 0  # nvswitch
    links_per_pair: int = 0  # direct
    pairs: list[tuple[int, int]] = Field(default_factory=list)  # direct
    unwired_ports: int = 0  # ports each GPU reports but its SKU leaves unwired (always down)


class PcieLayout(_Data):
    gen: int
    width: int
    path_same_socket: PathLevel
    path_cross_socket: PathLevel
    p2p_same_socket: P2PStatus  # may P2P run over PCIe between these GPUs?
    p2p_cross_socket: P2PStatus


class RdmaDefaults(_Data):
    gpudirect_supported: bool | None = None
    peermem_loaded: bool | None = None


class SwitchFabric(_Data):
    state: str
    status: str
    clique_id: int | None = None
    cluster_uuid: str | None = None
    health: str | None = None


class RackLayout(_Data):
    """A rack-scale NVLink domain (GB200 NVL72): `trays` compute trays (hosts) whose GPUs all
    reach `switch_trays` NVLink switch trays, `ports_per_switch_tray` ports of each GPU to
    each. `name` is the rack a fabric belongs to unless it is given another."""

    name: str
    trays: int
    switch_trays: int
    ports_per_switch_tray: int


def rack_cluster_uuid(rack: str) -> str:
    """The cluster UUID all trays of simulated rack `rack` report, written as the real probe
    writes NVML's 16 bytes (32 hex digits, `probes/nvidia/nvml_fabric.py`)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"peerwatch-sim/rack/{rack}").hex


class Preset(_Data):
    name: str
    description: str
    hostname: str
    driver_version: str | None = None
    cuda_version: str | None = None
    gpu_model: GpuModel
    sockets: list[Socket]
    gpus: list[GpuSlot]
    nvlink: NvLinkLayout
    pcie: PcieLayout
    rdma: RdmaDefaults = RdmaDefaults()
    switch_fabric: SwitchFabric | None = None
    rack: RackLayout | None = None

    @model_validator(mode="after")
    def _coherent(self) -> Preset:
        n = len(self.gpus)
        for g in self.gpus:
            if not 0 <= g.socket < len(self.sockets):
                raise ValueError(f"GPU at {g.pci_bus_id} names socket {g.socket}, not defined")
        for a, b in self.nvlink.pairs:
            if not (0 <= a < n and 0 <= b < n) or a == b:
                raise ValueError(f"NVLink pair {a}-{b} does not join two of the {n} GPUs")
        rack = self.rack
        if rack is not None and rack.switch_trays * rack.ports_per_switch_tray != \
                self.nvlink.links_per_gpu:
            raise ValueError(f"rack: {rack.switch_trays} switch trays x "
                             f"{rack.ports_per_switch_tray} ports is not the "
                             f"{self.nvlink.links_per_gpu} NVLinks per GPU")
        return self


class Calibration(_Data):
    source: str
    pcie_lane_GBps: dict[int, float]
    reference_nvlink_raw_GBps: float
    reference_pcie_raw_GBps: float
    ce_GBps_by_bytes: dict[int, float]
    nvlink_GBps: dict[str, float]
    allreduce_busbw_GBps_by_bytes: dict[int, float]
    pcie_p2p_efficiency: dict[str, float]
    staged_GBps: dict[str, float]
    latency_ns: dict[str, float]
    host_copy_GBps: dict[str, float]  # h2d, d2h at reference_pcie_raw_GBps
    local_copy_GBps: float
    noise: dict[str, float]


@cache
def load_preset(name: str) -> Preset:
    """The preset called `name`; BadProbeRequest naming the known ones when there is none."""
    if name not in PRESET_NAMES:
        known = ", ".join(PRESET_NAMES)
        raise BadProbeRequest(f"unknown simulated preset {name!r} (known: {known})")
    return Preset.model_validate(json.loads((HERE / f"{name}.json").read_text()))


@cache
def load_calibration() -> Calibration:
    return Calibration.model_validate(json.loads((HERE / "calibration.json").read_text()))
