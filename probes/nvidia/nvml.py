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
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from peerwatch.probes.clocks import GpuClocks
from peerwatch.probes.errors import (
    BadProbeRequest,
    FabricUnavailable,
    NotSupported,
    PeerwatchProbeError,
)
from peerwatch.probes.gpu_health import GpuDriverHealth, PcieAer
from peerwatch.probes.nvidia.aer import read_aer
from peerwatch.probes.nvidia.nics import nic_rate_bps
from peerwatch.probes.nvidia.nvlink import NvLinks
from peerwatch.probes.nvidia.nvml_clocks import read_clocks
from peerwatch.probes.nvidia.nvml_fabric import (
    ChildCheck,
    FabricReader,
    child_fabric_check,
    fabric_check_main,
)
from peerwatch.probes.nvidia.nvml_health import read_driver_health
from peerwatch.probes.nvidia.rdma import RdmaReader
from peerwatch.probes.nvidia.sysfs import Sysfs
from peerwatch.probes.report import (
    GpuActivity,
    GpuInfo,
    LinkCounters,
    NvLinkPort,
    P2PCap,
    P2PStatus,
    PairInfo,
    PcieLink,
    RdmaInfo,
    SwitchFabricInfo,
)
from peerwatch.probes.topology import (
    as_text,
    cpulist,
    normalize_bus_id,
    nvlink_width,
    path_level,
    topology_label,
)

# nvmlDeviceGetP2PStatus indexes, as integers: the bindings' READ constant is a tuple.
P2P_INDEXES: dict[P2PCap, int] = {
    P2PCap.READ: 0, P2PCap.WRITE: 1, P2PCap.NVLINK: 2, P2PCap.ATOMICS: 3, P2PCap.PCI: 4,
}
P2P_STATUSES: dict[int, P2PStatus] = dict(enumerate(P2PStatus))  # nvmlGpuP2PStatus_t order

# nvmlValueType_t -> the c_nvmlValue_t member holding it
_VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")


class NvmlQueryError(PeerwatchProbeError):
    """An NVML query failed for a reason other than "not supported" (GPU lost, timeout ...)."""


def load_pynvml() -> ModuleType:
    """The real bindings; FabricUnavailable where nvidia-ml-py is not installed."""
    try:
        import pynvml  # the seam: the one import of NVML's bindings, at first use
    except ImportError as exc:
        raise FabricUnavailable("nvidia-ml-py (module pynvml) is not installed") from exc
    return pynvml


class Nvml:
    """One NVML session over every GPU NVML sees. Close it with `close()`."""

    def __init__(self, module: Any = None, sysfs: Sysfs | None = None,
                 fabric_child_check: ChildCheck = child_fabric_check) -> None:
        self.module = module if module is not None else load_pynvml()
        self._sysfs = sysfs if sysfs is not None else Sysfs()
        try:
            self.module.nvmlInit()
        except self.module.NVMLError as exc:
            raise FabricUnavailable(f"NVML could not start: {exc}") from exc
        self._open = True
        try:
            count = int(self.module.nvmlDeviceGetCount())
            self._handles = [self.module.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            self._bus_ids = [
                as_text(self.module.nvmlDeviceGetPciInfo(h).busId) for h in self._handles
            ]
        except self.module.NVMLError as exc:
            self.close()
            raise FabricUnavailable(f"NVML could not list GPUs: {exc}") from exc
        if not self._handles:
            self.close()
            raise FabricUnavailable("NVML sees no GPUs")
        self._norm_bus = [normalize_bus_id(b) for b in self._bus_ids]
        self._absent = {
            getattr(self.module, "NVML_ERROR_NOT_SUPPORTED", 3),
            getattr(self.module, "NVML_ERROR_FUNCTION_NOT_FOUND", 13),
        }
        self._invalid = getattr(self.module, "NVML_ERROR_INVALID_ARGUMENT", 2)
        self._link_counts: dict[int, int] = {}
        self._links = NvLinks(self)
        self._fabric = FabricReader(self, fabric_child_check)

    # ------------------------------------------------------------------ plumbing

    def close(self) -> None:
        if getattr(self, "_open", False):
            self._open = False
            try:
                self.module.nvmlShutdown()
            except self.module.NVMLError:
                pass  # shutting down a session that is already gone is not worth an error

    def gpu_count(self) -> int:
        return len(self._handles)

    def bus_id(self, gpu: int) -> str:
        """NVML's PCI bus id of a GPU, e.g. '00000000:00:06.0'."""
        self.handle(gpu)
        return self._bus_ids[gpu]

    def gpu_at(self, bus_id: str | None) -> int | None:
        """The index of the GPU at a normalised PCI bus id, None when it is no GPU of ours."""
        return self._norm_bus.index(bus_id) if bus_id in self._norm_bus else None

    # The calls below are the interface the helpers read NVML through (`NvmlSession` in
    # nvml_session.py): a GPU's handle, one pynvml function with its errors converted, and
    # field values.

    def handle(self, gpu: int) -> Any:
        """NVML's handle of GPU `gpu` (NVML index); BadProbeRequest for a GPU that is not there."""
        if not 0 <= gpu < len(self._handles):
            raise BadProbeRequest(f"no GPU {gpu}: NVML sees {len(self._handles)} GPU(s)")
        return self._handles[gpu]

    def call(self, where: str, name: str, *args: Any, per_link: bool = False) -> Any:
        """Call pynvml.<name>, converting its errors at this boundary."""
        fn: Callable[..., Any] | None = getattr(self.module, name, None)
        if fn is None:
            raise NotSupported(f"{where}: this nvidia-ml-py has no {name}")
        try:
            return fn(*args)
        except self.module.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code in self._absent or (per_link and code == self._invalid):
                raise NotSupported(f"{where}: {name}: {exc}") from exc
            raise NvmlQueryError(f"{where}: {name}: {exc}") from exc

    def maybe(self, where: str, name: str, *args: Any, per_link: bool = False) -> Any:
        """Like `call`, but an unsupported query is simply None."""
        try:
            return self.call(where, name, *args, per_link=per_link)
        except NotSupported:
            return None

    def fields(self, gpu: int, ids: Sequence[tuple[int, int]]) -> list[int | float | None]:
        """Field values (field id, scope/link) in ONE nvmlDeviceGetFieldValues call.

        Each entry carries its own nvmlReturn: a failed entry is None, the others stand.
        """
        raw = self.call(f"nvml.fields gpu={gpu}", "nvmlDeviceGetFieldValues",
                         self.handle(gpu), list(ids))
        out: list[int | float | None] = []
        for entry in raw:
            if int(entry.nvmlReturn) != 0:
                out.append(None)
                continue
            vtype = int(entry.valueType)
            member = _VALUE_MEMBERS[vtype] if 0 <= vtype < len(_VALUE_MEMBERS) else "ullVal"
            out.append(getattr(entry.value, member))
        return out

    def field_value(self, gpu: int, name: str, scope: int = 0) -> int:
        """One field's value, or the reason it has none: NotSupported where this bindings
        has no such field or the GPU does not offer it, NvmlQueryError for any other
        failed entry (the entry's own nvmlReturn, named)."""
        where = f"nvml.field gpu={gpu}"
        field_id = getattr(self.module, name, None)
        if field_id is None:
            raise NotSupported(f"{where}: this nvidia-ml-py has no {name}")
        (entry,) = self.call(where, "nvmlDeviceGetFieldValues", self.handle(gpu),
                             [(field_id, scope)])
        code = int(entry.nvmlReturn)
        if code in self._absent or code == self._invalid:
            raise NotSupported(f"{where}: {name}: {self.return_name(code)}")
        if code != 0:
            raise NvmlQueryError(f"{where}: {name}: {self.return_name(code)}")
        vtype = int(entry.valueType)
        member = _VALUE_MEMBERS[vtype] if 0 <= vtype < len(_VALUE_MEMBERS) else "ullVal"
        return int(getattr(entry.value, member))

    def field(self, gpu: int, name: str, scope: int = 0) -> int | None:
        field_id = getattr(self.module, name, None)
        if field_id is None:
            return None
        value = self.fields(gpu, [(field_id, scope)])[0]
        return None if value is None else int(value)

    # ------------------------------------------------------------------ host

    def driver_version(self) -> str | None:
        value = self.maybe("nvml.driver", "nvmlSystemGetDriverVersion")
        return None if value is None else as_text(value)

    def cuda_version(self) -> str | None:
        """CUDA version the driver supports, e.g. '13.0' (NVML returns 13000)."""
        value = self.maybe("nvml.cuda", "nvmlSystemGetCudaDriverVersion")
        return None if value is None else f"{int(value) // 1000}.{int(value) % 1000 // 10}"

    # ------------------------------------------------------------------ one GPU

    def gpu(self, index: int) -> GpuInfo:
        h = self.handle(index)
        where = f"nvml.gpu gpu={index}"
        memory = self.call(where, "nvmlDeviceGetMemoryInfo", h)
        nvlinks = self.link_count(index)
        return GpuInfo(
            index=index,
            uuid=as_text(self.call(where, "nvmlDeviceGetUUID", h)),
            name=as_text(self.call(where, "nvmlDeviceGetName", h)),
            pci_bus_id=self._bus_ids[index],
            memory_total_bytes=int(memory.total),
            cpu_affinity=self.cpu_affinity(index),
            numa_node=self._numa_node(index),
            nvlink_count=nvlinks,
            pcie=self._pcie(index),
            rdma=self._rdma(index),
            switch_fabric=self.switch_fabric(index) if nvlinks else None,
            driver=self.driver_health(index),
        )

    def driver_health(self, gpu: int) -> GpuDriverHealth:
        """What the driver says of the GPU: recovery action, ECC, row remapping, retired
        pages, each read alone (`nvml_health.py`)."""
        return read_driver_health(self, gpu)

    def pcie_aer(self, gpu: int) -> PcieAer:
        """PCIe AER counters of the GPU and its upstream bridge, from sysfs (`aer.py`)."""
        return read_aer(self._sysfs, gpu, self.bus_id(gpu))

    def cpu_affinity(self, gpu: int) -> str | None:
        """The GPU's local CPUs as a list ("0-31,64-95"), None when NVML cannot say."""
        words = max(1, ((os.cpu_count() or 64) + 63) // 64)
        mask = self.maybe(f"nvml.cpu_affinity gpu={gpu}", "nvmlDeviceGetCpuAffinity",
                           self.handle(gpu), words)
        return None if mask is None else cpulist(list(mask))

    def _numa_node(self, gpu: int) -> int | None:
        """NVML's NUMA node (NotSupported on x86), else the kernel's view of the PCI device
        (-1 in a VM), else NVML's memory affinity when it names exactly one node (what
        `nvidia-smi topo -m` prints as NUMA Affinity)."""
        h, where = self.handle(gpu), f"nvml.numa gpu={gpu}"
        node = self.maybe(where, "nvmlDeviceGetNumaNodeId", h)
        if node is not None and int(node) >= 0:
            return int(node)
        node = self._sysfs.numa_node(self._bus_ids[gpu])
        if node is not None:
            return node
        mask = self.maybe(where, "nvmlDeviceGetMemoryAffinity", h, 1,
                           getattr(self.module, "NVML_AFFINITY_SCOPE_NODE", 0))
        nodes = [] if mask is None else [b for b in range(64) if int(mask[0]) >> b & 1]
        return nodes[0] if len(nodes) == 1 else None

    def _pcie(self, gpu: int) -> PcieLink:
        h, where = self.handle(gpu), f"nvml.pcie gpu={gpu}"

        def read(name: str) -> int | None:
            value = self.maybe(where, name, h)
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
        peers = {i: b for i, b in enumerate(self._bus_ids) if i != gpu}
        return RdmaInfo(
            peermem_loaded=self._sysfs.peermem_loaded(),
            nearest_nic=nic[0] if nic else None,
            nic_path=nic[1] if nic else None,
            nic_rate_bps=nic_rate_bps(self._sysfs, nic[0]) if nic else None,
            **RdmaReader(self._sysfs).read(self._bus_ids[gpu], peers),
        )

    def clocks(self, gpu: int) -> GpuClocks:
        """Clocks, power, temperature and clocks-event reasons now (`nvml_clocks.py`)."""
        return read_clocks(self, gpu)

    def switch_fabric(self, gpu: int) -> SwitchFabricInfo | None:
        """NVSwitch fabric registration; None where the GPU has no fabric to join. The legacy
        call decides before the V call is made (see probes/nvidia/nvml_fabric.py: V crashed)."""
        return self._fabric.read(gpu)

    def return_name(self, code: int) -> str:
        """NVML's name of a return code, e.g. "not_supported" (what a fabric status shows)."""
        if code == 0:
            return "success"
        for name in dir(self.module):
            if name.startswith("NVML_ERROR_") and getattr(self.module, name) == code:
                return name.removeprefix("NVML_ERROR_").lower()
        return f"nvml_return_{code}"

    # ------------------------------------------------------------------ NVLink

    def link_count(self, gpu: int) -> int:
        """NVML_FI_DEV_NVLINK_LINK_COUNT: ports this GPU has (fixed for the session)."""
        if gpu not in self._link_counts:
            self._link_counts[gpu] = self.field(gpu, "NVML_FI_DEV_NVLINK_LINK_COUNT") or 0
        return self._link_counts[gpu]

    def nvlinks(self, gpu: int, capabilities: bool = True) -> list[NvLinkPort]:
        return self._links.ports(gpu, capabilities)

    def link_counters(self, gpu: int) -> list[LinkCounters]:
        return self._links.counters(gpu)

    # ------------------------------------------------------------------ PCIe, activity

    def pcie_replay(self, gpu: int) -> int:
        return int(self.call(f"nvml.pcie_replay gpu={gpu}", "nvmlDeviceGetPcieReplayCounter",
                              self.handle(gpu)))

    def activity(self, gpu: int) -> GpuActivity:
        """Utilisation, memory in use and compute processes OTHER than this probe: once the
        probe has run a test it holds a CUDA context on the GPU, which NVML lists as a compute
        process, and a probe must not find its own GPUs busy. (In a container the probe needs
        the host's PID namespace to recognise itself, as dcgm-exporter does.)"""
        h, where = self.handle(gpu), f"nvml.activity gpu={gpu}"
        util = self.maybe(where, "nvmlDeviceGetUtilizationRates", h)
        memory = self.maybe(where, "nvmlDeviceGetMemoryInfo", h)
        procs = self.maybe(where, "nvmlDeviceGetComputeRunningProcesses", h) or []
        own = self._sysfs.own_pids()
        return GpuActivity(
            gpu=gpu,
            utilization_pct=None if util is None else float(util.gpu),
            memory_used_bytes=None if memory is None else int(memory.used),
            compute_processes=sum(getattr(p, "pid", None) not in own for p in procs),
        )

    # ------------------------------------------------------------------ pairs

    def pair(self, src: int, dst: int) -> PairInfo:
        """How `nvidia-smi topo -m` and `topo -p2p` describe the ordered pair (CUDA's
        can-access-peer is not NVML's to answer: the caller fills it)."""
        hs, hd = self.handle(src), self.handle(dst)
        if src == dst:
            raise BadProbeRequest(f"a pair needs two different GPUs, got {src} twice")
        where = f"nvml.pair {src}->{dst}"
        code = self.maybe(where, "nvmlDeviceGetTopologyCommonAncestor", hs, hd)
        pcie = path_level(code) if code is not None else path_level(50)
        width, via_switch = nvlink_width(src, dst, self._links.recent_ports(src),
                                         self._links.recent_ports(dst))
        p2p = {}
        for cap, index in P2P_INDEXES.items():
            status = self.maybe(where, "nvmlDeviceGetP2PStatus", hs, hd, index)
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


if __name__ == "__main__":  # the child of probes/nvidia/nvml_fabric.py: `--fabric-check GPU`
    if len(sys.argv) != 3 or sys.argv[1] != "--fabric-check":
        sys.exit("usage: python -m peerwatch.probes.nvidia.nvml --fabric-check GPU_INDEX")
    sys.exit(fabric_check_main(int(sys.argv[2]), load_pynvml()))
