"""API response shapes: what the dashboard, schedulers and people read from `/api/v1`.

Units follow the wire schema: bytes per second for bandwidth, seconds for latency and
durations, UTC datetimes. Every verdict comes with `reason`, a sentence a person can act on.
Each top-level model carries an OpenAPI example (shown on `/docs`).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.analysis.clock import SKEW_DOC
from app.analysis.verdict import Verdict
from app.schemas_gpu_evidence import GpuClocksOut, RdmaReadinessOut
from app.schemas_jobs import JobSpanOut
from probes.report import (
    LinkState,
    P2PCap,
    P2PStatus,
    PathLevel,
    PcieLink,
    RdmaInfo,
    RemoteType,
    SwitchFabricInfo,
    TestName,
    Unit,
)


def _example(example: dict[str, Any]) -> ConfigDict:
    return ConfigDict(json_schema_extra={"examples": [example]})


class Judged(BaseModel):
    verdict: Verdict
    reason: str = Field(examples=["all 56 pairs within 0.9 of expected"])
    since: datetime | None = Field(
        default=None, description="When it entered this verdict (server clock); None when "
        "not judged yet.")


# --------------------------------------------------------------------------- ingest


class IngestResult(BaseModel):
    model_config = _example({
        "report_id": "6f1c0c9e-2a54-4c7e-9d8e-1b0f5e0b7a11", "host": "gpu-node-17",
        "duplicate": False, "measurements": 393, "counter_samples": 288,
    })
    report_id: uuid.UUID
    host: str
    duplicate: bool = Field(description="True when this report_id was stored before; "
                                        "nothing changed.")
    measurements: int = Field(description="Transfer results stored by this report.")
    counter_samples: int = Field(description="Per-link counter rows stored by this report.")


# --------------------------------------------------------------------------- how current


class JudgedAt(BaseModel):
    """How current a host-scoped answer is: its verdicts are the stored judgement of then."""

    judged_at: datetime | None = Field(
        default=None, description="When the server last judged this host (server clock); "
        "null while its first judgement is on its way.")


class Busy(JudgedAt):
    """A host whose reports the server refused (429/503) after its newest stored one."""

    refused_reports: int = Field(default=0, description="Reports of this host the server "
                                 "refused because it was busy, since it last stored one.")
    last_refused_at: datetime | None = Field(default=None, description="When it last did "
                                             "(server clock): the probe was heard from then.")
    last_heard_at: datetime | None = Field(default=None, description="When the probe's "
                                           "newest request arrived (server clock), stored, "
                                           "refused or still waiting: staleness counts "
                                           "from the newest of this and last_received_at.")
    busy: str | None = Field(default=None, examples=[
        "not judged since 10:20 UTC: server busy, 12 reports refused"],
        description="Set while the server refuses this host's reports: its verdicts are as "
        "of `judged_at`, and the probe is not to blame.")


# --------------------------------------------------------------------------- hosts list


class PairRef(BaseModel):
    src: int
    dst: int
    test: TestName
    ratio: float = Field(description="measured / expected (latency: expected / measured).")


class HostSummary(Judged, Busy):
    host: str
    fabric: str = Field(examples=["nvml", "simulated:hgx8"])
    gpus_total: int
    gpus_healthy: int
    worst_pair: PairRef | None = Field(
        default=None, description="Lowest ratio among latest results."
    )
    last_report_at: datetime | None = Field(description="Newest report, by the probe's clock.")
    last_received_at: datetime | None = Field(
        default=None, description="When the newest report arrived, by the server's clock.")
    last_sweep_at: datetime | None
    stale: bool = Field(description="No report for longer than PEERWATCH_STALE_AFTER_S.")
    alerts_firing: int = Field(default=0, description="Firing alerts labelled with this host.")


class HostsResponse(BaseModel):
    model_config = _example({
        "generated_at": "2026-11-30T10:20:00Z",
        "hosts": [{
            "host": "gpu-node-17", "fabric": "nvml", "verdict": "degraded",
            "reason": "1 of 56 pairs degraded: GPU3->GPU5 ce_write 212 GB/s is 0.54 of "
                      "expected 397 GB/s (NV18 x 26.6 GB/s x 0.83), for 20 min",
            "gpus_total": 8, "gpus_healthy": 6,
            "worst_pair": {"src": 3, "dst": 5, "test": "ce_write", "ratio": 0.54},
            "last_report_at": "2026-11-30T10:19:41Z", "last_sweep_at": "2026-11-30T10:10:02Z",
            "stale": False, "alerts_firing": 1,
        }],
    })
    generated_at: datetime
    hosts: list[HostSummary]


# --------------------------------------------------------------------------- inventory


class GpuActivityOut(BaseModel):
    at: datetime
    utilization_pct: float | None
    memory_used_bytes: int | None
    compute_processes: int


class GpuOut(BaseModel):
    index: int
    uuid: str
    name: str
    pci_bus_id: str
    memory_total_bytes: int
    cpu_affinity: str | None
    numa_node: int | None
    nvlink_count: int
    nvlinks_up: int
    pcie: PcieLink
    rdma: RdmaInfo
    switch_fabric: SwitchFabricInfo | None
    activity: GpuActivityOut | None = Field(description="From the latest counter sample.")
    clocks: GpuClocksOut | None = Field(default=None, description="The latest clocks sample: "
                                        "why the GPU's clocks were held, if they were.")
    rdma_readiness: RdmaReadinessOut | None = Field(
        default=None, description="GPUDirect RDMA readiness judged from `rdma`.")


class NvLinkOut(BaseModel):
    gpu: int
    link: int
    state: LinkState
    version: str | None
    speed_bps: float | None = Field(description="Per link and direction, bytes per second.")
    remote_type: RemoteType
    remote_pci_bus_id: str | None
    remote_gpu: int | None


class PairOut(BaseModel):
    src: int
    dst: int
    topology: str = Field(examples=["NV18", "PHB", "SYS"])
    pcie_path: PathLevel
    nvlink_width: int
    via_nvswitch: bool
    p2p: dict[P2PCap, P2PStatus]
    can_access_peer: bool | None


class ProbeErrorOut(BaseModel):
    where: str
    message: str


class ReportOut(BaseModel):
    report_id: uuid.UUID
    kind: str
    started_at: datetime
    finished_at: datetime
    received_at: datetime
    gpu_time_s: float
    wall_time_s: float
    device_memory_bytes_max: int
    skipped_gpus: dict[int, str] = Field(default_factory=dict)
    errors: list[ProbeErrorOut] = Field(default_factory=list)


class HostDetail(BaseModel):
    model_config = _example({
        "host": "gpu-node-17", "fabric": "nvml", "driver_version": "580.159.04",
        "cuda_version": "13.0", "probe_version": "0.1.0",
        "first_seen": "2026-11-01T08:00:00Z", "last_report_at": "2026-11-30T10:19:41Z",
        "stale": False,
        "gpus": [{"index": 0, "uuid": "GPU-0b7c", "name": "NVIDIA H200",
                  "pci_bus_id": "00000000:19:00.0", "memory_total_bytes": 150754820096,
                  "cpu_affinity": "0-47", "numa_node": None, "nvlink_count": 18,
                  "nvlinks_up": 18, "pcie": {"gen_current": 5, "gen_max": 5,
                                             "width_current": 16, "width_max": 16},
                  "rdma": {}, "switch_fabric": {"state": "completed", "clique_id": 1},
                  "activity": {"at": "2026-11-30T10:19:40Z", "utilization_pct": 0.0,
                               "memory_used_bytes": 0, "compute_processes": 0}}],
        "nvlinks": [{"gpu": 0, "link": 0, "state": "up", "version": "4.0",
                     "speed_bps": 26562000000.0, "remote_type": "nvswitch",
                     "remote_pci_bus_id": None, "remote_gpu": None}],
        "pairs": [{"src": 0, "dst": 1, "topology": "NV18", "pcie_path": "PHB",
                   "nvlink_width": 18, "via_nvswitch": True,
                   "p2p": {"read": "ok", "write": "ok", "nvlink": "ok", "atomics": "ok",
                           "pci": "not_supported"}, "can_access_peer": True}],
        "last_sweep": None,
    })
    host: str
    fabric: str
    driver_version: str | None
    cuda_version: str | None
    probe_version: str | None
    first_seen: datetime
    last_report_at: datetime | None = Field(description="Newest report, by the probe's clock.")
    last_received_at: datetime | None = Field(
        default=None, description="When the newest report arrived, by the server's clock "
        "(what staleness is judged by).")
    clock_skew_s: float | None = Field(default=None, description=SKEW_DOC)
    stale: bool
    changed_at: datetime | None = Field(
        default=None, description="When what the host's health, topology, matrix and pair "
        "series show last changed (a judged GPU, link, pair or test changed, its inventory, "
        "its newest sweep or refused report): a dashboard that saw this value already has "
        "them and can skip asking again. Null before its first judgement.")
    gpus: list[GpuOut]
    nvlinks: list[NvLinkOut]
    pairs: list[PairOut]
    last_sweep: ReportOut | None = Field(description="The latest sweep: its cost and errors.")


# --------------------------------------------------------------------------- topology


class NodeKind(StrEnum):
    GPU = "gpu"
    NVSWITCH = "nvswitch"
    CPU = "cpu"


class EdgeKind(StrEnum):
    NVLINK = "nvlink"
    PCIE = "pcie"


class TopologyNode(BaseModel):
    id: str = Field(examples=["gpu3", "nvswitch", "cpu0"])
    kind: NodeKind
    label: str = Field(examples=["GPU3 NVIDIA H200", "NVSwitch fabric", "CPU socket 0"])
    gpu: int | None = None
    verdict: Verdict
    reason: str


class TopologyEdge(BaseModel):
    id: str = Field(examples=["gpu3-nvswitch", "gpu0-gpu1", "gpu0-cpu0"])
    source: str
    target: str
    kind: EdgeKind
    width: int | None = Field(default=None, description="NVLink: active links (NV#).")
    links_total: int | None = Field(default=None, description="NVLink: ports present.")
    speed_bps: float | None = Field(default=None, description="NVLink: per link and direction.")
    path_level: PathLevel | None = Field(default=None, description="PCIe path between GPUs.")
    pcie_gen: int | None = None
    pcie_width: int | None = None
    test: TestName | None = Field(default=None, description="Test behind latest_bps.")
    latest_bps: float | None = Field(
        default=None, description="Latest uncontended bandwidth across it (slower direction)."
    )
    expected_bps: float | None = None
    measured_at: datetime | None = None
    verdict: Verdict
    reason: str


class TopologyResponse(JudgedAt):
    model_config = _example({
        "host": "gpu-node-17",
        "nodes": [
            {"id": "gpu0", "kind": "gpu", "label": "GPU0 NVIDIA H200", "gpu": 0,
             "verdict": "healthy", "reason": "18/18 NVLinks up; 14 pairs healthy"},
            {"id": "nvswitch", "kind": "nvswitch", "label": "NVSwitch fabric", "gpu": None,
             "verdict": "healthy", "reason": "8 GPUs registered"},
        ],
        "edges": [{
            "id": "gpu0-nvswitch", "source": "gpu0", "target": "nvswitch", "kind": "nvlink",
            "width": 18, "links_total": 18, "speed_bps": 26562000000.0, "test": "ce_write",
            "latest_bps": 391000000000.0, "expected_bps": 396833000000.0,
            "measured_at": "2026-11-30T10:10:02Z", "verdict": "healthy",
            "reason": "18/18 links up; slowest ce_write from GPU0 0.99 of expected",
        }],
    })
    host: str
    nodes: list[TopologyNode]
    edges: list[TopologyEdge]


# --------------------------------------------------------------------------- matrix


class PairExplained(BaseModel):
    """What a pair's state belongs to (`app/analysis/attribution.py`), and whether its page
    waits (`app/analysis/pattern_wait.py`): shared by `/health` pairs and matrix cells."""

    explained_by: int | None = Field(default=None, examples=[3], description=(
        "The GPU whose fault explains this pair's state (bad with every peer, or its fabric, "
        "links or presence make its pairs untrustworthy): that GPU's alert is the page, and "
        "the pair blames only it. None: the pair speaks for itself."))
    cause: str | None = Field(default=None, examples=["GPU3, whose copies fail with every "
                                                      "peer", "GPU6 fabric in progress"],
                              description="Why, in short words (also 'P2P unavailable').")
    waits_for: str | None = Field(default=None, examples=[
        "GPU3's pattern: 5 of its 7 peers bad, 2 not measured since"], description=(
        "The pair's own page waits (at most PEERWATCH_PATTERN_WAIT_S) while a GPU pattern "
        "may still be forming: the other pairs of that GPU have not all been measured since "
        "the trouble began. None: not held."))


class MatrixCell(Judged, PairExplained):
    src: int
    dst: int
    value: float | None = Field(description="Latest result (None when it failed).")
    expected: float | None
    expected_basis: str | None = Field(default=None, examples=["NV18 x 26.6 GB/s x 0.83"])
    ratio: float | None = Field(description="value vs expected, 1.0 = as expected.")
    baseline: float | None
    baseline_ratio: float | None
    contended: bool
    foreign_bytes: int = 0
    error: str | None = None
    measured_at: datetime | None


class MatrixResponse(JudgedAt):
    model_config = _example({
        "host": "gpu-node-17", "test": "ce_write", "unit": "B/s", "gpus": [0, 1],
        "cells": [{
            "src": 0, "dst": 1, "value": 391000000000.0, "expected": 396833000000.0,
            "expected_basis": "NV18 x 26.6 GB/s x 0.83", "ratio": 0.985,
            "baseline": 392500000000.0, "baseline_ratio": 0.996, "verdict": "healthy",
            "reason": "GPU0->GPU1 ce_write 391 GB/s is 0.99 of expected 397 GB/s",
            "contended": False, "foreign_bytes": 0, "error": None,
            "measured_at": "2026-11-30T10:10:02Z",
        }],
    })
    host: str
    test: TestName
    unit: Unit
    gpus: list[int]
    cells: list[MatrixCell] = Field(description="One per ordered pair with data or topology.")


# --------------------------------------------------------------------------- series


class SeriesBucket(BaseModel):
    start: datetime
    min: float
    mean: float
    max: float
    count: int


class SeriesPoint(BaseModel):
    at: datetime
    value: float | None
    foreign_bytes: int = 0
    error: str | None = None
    throttle: str | None = Field(default=None, description="The throttled GPUs the sample "
                                 "touched (\"GPU3 power-capped\"), if any.")


class BaselineOut(BaseModel):
    value: float
    spread: float = Field(description="Median absolute deviation, same unit as value.")
    n: int
    window_s: float
    updated_at: datetime


class ExpectedOut(BaseModel):
    value: float
    basis: str


class SeriesResponse(BaseModel):
    model_config = _example({
        "host": "gpu-node-17", "src": 0, "dst": 1, "test": "ce_write", "unit": "B/s",
        "since": "2026-11-29T10:00:00Z", "until": "2026-11-30T10:00:00Z", "step_s": 3600,
        "source": "raw",
        "buckets": [{"start": "2026-11-29T10:00:00Z", "min": 389e9, "mean": 391e9,
                     "max": 393e9, "count": 6}],
        "baseline": {"value": 392.5e9, "spread": 1.1e9, "n": 200, "window_s": 604800,
                     "updated_at": "2026-11-30T09:50:00Z"},
        "expected": {"value": 396.8e9, "basis": "NV18 x 26.6 GB/s x 0.83"},
        "contended": [{"at": "2026-11-29T14:10:00Z", "value": 201e9,
                       "foreign_bytes": 5368709120, "error": None}],
        "failures": [],
    })
    host: str
    src: int
    dst: int
    test: TestName
    unit: Unit
    since: datetime
    until: datetime
    step_s: int
    source: str = Field(description="'raw' samples or 'hourly' rollups, chosen by range.")
    buckets: list[SeriesBucket] = Field(description="Uncontended, successful samples only.")
    baseline: BaselineOut | None
    expected: ExpectedOut | None
    contended: list[SeriesPoint] = Field(description="Contended samples: shown, never judged.")
    failures: list[SeriesPoint] = Field(description="Failed transfers in the range.")
    throttled: list[SeriesPoint] = Field(
        default_factory=list, description="Successful samples taken while a GPU of the pair "
        "was power-capped, thermally throttled or in HW slowdown (also in the buckets).")
    jobs: list[JobSpanOut] = Field(
        default_factory=list, description="Jobs holding either GPU within the range "
        "(the reports' job mapping; none without one).")


# --------------------------------------------------------------------------- link series


class LinkRatePoint(BaseModel):
    start: datetime
    tx_bps: float | None
    rx_bps: float | None
    replay_per_s: float | None
    recovery_per_s: float | None
    crc_flit_per_s: float | None
    crc_data_per_s: float | None
    ecc_data_per_s: float | None


class LinkSeries(BaseModel):
    gpu: int
    link: int
    points: list[LinkRatePoint]


class PcieRatePoint(BaseModel):
    start: datetime
    replay_per_s: float | None


class PcieSeries(BaseModel):
    gpu: int
    points: list[PcieRatePoint]


class LinkSeriesResponse(BaseModel):
    model_config = _example({
        "host": "gpu-node-17", "since": "2026-11-30T09:00:00Z",
        "until": "2026-11-30T10:00:00Z", "step_s": 60,
        "links": [{"gpu": 0, "link": 0, "points": [{
            "start": "2026-11-30T09:00:00Z", "tx_bps": 1.2e9, "rx_bps": 1.1e9,
            "replay_per_s": 0.0, "recovery_per_s": 0.0, "crc_flit_per_s": 0.0,
            "crc_data_per_s": 0.0, "ecc_data_per_s": 0.0}]}],
        "pcie": [{"gpu": 0, "points": [{"start": "2026-11-30T09:00:00Z",
                                        "replay_per_s": 0.0}]}],
    })
    host: str
    since: datetime
    until: datetime
    step_s: int
    links: list[LinkSeries] = Field(description="Rates from consecutive counter samples; "
                                                "a counter that went backwards restarted at 0.")
    pcie: list[PcieSeries]


# --------------------------------------------------------------------------- health


class LinkChange(BaseModel):
    at: datetime = Field(description="When the server's judgement first saw the change.")
    state: Literal["down", "up"]


class LinkHealth(Judged):
    gpu: int
    link: int
    changes: list[LinkChange] = Field(
        default_factory=list, description="The port's last changes between down and up as "
        "stored (at most 16, oldest first): what the host page marks on its charts.")


class TestHealth(Judged):
    __test__ = False  # not a pytest class

    test: TestName
    ratio_expected: float | None = None
    ratio_baseline: float | None = None
    low_since: datetime | None = Field(default=None, description="Start of the current low run.")


class PairHealth(Judged, PairExplained):
    src: int
    dst: int
    tests: list[TestHealth]


class GpuTestHealth(Judged):
    """One per-GPU test (h2d, d2h, local) of one GPU: newest figure, what its PCIe link
    offers (h2d/d2h; local has no expectation, only its baseline) and the stored verdict."""

    test: TestName
    value: float | None = Field(default=None, description="Newest result, bytes/s (None: "
                                "it failed).")
    expected: float | None = None
    expected_basis: str | None = Field(default=None,
                                       examples=["PCIe gen5 x16 (63.0 GB/s) x 0.88"])
    ratio_expected: float | None = None
    baseline: float | None = None
    ratio_baseline: float | None = None
    low_since: datetime | None = None
    error: str | None = None
    measured_at: datetime | None = None


class GpuHealth(Judged):
    gpu: int
    tests: list[GpuTestHealth] = Field(
        default_factory=list, description="Its per-GPU tests: host <-> GPU over its PCIe "
        "link (h2d, d2h) and within its memory (local).")


class HealthResponse(Judged, Busy):
    model_config = _example({
        "host": "gpu-node-17", "verdict": "degraded", "generated_at": "2026-11-30T10:20:00Z",
        "reason": "GPU3 degraded: 2 of 14 pairs degraded",
        "gpus": [{"gpu": 3, "verdict": "degraded",
                  "reason": "2 of 14 pairs degraded (worst GPU3->GPU5 ce_write)"}],
        "links": [{"gpu": 3, "link": 7, "verdict": "down", "reason": "NVML reports link down"}],
        "pairs": [{"src": 3, "dst": 5, "verdict": "degraded",
                   "reason": "GPU3->GPU5 ce_write 212 GB/s is 0.54 of expected 397 GB/s "
                             "(NV18 x 26.6 GB/s x 0.83) and 0.55 of its 7-day baseline, "
                             "for 20 min",
                   "tests": [{"test": "ce_write", "verdict": "degraded", "reason": "...",
                              "ratio_expected": 0.54, "ratio_baseline": 0.55,
                              "low_since": "2026-11-30T10:00:00Z"}]}],
    })
    host: str
    generated_at: datetime | None = Field(description="When this state was judged (server "
                                                       "clock); None when not judged yet.")
    stale: bool = Field(default=False, description="No report within the staleness limit: "
                                                   "every verdict is as last known.")
    gpus: list[GpuHealth]
    links: list[LinkHealth]
    pairs: list[PairHealth]


class Healthz(BaseModel):
    status: str = Field(examples=["ok"])
    database: str = Field(examples=["sqlite", "postgresql"])
    schema_revision: str | None


class IngestLoad(BaseModel):
    """This process's ingest gate: slots in use, reports waiting, and what it refused."""

    active: int = Field(examples=[2])
    receiving: int = Field(examples=[0], description="let in, their bodies still arriving")
    waiting: int = Field(examples=[0])
    concurrency: int = Field(examples=[4])
    queue: int = Field(examples=[32])
    accepted: int = Field(examples=[1200])
    refused_full: int = Field(examples=[0], description="429: the queue was full")
    refused_wait: int = Field(examples=[0], description="503: no slot within the wait")
    refused_locked: int = Field(examples=[0], description="503: the database was locked")
    client_gone: int = Field(examples=[0], description="dropped: the client had gone")
    expanding: int = Field(default=0, examples=[1], description="answered and stored whole, "
                           "still being expanded into rows (`serve`)")
    recovered: int = Field(default=0, examples=[0], description="stored whole and expanded "
                           "later by the recovery job (a worker or server stopped first)")
    expand_failed: int = Field(default=0, examples=[0], description="expansions that failed; "
                               "the report stays stored whole and is tried again")


class JudgeLoad(BaseModel):
    """This process's judge queue: hosts waiting for their judgement, and how far behind the
    reports its verdicts are (report arrival to stored verdict, recent judgements)."""

    depth: int = Field(examples=[0], description="hosts waiting for a judgement")
    in_flight: int = Field(examples=[1], description="hosts being judged now")
    workers: int = Field(examples=[2])
    judged: int = Field(examples=[1200], description="judgements done since start")
    failed: int = Field(examples=[0], description="left to the periodic round")
    lag_p50_s: float | None = Field(examples=[0.08])
    lag_p99_s: float | None = Field(examples=[0.4])
    lag_max_s: float | None = Field(examples=[0.9])
    restarts: int = Field(default=0, examples=[0], description="times the judge process "
                          "(`serve`) died and was started anew")


class Readyz(BaseModel):
    status: str = Field(examples=["ready", "busy", "unavailable"])
    database: str = Field(examples=["sqlite", "postgresql"])
    schema_revision: str | None
    detail: str | None = Field(default=None, examples=[None])
    ingest: IngestLoad
    judge: JudgeLoad | None = None
