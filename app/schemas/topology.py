"""A host as a graph (`/api/v1/hosts/{host}/topology`)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.app.schemas.common import JudgedAt, with_example
from peerwatch.probes.report import (
    PathLevel,
    TestName,
)


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
    model_config = with_example({
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
