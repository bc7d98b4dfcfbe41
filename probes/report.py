"""The versioned wire schema: one report per probe pass, shared by probe and server.

The probe builds a `Report`, the server validates it with the very same models, so the two
can never disagree on a field. These models double as the value types of the fabric seam
(`probes/fabric.py`): a backend returns `GpuInfo`, `NvLinkPort`, `PairInfo` ... directly.

Units are base units everywhere on the wire: bytes, bytes per second, seconds. Values a
healthy machine can never produce (NaN, negatives, > 10 TB/s) are rejected at validation,
so a broken probe cannot poison the history.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCHEMA_VERSION = 1
SUPPORTED_SCHEMA_VERSIONS = (1,)

# Bounds that no real fabric reaches: anything beyond is a probe bug, not a measurement.
MAX_BANDWIDTH_BPS = 10e12  # 10 TB/s
MAX_LATENCY_S = 60.0
MAX_GPUS = 1024

GpuIndex = Annotated[int, Field(ge=0, lt=MAX_GPUS)]
Count = Annotated[int, Field(ge=0)]
Seconds = Annotated[float, Field(ge=0, le=86_400 * 366, allow_inf_nan=False)]
Bytes = Annotated[int, Field(ge=0)]
Percent = Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)]


class _Model(BaseModel):
    """Strict: unknown fields are errors, so a typo in a probe never silently loses data."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- enums


class TestName(StrEnum):
    """Transfer tests, named in the nvbandwidth style. Data always flows src -> dst."""

    __test__ = False  # not a pytest class

    CE_WRITE = "ce_write"  # copy engine, issued from src's context (push)
    CE_READ = "ce_read"  # copy engine, issued from dst's context (pull)
    CE_BIDIR = "ce_bidir"  # both directions at once; value is the total
    SM_WRITE = "sm_write"  # copy kernel on src storing into dst's memory
    SM_READ = "sm_read"  # copy kernel on dst loading from src's memory
    LATENCY = "latency"  # pointer chase by a kernel on src over dst's memory
    STAGED = "staged"  # P2P disabled: src -> pinned host -> dst
    ALLREDUCE = "allreduce"  # NCCL all-reduce over `gpus`; value is bus bandwidth


PAIR_TESTS: tuple[TestName, ...] = tuple(t for t in TestName if t is not TestName.ALLREDUCE)
BANDWIDTH_TESTS = frozenset(TestName) - {TestName.LATENCY}


class Unit(StrEnum):
    BYTES_PER_SECOND = "B/s"
    SECONDS = "s"


def unit_of(test: TestName) -> Unit:
    return Unit.SECONDS if test is TestName.LATENCY else Unit.BYTES_PER_SECOND


class LinkState(StrEnum):
    UP = "up"
    DOWN = "down"


class RemoteType(StrEnum):
    GPU = "gpu"
    NVSWITCH = "nvswitch"
    CPU = "cpu"  # IBM NPU / Grace C2C style links
    UNKNOWN = "unknown"


class PathLevel(StrEnum):
    """PCIe path between two GPUs, as `nvidia-smi topo -m` prints it (nearest first)."""

    INTERNAL = "X"
    PIX = "PIX"
    PXB = "PXB"
    PHB = "PHB"
    NODE = "NODE"
    SYS = "SYS"


class P2PStatus(StrEnum):
    """NVML's nvmlGpuP2PStatus_t, with nvidia-smi's abbreviations in comments."""

    OK = "ok"  # OK
    CHIPSET_NOT_SUPPORTED = "chipset_not_supported"  # CNS
    GPU_NOT_SUPPORTED = "gpu_not_supported"  # GNS
    TOPOLOGY_NOT_SUPPORTED = "topology_not_supported"  # TNS
    DISABLED_BY_REGKEY = "disabled_by_regkey"  # DR
    NOT_SUPPORTED = "not_supported"  # NS
    UNKNOWN = "unknown"  # U


class P2PCap(StrEnum):
    READ = "read"
    WRITE = "write"
    NVLINK = "nvlink"
    ATOMICS = "atomics"
    PCI = "pci"


class ReportKind(StrEnum):
    INVENTORY = "inventory"  # topology, counters, activity; every inventory interval
    SWEEP = "sweep"  # the same plus transfer results; every sweep interval


# --------------------------------------------------------------------------- inventory


class PcieLink(_Model):
    gen_current: Count | None = None
    gen_max: Count | None = None
    width_current: Count | None = None
    width_max: Count | None = None
    replay_count: Count | None = None  # lifetime PCIe replay counter


class RdmaInfo(_Model):
    """GPUDirect RDMA readiness: what a NIC needs to DMA straight into this GPU."""

    gpudirect_supported: bool | None = None  # CUDA device attribute
    peermem_loaded: bool | None = None  # nvidia_peermem kernel module
    nearest_nic: str | None = None  # e.g. "mlx5_0"
    nic_path: PathLevel | None = None  # PCIe path level GPU <-> that NIC


class SwitchFabricInfo(_Model):
    """GPU fabric registration (NVML's GPU fabric info), as `probes/nvml_fabric.py` reads it.

    Every field is optional so that reports of older probes stay valid. `source` says which
    NVML call answered: "legacy" (nvmlDeviceGetGpuFabricInfo, no health fields) or "v3"/"v2"
    (nvmlDeviceGetGpuFabricInfoV, called only once the legacy call said the GPU has a fabric:
    it crashed the process on a GPU without one). `health_issues` is `health_mask` decoded.
    """

    state: str | None = None  # "not_started" | "in_progress" | "completed" | ...
    status: str | None = None  # "success" or the NVML error name
    clique_id: Count | None = None
    cluster_uuid: str | None = None
    health: str | None = None  # health summary: "healthy" | "unhealthy" | "limited_capacity"
    health_mask: Count | None = None
    health_issues: list[str] = Field(default_factory=list)  # e.g. "route_unhealthy"
    source: str | None = Field(default=None, max_length=16)


class FabricManagerInfo(_Model):
    """Whether NVIDIA Fabric Manager runs on this host, and how the probe could tell.

    `running` is None when the probe could not look (no /proc access, no unit file).
    """

    running: bool | None = None
    how: str = Field(default="", max_length=200)  # e.g. "process nv-fabricmanager pid 1234"
    installed: bool | None = None  # a unit file or the binary exists


class GpuInfo(_Model):
    index: GpuIndex
    uuid: str = Field(min_length=1, max_length=128)
    name: str = Field(max_length=128)
    pci_bus_id: str = Field(max_length=32)
    memory_total_bytes: Bytes
    cpu_affinity: str | None = Field(default=None, max_length=256)  # e.g. "0-31,64-95"
    numa_node: int | None = None
    nvlink_count: Count = 0  # ports NVML reports (NVML_FI_DEV_NVLINK_LINK_COUNT)
    pcie: PcieLink = PcieLink()
    rdma: RdmaInfo = RdmaInfo()
    switch_fabric: SwitchFabricInfo | None = None


class NvLinkPort(_Model):
    gpu: GpuIndex
    link: Annotated[int, Field(ge=0, lt=64)]
    state: LinkState
    version: str | None = None  # "4.0" decoded from NVML's enum (6 -> 4.0)
    speed_bps: Annotated[float, Field(ge=0, le=MAX_BANDWIDTH_BPS, allow_inf_nan=False)] | None = (
        None  # per direction, bytes per second
    )
    remote_type: RemoteType = RemoteType.UNKNOWN
    remote_pci_bus_id: str | None = None  # None on NVSwitch hosts: NVML cannot name the peer
    remote_gpu: GpuIndex | None = None  # resolved from remote_pci_bus_id where it names a GPU
    capabilities: dict[str, bool] = Field(default_factory=dict)


class PairInfo(_Model):
    """One ordered GPU pair: how `nvidia-smi topo -m` and `-p2p` would describe it."""

    src: GpuIndex
    dst: GpuIndex
    topology: str = Field(max_length=8)  # "NV18", "PIX", "PXB", "PHB", "NODE", "SYS"
    pcie_path: PathLevel
    nvlink_width: Count = 0  # NV#: active links joining them (NVSwitch: min of the two GPUs')
    via_nvswitch: bool = False
    p2p: dict[P2PCap, P2PStatus] = Field(default_factory=dict)
    can_access_peer: bool | None = None  # cudaDeviceCanAccessPeer(src, dst)

    @model_validator(mode="after")
    def _distinct(self) -> PairInfo:
        if self.src == self.dst:
            raise ValueError("a pair needs two different GPUs")
        return self


class Inventory(_Model):
    gpus: list[GpuInfo]
    nvlinks: list[NvLinkPort] = Field(default_factory=list)
    pairs: list[PairInfo] = Field(default_factory=list)
    fabric_manager: FabricManagerInfo | None = None  # None: not looked for (older probes)


# --------------------------------------------------------------------------- samples


class LinkCounters(_Model):
    """Cumulative counters of one NVLink port. Lifetime values: judge their rate, never size."""

    gpu: GpuIndex
    link: Annotated[int, Field(ge=0, lt=64)]
    tx_bytes: Bytes | None = None  # NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX (KiB) * 1024
    rx_bytes: Bytes | None = None
    replay: Count | None = None
    recovery: Count | None = None
    crc_flit: Count | None = None
    crc_data: Count | None = None
    ecc_data: Count | None = None


class GpuActivity(_Model):
    """What decides whether a GPU is idle enough to probe."""

    gpu: GpuIndex
    utilization_pct: Percent | None = None
    memory_used_bytes: Bytes | None = None
    compute_processes: Count = 0


class CounterSample(_Model):
    at: datetime
    links: list[LinkCounters] = Field(default_factory=list)
    pcie_replay: dict[GpuIndex, Count] = Field(default_factory=dict)
    activity: list[GpuActivity] = Field(default_factory=list)


# --------------------------------------------------------------------------- results


class TransferResult(_Model):
    """One test on one ordered pair (or, for allreduce, one GPU set).

    `value` is None exactly when `error` is set: a failed test is recorded, not dropped.
    `foreign_bytes` are bytes other traffic put on the probed links during the test window
    (NVLink TX counters around the window minus the probe's own bytes); `contended` says
    they were large enough that the value must not be read as the link's capability.
    """

    test: TestName
    src: GpuIndex | None = None
    dst: GpuIndex | None = None
    gpus: list[GpuIndex] = Field(default_factory=list)  # allreduce participants
    value: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    unit: Unit
    samples: list[Annotated[float, Field(ge=0, allow_inf_nan=False)]] = Field(default_factory=list)
    bytes_per_copy: Bytes = 0
    copies: Count = 0
    gpu_time_s: Seconds = 0.0  # GPU time the whole test used, warm-up included
    device_memory_bytes: Bytes = 0  # peak device memory the test held on any one GPU
    verified: bool = False
    contended: bool = False
    foreign_bytes: Bytes = 0
    started_at: datetime | None = None
    error: str | None = Field(default=None, max_length=2000)

    @model_validator(mode="after")
    def _consistent(self) -> TransferResult:
        if self.unit is not unit_of(self.test):
            raise ValueError(f"unit must be {unit_of(self.test).value!r} for test {self.test}")
        if (self.value is None) == (self.error is None):
            raise ValueError("exactly one of value and error must be set")
        limit = MAX_LATENCY_S if self.unit is Unit.SECONDS else MAX_BANDWIDTH_BPS
        for v in [self.value, *self.samples]:
            if v is not None and v > limit:
                raise ValueError(f"value {v:g} {self.unit.value} is beyond any real fabric")
        if self.test is TestName.ALLREDUCE:
            if len(self.gpus) < 2:
                raise ValueError("allreduce needs at least two gpus")
        elif self.src is None or self.dst is None or self.src == self.dst:
            raise ValueError(f"{self.test} needs two different GPUs as src and dst")
        return self


class SkippedGpu(_Model):
    gpu: GpuIndex
    reason: str = Field(max_length=500)


class SweepCost(_Model):
    """What probing cost the host: the number an operator asks before allowing a probe."""

    gpu_time_s: Seconds = 0.0
    wall_time_s: Seconds = 0.0
    device_memory_bytes_max: Bytes = 0
    agent_cpu_s: Seconds = 0.0
    agent_rss_bytes: Bytes = 0
    skipped: list[SkippedGpu] = Field(default_factory=list)
    dropped_reports: Count = 0  # spooled reports dropped because the spool was full


class ProbeError(_Model):
    """Something the probe could not read or run; the rest of the pass went on."""

    where: str = Field(max_length=200)  # e.g. "nvml.link_counters gpu=3"
    message: str = Field(max_length=2000)


class HostIdentity(_Model):
    hostname: str = Field(min_length=1, max_length=253)
    fabric: str = Field(max_length=64)  # "nvml" or "simulated:<preset>"
    driver_version: str | None = Field(default=None, max_length=64)
    cuda_version: str | None = Field(default=None, max_length=64)
    probe_version: str | None = Field(default=None, max_length=64)
    # When this probe process started and when the NVIDIA driver was loaded: links may still
    # be training just after either, so the server holds pages back for a settle time.
    probe_started_at: datetime | None = None
    driver_loaded_at: datetime | None = None


class Report(_Model):
    schema_version: Literal[1] = 1
    report_id: uuid.UUID = Field(default_factory=uuid.uuid4)
    kind: ReportKind
    host: HostIdentity
    started_at: datetime
    finished_at: datetime
    inventory: Inventory
    counters: list[CounterSample] = Field(default_factory=list)
    results: list[TransferResult] = Field(default_factory=list)
    cost: SweepCost = SweepCost()
    errors: list[ProbeError] = Field(default_factory=list)

    @model_validator(mode="after")
    def _coherent(self) -> Report:
        if self.finished_at < self.started_at:
            raise ValueError("finished_at is before started_at")
        known = {g.index for g in self.inventory.gpus}
        for r in self.results:
            used = set(r.gpus) | {i for i in (r.src, r.dst) if i is not None}
            if not used <= known:
                missing = sorted(used - known)
                raise ValueError(f"result {r.test} names GPU(s) {missing} not in inventory")
        return self


def utcnow() -> datetime:
    return datetime.now(UTC)
