"""Take a snapshot: read one host's fabric state through any Fabric, fast, with no transfers.

It runs in a Slurm prolog and epilog, so it must stay well under a second on an 8-GPU host.
What keeps it cheap:
- only what a diff needs: per GPU its identity, PCIe, fabric registration and the driver's
  own verdicts (`gpu`), its NVLink ports (`nvlinks`), their counters (`link_counters`) and
  its PCIe AER counters (`pcie_aer`, sysfs); IMEX where the host has it; no pair queries (56 ordered
  pairs x 6 NVML calls on 8 GPUs), no activity, no transfers;
- on the real fabric the caller opens it `quick` (`open_fabric(..., quick=True)`): NVML only,
  never CuPy/CUDA (a CUDA start costs seconds), and no static per-link capability calls;
- GPUs are read in parallel threads (`workers`): NVML calls release the GIL and are
  thread-safe, so 8 GPUs cost about what one costs.
Each item is read with the inventory's `read_item`: a failing item is recorded in `errors`,
the rest of the snapshot stands.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

from peerwatch.probes.fabric import Fabric
from peerwatch.probes.gpu_health import PcieAer
from peerwatch.probes.inventory import gpu_indices, read_host, read_item
from peerwatch.probes.report import (
    CounterSample,
    GpuInfo,
    Inventory,
    LinkCounters,
    NvLinkPort,
    ProbeError,
    utcnow,
)
from peerwatch.probes.snapshot import Phase, Snapshot


@dataclass
class _GpuPart:
    info: GpuInfo | None = None
    ports: list[NvLinkPort] = field(default_factory=list)
    counters: list[LinkCounters] = field(default_factory=list)
    aer: PcieAer | None = None
    errors: list[ProbeError] = field(default_factory=list)


def _read_gpu(fabric: Fabric, index: int) -> _GpuPart:
    part = _GpuPart()
    where = f"{fabric.name}.%s gpu={index}"
    part.info = read_item(part.errors, where % "gpu", partial(fabric.gpu, index))
    if part.info is None:
        return part  # a GPU whose identity cannot be read is left out, as in an inventory
    part.ports = read_item(part.errors, where % "nvlinks", partial(fabric.nvlinks, index)) or []
    part.counters = read_item(part.errors, where % "link_counters",
                              partial(fabric.link_counters, index)) or []
    read_aer = getattr(fabric, "pcie_aer", None)  # optional in the seam: sysfs, cheap
    part.aer = read_item(part.errors, where % "pcie_aer", partial(read_aer, index)) \
        if read_aer else None
    return part


def take_snapshot(fabric: Fabric, *, job_id: str | None = None, phase: Phase = Phase.MANUAL,
                  workers: int = 1) -> Snapshot:
    """The host's fabric state now; `workers` > 1 reads that many GPUs at once."""
    started, taken_at = time.perf_counter(), utcnow()
    errors: list[ProbeError] = []
    host = read_host(fabric, errors)
    indices = gpu_indices(fabric, errors)
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(indices)))) as pool:
        parts = list(pool.map(partial(_read_gpu, fabric), indices))
    read_fm = getattr(fabric, "fabric_manager", None)  # optional in the seam, as in inventory
    fm = read_item(errors, f"{fabric.name}.fabric_manager", read_fm) if read_fm else None
    gpus = [p.info for p in parts if p.info is not None]
    read_imex = getattr(fabric, "imex", None)
    imex = read_item(errors, f"{fabric.name}.imex", read_imex) if read_imex else None
    inventory = Inventory(gpus=gpus, nvlinks=[port for p in parts for port in p.ports],
                          fabric_manager=fm, imex=imex)
    counters = CounterSample(
        at=utcnow(), links=[c for p in parts for c in p.counters],
        pcie_replay={g.index: g.pcie.replay_count for g in gpus
                     if g.pcie.replay_count is not None},
        aer=[p.aer for p in parts if p.aer is not None])
    return Snapshot(host=host, taken_at=taken_at, took_s=time.perf_counter() - started,
                    job_id=job_id, phase=phase, inventory=inventory, counters=counters,
                    errors=errors + [e for p in parts for e in p.errors])
