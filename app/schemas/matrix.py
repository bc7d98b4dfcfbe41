"""The bandwidth matrix of one test (`/api/v1/hosts/{host}/matrix`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from peerwatch.app.schemas.common import Judged, JudgedAt, PairExplained, with_example
from peerwatch.probes.report import (
    TestName,
    Unit,
)


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
    model_config = with_example({
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
