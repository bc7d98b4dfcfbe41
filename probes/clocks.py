"""Why a GPU's clocks were held down when it was sampled: NVML's clocks-event reasons, decoded.

`nvmlDeviceGetCurrentClocksEventReasons` answers a bit mask. The bits and their names are
those of NVML's header (nvml.h, `nvmlClocksEventReason*`; the older spelling
`nvmlClocksThrottleReason*` carries the same values, and nvidia-ml-py's pynvml.py defines
both). Only some bits mean the GPU could not run as fast as a test asked:

    throttle (power)    sw_power_cap (0x4), hw_power_brake_slowdown (0x80)
    throttle (thermal)  sw_thermal_slowdown (0x20), hw_thermal_slowdown (0x40)
    throttle (HW)       hw_slowdown (0x8): thermal, power brake or high draw, in hardware
    not a throttle      gpu_idle (0x1: nothing runs, clocks drop, the usual between tests),
                        applications_clocks_setting (0x2: an operator's chosen clocks),
                        sync_boost (0x10: held with its sync-boost group),
                        display_clock_setting (0x100)

A sample whose mask holds a throttle bit is a GPU held below its clocks for power, heat or
a hardware slowdown: a slow transfer then says more about the GPU than about the fabric.
The model here travels in the wire schema (`CounterSample.clocks`); every field is optional
so a probe that cannot read one still reports the rest.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

# (bit, name, kind): kind "power" | "thermal" | "hw" is a throttle; "none" is not.
ReasonKind = Literal["power", "thermal", "hw", "none"]
REASON_BITS: tuple[tuple[int, str, ReasonKind], ...] = (
    (0x0000000000000001, "gpu_idle", "none"),  # nvmlClocksEventReasonGpuIdle
    (0x0000000000000002, "applications_clocks_setting", "none"),
    (0x0000000000000004, "sw_power_cap", "power"),  # nvmlClocksEventReasonSwPowerCap
    (0x0000000000000008, "hw_slowdown", "hw"),  # nvmlClocksThrottleReasonHwSlowdown
    (0x0000000000000010, "sync_boost", "none"),  # nvmlClocksEventReasonSyncBoost
    (0x0000000000000020, "sw_thermal_slowdown", "thermal"),
    (0x0000000000000040, "hw_thermal_slowdown", "thermal"),
    (0x0000000000000080, "hw_power_brake_slowdown", "power"),
    (0x0000000000000100, "display_clock_setting", "none"),
)
REASON_NAMES: tuple[str, ...] = tuple(name for _, name, _ in REASON_BITS)
THROTTLE_MASK = sum(bit for bit, _, kind in REASON_BITS if kind != "none")
# What an operator reads for each throttle kind ("GPU3 power-capped during the test").
KIND_WORDS: dict[str, str] = {"power": "power-capped", "thermal": "thermally throttled",
                              "hw": "in HW slowdown"}

_Int = Annotated[int, Field(ge=0, le=2**63 - 1)]
_Mhz = Annotated[int, Field(ge=0, le=100_000)]
_Celsius = Annotated[int, Field(ge=-100, le=1000)]


def decode(mask: int) -> list[str]:
    """The reason names of every known bit set in `mask`, in header order; unknown bits as
    "bit_0x..." so nothing a newer driver sets is silently dropped."""
    names = [name for bit, name, _ in REASON_BITS if mask & bit]
    unknown = mask & ~sum(bit for bit, _, _ in REASON_BITS)
    names += [f"bit_{1 << b:#x}" for b in range(64) if unknown >> b & 1]
    return names


def throttle_kinds(mask: int) -> list[str]:
    """The throttle kinds ("power", "thermal", "hw") `mask` holds, each once, in that order;
    empty for idle, application clocks, sync boost alone."""
    kinds = {kind for bit, _, kind in REASON_BITS if mask & bit and kind != "none"}
    return [k for k in ("power", "thermal", "hw") if k in kinds]


class GpuClocks(BaseModel):
    """One GPU's clocks, power and temperature at one instant, with why its clocks were held.

    `violation_*_ns` are NVML's lifetime violation counters (nvmlDeviceGetViolationStatus:
    time spent held by a power or thermal policy): their rise between the samples before and
    after a sweep says throttling happened during it, even when both instants look clear.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu: Annotated[int, Field(ge=0, lt=64)]
    reasons: _Int | None = None  # nvmlDeviceGetCurrentClocksEventReasons
    reasons_supported: _Int | None = None  # ...GetSupportedClocksEventReasons
    sm_clock_mhz: _Mhz | None = None
    sm_clock_max_mhz: _Mhz | None = None
    power_mw: _Int | None = None  # nvmlDeviceGetPowerUsage
    power_limit_mw: _Int | None = None  # nvmlDeviceGetEnforcedPowerLimit
    temperature_c: _Celsius | None = None
    slowdown_temperature_c: _Celsius | None = None  # NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
    violation_power_ns: _Int | None = None
    violation_thermal_ns: _Int | None = None

    def reason_names(self) -> list[str]:
        return decode(self.reasons or 0)

    def throttled(self) -> list[str]:
        return throttle_kinds(self.reasons or 0)
