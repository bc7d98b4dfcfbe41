"""What the server's `/metrics` exports, as plain values: the fleet's judged state.

The server exports verdicts, not measurements: per host and per GPU the stored verdict
(`judged_hosts`, `judged_gpus`, written after each ingest and by the periodic evaluation),
when each host was last heard from by the server's clock, the probe's clock skew, and the
alerts of the server's own rules. Per-link and per-pair series come from the probe agents
(`probes/agent/metrics.py`). A few series per host and one per GPU keep a scrape of 1000 hosts
small (docs/alerts.md,
       "Series per host"). The collector (`app/exposition/collector.py`) only turns a
`FleetSnapshot` into metric families; reading the database is `app/exposition/loader.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class HostFacts:
    host: str
    fabric: str
    driver_version: str | None = None
    cuda_version: str | None = None
    probe_version: str | None = None
    last_received_at: datetime | None = None  # the server's clock
    # when the server last heard the probe: a report, a heartbeat or a refused report (the
    # server's clock; `inventory.last_heard_at`); None: as last_received_at
    last_heard_at: datetime | None = None
    last_sweep_at: datetime | None = None  # the probe's clock
    clock_skew_s: float | None = None  # receive time - report time, newest report
    refused_reports: int = 0  # refused (429/503) since its newest stored report
    last_refused_at: datetime | None = None
    # its stored verdict (None: not judged yet)
    verdict: str | None = None
    verdict_since: datetime | None = None
    stale: bool | None = None
    gpus_total: int | None = None
    gpus_healthy: int | None = None
    worst_ratio: float | None = None
    fabric_problems: tuple[str, ...] = ()  # host-level fabric contradictions (Fabric Manager)
    nics: tuple[dict[str, Any], ...] = ()  # each RDMA NIC port as judged (nic_health.py)


@dataclass(frozen=True)
class GpuVerdict:
    host: str
    gpu: int
    verdict: str
    present: bool | None = None  # in the newest inventory (False: fell off the bus)
    fabric: tuple[str, ...] = ()  # kinds of fabric contradiction in its stored verdict
    throttle: tuple[str, ...] = ()  # throttle kinds when throttled most of the time
    driver: tuple[tuple[str, str], ...] = ()  # (kind, verdict) of each driver finding


@dataclass(frozen=True)
class AlertCount:
    alertname: str
    state: str  # "pending" | "firing"
    severity: str
    host: str
    count: int


@dataclass(frozen=True)
class PeerGap:
    """A pair whose stored verdict says it is far below its fleet peers (docs/fleet-peers.md)."""

    host: str
    gpu: int
    peer_gpu: int
    test: str
    ratio: float  # of its peer group's median


@dataclass(frozen=True)
class HostPeerGap:
    """A host whose median ratio to its fleet peers is below the floor (a whole board slow)."""

    host: str
    ratio: float


@dataclass
class FleetSnapshot:
    hosts: list[HostFacts] = field(default_factory=list)
    gpus: list[GpuVerdict] = field(default_factory=list)
    alerts: list[AlertCount] = field(default_factory=list)
    peer_gaps: list[PeerGap] = field(default_factory=list)  # gpu == peer_gpu: a GPU's own
    host_peer_gaps: list[HostPeerGap] = field(default_factory=list)
    events: Any = None  # app.exposition.events.EventSeries: Xid/SXid counters and findings
    held: list[Any] = field(default_factory=list)  # app.exposition.holds.PairHeld: pages held
    pair_faults: list[Any] = field(default_factory=list)  # metrics_pair_faults.PairFaultRow
    unjudged: list[Any] = field(default_factory=list)  # pair_faults.UnjudgedPair
    all_to_all: list[Any] = field(default_factory=list)  # all_to_all.AllToAllFigure
    gdr: list[Any] = field(default_factory=list)  # gdr.GdrExpectation
