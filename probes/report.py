"""The versioned wire schema: one report per probe pass, shared by probe and server.

The probe builds a `Report`, the server validates it with the very same models, so the two
can never disagree on a field. These models double as the value types of the fabric seam
(`probes/fabric.py`): a backend returns `GpuInfo`, `NvLinkPort`, `PairInfo` ... directly.

Units are base units everywhere on the wire: bytes, bytes per second, seconds. Values a
healthy machine can never produce (NaN, negatives, > 10 TB/s) are rejected at validation,
so a broken probe cannot poison the history.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

import pydantic
import pydantic_core
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    model_validator,
)
from pydantic_core import core_schema

from peerwatch.probes.clocks import GpuClocks
from peerwatch.probes.gpu_health import GpuDriverHealth, ImexStatus, PcieAer
from peerwatch.probes.nics import MAX_NICS, MAX_PORTS, NicDevice, NicPort
from peerwatch.probes.test_kinds import Scope, Unit, declared, default_kinds, kind_of, kinds

# 2: per-GPU tests (h2d, d2h, local), a result naming one GPU as `src` with `dst` None.
# 3: `events`, the Xid/SXid events the agent saw since its previous report (FabricEvent).
# 4: the driver's own verdicts (probes/gpu_health.py): `GpuInfo.driver`, `CounterSample.aer`,
#    `Inventory.imex`; each left out of the JSON when not read.
# 5: RDMA NICs (probes/nics.py): `Inventory.nics`, `CounterSample.nic_ports`; left out of
#    the JSON when empty. A probe sends 5 only when it has NICs to tell of.
SCHEMA_VERSION = 4
SUPPORTED_SCHEMA_VERSIONS = (1, 2, 3, 4, 5)

# Bounds that no real fabric reaches: anything beyond is a probe bug, not a measurement.
MAX_BANDWIDTH_BPS = 10e12  # 10 TB/s
MAX_LATENCY_S = 60.0
# GPUs per host: the largest boards ship 8 (HGX) or 4 (a GB200 tray); 64 leaves room for
# what comes next while bounding a report's cost (docs/api.md "Limits"): the largest legal
# report, 64 GPUs with every pair test, is ~24,000 results.
MAX_GPUS = 64
MAX_LINKS_PER_GPU = 64  # NVML's NVLINK_MAX_LINKS is 18 today
MAX_SAMPLES = 10_000  # timed repetitions kept per transfer result
MAX_COUNTER_SAMPLES = 64  # counter snapshots per report (a probe sends 1 or 2)
MAX_RESULTS = 100_000  # hard ceiling; the server also caps results by the report's inventory
MAX_ERRORS = 10_000
MAX_EVENTS = 1_000  # Xid/SXid events per report; the agent collapses repeats (`count`)

# Every integer is bounded by the column that stores it: INTEGER (32-bit on PostgreSQL) for
# counts of things, BIGINT for bytes and lifetime counters. A value beyond is a 422, not a 500.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# Times outside these years are a broken clock (and year 1 overflows on conversion to UTC).
EARLIEST_YEAR, LATEST_YEAR = 1970, 9000

# Host names: DNS-style labels of letters, digits, `-` and `_`, joined by dots, at most 253
# characters. No label is empty, so "." and ".." never appear, nor does "/": every accepted
# host is reachable at /api/v1/hosts/<name>. DNS is case-insensitive, so a name is stored
# and compared in lowercase (`GPU-17` and `gpu-17` are one host).
HOSTNAME_RULE = ("labels of letters, digits, '-' and '_' (not starting or ending with '-'), "
                 "joined by single dots, at most 253 characters; case does not matter")
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
HOSTNAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


def clean_text(value: str) -> str:
    """Text a database and a JSON answer can hold: no NUL, no lone surrogate."""
    if "\x00" in value:
        raise ValueError("text must not contain a NUL character (\\u0000)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text must be valid Unicode (a lone surrogate was sent)") from None
    return value


def sane_time(value: datetime) -> datetime:
    """An aware time within the years a real clock can show (checked before any arithmetic)."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("timestamp needs a time zone (e.g. 2026-11-30T10:00:00Z)")
    if not EARLIEST_YEAR <= value.year <= LATEST_YEAR:
        raise ValueError(f"year {value.year} is outside {EARLIEST_YEAR}..{LATEST_YEAR}")
    return value


def valid_hostname(value: str) -> str:
    """`value` in its one canonical spelling (lowercase), or ValueError naming the rule:
    every place a host is named (reports, snapshots, paths, queries, maintenance, silences,
    the CLI) goes through here."""
    if len(value) > 253 or not HOSTNAME.fullmatch(value):
        raise ValueError(f"host name {value[:80]!r} breaks the rule: {HOSTNAME_RULE}")
    return value.lower()


class _CleanText:
    """`clean_text` for text built in Python (a probe's own models, a dict from any JSON
    parser). Text validated from JSON bytes skips it: pydantic's parser refuses a lone
    surrogate itself, and a `\\u0000` is refused before validation by whoever reads JSON
    from outside (the server: `app/api/json_body.py`, `app/api/wire_body.py`). The call per
    string was a large share of an inventory report's validation (over a thousand strings,
    most of them NVLink capability names). The JSON Schema is the plain string's, as before."""

    @staticmethod
    def __get_pydantic_core_schema__(source: Any, handler: GetCoreSchemaHandler
                                     ) -> core_schema.CoreSchema:
        text = handler(source)
        return core_schema.json_or_python_schema(
            json_schema=text,
            python_schema=core_schema.no_info_after_validator_function(clean_text, text))


_Clean = _CleanText()
Text8 = Annotated[str, Field(max_length=8), _Clean]
Text16 = Annotated[str, Field(max_length=16), _Clean]
Text32 = Annotated[str, Field(max_length=32), _Clean]
Text64 = Annotated[str, Field(max_length=64), _Clean]
Text128 = Annotated[str, Field(max_length=128), _Clean]
Text256 = Annotated[str, Field(max_length=256), _Clean]
Text2000 = Annotated[str, Field(max_length=2000), _Clean]
Timestamp = Annotated[datetime, AfterValidator(sane_time)]
GpuIndex = Annotated[int, Field(ge=0, lt=MAX_GPUS)]
Count = Annotated[int, Field(ge=0, le=INT32_MAX)]
Counter64 = Annotated[int, Field(ge=0, le=INT64_MAX)]
Seconds = Annotated[float, Field(ge=0, le=86_400 * 366, allow_inf_nan=False)]
Bytes = Annotated[int, Field(ge=0, le=INT64_MAX)]
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
    # Per-GPU tests (schema 2): `src` is the GPU, `dst` is None.
    H2D = "h2d"  # copy engine, pinned host memory on the GPU's NUMA node -> the GPU
    D2H = "d2h"  # copy engine, the GPU -> pinned host memory on its NUMA node
    LOCAL = "local"  # copy engine within the GPU's own memory; read + write counted once
    # schema 5, opt-in: GPU memory through the GPU's nearest RDMA NIC and back (GPUDirect)
    GDR_LOOPBACK = "gdr_loopback"
    # All-to-all, one run over every probed GPU, one per-GPU result each (`src`, dst None):
    A2A_CE = "a2a_ce"  # copy engines, every GPU to every other at once; what src sent per s
    A2A_NCCL = "a2a_nccl"  # NCCL grouped send/recv all-to-all; what src sent per s
    NVLS_ALLREDUCE = "nvls_allreduce"  # NCCL all-reduce over NVLink SHARP, opt-in; bus bw
    # Cross-host (schema 5): src on the reporting host, dst on `peer_host`.
    NET_WRITE = "net_write"  # NCCL send/recv of GPU memory over the network

    @classmethod
    def _missing_(cls, value: object) -> TestName | None:
        """A kind declared in `probes/test_kinds.py` that has no member here (one declared at
        run time): a pseudo-member, the same object for every lookup of the name."""
        if not isinstance(value, str) or not declared(value):
            return None
        if value not in _DECLARED_ONLY:
            member = str.__new__(cls, value)
            member._name_, member._value_ = value.upper(), value
            _DECLARED_ONLY[value] = member
        return _DECLARED_ONLY[value]


_DECLARED_ONLY: dict[str, TestName] = {}


def declared_tests() -> tuple[TestName, ...]:
    """Every declared test, in the table's order (`TestName`'s members and any declared
    since): what to iterate instead of `TestName` itself."""
    return tuple(TestName(k.name) for k in kinds())


def default_tests(nvls: bool = False,
                  opted_in: tuple[TestName, ...] = ()) -> tuple[TestName, ...]:
    """What a sweep runs unless told otherwise: every declared test but the opt-in ones,
    which run only where the operator opted in (`nvls`: NVLS all-reduce; `opted_in`: by name,
    e.g. gdr_loopback)."""
    named = {t.value for t in opted_in} | ({TestName.NVLS_ALLREDUCE.value} if nvls else set())
    return tuple(TestName(k.name) for k in default_kinds(named))


def test_scope(test: TestName) -> Scope:
    """What a result of `test` names: "pair" (src -> dst), "gpu" (src alone) or "set" (gpus)."""
    return kind_of(test).scope


def unit_of(test: TestName) -> Unit:
    return kind_of(test).unit


# Fixed views of the table's built-in rows, for readers that list them (the CLI, alert rules);
# code that must also see a kind declared at run time asks `test_scope` instead.
GPU_TESTS: tuple[TestName, ...] = tuple(  # the opt-in (gdr_loopback: NIC_TESTS) and joint apart
    t for t in TestName if test_scope(t) == "gpu" and not kind_of(t).opt_in
    and not kind_of(t).joint)
NIC_TESTS: tuple[TestName, ...] = tuple(t for t in TestName if kind_of(t).expect.model == "nic")
# Joint tests (all-to-all): one run over every probed GPU, one per-GPU result each.
JOINT_TESTS: tuple[TestName, ...] = tuple(t for t in TestName if kind_of(t).joint)
PCIE_TESTS: tuple[TestName, ...] = tuple(
    t for t in GPU_TESTS if kind_of(t).expect.model == "host_copy")
PAIR_TESTS: tuple[TestName, ...] = tuple(t for t in TestName if test_scope(t) == "pair")
BANDWIDTH_TESTS = frozenset(t for t in TestName if unit_of(t) is Unit.BYTES_PER_SECOND)

# What each test measures, in words: the CLI's table titles; the API's test catalogue
# (GET /api/v1/tests) and the dashboard's hovers read `probes/test_kinds.py` directly.
TEST_ABOUT: dict[TestName, str] = {t: kind_of(t).about for t in TestName}


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
    nearest_nic: Text64 | None = None  # e.g. "mlx5_0"
    nic_path: PathLevel | None = None  # PCIe path level GPU <-> that NIC
    # Optional, read by probes/nvidia/rdma.py from /sys and /proc (judged by
    # app/analysis/rdma.py). A list is what was found; None is "could not look".
    peermem_registered: bool | None = None  # ib_core lists nvidia_peermem as its user
    dmabuf: bool | None = None  # the driver can hand NICs GPU memory as dma-buf instead
    nic_port_state: Text32 | None = None  # "ACTIVE" (infiniband port) or "up" (operstate)
    path_bridges: list[Text16] | None = Field(default=None, max_length=64)  # GPU <-> NIC
    acs_redirect: list[Text16] | None = Field(default=None, max_length=64)  # ... ACS on
    acs_unread: list[Text16] = Field(default_factory=list, max_length=64)  # config unread
    peer_acs_redirect: dict[GpuIndex, list[Text16]] = Field(
        default_factory=dict, max_length=MAX_GPUS)  # GPU k: bridges to it with ACS on
    # schema 5: the nearest NIC's port rate (its best ACTIVE port), bytes per second: what
    # the gdr_loopback test is expected to reach. Left out of the JSON when unknown.
    nic_rate_bps: Annotated[float, Field(gt=0, le=MAX_BANDWIDTH_BPS, allow_inf_nan=False)] | \
        None = Field(default=None, exclude_if=lambda v: v is None)


class SwitchFabricInfo(_Model):
    """GPU fabric registration (NVML's GPU fabric info), as `probes/nvidia/nvml_fabric.py` reads it.

    Every field is optional so that reports of older probes stay valid. `source` says which
    NVML call answered: "legacy" (nvmlDeviceGetGpuFabricInfo, no health fields) or "v3"/"v2"
    (nvmlDeviceGetGpuFabricInfoV, called only once the legacy call said the GPU has a fabric:
    it crashed the process on a GPU without one). `health_issues` is `health_mask` decoded.
    """

    state: Text64 | None = None  # "not_started" | "in_progress" | "completed" | ...
    status: Text64 | None = None  # "success" or the NVML error name
    clique_id: Count | None = None
    cluster_uuid: Text64 | None = None
    health: Text64 | None = None  # health summary: "healthy" | "unhealthy" | "limited_capacity"
    health_mask: Count | None = None
    health_issues: list[Text64] = Field(default_factory=list, max_length=64)  # "route_unhealthy"
    source: Text16 | None = None


class FabricManagerInfo(_Model):
    """Whether NVIDIA Fabric Manager runs on this host, and how the probe could tell.

    `running` is None when the probe could not look (no /proc access, no unit file).
    """

    running: bool | None = None
    how: Annotated[str, Field(max_length=200), _Clean] = ""  # "process nv-fabricmanager pid 1"
    installed: bool | None = None  # a unit file or the binary exists


class GpuInfo(_Model):
    index: GpuIndex
    uuid: Annotated[str, Field(min_length=1, max_length=128), _Clean]
    name: Text128
    pci_bus_id: Text32
    memory_total_bytes: Bytes
    cpu_affinity: Text256 | None = None  # e.g. "0-31,64-95"
    numa_node: Annotated[int, Field(ge=-1, le=INT32_MAX)] | None = None
    nvlink_count: Count = 0  # ports NVML reports (NVML_FI_DEV_NVLINK_LINK_COUNT)
    pcie: PcieLink = PcieLink()
    rdma: RdmaInfo = RdmaInfo()
    switch_fabric: SwitchFabricInfo | None = None
    # schema 4: recovery action, ECC, row remapping, retired pages (probes/gpu_health.py)
    driver: GpuDriverHealth | None = Field(default=None, exclude_if=lambda d: d is None)


class NvLinkPort(_Model):
    gpu: GpuIndex
    link: Annotated[int, Field(ge=0, lt=MAX_LINKS_PER_GPU)]
    state: LinkState
    version: Text16 | None = None  # "4.0" decoded from NVML's enum (6 -> 4.0)
    speed_bps: Annotated[float, Field(ge=0, le=MAX_BANDWIDTH_BPS, allow_inf_nan=False)] | None = (
        None  # per direction, bytes per second
    )
    remote_type: RemoteType = RemoteType.UNKNOWN
    remote_pci_bus_id: Text32 | None = None  # None on NVSwitch hosts: NVML cannot name the peer
    remote_gpu: GpuIndex | None = None  # resolved from remote_pci_bus_id where it names a GPU
    capabilities: dict[Text64, bool] = Field(default_factory=dict, max_length=64)


class PairInfo(_Model):
    """One ordered GPU pair: how `nvidia-smi topo -m` and `-p2p` would describe it."""

    src: GpuIndex
    dst: GpuIndex
    topology: Text8  # "NV18", "PIX", "PXB", "PHB", "NODE", "SYS"
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


class PciGpu(_Model):
    """An NVIDIA display or 3D controller function in sysfs (vendor 0x10de, class 0x0300xx or
    0x0302xx), whether NVML sees it or not: a GPU that fell off the bus usually stays here."""

    pci_bus_id: Text32  # sysfs' form, "0000:18:00.0"
    device: Text16 | None = None  # PCI device id, "0x2335"
    driver: Text64 | None = None  # the bound driver ("nvidia"); None: none bound


class SeenGpu(_Model):
    """A GPU NVML listed on this host at some time since it booted (the agent keeps the set
    in a small file keyed by the kernel's boot id): one gone from NVML since is missing."""

    uuid: Annotated[str, Field(min_length=1, max_length=128), _Clean]
    pci_bus_id: Text32
    index: GpuIndex
    name: Text128 = ""
    first_seen_at: Timestamp


class GpuEvidence(_Model):
    """What says how many GPUs the host has, besides NVML's own list (optional, schema 3):
    the NVIDIA PCI functions (None: sysfs not read) and the GPUs seen since boot (None: the
    agent keeps no such set, e.g. a one-shot `peerwatch probe --once` without a state dir).
    The server judges a GPU named here but absent from the inventory as missing."""

    pci: list[PciGpu] | None = Field(default=None, max_length=MAX_GPUS)
    boot_id: Text64 | None = None
    seen_since_boot: list[SeenGpu] | None = Field(default=None, max_length=MAX_GPUS)
    # How many GPUs the host should have, as its operator or scheduler says (the agent's
    # PEERWATCH_PROBE_EXPECTED_GPUS, e.g. Slurm's Gres count): what names a GPU gone from NVML
    # and the PCI bus before the agent ever saw it. Left out when None (older servers).
    expected: int | None = Field(default=None, ge=1, le=MAX_GPUS,
                                 exclude_if=lambda n: n is None)


class Inventory(_Model):
    gpus: list[GpuInfo] = Field(max_length=MAX_GPUS)
    nvlinks: list[NvLinkPort] = Field(default_factory=list, max_length=MAX_GPUS * MAX_LINKS_PER_GPU)
    pairs: list[PairInfo] = Field(default_factory=list, max_length=MAX_GPUS * (MAX_GPUS - 1))
    fabric_manager: FabricManagerInfo | None = None  # None: not looked for (older probes)
    # Left out of the JSON when None (older probes send none; older servers refuse the key).
    evidence: GpuEvidence | None = Field(default=None, exclude_if=lambda e: e is None)
    imex: ImexStatus | None = Field(default=None, exclude_if=lambda e: e is None)  # schema 4
    nics: list[NicDevice] = Field(default_factory=list, max_length=MAX_NICS,
                                  exclude_if=lambda nics: not nics)  # schema 5


# --------------------------------------------------------------------------- samples


class LinkCounters(_Model):
    """Cumulative counters of one NVLink port. Lifetime values: judge their rate, never size."""

    gpu: GpuIndex
    link: Annotated[int, Field(ge=0, lt=MAX_LINKS_PER_GPU)]
    tx_bytes: Bytes | None = None  # NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX (KiB) * 1024
    rx_bytes: Bytes | None = None
    replay: Counter64 | None = None
    recovery: Counter64 | None = None
    crc_flit: Counter64 | None = None
    crc_data: Counter64 | None = None
    ecc_data: Counter64 | None = None


class GpuActivity(_Model):
    """What decides whether a GPU is idle enough to probe."""

    gpu: GpuIndex
    utilization_pct: Percent | None = None
    memory_used_bytes: Bytes | None = None
    compute_processes: Count = 0


class CounterSample(_Model):
    at: Timestamp
    links: list[LinkCounters] = Field(default_factory=list, max_length=MAX_GPUS * MAX_LINKS_PER_GPU)
    pcie_replay: dict[GpuIndex, Counter64] = Field(default_factory=dict)
    activity: list[GpuActivity] = Field(default_factory=list, max_length=MAX_GPUS)
    # Clocks, power, temperature and clocks-event reasons (probes/clocks.py), optional:
    # sampled with the counters before and after each sweep.
    clocks: list[GpuClocks] = Field(default_factory=list, max_length=MAX_GPUS)
    # schema 4: PCIe AER counters of each GPU and its upstream bridge (probes/gpu_health.py)
    aer: list[PcieAer] = Field(default_factory=list, max_length=MAX_GPUS,
                               exclude_if=lambda aer: not aer)
    # schema 5: each RDMA NIC port's state, rate and counters (probes/nics.py)
    nic_ports: list[NicPort] = Field(default_factory=list, max_length=MAX_PORTS,
                                     exclude_if=lambda ports: not ports)


# --------------------------------------------------------------------------- results


# Which job held a GPU: a Slurm job id ("4711", "4711_3" of an array, "4711+1" of a
# heterogeneous job) or a Kubernetes pod ("namespace:pod"); see probes/agent/job_mapping.py.
# The id travels in URL paths (/api/v1/jobs/{job}): no "/", "?", "%" or space. A Slurm id
# fits this rule and a snapshot's (probes/snapshot.py) alike.
JOB_ID_RULE = "1 to 128 letters, digits, '_', '-', '.', '+', ':', starting with a letter or digit"
JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,127}")
MAX_JOBS_PER_GPU = 16  # shared GPUs (MPS, shards) run a few jobs at once, not hundreds


def valid_job_id(value: str) -> str:
    if not JOB_ID.fullmatch(value):
        raise ValueError(f"job id {value[:80]!r} breaks the rule: {JOB_ID_RULE}")
    return value


class TransferResult(_Model):
    """One test on one ordered pair (or, for allreduce, one GPU set; for a per-GPU test in
    `GPU_TESTS`, the GPU as `src` and `dst` None).

    `value` is None exactly when `error` is set: a failed test is recorded, not dropped.
    `foreign_bytes` are bytes other traffic put on the probed links during the test window
    (NVLink TX counters around the window minus the probe's own bytes); `contended` says
    they were large enough that the value must not be read as the link's capability.

    `peer_host` (part of schema v2, optional): a cross-host pair test, `src` on the reporting
    host and `dst` on `peer_host`: over the network (`net_write`, a `host_pair` test, schema 5)
    or a rack-scale NVLink domain (GB200 NVL72). The server stores it as a host pair
    (docs/network.md). `job` (schema 5) is the scheduler job that ran it, `line_rate_bps`
    (schema 5) the line rate of the slower NIC of the two as the ranks read it.
    """

    test: TestName
    src: GpuIndex | None = None
    dst: GpuIndex | None = None
    peer_host: Annotated[str, Field(max_length=253), _Clean,
                         AfterValidator(valid_hostname)] | None = None
    gpus: list[GpuIndex] = Field(default_factory=list, max_length=MAX_GPUS)  # allreduce set
    value: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    unit: Unit
    samples: list[Annotated[float, Field(ge=0, allow_inf_nan=False)]] = Field(
        default_factory=list, max_length=MAX_SAMPLES)
    bytes_per_copy: Bytes = 0
    copies: Count = 0
    gpu_time_s: Seconds = 0.0  # GPU time the whole test used, warm-up included
    device_memory_bytes: Bytes = 0  # peak device memory the test held on any one GPU
    verified: bool = False
    contended: bool = False
    foreign_bytes: Bytes = 0
    started_at: Timestamp | None = None
    error: Text2000 | None = None
    # schema 5, cross-host only; left out when None so older servers never see the keys
    job: Annotated[str, AfterValidator(valid_job_id)] | None = Field(
        default=None, exclude_if=lambda j: j is None)
    line_rate_bps: float | None = Field(default=None, gt=0, le=MAX_BANDWIDTH_BPS,
                                        allow_inf_nan=False, exclude_if=lambda r: r is None)

    @model_validator(mode="after")
    def _consistent(self) -> TransferResult:
        if self.unit is not unit_of(self.test):
            raise ValueError(f"unit must be {unit_of(self.test).value!r} for test {self.test}")
        if (self.value is None) == (self.error is None):
            raise ValueError("exactly one of value and error must be set")
        limit = MAX_LATENCY_S if self.unit is Unit.SECONDS else MAX_BANDWIDTH_BPS
        # the samples' maximum first (in C: a report holds ~400 results of up to 64 samples
        # each), then the first value beyond the limit, as the message names it
        if (self.value is not None and self.value > limit) or (
                self.samples and max(self.samples) > limit):
            v = next(v for v in [self.value, *self.samples] if v is not None and v > limit)
            raise ValueError(f"value {v:g} {self.unit.value} is beyond any real fabric")
        scope = test_scope(self.test)
        if (self.job is not None or self.line_rate_bps is not None) and self.peer_host is None:
            raise ValueError("job and line_rate_bps belong to a cross-host result (peer_host)")
        if scope == "host_pair":
            if self.peer_host is None or self.src is None or self.dst is None or self.gpus:
                raise ValueError(f"{self.test} is cross-host: src, dst and peer_host set")
        elif scope == "set":
            if len(self.gpus) < 2 or self.peer_host is not None:
                raise ValueError(f"{self.test} needs at least two gpus of the reporting host")
        elif scope == "gpu":
            if self.src is None or self.dst is not None or self.gpus or self.peer_host:
                raise ValueError(f"{self.test} names one GPU: src set, dst null, gpus empty")
        elif self.src is None or self.dst is None:
            raise ValueError(f"{self.test} needs GPUs src and dst")
        elif self.src == self.dst and self.peer_host is None:
            raise ValueError(f"{self.test} needs two different GPUs as src and dst")
        return self

    def local_gpus(self) -> set[int]:
        """GPUs of the reporting host this result names (a cross-host `dst` is not one)."""
        dst = None if self.peer_host is not None else self.dst
        return set(self.gpus) | {i for i in (self.src, dst) if i is not None}


class SkippedGpu(_Model):
    gpu: GpuIndex
    reason: Annotated[str, Field(max_length=500), _Clean]


class SweepCost(_Model):
    """What probing cost the host: the number an operator asks before allowing a probe."""

    gpu_time_s: Seconds = 0.0
    wall_time_s: Seconds = 0.0
    device_memory_bytes_max: Bytes = 0
    agent_cpu_s: Seconds = 0.0
    agent_rss_bytes: Bytes = 0
    skipped: list[SkippedGpu] = Field(default_factory=list, max_length=MAX_GPUS)
    dropped_reports: Count = 0  # spooled reports dropped because the spool was full


class ProbeError(_Model):
    """Something the probe could not read or run; the rest of the pass went on."""

    where: Annotated[str, Field(max_length=200), _Clean]  # e.g. "nvml.link_counters gpu=3"
    message: Text2000


class EventKind(StrEnum):
    XID = "xid"  # the GPU driver's error report (NVRM: Xid ...; NVML's critical Xid event)
    SXID = "sxid"  # an NVSwitch's error report (nvidia-nvswitchN: SXid ...)


class EventSource(StrEnum):
    NVML = "nvml"  # nvmlEventSetWait: the Xid number and the GPU, no text
    KMSG = "kmsg"  # /dev/kmsg: the driver's whole line (link, registers, severity word)
    JOURNAL = "journal"  # the systemd journal's kernel messages, where that is what the host has
    SIMULATED = "simulated"  # a simulated fabric's fault (probes/sim)


class FabricEvent(_Model):
    """One Xid or SXid event (schema 3), as the agent saw it; meaning comes from the server's
    catalog (app/analysis/xid_catalog.py), never from the agent.

    `gpu` is the reporting host's GPU index resolved from the PCI address (None for an SXid,
    or a GPU the agent could not resolve: one off the bus is not in the inventory, so it is
    not checked against it); `link` the NVLink the line names; `switch` the NVSwitch's PCI
    address for an SXid. `sources` lists every source that saw it (kmsg and NVML seeing one
    Xid is one event), `count` how many identical lines the agent collapsed into it.
    """

    kind: EventKind
    code: Annotated[int, Field(ge=0, le=INT32_MAX)]  # the Xid or SXid number
    at: Timestamp
    sources: list[EventSource] = Field(min_length=1, max_length=4)
    gpu: GpuIndex | None = None
    pci_bus_id: Text32 | None = None
    link: Annotated[int, Field(ge=0, lt=MAX_LINKS_PER_GPU)] | None = None
    switch: Text32 | None = None
    subcode: Annotated[int, Field(ge=0, le=INT32_MAX)] | None = None  # 144-150: intrinfo bits
    fatal: bool | None = None  # the line's own word ("Fatal" / "Non-fatal"), when it says
    count: Annotated[int, Field(ge=1, le=INT32_MAX)] = 1
    message: Text2000 = ""

    @model_validator(mode="after")
    def _named(self) -> FabricEvent:
        if self.kind is EventKind.SXID and self.gpu is not None:
            raise ValueError("an sxid event names its switch, not a gpu")
        return self


class HostIdentity(_Model):
    hostname: Annotated[str, Field(min_length=1, max_length=253), _Clean,
                        AfterValidator(valid_hostname)]
    fabric: Text64  # "nvml" or "simulated:<preset>"
    driver_version: Text64 | None = None
    cuda_version: Text64 | None = None
    probe_version: Text64 | None = None
    # When this probe process started and when the NVIDIA driver was loaded: links may still
    # be training just after either, so the server holds pages back for a settle time.
    probe_started_at: Timestamp | None = None
    driver_loaded_at: Timestamp | None = None


class JobSource(StrEnum):
    MAPPING_DIR = "mapping_dir"  # the dcgm-exporter --hpc-job-mapping-dir files (Slurm prolog)
    KUBERNETES = "kubernetes"  # the kubelet's pod-resources socket


class GpuJob(_Model):
    """One job holding one GPU when the report was built (optional field of schema v2)."""

    gpu: GpuIndex
    job: Annotated[str, AfterValidator(valid_job_id)]
    source: JobSource = JobSource.MAPPING_DIR


class Report(_Model):
    schema_version: Literal[1, 2, 3, 4, 5] = 4  # SCHEMA_VERSION (5: cross-host results)
    report_id: uuid.UUID = Field(default_factory=uuid.uuid4)
    kind: ReportKind
    host: HostIdentity
    started_at: Timestamp
    finished_at: Timestamp
    inventory: Inventory
    counters: list[CounterSample] = Field(default_factory=list, max_length=MAX_COUNTER_SAMPLES)
    results: list[TransferResult] = Field(default_factory=list, max_length=MAX_RESULTS)
    cost: SweepCost = SweepCost()
    errors: list[ProbeError] = Field(default_factory=list, max_length=MAX_ERRORS)
    events: list[FabricEvent] = Field(default_factory=list, max_length=MAX_EVENTS)
    # Which job held each GPU; empty: no mapping found, nothing is claimed. Left
    # out of the JSON when empty, so a probe without a mapping still talks to older servers.
    jobs: list[GpuJob] = Field(default_factory=list, max_length=MAX_GPUS * MAX_JOBS_PER_GPU,
                               exclude_if=lambda jobs: not jobs)

    @model_validator(mode="after")
    def _coherent(self) -> Report:
        if self.finished_at < self.started_at:
            raise ValueError("finished_at is before started_at")
        if self.events and self.schema_version < 3:
            raise ValueError("events need schema_version 3")
        if self.schema_version < 4 and _driver_health_in(self):
            raise ValueError("driver health (gpus[].driver, counters[].aer, imex) needs "
                             "schema_version 4")
        if self.schema_version < 5 and nics_in(self):
            raise ValueError("RDMA NICs (inventory.nics, counters[].nic_ports) need "
                             "schema_version 5")
        known = {g.index for g in self.inventory.gpus}
        for r in self.results:
            if self.schema_version < 5 and (test_scope(r.test) == "host_pair" or r.job
                                            or r.line_rate_bps):
                raise ValueError(f"cross-host test {r.test} (job, line_rate_bps) needs "
                                 "schema_version 5")
            if self.schema_version < 2 and r.test in GPU_TESTS:
                raise ValueError(f"test {r.test} needs schema_version 2")
            if self.schema_version < 5 and r.test in NIC_TESTS:
                raise ValueError(f"test {r.test} needs schema_version 5")
            used = r.local_gpus()
            if not used <= known:
                missing = sorted(used - known)
                raise ValueError(f"result {r.test} names GPU(s) {missing} not in inventory")
        if strays := sorted({j.gpu for j in self.jobs} - known):
            raise ValueError(f"jobs name GPU(s) {strays} not in inventory")
        return self


def _driver_health_in(report: Report) -> bool:
    inv = report.inventory
    return (inv.imex is not None or any(g.driver is not None for g in inv.gpus)
            or any(c.aer for c in report.counters))


def nics_in(report: Report) -> bool:
    """Does the report tell of RDMA NICs (the fields of schema 5)?"""
    return bool(report.inventory.nics) or any(c.nic_ports for c in report.counters)


def utcnow() -> datetime:
    return datetime.now(UTC)


@functools.cache
def wire_fingerprint() -> str:
    """Which wire models wrote a report's JSON: a digest of `Report`'s serialization schema
    (every field, its order, type and default, nested models included) and of the
    pydantic that writes the bytes. A probe sends it with each report (`X-Peerwatch-Wire`);
    a server with the same one knows the body is what it would write for the parsed report
    itself, so it can know the report by its bytes' digest without serializing it again
    (`app/ingest/posted.py`). What the schema does not show (an `exclude_if`) counts only
    beside a change it does show. Computed once per process: the schema takes milliseconds."""
    schema = json.dumps(Report.model_json_schema(mode="serialization"))
    seed = f"pydantic {pydantic.VERSION} core {pydantic_core.__version__}\n{schema}"
    return hashlib.sha256(seed.encode()).hexdigest()[:32]
