"""The simulated host's fabric services: NVSwitch registration, Fabric Manager, peer copies.

Pure functions of (preset, faults), like `simtopo.py`, so what NVML would report and what the
transfer tests do can never disagree: `FabricNotCompleted` / `FabricStatusError` /
`FabricUnhealthy` change the GPU fabric info, `FabricManagerDown` the Fabric Manager process,
`PeerCopiesFail` makes the pair's P2P tests fail while links and fabric look fine.
On a rack preset (GB200 NVL72) the cluster UUID is derived from the rack's name, so the 18
trays of one rack share it; `SwitchTrayLost`, `InsufficientNvlinks` and `CliqueMoved` change
the health summary, mask and clique id the way NVML would report them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from peerwatch.probes.errors import BadProbeRequest
from peerwatch.probes.fabric import TestSpec
from peerwatch.probes.report import FabricManagerInfo, SwitchFabricInfo
from peerwatch.probes.sim.faults import (
    CliqueMoved,
    FabricManagerDown,
    FabricNotCompleted,
    FabricStatusError,
    FabricUnhealthy,
    Fault,
    InsufficientNvlinks,
    NvSwitchLost,
    PeerCopiesFail,
    SwitchTrayLost,
)
from peerwatch.probes.sim.presets import Preset, rack_cluster_uuid
from peerwatch.probes.test_kinds import kind_of

# nvmlGpuFabricInfo_v3 health mask bits, as `probes/nvidia/nvml_fabric.py` decodes them:
# DEGRADED_BW = 1 at shift 0; INCORRECT_CONFIGURATION = 5 (insufficient NVLinks) at shift 8.
DEGRADED_BANDWIDTH = (0x1, "degraded_bandwidth")
INSUFFICIENT_NVLINKS = (0x5 << 8, "incorrect_configuration:insufficient_nvlinks")
HEALTH_RANK = {"healthy": 0, "limited_capacity": 1, "unhealthy": 2}  # worse is higher


def _applies(fault_gpu: int | None, gpu: int) -> bool:
    return fault_gpu is None or fault_gpu == gpu


def _worse_health(fields: dict[str, Any], health: str, mask_issue: tuple[int, str]) -> None:
    """Add one health-mask issue and keep the worse of the two health summaries."""
    mask, issue = mask_issue
    if HEALTH_RANK[health] > HEALTH_RANK.get(fields.get("health") or "healthy", 0):
        fields["health"] = health
    fields["health_mask"] = (fields.get("health_mask") or 0) | mask
    fields["health_issues"] = [*fields.get("health_issues", []), issue]


def _rack_faults(fields: dict[str, Any], faults: Sequence[Fault], gpu: int) -> None:
    for f in faults:
        if isinstance(f, SwitchTrayLost):
            _worse_health(fields, "limited_capacity", DEGRADED_BANDWIDTH)
        elif isinstance(f, InsufficientNvlinks) and f.gpu == gpu:
            _worse_health(fields, "unhealthy", INSUFFICIENT_NVLINKS)
        elif isinstance(f, CliqueMoved):
            fields["clique_id"] = f.clique_id


def switch_fabric(preset: Preset, faults: Sequence[Fault], gpu: int,
                  rack: str | None = None) -> SwitchFabricInfo | None:
    """What NVML's GPU fabric info would say for `gpu` (None: no fabric on this machine);
    on a rack preset, `rack` names the rack (default: the preset's)."""
    if preset.switch_fabric is None:
        return None
    fields = preset.switch_fabric.model_dump()
    fields.setdefault("source", "v3")
    if preset.rack is not None:
        fields["cluster_uuid"] = rack_cluster_uuid(rack or preset.rack.name)
        _rack_faults(fields, faults, gpu)
    if any(isinstance(f, NvSwitchLost) for f in faults):
        _worse_health(fields, "limited_capacity", DEGRADED_BANDWIDTH)
    for f in faults:
        if isinstance(f, FabricNotCompleted) and _applies(f.gpu, gpu):
            fields["state"] = f.state
        elif isinstance(f, FabricStatusError) and _applies(f.gpu, gpu):
            fields["status"] = f.status
        elif isinstance(f, FabricUnhealthy) and _applies(f.gpu, gpu):
            fields["health"], fields["health_issues"] = f.health, list(f.issues)
    return SwitchFabricInfo(**fields)


def check_fault(preset: Preset, fault: Fault) -> None:
    """BadProbeRequest for a rack fault the preset cannot suffer (no rack, no such tray)."""
    check_switch(preset, fault)
    if isinstance(fault, SwitchTrayLost | CliqueMoved) and preset.rack is None:
        raise BadProbeRequest(f"{type(fault).__name__} needs a rack preset (nvl72), "
                              f"not {preset.name!r}")
    if isinstance(fault, SwitchTrayLost) and preset.rack is not None and \
            not 0 <= fault.tray < preset.rack.switch_trays:
        raise BadProbeRequest(f"switch tray {fault.tray} is not one of the rack's "
                              f"{preset.rack.switch_trays} (0..{preset.rack.switch_trays - 1})")


def check_switch(preset: Preset, fault: Fault) -> None:
    """BadProbeRequest for a lost NVSwitch on a preset with none, or links it lacks."""
    if not isinstance(fault, NvSwitchLost):
        return
    if preset.nvlink.fabric != "nvswitch":
        raise BadProbeRequest(f"NvSwitchLost needs an NVSwitch preset, not {preset.name!r}")
    bad = [k for k in fault.links if not 0 <= k < preset.nvlink.links_per_gpu]
    if bad or not fault.links:
        raise BadProbeRequest(f"NvSwitchLost links {list(fault.links)}: each must be one of "
                              f"0..{preset.nvlink.links_per_gpu - 1}")


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
    if not kind_of(spec.test).peer_to_peer or spec.dst is None:
        return None
    for f in faults:
        if isinstance(f, PeerCopiesFail) and {spec.src, spec.dst} == {f.a, f.b}:
            return f"{spec.label()}: {f.message}"
    return None
