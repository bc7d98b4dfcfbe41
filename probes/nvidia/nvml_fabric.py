"""GPU fabric registration read through an `Nvml` session, without ever crashing the agent.

On a one-H200 machine without NVLink (driver 580.159.04, nvidia-ml-py 13.610),
`nvmlDeviceGetGpuFabricInfoV` killed the Python process with SIGSEGV, whatever struct version
it was given, while the legacy `nvmlDeviceGetGpuFabricInfo` answered state NOT_SUPPORTED
(../shared/REFERENCE.md section 6). A segfault cannot be caught, so the order is fixed:

1. the legacy call decides. NotSupported, or state 0 (NOT_SUPPORTED): the GPU has no fabric,
   and the V call is never made;
2. only a GPU whose legacy answer names a real state (not started, in progress, completed)
   is asked through V (v3 struct, then v2) for the health mask and summary; if V is
   refused, the legacy answer stands;
3. bindings without the legacy call: the V call runs once in a child process
   (`python -m peerwatch.probes.nvidia.nvml --fabric-check GPU`); only if the child lives is V
   called here.

The health mask is decoded into issue names (`decode_health_mask`), kept beside the raw mask.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

from peerwatch.probes.errors import NotSupported
from peerwatch.probes.nvidia.nvml_session import NvmlSession
from peerwatch.probes.report import SwitchFabricInfo

FABRIC_STATES = {1: "not_started", 2: "in_progress", 3: "completed"}
FABRIC_HEALTH = {1: "healthy", 2: "unhealthy", 3: "limited_capacity"}
# (issue name, shift, width mask, value that means "yes, this issue") from nvml.h
HEALTH_BITS = (
    ("degraded_bandwidth", 0, 0x3, 1),
    ("route_recovery_in_progress", 2, 0x3, 1),
    ("route_unhealthy", 4, 0x3, 1),
    ("access_timeout_recovery", 6, 0x3, 1),
)
INCORRECT_CONFIGURATION = {2: "incorrect_sysguid", 3: "incorrect_chassis_sn",
                           4: "no_partition", 5: "insufficient_nvlinks",
                           6: "incompatible_gpu_fw", 7: "invalid_location",
                           8: "gpu_state_invalid"}
GFM_DISCONNECTED = 2  # shift 14, width 0x3
CHILD_TIMEOUT_S = 20.0

ChildCheck = Callable[[int], bool]


def decode_health_mask(mask: int) -> list[str]:
    """Issue names set in nvmlGpuFabricInfo_v2+'s healthMask (empty: none reported)."""
    issues = [name for name, shift, width, yes in HEALTH_BITS if (mask >> shift) & width == yes]
    config = (mask >> 8) & 0xF
    if config in INCORRECT_CONFIGURATION:
        issues.append(f"incorrect_configuration:{INCORRECT_CONFIGURATION[config]}")
    if (mask >> 14) & 0x3 == GFM_DISCONNECTED:
        issues.append("fabric_manager_disconnected")
    return issues


def child_fabric_check(gpu: int) -> bool:
    """True when nvmlDeviceGetGpuFabricInfoV returned (any answer) in a child process."""
    try:
        argv = [sys.executable, "-m", "peerwatch.probes.nvidia.nvml", "--fabric-check", str(gpu)]
        done = subprocess.run(argv, capture_output=True, timeout=CHILD_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


class FabricReader:
    """Reads `SwitchFabricInfo` for one GPU at a time through `nvml` (see module docstring)."""

    def __init__(self, nvml: NvmlSession, child_check: ChildCheck = child_fabric_check) -> None:
        self.nvml = nvml
        self.child_check = child_check
        self._child_ok: dict[int, bool] = {}

    def read(self, gpu: int) -> SwitchFabricInfo | None:
        """The GPU's fabric registration; None where it has no fabric to join."""
        m = self.nvml.module
        legacy = self._legacy(gpu)
        if legacy is None and getattr(m, "nvmlDeviceGetGpuFabricInfo", None) is not None:
            return None  # the legacy call said NOT_SUPPORTED: never ask V
        if legacy is not None and int(legacy.state) == 0:
            return None
        if legacy is None and not self._child_says_safe(gpu):
            return None
        detailed = self._v(gpu)
        if detailed is not None:
            return self._info(*detailed)
        return None if legacy is None else self._info(legacy, "legacy")

    def _legacy(self, gpu: int) -> Any:
        struct = getattr(self.nvml.module, "c_nvmlGpuFabricInfo_t", None)
        if struct is None or getattr(self.nvml.module, "nvmlDeviceGetGpuFabricInfo", None) is None:
            return None
        info = struct()
        try:
            self.nvml.call(f"nvml.fabric gpu={gpu}", "nvmlDeviceGetGpuFabricInfo",
                            self.nvml.handle(gpu), self.nvml.module.byref(info))
        except NotSupported:
            return None
        return info

    def _child_says_safe(self, gpu: int) -> bool:
        if gpu not in self._child_ok:
            self._child_ok[gpu] = self.child_check(gpu)
        return self._child_ok[gpu]

    def _v(self, gpu: int) -> tuple[Any, str] | None:
        m = self.nvml.module
        if getattr(m, "nvmlDeviceGetGpuFabricInfoV", None) is None:
            return None
        for version, struct_name in (("v3", "c_nvmlGpuFabricInfo_v3_t"),
                                     ("v2", "c_nvmlGpuFabricInfo_v2_t")):
            struct = getattr(m, struct_name, None)
            if struct is None:
                continue
            info = struct()
            try:
                self.nvml.call(f"nvml.fabric gpu={gpu}", "nvmlDeviceGetGpuFabricInfoV",
                                self.nvml.handle(gpu), m.byref(info))
            except NotSupported:
                continue
            return info, version
        return None

    def _info(self, info: Any, source: str) -> SwitchFabricInfo | None:
        state = int(info.state)
        if state == 0:
            return None
        uuid_bytes = bytes(info.clusterUuid)
        summary = getattr(info, "healthSummary", None)
        mask = getattr(info, "healthMask", None)
        return SwitchFabricInfo(
            state=FABRIC_STATES.get(state, f"state_{state}"),
            status=self.nvml.return_name(int(info.status)),
            clique_id=int(info.cliqueId),
            cluster_uuid=uuid_bytes.hex() if any(uuid_bytes) else None,
            health=None if summary is None else FABRIC_HEALTH.get(int(summary)),
            health_mask=None if mask is None else int(mask),
            health_issues=[] if mask is None else decode_health_mask(int(mask)),
            source=source,
        )


def fabric_check_main(gpu: int, module: Any) -> int:
    """The child process: call V once on `gpu`; exit 0 if it returned (a crash kills us)."""
    module.nvmlInit()
    try:
        handle = module.nvmlDeviceGetHandleByIndex(gpu)
        struct = (getattr(module, "c_nvmlGpuFabricInfo_v3_t", None)
                  or module.c_nvmlGpuFabricInfo_v2_t)
        try:
            module.nvmlDeviceGetGpuFabricInfoV(handle, module.byref(struct()))
        except module.NVMLError:
            pass  # refused is fine: it did not crash
        return 0
    finally:
        module.nvmlShutdown()
