"""Read a host's inventory and counters from any Fabric, one item at a time.

The node_exporter habit: each item (one GPU, its links, one pair, one GPU's counters) is read
on its own. An item the device does not offer (`NotSupported`) is simply absent; any other
probe error becomes a `ProbeError` naming the item, and the rest of the pass goes on. A GPU
whose identity cannot be read is left out of the inventory, and so are its pairs.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from peerwatch.probes.clocks import GpuClocks
from peerwatch.probes.errors import NotSupported, PeerwatchProbeError
from peerwatch.probes.fabric import Fabric
from peerwatch.probes.report import (
    CounterSample,
    GpuActivity,
    GpuEvidence,
    GpuInfo,
    HostIdentity,
    Inventory,
    LinkCounters,
    NvLinkPort,
    PairInfo,
    ProbeError,
    utcnow,
)

T = TypeVar("T")


def read_item(errors: list[ProbeError], where: str, read: Callable[[], T]) -> T | None:
    """`read()`, or None when unsupported or failed (a failure is recorded in `errors`)."""
    try:
        return read()
    except NotSupported:
        return None
    except PeerwatchProbeError as exc:
        errors.append(ProbeError(where=where[:200], message=(str(exc) or type(exc).__name__)[
            :2000]))
        return None


def read_host(fabric: Fabric, errors: list[ProbeError]) -> HostIdentity:
    host = read_item(errors, f"{fabric.name}.host", fabric.host)
    return host or HostIdentity(hostname=socket.gethostname() or "unknown", fabric=fabric.name)


def gpu_indices(fabric: Fabric, errors: list[ProbeError]) -> list[int]:
    count = read_item(errors, f"{fabric.name}.gpu_count", fabric.gpu_count)
    return list(range(count or 0))


def collect_inventory(fabric: Fabric, errors: list[ProbeError]) -> Inventory:
    """GPUs, NVLink ports and every ordered pair the fabric can describe."""
    name = fabric.name
    gpus: list[GpuInfo] = []
    for i in gpu_indices(fabric, errors):
        info = read_item(errors, f"{name}.gpu gpu={i}", partial(fabric.gpu, i))
        if info is not None:
            gpus.append(info)
    nvlinks: list[NvLinkPort] = []
    for g in gpus:
        nvlinks += read_item(errors, f"{name}.nvlinks gpu={g.index}",
                             partial(fabric.nvlinks, g.index)) or []
    pairs: list[PairInfo] = []
    for s in gpus:
        for d in gpus:
            if s.index != d.index:
                pair = read_item(errors, f"{name}.pair src={s.index} dst={d.index}",
                                 partial(fabric.pair, s.index, d.index))
                if pair is not None:
                    pairs.append(pair)
    # Optional in the Fabric seam: a backend that can look for Fabric Manager says so.
    read_fm = getattr(fabric, "fabric_manager", None)
    fm = read_item(errors, f"{name}.fabric_manager", read_fm) if read_fm else None
    read_imex = getattr(fabric, "imex", None)  # optional too: IMEX, where the host has it
    imex = read_item(errors, f"{name}.imex", read_imex) if read_imex else None
    return Inventory(gpus=gpus, nvlinks=nvlinks, pairs=pairs, fabric_manager=fm,
                     evidence=pci_evidence(fabric, errors), imex=imex,
                     nics=collect_host(fabric, errors, "nics"))


def pci_evidence(fabric: Fabric, errors: list[ProbeError]) -> GpuEvidence | None:
    """The NVIDIA GPUs on the PCI bus, NVML's or not (optional in the Fabric seam): what
    proves a GPU absent from NVML's list is missing, even in the first report a server
    sees. None when the backend cannot look."""
    read = getattr(fabric, "pci_gpus", None)
    found = read_item(errors, f"{fabric.name}.pci_gpus", read) if read else None
    return GpuEvidence(pci=found) if found is not None else None


def collect_counters(
    fabric: Fabric,
    errors: list[ProbeError],
    gpus: list[int] | None = None,
    at: datetime | None = None,
) -> CounterSample:
    """Link counters, PCIe replays and activity of each GPU (all of them when `gpus` is None)."""
    name = fabric.name
    indices = gpu_indices(fabric, errors) if gpus is None else gpus
    links: list[LinkCounters] = []
    replay: dict[int, int] = {}
    activity: list[GpuActivity] = []
    for g in indices:
        links += read_item(errors, f"{name}.link_counters gpu={g}",
                           partial(fabric.link_counters, g)) or []
        count = read_item(errors, f"{name}.pcie_replay gpu={g}", partial(fabric.pcie_replay, g))
        if count is not None:
            replay[g] = count
        act = read_item(errors, f"{name}.activity gpu={g}", partial(fabric.activity, g))
        if act is not None:
            activity.append(act)
    return CounterSample(at=at or utcnow(), links=links, pcie_replay=replay, activity=activity,
                         clocks=collect_clocks(fabric, errors, indices),
                         aer=collect_per_gpu(fabric, errors, indices, "pcie_aer"),
                         nic_ports=collect_host(fabric, errors, "nic_ports"))


def collect_host(fabric: Fabric, errors: list[ProbeError], method: str) -> list[Any]:
    """`fabric.<method>()` where the backend offers it (optional in the Fabric seam:
    `nics`, `nic_ports`); an unsupported or failed read is an empty list and a named error."""
    read = getattr(fabric, method, None)
    if read is None:
        return []
    return read_item(errors, f"{fabric.name}.{method}", read) or []


def collect_clocks(fabric: Fabric, errors: list[ProbeError], gpus: list[int]) -> list[GpuClocks]:
    """Clocks-event reasons, clocks, power and temperature of each GPU (probes/clocks.py):
    optional in the Fabric seam, so a backend without `clocks` sends none."""
    return collect_per_gpu(fabric, errors, gpus, "clocks")


def collect_per_gpu(fabric: Fabric, errors: list[ProbeError], gpus: list[int],
                    method: str) -> list[Any]:
    """`fabric.<method>(gpu)` of each GPU, where the backend offers it (optional in the
    Fabric seam: `clocks`, `pcie_aer`); an unsupported or failed one is left out."""
    read = getattr(fabric, method, None)
    if read is None:
        return []
    found = (read_item(errors, f"{fabric.name}.{method} gpu={g}", partial(read, g))
             for g in gpus)
    return [c for c in found if c is not None]
