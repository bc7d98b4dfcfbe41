"""What `/metrics` exports, as plain values: one snapshot of the fleet read at scrape time.

The collector (`app/metrics.py`) only turns a `FleetSnapshot` into metric families; reading
the database into a snapshot is `app/metrics_loader.py`. Keeping the two apart lets the
exposition (names, labels, units, cardinality) be checked on its own, and keeps SQL out of
the collector.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from probes.report import LinkCounters, PcieLink, TestName


@dataclass(frozen=True)
class HostFacts:
    host: str
    fabric: str
    driver_version: str | None = None
    cuda_version: str | None = None
    probe_version: str | None = None
    last_report_at: datetime | None = None
    last_sweep_at: datetime | None = None
    # cost and outcome of the latest sweep
    sweep_gpu_time_s: float | None = None
    sweep_wall_time_s: float | None = None
    sweep_device_memory_bytes: int | None = None
    skipped_gpus: int = 0
    transfer_errors: int = 0
    probe_errors: int = 0  # in the latest report of any kind


@dataclass(frozen=True)
class GpuFacts:
    host: str
    gpu: int
    nvlink_ports: int  # ports the GPU has had: in the inventory now, or seen before
    nvlinks_active: int
    pcie: PcieLink = PcieLink()


@dataclass(frozen=True)
class PortFacts:
    host: str
    gpu: int
    link: int
    up: bool
    counters: LinkCounters | None = None  # latest cumulative counters


@dataclass(frozen=True)
class PairFacts:
    host: str
    src: int
    dst: int
    nvlink_width: int
    p2p_access: bool | None  # None: the probe could not tell


@dataclass(frozen=True)
class ResultFacts:
    """The latest successful result of one test on one ordered pair."""

    host: str
    src: int
    dst: int
    test: TestName
    value: float  # bytes/s, or seconds for latency
    expected: float | None = None
    baseline: float | None = None
    contended: bool = False


@dataclass(frozen=True)
class AlertCount:
    alertname: str
    state: str  # "pending" | "firing"
    severity: str
    host: str
    count: int


@dataclass
class FleetSnapshot:
    hosts: list[HostFacts] = field(default_factory=list)
    gpus: list[GpuFacts] = field(default_factory=list)
    ports: list[PortFacts] = field(default_factory=list)
    pairs: list[PairFacts] = field(default_factory=list)
    results: list[ResultFacts] = field(default_factory=list)
    alerts: list[AlertCount] = field(default_factory=list)
