"""One GPU's clocks, power, temperature and clocks-event reasons, read through `Nvml`.

Read through the session's `call`/`maybe` (so `nvml.py` stays the only importer of pynvml):
each value NVML does not offer is simply None, and the sample still goes out. The calls,
as measured on the one-H200 machine (driver 580.159.04): current and supported clocks-event
reasons (1 = gpu_idle of mask 511), SM clock and its maximum (345 of 1980 MHz idle), power
draw and the enforced limit (78 of 700 W), GPU temperature and the slowdown threshold (37 and
89 C), and the power and thermal violation counters (nvmlDeviceGetViolationStatus: the
`violationTime` in ns, 0 there). Older bindings name the reasons calls
`...ClocksThrottleReasons`; the newer `...ClocksEventReasons` is tried first.
"""

from __future__ import annotations

from typing import Any

from peerwatch.probes.clocks import GpuClocks
from peerwatch.probes.nvidia.nvml_session import NvmlSession

REASON_CALLS = ("nvmlDeviceGetCurrentClocksEventReasons",
                "nvmlDeviceGetCurrentClocksThrottleReasons")
SUPPORTED_CALLS = ("nvmlDeviceGetSupportedClocksEventReasons",
                   "nvmlDeviceGetSupportedClocksThrottleReasons")


def _first(nvml: NvmlSession, where: str, names: tuple[str, ...], *args: Any) -> int | None:
    for name in names:
        if getattr(nvml.module, name, None) is not None:
            value = nvml.maybe(where, name, *args)
            return None if value is None else int(value)
    return None


def _int(nvml: NvmlSession, where: str, name: str, *args: Any) -> int | None:
    value = nvml.maybe(where, name, *args)
    return None if value is None else int(value)


def _violation_ns(nvml: NvmlSession, where: str, h: Any, policy: str, default: int) -> int | None:
    status = nvml.maybe(where, "nvmlDeviceGetViolationStatus", h,
                        getattr(nvml.module, policy, default))
    time_ns = getattr(status, "violationTime", None) if status is not None else None
    return None if time_ns is None else int(time_ns)


def read_clocks(nvml: NvmlSession, gpu: int) -> GpuClocks:
    """The sample of GPU `gpu` now; a failing query (not "not supported") raises
    NvmlQueryError, which the caller records for that GPU."""
    h, where, m = nvml.handle(gpu), f"nvml.clocks gpu={gpu}", nvml.module
    sm = getattr(m, "NVML_CLOCK_SM", 1)
    return GpuClocks(
        gpu=gpu,
        reasons=_first(nvml, where, REASON_CALLS, h),
        reasons_supported=_first(nvml, where, SUPPORTED_CALLS, h),
        sm_clock_mhz=_int(nvml, where, "nvmlDeviceGetClockInfo", h, sm),
        sm_clock_max_mhz=_int(nvml, where, "nvmlDeviceGetMaxClockInfo", h, sm),
        power_mw=_int(nvml, where, "nvmlDeviceGetPowerUsage", h),
        power_limit_mw=_int(nvml, where, "nvmlDeviceGetEnforcedPowerLimit", h),
        temperature_c=_int(nvml, where, "nvmlDeviceGetTemperature", h,
                           getattr(m, "NVML_TEMPERATURE_GPU", 0)),
        slowdown_temperature_c=_int(nvml, where, "nvmlDeviceGetTemperatureThreshold", h,
                                    getattr(m, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1)),
        violation_power_ns=_violation_ns(nvml, where, h, "NVML_PERF_POLICY_POWER", 0),
        violation_thermal_ns=_violation_ns(nvml, where, h, "NVML_PERF_POLICY_THERMAL", 1),
    )
