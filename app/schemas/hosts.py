"""The hosts list and one host's inventory (`/api/v1/hosts`)."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, Field

from peerwatch.app.analysis.clock import CLOCK_NOTE_DOC, SKEW_DOC
from peerwatch.app.schemas.common import Busy, Judged, PairRef, with_example
from peerwatch.app.schemas.gpu_evidence import GpuClocksOut, RdmaReadinessOut
from peerwatch.app.schemas.nics import NicOut
from peerwatch.probes.gpu_health import GpuDriverHealth, ImexStatus
from peerwatch.probes.report import (
    LinkState,
    P2PCap,
    P2PStatus,
    PathLevel,
    PcieLink,
    RdmaInfo,
    RemoteType,
    SwitchFabricInfo,
)


class HostSummary(Judged, Busy):
    host: str
    fabric: str = Field(examples=["nvml", "simulated:hgx8"])
    gpus_total: int
    gpus_healthy: int
    worst_pair: PairRef | None = Field(
        default=None, description="Lowest ratio among latest results."
    )
    last_report_at: datetime | None = Field(description="Newest report, by the probe's clock.")
    last_received_at: datetime | None = Field(
        default=None, description="When the newest report arrived, by the server's clock.")
    last_sweep_at: datetime | None
    stale: bool = Field(description="No report for longer than PEERWATCH_STALE_AFTER_S.")
    alerts_firing: int = Field(default=0, description="Firing alerts labelled with this host.")
    clock_skew_s: float | None = Field(default=None, description=SKEW_DOC)
    clock_note: str | None = Field(default=None, description=CLOCK_NOTE_DOC)


class HostsResponse(BaseModel):
    model_config = with_example({
        "generated_at": "2026-11-30T10:20:00Z",
        "hosts": [{
            "host": "gpu-node-17", "fabric": "nvml", "verdict": "degraded",
            "reason": "1 of 56 pairs degraded: GPU3->GPU5 ce_write 212 GB/s is 0.54 of "
                      "expected 397 GB/s (NV18 x 26.6 GB/s x 0.83), for 20 min",
            "gpus_total": 8, "gpus_healthy": 6,
            "worst_pair": {"src": 3, "dst": 5, "test": "ce_write", "ratio": 0.54},
            "last_report_at": "2026-11-30T10:19:41Z", "last_sweep_at": "2026-11-30T10:10:02Z",
            "stale": False, "alerts_firing": 1,
        }],
    })
    generated_at: datetime
    hosts: list[HostSummary]


class GpuActivityOut(BaseModel):
    at: datetime
    utilization_pct: float | None
    memory_used_bytes: int | None
    compute_processes: int


class GpuOut(BaseModel):
    index: int
    uuid: str
    name: str
    pci_bus_id: str
    memory_total_bytes: int
    cpu_affinity: str | None
    numa_node: int | None
    nvlink_count: int
    nvlinks_up: int
    pcie: PcieLink
    rdma: RdmaInfo
    switch_fabric: SwitchFabricInfo | None
    activity: GpuActivityOut | None = Field(description="From the latest counter sample.")
    clocks: GpuClocksOut | None = Field(default=None, description="The latest clocks sample: "
                                        "why the GPU's clocks were held, if they were.")
    rdma_readiness: RdmaReadinessOut | None = Field(
        default=None, description="GPUDirect RDMA readiness judged from `rdma`.")
    driver: GpuDriverHealth | None = Field(
        default=None, description="What the driver says of the GPU, as last reported: its "
        "recovery action, ECC counts, row remapping, retired pages; `unread` names each read "
        "the GPU does not offer, with the reason (probes/gpu_health.py).")


class NvLinkOut(BaseModel):
    gpu: int
    link: int
    state: LinkState
    version: str | None
    speed_bps: float | None = Field(description="Per link and direction, bytes per second.")
    remote_type: RemoteType
    remote_pci_bus_id: str | None
    remote_gpu: int | None


class PairOut(BaseModel):
    src: int
    dst: int
    topology: str = Field(examples=["NV18", "PHB", "SYS"])
    pcie_path: PathLevel
    nvlink_width: int
    via_nvswitch: bool
    p2p: dict[P2PCap, P2PStatus]
    can_access_peer: bool | None


class ProbeErrorOut(BaseModel):
    where: str
    message: str


class ReportOut(BaseModel):
    report_id: uuid.UUID
    kind: str
    started_at: datetime
    finished_at: datetime
    received_at: datetime
    gpu_time_s: float
    wall_time_s: float
    device_memory_bytes_max: int
    skipped_gpus: dict[int, str] = Field(default_factory=dict)
    errors: list[ProbeErrorOut] = Field(default_factory=list)


class HostDetail(BaseModel):
    model_config = with_example({
        "host": "gpu-node-17", "fabric": "nvml", "driver_version": "580.159.04",
        "cuda_version": "13.0", "probe_version": "0.1.0",
        "first_seen": "2026-11-01T08:00:00Z", "last_report_at": "2026-11-30T10:19:41Z",
        "stale": False,
        "gpus": [{"index": 0, "uuid": "GPU-0b7c", "name": "NVIDIA H200",
                  "pci_bus_id": "00000000:19:00.0", "memory_total_bytes": 150754820096,
                  "cpu_affinity": "0-47", "numa_node": None, "nvlink_count": 18,
                  "nvlinks_up": 18, "pcie": {"gen_current": 5, "gen_max": 5,
                                             "width_current": 16, "width_max": 16},
                  "rdma": {}, "switch_fabric": {"state": "completed", "clique_id": 1},
                  "activity": {"at": "2026-11-30T10:19:40Z", "utilization_pct": 0.0,
                               "memory_used_bytes": 0, "compute_processes": 0}}],
        "nvlinks": [{"gpu": 0, "link": 0, "state": "up", "version": "4.0",
                     "speed_bps": 26562000000.0, "remote_type": "nvswitch",
                     "remote_pci_bus_id": None, "remote_gpu": None}],
        "pairs": [{"src": 0, "dst": 1, "topology": "NV18", "pcie_path": "PHB",
                   "nvlink_width": 18, "via_nvswitch": True,
                   "p2p": {"read": "ok", "write": "ok", "nvlink": "ok", "atomics": "ok",
                           "pci": "not_supported"}, "can_access_peer": True}],
        "last_sweep": None,
    })
    host: str
    fabric: str
    driver_version: str | None
    cuda_version: str | None
    probe_version: str | None
    first_seen: datetime
    last_report_at: datetime | None = Field(description="Newest report, by the probe's clock.")
    last_received_at: datetime | None = Field(
        default=None, description="When the newest report arrived, by the server's clock "
        "(what staleness is judged by).")
    clock_skew_s: float | None = Field(default=None, description=SKEW_DOC)
    clock_note: str | None = Field(default=None, description=CLOCK_NOTE_DOC)
    stale: bool
    changed_at: datetime | None = Field(
        default=None, description="When what the host's health, topology, matrix and pair "
        "series show last changed (a judged GPU, link, pair or test changed, its inventory, "
        "its newest sweep or refused report): a dashboard that saw this value already has "
        "them and can skip asking again. Null before its first judgement.")
    gpus: list[GpuOut]
    nvlinks: list[NvLinkOut]
    pairs: list[PairOut]
    last_sweep: ReportOut | None = Field(description="The latest sweep: its cost and errors.")
    imex: ImexStatus | None = Field(
        default=None, description="The IMEX daemon as the newest report read it (`present` "
        "false where IMEX is not installed): shown beside the measured bandwidth, never "
        "trusted alone. Null: the probe sent none.")
    nics: list[NicOut] = Field(
        default_factory=list, description="The host's RDMA NICs (InfiniBand/RoCE) as the "
        "newest report read them, each port as judged: state, rate, counters and their "
        "rates (docs/network.md). Empty: the probe sent none (schema 5).")
