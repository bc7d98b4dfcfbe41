"""What a simulated GPU's driver says of it (probes/gpu_health.py), under the faults.

A healthy GPU reads as the H200 machine does: recovery action none, ECC counts 0, no row
remapped, retired pages "not supported" (GPUs with row remapping have no page retirement),
AER counters 0 on the GPU and its bridge (modelled as one bus number above it, as
`simclocks.py` does). IMEX is present and READY on the rack presets (`rack` set), not
present elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from peerwatch.probes.gpu_health import (
    AER_KINDS,
    AerCounts,
    EccCounts,
    GpuDriverHealth,
    ImexStatus,
    PcieAer,
    RowRemap,
)
from peerwatch.probes.sim.driver_faults import (
    AerGrowth,
    DriverFault,
    GpuRecoveryAction,
    RowRemapFailed,
    RowRemapPending,
)
from peerwatch.probes.sim.faults import Fault
from peerwatch.probes.sim.simclocks import bridge_of

NO_RETIREMENT = ("not supported: nvml.retired_pages: nvmlDeviceGetRetiredPages: Not Supported "
                 "(row remapping GPU)")
# (gpu, at_bridge, kind) -> the AER count grown so far
AerCounted = Mapping[tuple[int, bool, str], float]


def _of(faults: Sequence[Fault], cls: type[DriverFault], gpu: int) -> list[DriverFault]:
    return [f for f in faults if isinstance(f, cls) and f.gpu == gpu]


def driver_health(faults: Sequence[Fault], gpu: int) -> GpuDriverHealth:
    action = next((f.action for f in _of(faults, GpuRecoveryAction, gpu)
                   if isinstance(f, GpuRecoveryAction)), "none")
    failed = bool(_of(faults, RowRemapFailed, gpu))
    pending = bool(_of(faults, RowRemapPending, gpu))
    return GpuDriverHealth(
        recovery_action=action,
        ecc=EccCounts(volatile_corrected=1 if pending else 0,
                      volatile_uncorrected=1 if failed else 0,
                      aggregate_corrected=1 if pending else 0,
                      aggregate_uncorrected=1 if failed else 0),
        row_remap=RowRemap(corrected_rows=1 if pending else 0,
                           uncorrected_rows=1 if failed else 0,
                           pending=pending, failure=failed),
        unread={"retired_pages": NO_RETIREMENT})


def grow_aer(faults: Sequence[Fault], counted: dict[tuple[int, bool, str], float],
             dt: float) -> None:
    """Add `dt` seconds of every AerGrowth to `counted`."""
    for f in faults:
        if isinstance(f, AerGrowth):
            key = (f.gpu, f.at_bridge, f.kind)
            counted[key] = counted.get(key, 0.0) + f.per_second * dt


def pcie_aer(gpu: int, bus_id: str, counted: AerCounted) -> PcieAer:
    def counts(at_bridge: bool) -> AerCounts:
        return AerCounts(**{k: int(counted.get((gpu, at_bridge, k), 0.0)) for k in AER_KINDS})

    return PcieAer(gpu=gpu, device=counts(False), bridge=bridge_of(bus_id),
                   bridge_counts=counts(True))


def imex(rack: object | None) -> ImexStatus:
    if rack is None:
        return ImexStatus(present=False, running=False,
                          how="not present: no nvidia-imex binary, config or process")
    return ImexStatus(present=True, running=True, state="READY", how="simulated")
