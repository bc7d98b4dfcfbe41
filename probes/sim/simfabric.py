"""The simulated host's fabric services: NVSwitch registration, Fabric Manager, peer copies.

Pure functions of (preset, faults), like `simtopo.py`, so what NVML would report and what the
transfer tests do can never disagree: `FabricNotCompleted` / `FabricStatusError` /
`FabricUnhealthy` change the GPU fabric info, `FabricManagerDown` the Fabric Manager process,
`PeerCopiesFail` makes the pair's P2P tests fail while links and fabric look fine.
"""

from __future__ import annotations

from collections.abc import Sequence

from probes.fabric import TestSpec
from probes.report import FabricManagerInfo, SwitchFabricInfo, TestName
from probes.sim.faults import (
    FabricManagerDown,
    FabricNotCompleted,
    FabricStatusError,
    FabricUnhealthy,
    Fault,
    PeerCopiesFail,
)
from probes.sim.presets import Preset


def _applies(fault_gpu: int | None, gpu: int) -> bool:
    return fault_gpu is None or fault_gpu == gpu


def switch_fabric(preset: Preset, faults: Sequence[Fault], gpu: int) -> SwitchFabricInfo | None:
    """What NVML's GPU fabric info would say for `gpu` (None: no fabric on this machine)."""
    if preset.switch_fabric is None:
        return None
    fields = preset.switch_fabric.model_dump()
    fields.setdefault("source", "v3")
    for f in faults:
        if isinstance(f, FabricNotCompleted) and _applies(f.gpu, gpu):
            fields["state"] = f.state
        elif isinstance(f, FabricStatusError) and _applies(f.gpu, gpu):
            fields["status"] = f.status
        elif isinstance(f, FabricUnhealthy) and _applies(f.gpu, gpu):
            fields["health"], fields["health_issues"] = f.health, list(f.issues)
    return SwitchFabricInfo(**fields)


def fabric_manager(preset: Preset, faults: Sequence[Fault]) -> FabricManagerInfo:
    if preset.nvlink.fabric != "nvswitch":
        return FabricManagerInfo(running=False, how="not installed (no NVSwitch)",
                                 installed=False)
    if any(isinstance(f, FabricManagerDown) for f in faults):
        return FabricManagerInfo(running=False, how="no nv-fabricmanager process (simulated)",
                                 installed=True)
    return FabricManagerInfo(running=True, how="process nv-fabricmanager (simulated)",
                             installed=True)


def peer_copy_failure(faults: Sequence[Fault], spec: TestSpec) -> str | None:
    """The error a P2P test between two GPUs hit by `PeerCopiesFail` raises, else None."""
    if spec.test in (TestName.STAGED, TestName.ALLREDUCE) or spec.dst is None:
        return None
    for f in faults:
        if isinstance(f, PeerCopiesFail) and {spec.src, spec.dst} == {f.a, f.b}:
            return f"{spec.label()}: {f.message}"
    return None
