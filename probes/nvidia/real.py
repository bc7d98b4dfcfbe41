"""The real fabric: NVML (probes/nvidia/nvml.py) for inventory and counters,
CuPy (probes/nvidia/transfers.py) for transfer tests, joined behind the `Fabric` Protocol.

Indices are NVML's everywhere above this seam. CUDA may number the same GPUs differently
(CUDA_DEVICE_ORDER defaults to fastest-first, CUDA_VISIBLE_DEVICES hides and renumbers), so
NVML indices are mapped onto CUDA ordinals by PCI bus id before a test runs, and the test's
per-GPU figures are mapped back.

CuPy is started lazily: an inventory-only pass never creates CUDA contexts (each costs device
memory) and still works where CuPy is missing; a transfer test then raises FabricUnavailable.
A `quick` fabric (job snapshots, `probes/snapshot_read.py`) never starts CuPy at all (no
GPUDirect or can-access-peer answers) and skips the static per-link capability calls.
"""

from __future__ import annotations

import dataclasses
import socket
from typing import Any

import peerwatch.probes as probes
from peerwatch.probes.clocks import GpuClocks
from peerwatch.probes.errors import FabricUnavailable, NotSupported, TransferError
from peerwatch.probes.fabric import Measurement, TestSpec
from peerwatch.probes.gpu_health import ImexStatus, PcieAer
from peerwatch.probes.nics import NicDevice, NicPort
from peerwatch.probes.nvidia.gdr import Loopback, run_loopback
from peerwatch.probes.nvidia.host_runtime import HostRuntime
from peerwatch.probes.nvidia.imex import imex_status
from peerwatch.probes.nvidia.nics import NicReader
from peerwatch.probes.nvidia.nvml import Nvml
from peerwatch.probes.nvidia.sysfs import Sysfs
from peerwatch.probes.nvidia.transfers import Transfers
from peerwatch.probes.report import (
    NIC_TESTS,
    FabricManagerInfo,
    GpuActivity,
    GpuInfo,
    HostIdentity,
    LinkCounters,
    NvLinkPort,
    PairInfo,
    PciGpu,
)
from peerwatch.probes.topology import normalize_bus_id, parse_cpulist


class RealFabric:
    """This host's GPUs, read through NVML and measured through CuPy."""

    name = "nvml"

    def __init__(self, nvml_module: Any = None, cupy_module: Any = None,
                 sysfs: Sysfs | None = None, timeout_s: float = 10.0,
                 runtime: HostRuntime | None = None, quick: bool = False) -> None:
        self._nvml = Nvml(module=nvml_module, sysfs=sysfs)
        self._sysfs = sysfs or Sysfs()
        self._quick = quick
        self._runtime = runtime or HostRuntime()
        self._cupy_module = cupy_module
        self._timeout_s = timeout_s
        self._transfers: Transfers | None = None
        self._cuda_of: dict[int, int] = {}

    def nvml_session(self) -> Nvml:
        """The NVML session, for the agent's event thread (`probes/nvidia/nvml_events.py`)."""
        return self._nvml

    # ------------------------------------------------------------------ CUDA side

    def transfers(self) -> Transfers:
        """The CuPy side, started on first use; FabricUnavailable where CUDA is not usable."""
        if self._quick:
            raise FabricUnavailable("a quick fabric reads NVML only (no CUDA)")
        if self._transfers is None:
            tr = Transfers(self._cupy_module, timeout_s=self._timeout_s)
            by_bus = {normalize_bus_id(tr.bus_id(d)): d for d in range(tr.count)}
            self._cuda_of = {
                i: by_bus[normalize_bus_id(self._nvml.bus_id(i))]
                for i in range(self._nvml.gpu_count())
                if normalize_bus_id(self._nvml.bus_id(i)) in by_bus
            }
            tr.local_cpus = {c: parse_cpulist(self._nvml.cpu_affinity(i))
                             for i, c in self._cuda_of.items()}
            self._transfers = tr
        return self._transfers

    def _cuda(self, gpu: int) -> int:
        self._nvml.bus_id(gpu)  # BadProbeRequest for an index NVML does not know
        self.transfers()
        if gpu not in self._cuda_of:
            raise TransferError(f"GPU {gpu} is not visible to CUDA (CUDA_VISIBLE_DEVICES?)")
        return self._cuda_of[gpu]

    # ------------------------------------------------------------------ Fabric

    def host(self) -> HostIdentity:
        return HostIdentity(
            hostname=socket.gethostname(),
            fabric=self.name,
            driver_version=self._nvml.driver_version(),
            cuda_version=self._nvml.cuda_version(),
            probe_version=probes.__version__,  # also when run from a source tree
            probe_started_at=self._runtime.process_started_at(),
            driver_loaded_at=self._runtime.driver_loaded_at(),
        )

    def fabric_manager(self) -> FabricManagerInfo:
        return self._runtime.fabric_manager()

    def gpu_count(self) -> int:
        return self._nvml.gpu_count()

    def pci_gpus(self) -> list[PciGpu] | None:
        """The NVIDIA GPUs on the PCI bus, NVML's or not (probes/nvidia/sysfs.py)."""
        return self._sysfs.nvidia_gpus()

    def gpu(self, index: int) -> GpuInfo:
        info = self._nvml.gpu(index)
        try:
            rdma = self.transfers().gpudirect_rdma(self._cuda(index))
        except (FabricUnavailable, TransferError):
            return info
        return info.model_copy(
            update={"rdma": info.rdma.model_copy(update={"gpudirect_supported": rdma})}
        )

    def nvlinks(self, gpu: int) -> list[NvLinkPort]:
        return self._nvml.nvlinks(gpu, capabilities=not self._quick)

    def link_counters(self, gpu: int) -> list[LinkCounters]:
        return self._nvml.link_counters(gpu)

    def pcie_replay(self, gpu: int) -> int:
        return self._nvml.pcie_replay(gpu)

    def clocks(self, gpu: int) -> GpuClocks:
        return self._nvml.clocks(gpu)

    def pcie_aer(self, gpu: int) -> PcieAer:
        return self._nvml.pcie_aer(gpu)

    def imex(self) -> ImexStatus:
        return imex_status(self._runtime.root)

    def nics(self) -> list[NicDevice]:
        """Every RDMA device, with each GPU's PCIe path to it (probes/nvidia/nics.py)."""
        gpus = {i: self._nvml.bus_id(i) for i in range(self.gpu_count())}
        return NicReader(self._sysfs).devices(gpus)

    def nic_ports(self) -> list[NicPort]:
        return NicReader(self._sysfs).ports()

    def activity(self, gpu: int) -> GpuActivity:
        return self._nvml.activity(gpu)

    def pair(self, src: int, dst: int) -> PairInfo:
        info = self._nvml.pair(src, dst)
        try:
            tr = self.transfers()
            peer = tr.can_access_peer(self._cuda(src), self._cuda(dst))
        except (FabricUnavailable, TransferError):
            return info
        return info.model_copy(update={"can_access_peer": peer})

    def measure(self, spec: TestSpec) -> Measurement:
        if spec.test in NIC_TESTS:
            return self._gdr(spec)
        cuda = dataclasses.replace(
            spec,
            src=None if spec.src is None else self._cuda(spec.src),
            dst=None if spec.dst is None else self._cuda(spec.dst),
            gpus=tuple(self._cuda(g) for g in spec.gpus),
        )
        result = self.transfers().measure(cuda)
        nvml_of = {c: i for i, c in self._cuda_of.items()}
        result.wire_bytes = {nvml_of[c]: n for c, n in result.wire_bytes.items()}
        result.per_gpu = {nvml_of[c]: s for c, s in result.per_gpu.items()}  # a joint test's
        return result

    def _gdr(self, spec: TestSpec) -> Measurement:
        """gdr_loopback through the GPU's nearest NIC (probes/nvidia/gdr.py)."""
        assert spec.src is not None
        nic = self._sysfs.nearest_nic(self._nvml.bus_id(spec.src))
        if nic is None:
            raise NotSupported(f"no RDMA NIC near GPU{spec.src}: GPUDirect RDMA not measured")
        loop = Loopback(nic[0], self._cuda(spec.src), spec.bytes_per_copy,
                        spec.copies * spec.samples)
        return run_loopback(loop)

    def close(self) -> None:
        if self._transfers is not None:
            self._transfers.close()
            self._transfers = None
        self._nvml.close()
