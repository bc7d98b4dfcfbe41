"""Response shapes of `GET /api/v1/fleet/peers`: the fleet's peer groups (docs/fleet-peers.md).

Values are in the test's unit (bytes per second, or seconds for latency), times UTC. Ratios
are oriented so that 1.0 is the group's median and lower is worse, latency included.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class PeerBelow(BaseModel):
    host: str
    src: int
    dst: int
    ratio: float = Field(description="The pair's figure over its group's median.")
    value: float = Field(description="The figure compared: the better of its newest value and "
                                     "its own baseline.")


class PeerGroup(BaseModel):
    gpu_model: str = Field(examples=["NVIDIA H200"])
    topology: str = Field(examples=["NVSwitch NV18"], description="The pair's topology class.")
    driver: str = Field(examples=["570.86.15"])
    test: str = Field(examples=["ce_write"])
    unit: str = Field(examples=["B/s"])
    median: float
    low: float = Field(description="The low percentile (the worse side: for latency the high "
                                   "one).")
    hosts: int
    pairs: int
    eligible: bool = Field(description="Enough hosts to judge anybody against it.")
    why_not: str | None = Field(description="Why an ineligible group judges nobody.")
    computed_at: datetime
    below: list[PeerBelow] = Field(description="Pairs flagged below the floor of its median.")


class SiblingComparison(BaseModel):
    gpu_model: str
    topology: str
    test: str
    driver: str
    reference_driver: str = Field(description="The sibling group with the best median.")
    ratio: float = Field(description="This driver's median over the reference's.")
    flagged: bool = Field(description="Below the floor: the whole group is slow.")
    text: str = Field(examples=["driver 570.86 is 0.92 of driver 560.35 for NVIDIA H200 "
                                "NVSwitch NV18 ce_write"])


class FleetPeersResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{
        "generated_at": "2026-12-01T12:00:00Z", "floor": 0.93, "min_hosts": 5,
        "low_percentile": 10.0, "groups": [], "siblings": []}]})

    generated_at: datetime
    floor: float = Field(description="PEERWATCH_FLEET_PEER_FLOOR")
    min_hosts: int = Field(description="PEERWATCH_FLEET_PEER_MIN_HOSTS")
    low_percentile: float = Field(description="PEERWATCH_FLEET_PEER_LOW_PERCENTILE")
    groups: list[PeerGroup]
    siblings: list[SiblingComparison]
