"""NVML, read through `pynvml` (PyPI `nvidia-ml-py`): the only module that imports it.

`Nvml` answers the inventory and counter half of the Fabric seam for a real host: GPUs, NVLink
ports, per-link counters, PCIe, pair topology as `nvidia-smi topo -m` shows it, P2P status,
NVSwitch fabric state and activity. The `pynvml` module is an injectable dependency, so CPU
tests drive this very code with a hand-written fake built from a real machine's dump.

Errors are converted here, at the boundary, and chained (`raise ... from exc`):
    nvmlInit fails, library missing, no GPUs   -> FabricUnavailable
    NotSupported / FunctionNotFound             -> NotSupported (the caller records "absent")
    InvalidArgument on a per-link query         -> NotSupported (no such link on this GPU)
    anything else                               -> NvmlQueryError (that one item failed)

Traps handled (see ../shared/REFERENCE.md section 2): NVML_P2P_CAPS_INDEX_READ is the tuple (0,)
in the bindings, so P2P indexes are integers here; links are looped to
NVML_FI_DEV_NVLINK_LINK_COUNT, never NVML_NVLINK_MAX_LINKS; the NVLink version is an enum;
on NVSwitch hosts a link's remote PCI id is FFFFFFFF:FF:FF.0 and NV# comes from link counts;
nvmlDeviceGetTopologyCommonAncestor describes PCIe only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from probes.errors import BadProbeRequest, FabricUnavailable, NotSupported, PeerwatchProbeError
from probes.report import (
    GpuActivity,
    GpuInfo,
    LinkCounters,
    LinkState,
    NvLinkPort,
    P2PCap,
    P2PStatus,
    PairInfo,
    PcieLink,
    RdmaInfo,
    RemoteType,
    SwitchFabricInfo,
)
from probes.sysfs import Sysfs
from probes.topology import (
    REMOTE_TYPES,
    cpulist,
    normalize_bus_id,
    nvlink_version,
    nvlink_width,
    path_level,
    topology_label,
)

# nvmlDeviceGetP2PStatus indexes, as integers: the bindings' READ constant is a tuple.
P2P_INDEXES: dict[P2PCap, int] = {
    P2PCap.READ: 0, P2PCap.WRITE: 1, P2PCap.NVLINK: 2, P2PCap.ATOMICS: 3, P2PCap.PCI: 4,
}
P2P_STATUSES: dict[int, P2PStatus] = dict(enumerate(P2PStatus))  # nvmlGpuP2PStatus_t order

# nvmlDeviceGetNvLinkErrorCounter counters that have no field id.
ERROR_COUNTERS = {"crc_data": 3, "ecc_data": 4}
NVLINK_CAPS = {
    "p2p_supported": 0, "sysmem_access": 1, "p2p_atomics": 2,
    "sysmem_atomics": 3, "sli_bridge": 4, "valid": 5,
}
FABRIC_STATES = {1: "not_started", 2: "in_progress", 3: "completed"}
FABRIC_HEALTH = {1: "healthy", 2: "unhealthy", 3: "limited_capacity"}
PORTS_TTL_S = 2.0  # a pair query reuses a GPU's ports read this recently

# nvmlValueType_t -> the c_nvmlValue_t member holding it
_VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")


class NvmlQueryError(PeerwatchProbeError):
    """An NVML query failed for a reason other than "not supported" (GPU lost, timeout ...)."""


def load_pynvml() -> ModuleType:
    """The real bindings; FabricUnavailable where nvidia-ml-py is not installed."""
    try:
        import pynvml
    except ImportError as exc:
        raise FabricUnavailable("nvidia-ml-py (module pynvml) is not installed") from exc
    return pynvml


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Nvml:
    """One NVML session over every GPU NVML sees. Close it with `close()`."""

    def __init__(self, module: Any = None, sysfs: Sysfs | None = None) -> None:
        self._m = module if module is not None else load_pynvml()
        self._sysfs = sysfs if sysfs is not None else Sysfs()
        try:
            self._m.nvmlInit()
        except self._m.NVMLError as exc:
            raise FabricUnavailable(f"NVML could not start: {exc}") from exc
        self._open = True
        try:
            count = int(self._m.nvmlDeviceGetCount())
            self._handles = [self._m.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            self._bus_ids = [
                _text(self._m.nvmlDeviceGetPciInfo(h).busId) for h in self._handles
            ]
        except self._m.NVMLError as exc:
            self.close()
            raise FabricUnavailable(f"NVML could not list GPUs: {exc}") from exc
        if not self._handles:
            self.close()
            raise FabricUnavailable("NVML sees no GPUs")
        self._norm_bus = [normalize_bus_id(b) for b in self._bus_ids]
        self._absent = {
            getattr(self._m, "NVML_ERROR_NOT_SUPPORTED", 3),
            getattr(self._m, "NVML_ERROR_FUNCTION_NOT_FOUND", 13),
        }
        self._invalid = getattr(self._m, "NVML_ERROR_INVALID_ARGUMENT", 2)
        self._ports_cache: dict[int, tuple[float, list[NvLinkPort]]] = {}

    # ------------------------------------------------------------------ plumbing

    def close(self) -> None:
        if getattr(self, "_open", False):
            self._open = False
            try:
                self._m.nvmlShutdown()
            except self._m.NVMLError:
                pass  # shutting down a session that is already gone is not worth an error

    def gpu_count(self) -> int:
        return len(self._handles)

    def bus_id(self, gpu: int) -> str:
        """NVML's PCI bus id of a GPU, e.g. '00000000:00:06.0'."""
        self._handle(gpu)
        return self._bus_ids[gpu]

    def _handle(self, gpu: int) -> Any:
        if not 0 <= gpu < len(self._handles):
            raise BadProbeRequest(f"no GPU {gpu}: NVML sees {len(self._handles)} GPU(s)")
        return self._handles[gpu]

    def _call(self, where: str, name: str, *args: Any, per_link: bool = False) -> Any:
        """Call pynvml.<name>, converting its errors at this boundary."""
        fn: Callable[..., Any] | None = getattr(self._m, name, None)
        if fn is None:
            raise NotSupported(f"{where}: this nvidia-ml-py has no {name}")
        try:
            return fn(*args)
        except self._m.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code in self._absent or (per_link and code == self._invalid):
                raise NotSupported(f"{where}: {name}: {exc}") from exc
            raise NvmlQueryError(f"{where}: {name}: {exc}") from exc

    def _maybe(self, where: str, name: str, *args: Any, per_link: bool = False) -> Any:
        """Like _call, but an unsupported query is simply None."""
        try:
            return self._call(where, name, *args, per_link=per_link)
        except NotSupported:
            return None

    def _fields(self, gpu: int, ids: Sequence[tuple[int, int]]) -> list[int | float | None]:
        """Field values (field id, scope/link) in ONE nvmlDeviceGetFieldValues call.

        Each entry carries its own nvmlReturn: a failed entry is None, the others stand.
        """
        raw = self._call(f"nvml.fields gpu={gpu}", "nvmlDeviceGetFieldValues",
                         self._handle(gpu), list(ids))
        out: list[int | float | None] = []
        for entry in raw:
            if int(entry.nvmlReturn) != 0:
                out.append(None)
                continue
            vtype = int(entry.valueType)
            member = _VALUE_MEMBERS[vtype] if 0 <= vtype < len(_VALUE_MEMBERS) else "ullVal"
            out.append(getattr(entry.value, member))
        return out

    def _field(self, gpu: int, name: str, scope: int = 0) -> int | None:
        field_id = getattr(self._m, name, None)
        if field_id is None:
            return None
        value = self._fields(gpu, [(field_id, scope)])[0]
        return None if value is None else int(value)

    # ------------------------------------------------------------------ host

    def driver_version(self) -> str | None:
        value = self._maybe("nvml.driver", "nvmlSystemGetDriverVersion")
        return None if value is None else _text(value)

    def cuda_version(self) -> str | None:
        """CUDA version the driver supports, e.g. '13.0' (NVML returns 13000)."""
        value = self._maybe("nvml.cuda", "nvmlSystemGetCudaDriverVersion")
        return None if value is None else f"{int(value) // 1000}.{int(value) % 1000 // 10}"

    # ------------------------------------------------------------------ one GPU

    def gpu(self, index: int) -> GpuInfo:
        h = self._handle(index)
        where = f"nvml.gpu gpu={index}"
        memory = self._call(where, "nvmlDeviceGetMemoryInfo", h)
        nvlinks = self._field(index, "NVML_FI_DEV_NVLINK_LINK_COUNT") or 0
        return GpuInfo(
            index=index,
            uuid=_text(self._call(where, "nvmlDeviceGetUUID", h)),
            name=_text(self._call(where, "nvmlDeviceGetName", h)),
            pci_bus_id=self._bus_ids[index],
            memory_total_bytes=int(memory.total),
            cpu_affinity=self._cpu_affinity(index),
            numa_node=self._numa_node(index),
            nvlink_count=nvlinks,
            pcie=self._pcie(index),
            rdma=self._rdma(index),
            switch_fabric=self.switch_fabric(index) if nvlinks else None,
        )

    def _cpu_affinity(self, gpu: int) -> str | None:
        words = max(1, ((os.cpu_count() or 64) + 63) // 64)
        mask = self._maybe(f"nvml.cpu_affinity gpu={gpu}", "nvmlDeviceGetCpuAffinity",
                           self._handle(gpu), words)
        return None if mask is None else cpulist(list(mask))

    def _numa_node(self, gpu: int) -> int | None:
        """NVML's NUMA node, else the kernel's view of the PCI device (NVML says NotSupported
        on x86)."""
        node = self._maybe(f"nvml.numa gpu={gpu}", "nvmlDeviceGetNumaNodeId", self._handle(gpu))
        if node is not None and int(node) >= 0:
            return int(node)
        return self._sysfs.numa_node(self._bus_ids[gpu])

    def _pcie(self, gpu: int) -> PcieLink:
        h, where = self._handle(gpu), f"nvml.pcie gpu={gpu}"

        def read(name: str) -> int | None:
            value = self._maybe(where, name, h)
            return None if value is None else int(value)

        return PcieLink(
            gen_current=read("nvmlDeviceGetCurrPcieLinkGeneration"),
            gen_max=read("nvmlDeviceGetMaxPcieLinkGeneration"),
            width_current=read("nvmlDeviceGetCurrPcieLinkWidth"),
            width_max=read("nvmlDeviceGetMaxPcieLinkWidth"),
            replay_count=read("nvmlDeviceGetPcieReplayCounter"),
        )

    def _rdma(self, gpu: int) -> RdmaInfo:
        nic = self._sysfs.nearest_nic(self._bus_ids[gpu])
        return RdmaInfo(
            peermem_loaded=self._sysfs.peermem_loaded(),
            nearest_nic=nic[0] if nic else None,
            nic_path=nic[1] if nic else None,
        )

    def switch_fabric(self, gpu: int) -> SwitchFabricInfo | None:
        """NVSwitch fabric registration; None where the GPU has no fabric to join."""
        info = self._fabric_struct(gpu)
        if info is None or int(info.state) == 0:  # NVML_GPU_FABRIC_STATE_NOT_SUPPORTED
            return None
        uuid_bytes = bytes(info.clusterUuid)
        summary = getattr(info, "healthSummary", None)
        return SwitchFabricInfo(
            state=FABRIC_STATES.get(int(info.state), f"state_{int(info.state)}"),
            status=self._return_name(int(info.status)),
            clique_id=int(info.cliqueId),
            cluster_uuid=uuid_bytes.hex() if any(uuid_bytes) else None,
            health=None if summary is None else FABRIC_HEALTH.get(int(summary)),
        )

    def _fabric_struct(self, gpu: int) -> Any:
        """nvmlDeviceGetGpuFabricInfoV with the v3 struct, else v2, else the old call."""
        h, where = self._handle(gpu), f"nvml.fabric gpu={gpu}"
        attempts = [
            ("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfo_v3_t"),
            ("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfo_v2_t"),
            ("nvmlDeviceGetGpuFabricInfo", "c_nvmlGpuFabricInfo_t"),
        ]
        for fn_name, struct_name in attempts:
            struct = getattr(self._m, struct_name, None)
            if struct is None or getattr(self._m, fn_name, None) is None:
                continue
            info = struct()
            try:
                self._call(where, fn_name, h, self._m.byref(info))
            except NotSupported:
                continue
            return info
        return None

    def _return_name(self, code: int) -> str:
        if code == 0:
            return "success"
        for name in dir(self._m):
            if name.startswith("NVML_ERROR_") and getattr(self._m, name) == code:
                return name.removeprefix("NVML_ERROR_").lower()
        return f"nvml_return_{code}"

    # ------------------------------------------------------------------ NVLink

    def nvlinks(self, gpu: int) -> list[NvLinkPort]:
        """Every NVLink port NVML reports for the GPU (0 .. LINK_COUNT-1)."""
        h = self._handle(gpu)
        count = self._field(gpu, "NVML_FI_DEV_NVLINK_LINK_COUNT") or 0
        speeds = self._link_fields(gpu, "NVML_FI_DEV_NVLINK_GET_SPEED", count)
        ports = []
        for link in range(count):
            port = self._port(gpu, h, link, speeds[link])
            if port is not None:
                ports.append(port)
        self._ports_cache[gpu] = (time.monotonic(), ports)
        return ports

    def _link_fields(self, gpu: int, name: str, count: int) -> list[int | float | None]:
        field_id = getattr(self._m, name, None)
        if field_id is None or count == 0:
            return [None] * count
        try:
            return self._fields(gpu, [(field_id, link) for link in range(count)])
        except NotSupported:
            return [None] * count

    def _port(self, gpu: int, h: Any, link: int, speed_mbps: Any) -> NvLinkPort | None:
        where = f"nvml.nvlink gpu={gpu} link={link}"
        try:
            state = self._call(where, "nvmlDeviceGetNvLinkState", h, link, per_link=True)
        except NotSupported:
            return None  # no such port on this GPU
        remote_type = self._maybe(where, "nvmlDeviceGetNvLinkRemoteDeviceType", h, link,
                                  per_link=True)
        remote = self._maybe(where, "nvmlDeviceGetNvLinkRemotePciInfo", h, link, per_link=True)
        remote_bus = None if remote is None else _text(remote.busId)
        remote_norm = normalize_bus_id(remote_bus)
        caps = {}
        for cap, code in NVLINK_CAPS.items():
            value = self._maybe(where, "nvmlDeviceGetNvLinkCapability", h, link, code,
                                per_link=True)
            if value is not None:
                caps[cap] = bool(value)
        return NvLinkPort(
            gpu=gpu,
            link=link,
            state=LinkState.UP if int(state) == 1 else LinkState.DOWN,
            version=nvlink_version(
                self._maybe(where, "nvmlDeviceGetNvLinkVersion", h, link, per_link=True)
            ),
            speed_bps=None if speed_mbps is None else float(speed_mbps) * 1e6,
            remote_type=(
                RemoteType.UNKNOWN if remote_type is None
                else REMOTE_TYPES.get(int(remote_type), RemoteType.UNKNOWN)
            ),
            remote_pci_bus_id=remote_bus if remote_norm else None,
            remote_gpu=self._norm_bus.index(remote_norm) if remote_norm in self._norm_bus else None,
            capabilities=caps,
        )

    def _ports(self, gpu: int) -> list[NvLinkPort]:
        cached = self._ports_cache.get(gpu)
        if cached and time.monotonic() - cached[0] < PORTS_TTL_S:
            return cached[1]
        return self.nvlinks(gpu)

    def link_counters(self, gpu: int) -> list[LinkCounters]:
        """Cumulative per-link counters: TX/RX data and DL errors in one field-values call,
        CRC-data and ECC-data errors (no field ids) from nvmlDeviceGetNvLinkErrorCounter."""
        h = self._handle(gpu)
        count = self._field(gpu, "NVML_FI_DEV_NVLINK_LINK_COUNT") or 0
        names = ("THROUGHPUT_DATA_TX", "THROUGHPUT_DATA_RX",
                 "ERROR_DL_REPLAY", "ERROR_DL_RECOVERY", "ERROR_DL_CRC")
        ids = [getattr(self._m, f"NVML_FI_DEV_NVLINK_{n}", None) for n in names]
        wanted = [(fid, link) for link in range(count) for fid in ids if fid is not None]
        values = dict(zip(wanted, self._fields(gpu, wanted), strict=True)) if wanted else {}

        def get(fid: int | None, link: int) -> int | None:
            v = values.get((fid, link)) if fid is not None else None
            return None if v is None else int(v)

        out = []
        for link in range(count):
            where = f"nvml.counters gpu={gpu} link={link}"
            errors = {
                key: self._maybe(where, "nvmlDeviceGetNvLinkErrorCounter", h, link, code,
                                 per_link=True)
                for key, code in ERROR_COUNTERS.items()
            }
            tx, rx = get(ids[0], link), get(ids[1], link)
            out.append(LinkCounters(
                gpu=gpu, link=link,
                tx_bytes=None if tx is None else tx * 1024,  # NVML counts KiB
                rx_bytes=None if rx is None else rx * 1024,
                replay=get(ids[2], link), recovery=get(ids[3], link),
                crc_flit=get(ids[4], link),
                crc_data=None if errors["crc_data"] is None else int(errors["crc_data"]),
                ecc_data=None if errors["ecc_data"] is None else int(errors["ecc_data"]),
            ))
        return out

    # ------------------------------------------------------------------ PCIe, activity

    def pcie_replay(self, gpu: int) -> int:
        return int(self._call(f"nvml.pcie_replay gpu={gpu}", "nvmlDeviceGetPcieReplayCounter",
                              self._handle(gpu)))

    def activity(self, gpu: int) -> GpuActivity:
        h, where = self._handle(gpu), f"nvml.activity gpu={gpu}"
        util = self._maybe(where, "nvmlDeviceGetUtilizationRates", h)
        memory = self._maybe(where, "nvmlDeviceGetMemoryInfo", h)
        procs = self._maybe(where, "nvmlDeviceGetComputeRunningProcesses", h)
        return GpuActivity(
            gpu=gpu,
            utilization_pct=None if util is None else float(util.gpu),
            memory_used_bytes=None if memory is None else int(memory.used),
            compute_processes=len(procs or []),
        )

    # ------------------------------------------------------------------ pairs

    def pair(self, src: int, dst: int) -> PairInfo:
        """How `nvidia-smi topo -m` and `topo -p2p` describe the ordered pair (CUDA's
        can-access-peer is not NVML's to answer: the caller fills it)."""
        hs, hd = self._handle(src), self._handle(dst)
        if src == dst:
            raise BadProbeRequest(f"a pair needs two different GPUs, got {src} twice")
        where = f"nvml.pair {src}->{dst}"
        code = self._maybe(where, "nvmlDeviceGetTopologyCommonAncestor", hs, hd)
        pcie = path_level(code) if code is not None else path_level(50)
        width, via_switch = nvlink_width(src, dst, self._ports(src), self._ports(dst))
        p2p = {}
        for cap, index in P2P_INDEXES.items():
            status = self._maybe(where, "nvmlDeviceGetP2PStatus", hs, hd, index)
            if status is not None:
                p2p[cap] = P2P_STATUSES.get(int(status), P2PStatus.UNKNOWN)
        return PairInfo(
            src=src, dst=dst,
            topology=topology_label(width, pcie),
            pcie_path=pcie,
            nvlink_width=width,
            via_nvswitch=via_switch,
            p2p=p2p,
        )
