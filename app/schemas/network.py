"""API shapes of the network between hosts: the map, judged host pairs and the faults
triangulated from them, the pair jobs and their rendezvous (docs/network.md)."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field

from peerwatch.probes.report import MAX_BANDWIDTH_BPS, TransferResult, valid_hostname

HostName = Annotated[str, Field(min_length=1, max_length=253), AfterValidator(valid_hostname)]
SwitchName = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")]
JobState = Literal["planned", "submitted", "running", "done", "failed", "cancelled"]
Scheduler = Literal["slurm", "kubernetes"]


class NetworkHostIn(BaseModel):
    host: HostName
    leaf: SwitchName
    spine: SwitchName | None = None
    domain: SwitchName | None = Field(default=None, description="NVL72 domain (cross-tray NVLink)")
    line_rate_bps: float = Field(gt=0, le=MAX_BANDWIDTH_BPS, description="NIC line rate, B/s")


class NetworkMapIn(BaseModel):
    hosts: list[NetworkHostIn] = Field(max_length=100_000)


class NetworkMapOut(BaseModel):
    hosts: list[NetworkHostIn]


class HostPairOut(BaseModel):
    host: str
    peer_host: str
    leaf: str | None
    peer_leaf: str | None
    test: str
    measured_bps: float | None
    expected_bps: float | None
    baseline_bps: float | None
    fleet_bps: float | None
    ratio: float | None = Field(description="measured over the strictest reference")
    verdict: str = Field(examples=["healthy", "degraded", "failed", "unknown"])
    reason: str
    cause: str | None = Field(description="host:<h>, leaf:<l>, spine:<s> or path (slow only)")
    measured_at: datetime | None = Field(default=None, description="when the newest was measured")
    job: str | None = Field(default=None, description="the scheduler job that measured it")


class NetFaultOut(BaseModel):
    kind: Literal["host", "leaf", "spine", "path"]
    subject: str
    hosts: list[str]
    pairs: list[tuple[str, str]]
    ratio: float | None
    reason: str
    resolved: bool


class NetworkPairsResponse(BaseModel):
    generated_at: datetime
    test: str | None
    pairs: list[HostPairOut]
    faults: list[NetFaultOut]
    suspects: list[str] = Field(description="hosts the planner tests with new partners first")


class PlannedPairOut(BaseModel):
    host: str
    peer_host: str
    reason: str


class PlanResponse(BaseModel):
    generated_at: datetime
    pairs: list[PlannedPairOut]
    left_out: list[str] = Field(description="hosts not planned, and why")


class PairJobIn(BaseModel):
    host: HostName
    peer_host: HostName
    scheduler: Scheduler
    reason: str = Field(default="", max_length=500)


class PairJobUpdate(BaseModel):
    state: JobState
    scheduler_job: str | None = Field(default=None, min_length=1, max_length=128,
                                      pattern=r"^[A-Za-z0-9_.:/+-]+$")
    reason: str | None = Field(default=None, max_length=500)


MAX_RENDEZVOUS_BYTES = 512  # an NCCL unique id is 128; the server never reads inside it


def _rendezvous_token(value: str) -> str:
    """Base64 of 1..512 bytes, kept as sent (the server stores it opaque)."""
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"not base64: {exc}") from exc
    if not 0 < len(raw) <= MAX_RENDEZVOUS_BYTES:
        raise ValueError(f"{len(raw)} bytes once decoded: at least 1, at most "
                         f"{MAX_RENDEZVOUS_BYTES}")
    return value


RendezvousToken = Annotated[str, Field(min_length=4, max_length=4 * MAX_RENDEZVOUS_BYTES // 3 + 4,
                                       description="base64 of the NCCL unique id (opaque)"),
                            AfterValidator(_rendezvous_token)]


class RendezvousIn(BaseModel):
    """Rank 0 hands rank 1 what it needs to reach it: the NCCL unique id it made."""

    host: HostName = Field(description="rank 0's host (its probe credential speaks for it)")
    nccl_id: RendezvousToken


class RendezvousOut(BaseModel):
    """What rank 1 reads: the job's state (a failed job ends the wait) and the id, once
    rank 0 has put it. Only the job's two hosts' credentials read it."""

    job_id: int
    state: str
    reason: str
    nccl_id: str | None


class RankIn(BaseModel):
    rank: Literal[0, 1]
    host: HostName
    address: str = Field(default="", max_length=253,
                         description="where the other rank reaches this one (host:port)")


class PairJobOut(BaseModel):
    id: int
    host: str
    peer_host: str
    scheduler: str
    scheduler_job: str | None
    state: str
    reason: str
    ranks: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class PairJobsResponse(BaseModel):
    jobs: list[PairJobOut]


class PairResultsIn(BaseModel):
    """What a pair job's rank 0 posts: its host's cross-host results (each with peer_host)."""

    host: HostName
    job_id: int | None = Field(default=None, ge=1, le=2**31 - 1)
    results: list[TransferResult] = Field(min_length=1, max_length=64)


class PairResultsOut(BaseModel):
    stored: int
    faults: int = Field(description="network faults open after this result")


class NodeOut(BaseModel):
    host: str
    leaf: str | None
    domain: str | None


class NodePairOut(BaseModel):
    host: str
    peer_host: str
    measured_bps: float | None
    verdict: str


class LeftOutNode(BaseModel):
    host: str
    why: str


class NodesResponse(BaseModel):
    generated_at: datetime
    count: int
    nodes: list[NodeOut]
    pairs: list[NodePairOut] = Field(description="the measured figures between the nodes chosen")
    min_pair_bps: float | None = Field(description="the slowest pair among them (None: untested)")
    why: str
    left_out: list[LeftOutNode]


class NotEnoughNodesDetail(BaseModel):
    message: str
    left_out: list[LeftOutNode]


class NotEnoughNodesAnswer(BaseModel):
    detail: NotEnoughNodesDetail
