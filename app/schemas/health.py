"""A host's judged state (`/api/v1/hosts/{host}/health`)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from peerwatch.app.schemas.common import Busy, Judged, PairExplained, with_example
from peerwatch.probes.report import (
    TestName,
)


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
    model_config = with_example({
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
