"""The agent's per-GPU clock series: why the clocks were held, and the figures beside it.

From the newest pass's last clocks sample (probes/clocks.py). `reason` is bounded: the nine
names of NVML's header (`REASON_NAMES`), each always exported as 0 or 1, so a query such as
`peerwatch_gpu_clock_event_reasons{reason="sw_power_cap"} == 1` never meets a missing
series; `peerwatch_gpu_throttled` is 1 when a power, thermal or HW slowdown bit is set (not
idle, application clocks, sync boost). Base units: hertz, watts, seconds.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from peerwatch.probes.clocks import REASON_BITS, GpuClocks
from peerwatch.probes.report import Report

GPU = ["host", "gpu"]
# (GpuClocks field, metric stem, help, scale to base units)
GAUGES = (
    ("sm_clock_mhz", "gpu_sm_clock_hertz", "SM clock now.", 1e6),
    ("sm_clock_max_mhz", "gpu_sm_clock_max_hertz", "Highest SM clock the GPU may run.", 1e6),
    ("power_mw", "gpu_power_watts", "Power draw.", 1e-3),
    ("power_limit_mw", "gpu_power_limit_watts", "Enforced power limit.", 1e-3),
    ("temperature_c", "gpu_temperature_celsius", "GPU temperature.", 1.0),
    ("slowdown_temperature_c", "gpu_slowdown_temperature_celsius",
     "Temperature at which the GPU slows itself down.", 1.0),
)
COUNTERS = (
    ("violation_power_ns", "gpu_power_violation_seconds",
     "Time held by the power policy (NVML violation counter, lifetime)."),
    ("violation_thermal_ns", "gpu_thermal_violation_seconds",
     "Time held by the thermal policy (NVML violation counter, lifetime)."),
)


def newest_clocks(report: Report) -> dict[int, GpuClocks]:
    found: dict[int, GpuClocks] = {}
    for sample in sorted(report.counters, key=lambda s: s.at):
        found.update({c.gpu: c for c in sample.clocks})
    return found


def clock_families(host: str, report: Report) -> Iterator[Metric]:
    clocks = newest_clocks(report)
    if not clocks:
        return
    reasons = GaugeMetricFamily(
        "peerwatch_gpu_clock_event_reasons",
        "1 when NVML's clocks-event reason is set for the GPU (nvml.h names), else 0.",
        labels=[*GPU, "reason"])
    throttled = GaugeMetricFamily(
        "peerwatch_gpu_throttled", "1 when the GPU's clocks are held for power, heat or a HW "
        "slowdown (not idle, application clocks or sync boost).", labels=GPU)
    gauges = {f: (GaugeMetricFamily(f"peerwatch_{stem}", doc, labels=GPU), scale)
              for f, stem, doc, scale in GAUGES}
    counters = {f: CounterMetricFamily(f"peerwatch_{stem}", doc, labels=GPU)
                for f, stem, doc in COUNTERS}
    for gpu, c in sorted(clocks.items()):
        labels = [host, str(gpu)]
        if c.reasons is not None:
            for bit, name, _ in REASON_BITS:
                reasons.add_metric([*labels, name], 1 if c.reasons & bit else 0)
            throttled.add_metric(labels, 1 if c.throttled() else 0)
        for f, (family, scale) in gauges.items():
            value = getattr(c, f)
            if value is not None:
                family.add_metric(labels, value * scale)
        for f, counter in counters.items():
            value = getattr(c, f)
            if value is not None:
                counter.add_metric(labels, value / 1e9)
    yield from (reasons, throttled, *(g for g, _ in gauges.values()), *counters.values())
