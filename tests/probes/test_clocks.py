"""Clocks-event reasons: the header's bits decoded, read through the NVML seam (a fake pynvml
answering the one-H200 machine's measured figures), simulated throttles, and the sample's
place in the wire schema around each sweep."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from peerwatch.probes.clocks import REASON_BITS, THROTTLE_MASK, GpuClocks, decode, throttle_kinds
from peerwatch.probes.inventory import collect_counters
from peerwatch.probes.nvidia.nvml import Nvml, load_pynvml
from peerwatch.probes.nvidia.sysfs import Sysfs
from peerwatch.probes.report import CounterSample, Report, ReportKind, TestName
from peerwatch.probes.sim.faults import ThrottledGpu
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import SweepOptions, build_report
from tests.probes.fake_pynvml import H200_IDLE_CLOCKS, FakePynvml
from tests.probes.fakeclock import FakeClock


def test_reason_bits_are_the_bindings_own() -> None:
    """Every bit and name against nvidia-ml-py's constants (nvml.h's names)."""
    real = load_pynvml()
    camel = {"gpu_idle": "GpuIdle", "applications_clocks_setting": "ApplicationsClocksSetting",
             "sw_power_cap": "SwPowerCap", "hw_slowdown": "HwSlowdown",
             "sync_boost": "SyncBoost", "sw_thermal_slowdown": "SwThermalSlowdown",
             "hw_thermal_slowdown": "HwThermalSlowdown",
             "hw_power_brake_slowdown": "HwPowerBrakeSlowdown",
             "display_clock_setting": "DisplayClockSetting"}
    for bit, name, _ in REASON_BITS:
        assert getattr(real, f"nvmlClocksThrottleReason{camel[name]}") == bit, name
        assert getattr(real, f"nvmlClocksEventReason{camel[name]}") == bit, name


@pytest.mark.parametrize(("mask", "names", "kinds"), [
    (1, ["gpu_idle"], []),  # the one-H200 machine idle
    (0, [], []),
    (0x2 | 0x10, ["applications_clocks_setting", "sync_boost"], []),  # not throttles
    (0x4, ["sw_power_cap"], ["power"]),
    (0x80 | 0x1, ["gpu_idle", "hw_power_brake_slowdown"], ["power"]),
    (0x20 | 0x40, ["sw_thermal_slowdown", "hw_thermal_slowdown"], ["thermal"]),
    (0x8 | 0x4, ["sw_power_cap", "hw_slowdown"], ["power", "hw"]),
    (0x100, ["display_clock_setting"], []),
])
def test_decoding(mask: int, names: list[str], kinds: list[str]) -> None:
    assert decode(mask) == names
    assert throttle_kinds(mask) == kinds


def test_all_supported_bits_of_the_device_and_an_unknown_one() -> None:
    assert len(decode(511)) == 9  # the device's supported mask: every known reason
    assert decode(0x200 | 0x4) == ["sw_power_cap", "bit_0x200"]  # a newer driver's bit kept
    assert THROTTLE_MASK == 0x4 | 0x8 | 0x20 | 0x40 | 0x80


def _fake_with_clocks(**override: object) -> FakePynvml:
    fake = FakePynvml.from_dump()
    for d in fake.devices:
        d["clocks"] = {**copy.deepcopy(H200_IDLE_CLOCKS), **override}
    return fake


def test_nvml_reads_the_device_figures(tmp_path: Path) -> None:
    nvml = Nvml(module=_fake_with_clocks(), sysfs=Sysfs(tmp_path))
    try:
        c = nvml.clocks(0)
    finally:
        nvml.close()
    assert c == GpuClocks(gpu=0, reasons=1, reasons_supported=511, sm_clock_mhz=345,
                          sm_clock_max_mhz=1980, power_mw=78250, power_limit_mw=700000,
                          temperature_c=37, slowdown_temperature_c=89, violation_power_ns=0,
                          violation_thermal_ns=0)
    assert c.reason_names() == ["gpu_idle"] and c.throttled() == []


def test_a_gpu_without_the_queries_still_samples(tmp_path: Path) -> None:
    nvml = Nvml(module=FakePynvml.from_dump(), sysfs=Sysfs(tmp_path))  # no clocks answered
    try:
        assert nvml.clocks(1) == GpuClocks(gpu=1)
    finally:
        nvml.close()


def test_counters_around_a_sweep_carry_the_clocks(tmp_path: Path) -> None:
    from peerwatch.probes.nvidia.real import RealFabric
    fabric = RealFabric(nvml_module=_fake_with_clocks(reasons=0x4), sysfs=Sysfs(tmp_path),
                        quick=True)
    try:
        errors: list = []
        sample = collect_counters(fabric, errors)
    finally:
        fabric.close()
    assert [c.gpu for c in sample.clocks] == [0, 1]
    assert sample.clocks[0].throttled() == ["power"]


def test_a_throttled_simulated_gpu_says_why_and_runs_slower() -> None:
    clock = FakeClock()
    fab = SimulatedFabric("hgx8", seed=1, clock=clock)
    free = build_report(fab, options=SweepOptions(tests=(TestName.CE_WRITE,), gpus=(2, 3)))
    fab.inject(ThrottledGpu(gpu=3, reason="power", factor=0.7))
    clock.advance(30.0)
    held = build_report(fab, options=SweepOptions(tests=(TestName.CE_WRITE,), gpus=(2, 3)))
    before, after = held.counters[0].clocks[3], held.counters[-1].clocks[3]
    assert before.reasons == 0x4 and before.power_mw == 448_500
    assert before.power_limit_mw == 450_000 and before.sm_clock_mhz == int(1980 * 0.7)
    assert before.violation_power_ns == pytest.approx(30e9)
    assert held.counters[0].clocks[2].reasons == 0x1  # its neighbour idles
    assert free.counters[0].clocks[3].reasons == 0x1
    v = {(r.src, r.dst): r.value for r in held.results}
    f = {(r.src, r.dst): r.value for r in free.results}
    assert v[(2, 3)] / f[(2, 3)] == pytest.approx(0.7, rel=0.1)
    assert after.gpu == 3


def test_reports_without_clocks_stay_valid() -> None:
    """Schema 1 and 2 reports of older probes have no `clocks` (nor schema 4's driver
    health): still accepted."""
    sample = CounterSample.model_validate({"at": "2026-12-01T00:00:00Z"})
    assert sample.clocks == []
    report = build_report(SimulatedFabric("h200x2"), ReportKind.INVENTORY)
    raw = report.model_dump(mode="json")
    for c in raw["counters"]:
        del c["clocks"], c["aer"]
    for g in raw["inventory"]["gpus"]:
        del g["driver"]
    del raw["inventory"]["imex"]
    raw["schema_version"] = 1
    assert Report.model_validate(raw).counters[0].clocks == []


def test_a_clocks_sample_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="sm_clock_mhz"):
        GpuClocks(gpu=0, sm_clock_mhz=-5)
