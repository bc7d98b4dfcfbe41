"""Time series of a pair's test and of a host's link rates."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from peerwatch.app.schemas.common import with_example
from peerwatch.app.schemas.jobs import JobSpanOut
from peerwatch.probes.report import (
    TestName,
    Unit,
)


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
    model_config = with_example({
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
    model_config = with_example({
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
