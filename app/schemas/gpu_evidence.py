"""API shapes of a GPU's own evidence on the host page: its newest clocks sample (why its
clocks were held, probes/clocks.py) and its GPUDirect RDMA readiness (app/analysis/rdma.py)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from peerwatch.app.analysis.rdma import RdmaVerdict
from peerwatch.probes.clocks import KIND_WORDS, GpuClocks


class GpuClocksOut(BaseModel):
    at: datetime
    reasons: list[str] = Field(description="Clocks-event reasons set (NVML's header names, "
                               "e.g. gpu_idle, sw_power_cap).", examples=[["sw_power_cap"]])
    throttle: list[str] = Field(description="Throttle kinds of the sweep this sample belongs "
                                "to: power, thermal, hw (never idle or app clocks).")
    label: str | None = Field(description="\"power-capped\", or None when not throttled.")
    sm_clock_mhz: int | None
    sm_clock_max_mhz: int | None
    power_w: float | None
    power_limit_w: float | None
    temperature_c: int | None
    slowdown_temperature_c: int | None

    @classmethod
    def of(cls, at: datetime, c: GpuClocks, throttle: list[str]) -> GpuClocksOut:
        return cls(at=at, reasons=c.reason_names(), throttle=throttle,
                   label=" and ".join(KIND_WORDS[k] for k in throttle if k in KIND_WORDS)
                   or None,
                   sm_clock_mhz=c.sm_clock_mhz, sm_clock_max_mhz=c.sm_clock_max_mhz,
                   power_w=None if c.power_mw is None else c.power_mw / 1000,
                   power_limit_w=None if c.power_limit_mw is None else c.power_limit_mw / 1000,
                   temperature_c=c.temperature_c,
                   slowdown_temperature_c=c.slowdown_temperature_c)


class RdmaReadinessOut(BaseModel):
    readiness: str = Field(description="ready | poor | not_ready | unknown",
                           examples=["ready"])
    reason: str
    action: str
    read: str = Field(description="What the verdict was read from, in one line.")

    @classmethod
    def of(cls, v: RdmaVerdict) -> RdmaReadinessOut:
        return cls(**v.as_dict())
