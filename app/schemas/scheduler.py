"""Response shapes of `/api/v1/scheduler/*`: what a Slurm prolog or a Kubernetes extender reads.

Bandwidth is bytes per second, times UTC. Each top-level model carries an OpenAPI example
(shown on `/docs`). They mirror the dataclasses of `app/analysis/placement_types.py` and are
filled from them with `model_validate(..., from_attributes=True)`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from peerwatch.app.analysis.placement_types import Pattern
from peerwatch.app.schemas.common import JudgedAt


def _example(example: dict[str, Any]) -> ConfigDict:
    return ConfigDict(from_attributes=True, json_schema_extra={"examples": [example]})


class UnhealthyGpu(BaseModel):
    gpu: int
    verdict: str = Field(examples=["down", "degraded", "unknown"])
    reason: str = Field(examples=["GPU5: 18/18 NVLinks down"])


class UnknownPair(BaseModel):
    src: int
    dst: int
    reason: str = Field(examples=["GPU0->GPU3 unknown: 2 of 3 tests not judged; slow, GPU3 "
                                  "in HW slowdown during the test ..."])


class GpuRdma(BaseModel):
    gpu: int
    readiness: str = Field(examples=["ready", "poor", "not_ready", "unknown"])
    reason: str


class UnhealthyNicPort(BaseModel):
    nic: str = Field(examples=["mlx5_1"])
    port: int
    verdict: str = Field(examples=["down", "degraded"])
    reason: str = Field(examples=["mlx5_1 port 1 flapping: link_downed +0.0167/s ..."])


class SchedulableHost(JudgedAt):
    host: str
    gpus_total: int
    healthy_gpus: list[int] = Field(description="Indexes of the GPUs a job may use now.")
    cuda_visible_devices: str = Field(
        description="The largest set of healthy GPUs that may share one job (no pair of "
        "`apart` in it; ties: the lowest indexes), ready for the env var.")
    apart: list[tuple[int, int]] = Field(
        default_factory=list, description="Pairs of healthy GPUs that must not share a job: "
        "a pair fault between them (copies failing or slow, or P2P lost, while each works "
        "with its other peers; app/analysis/pair_faults.py). Both are offered, never together.")
    unhealthy: list[UnhealthyGpu] = Field(description="The others, each with its reason.")
    reduced: list[UnhealthyGpu] = Field(
        default_factory=list, description="GPUs offered (in `healthy_gpus`) though degraded: "
        "their bandwidth is reduced by a lost NVSwitch (some NVLinks down with it, none cut "
        "off; app/analysis/switch_fold.py), each with its reason.")
    unknown_pairs: list[UnknownPair] = Field(
        default_factory=list, description="Pairs of offered GPUs whose bandwidth is unknown "
        "now: a test of theirs ran while one end was throttled (power cap, thermal, HW "
        "slowdown), so it was not judged (app/analysis/throttle.py). The same answer as "
        "/health, the matrix and /metrics (`peerwatch_pair_unjudged`).")
    last_report_at: datetime | None
    rdma: list[GpuRdma] = Field(
        default_factory=list, description="GPUDirect RDMA readiness of each GPU "
        "(app/analysis/rdma.py): a field, never a veto unless `rdma_ready` is asked for.")
    unhealthy_nics: list[UnhealthyNicPort] = Field(
        default_factory=list, description="RDMA NIC ports (InfiniBand/RoCE) not healthy: "
        "down, flapping, link errors rising, trained below their rate or congested "
        "(app/analysis/nic_health.py; the same words as /health and the NIC alerts). A "
        "field for multi-node jobs, never a veto of the host's GPUs.")


class SchedulerHostsResponse(BaseModel):
    model_config = _example({
        "generated_at": "2026-11-30T10:20:00Z", "min_healthy_gpus": 4,
        "hosts": [{
            "host": "gpu-node-17", "gpus_total": 8, "healthy_gpus": [0, 1, 2, 3, 4, 6, 7],
            "cuda_visible_devices": "0,1,2,3,4,7", "apart": [[2, 6]],
            "unhealthy": [{"gpu": 5, "verdict": "down",
                           "reason": "GPU5: 18/18 NVLinks down"}],
            "last_report_at": "2026-11-30T10:19:41Z", "judged_at": "2026-11-30T10:19:42Z",
        }],
        "left_out": {"gpu-node-03": "stale: no report for 2 h 10 min",
                     "gpu-node-09": "2 healthy GPUs, 4 asked for",
                     "gpu-node-11": "7 of 8 healthy GPUs may share a job (GPU1 and GPU5 "
                                    "kept apart (copies fail between them)), 8 asked for"},
    })
    generated_at: datetime
    min_healthy_gpus: int
    hosts: list[SchedulableHost] = Field(description="Hosts that can take such a job now.")
    left_out: dict[str, str] = Field(
        default_factory=dict, description="Every other known host, with why it cannot."
    )


class CandidateSetOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    gpus: list[int] = Field(description="Ring order for ring, index order for all_to_all.")
    predicted_bps: float | None
    weakest_pair: tuple[int, int] | None
    estimated_pairs: list[tuple[int, int]] = Field(
        default_factory=list, description="Pairs predicted from topology: never measured."
    )


class ExclusionOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    gpu: int
    healthy: bool
    reason: str


class PlacementResponse(JudgedAt):
    model_config = _example({
        "host": "gpu-node-17", "pattern": "ring", "k": 4, "gpus": [0, 1, 2, 3],
        "predicted_bps": 328.6e9, "cuda_visible_devices": "0,1,2,3",
        "cuda_visible_devices_uuid": "GPU-0b7c,GPU-1a2e,GPU-2f90,GPU-3c41",
        "weakest_pair": [1, 2], "estimated_pairs": [],
        "model": "ring all-reduce bus bandwidth = slowest link of the best ring order (slower "
                 "direction) x all-reduce/CE efficiency (NVLink 0.69/0.83, PCIe 0.60/0.80)",
        "exact": True, "measured_at": "2026-11-30T10:10:02Z",
        "judged_at": "2026-11-30T10:19:42Z",
        "runner_ups": [{"gpus": [0, 1, 2, 4], "predicted_bps": 328.1e9,
                        "weakest_pair": [0, 4], "estimated_pairs": []}],
        "excluded": [
            {"gpu": 4, "healthy": True,
             "reason": "GPU4 left out by the tie-break: a set with it is as fast (within 5%), "
                       "but the chosen set spans fewer CPU sockets / NUMA nodes"},
            {"gpu": 5, "healthy": False, "reason": "GPU5 is not healthy: 18/18 NVLinks down"},
        ],
        "warnings": [],
    })
    host: str
    pattern: Pattern
    k: int
    gpus: list[int] = Field(description="The chosen GPUs; ring order for ring.")
    predicted_bps: float | None = Field(
        description="ring: all-reduce bus bandwidth; all_to_all: per-GPU all-to-all bandwidth; "
        "None for one GPU."
    )
    cuda_visible_devices: str = Field(
        description="NVML indexes: use with CUDA_DEVICE_ORDER=PCI_BUS_ID."
    )
    cuda_visible_devices_uuid: str | None = Field(
        description="The same GPUs by UUID: right whatever CUDA_DEVICE_ORDER says."
    )
    weakest_pair: tuple[int, int] | None = Field(description="The pair that limits the set.")
    estimated_pairs: list[tuple[int, int]]
    model: str = Field(description="How predicted_bps was worked out.")
    source: Literal["measured", "predicted"] = Field(
        default="predicted", description="measured: predicted_bps is the host's measured "
        "all-to-all (a2a_nccl, else a2a_ce: the chosen set is the one it ran over, its "
        "slowest GPU's figure); predicted: worked out from pair figures (`model`).")
    exact: bool = Field(description="Every set (and ring order) was tried; else greedy search.")
    measured_at: datetime | None = Field(description="Latest measurement the matrix used.")
    runner_ups: list[CandidateSetOut]
    excluded: list[ExclusionOut] = Field(description="Every GPU left out, with the reason.")
    warnings: list[str]


class NotEnoughGpusDetail(BaseModel):
    """The body of a 409: the host exists but has too few healthy GPUs for the request."""

    model_config = _example({
        "message": "asked for 8 GPUs but only 7 of 8 are healthy (GPU0, GPU1, GPU2, GPU3, "
                   "GPU4, GPU6, GPU7)",
        "host": "gpu-node-17", "requested": 8, "healthy": 7, "total": 8,
        "healthy_gpus": [0, 1, 2, 3, 4, 6, 7],
    })
    message: str
    host: str
    requested: int
    healthy: int
    total: int
    healthy_gpus: list[int]
    apart: list[tuple[int, int]] = Field(
        default_factory=list, description="Healthy GPUs that must not share a job (pair "
        "faults); with them, at most `largest_set` can share one.")
    largest_set: list[int] = Field(
        default_factory=list, description="The largest set of healthy GPUs that may share a "
        "job (empty: every healthy GPU may).")


class NotEnoughGpusAnswer(BaseModel):
    """The 409's whole body: FastAPI puts the detail under `detail`, as for every error."""

    detail: NotEnoughGpusDetail
