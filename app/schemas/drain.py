"""API shapes of `peerwatch drain`: the state it decides from, the actions it reports, its
breaker (docs/drain.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field

from peerwatch.probes.report import HOSTNAME_RULE, valid_hostname

ActionKind = Literal["take_out", "return", "recovering", "relapsed", "adopt", "forget",
                     "breaker_trip", "breaker_reset", "failed", "backed_off"]
Mode = Literal["act", "observe"]
SchedulerName = Field(default="slurm", min_length=1, max_length=32, pattern=r"^[a-z0-9_-]+$",
                      examples=["slurm", "kubernetes"])


class GpuFactOut(BaseModel):
    gpu: int
    verdict: str
    reason: str
    since: datetime
    action: str = Field(default="", description="What a person does about it (the catalog's).")


class AlertFactOut(BaseModel):
    name: str = Field(examples=["GPUMissing"])
    summary: str
    since: datetime = Field(description="When it fired.")
    gpu: int | None = None
    action: str = Field(default="", description="What a person does about it (the catalog's).")


class DrainNodeOut(BaseModel):
    host: str
    verdict: str | None
    reason: str
    since: datetime | None
    stale: bool
    gpus_total: int
    gpus: list[GpuFactOut]
    alerts: list[AlertFactOut] = Field(description="Firing alerts of the host.")
    maintenance_until: datetime | None = Field(description="End of the active window, if any.")
    started_at: datetime | None = Field(description="Newest probe start or driver load.")
    nvlink_domain: str | None = Field(default=None, description="Rack-scale NVLink domain.")
    nvlink_clique: int | None = Field(default=None, description="Its clique id.")
    action: str = Field(default="", description="What to do about the host's verdict.")
    gpu_counts: dict[str, int] = Field(
        default_factory=dict, examples=[{"nvml": 7, "inventory": 8, "pci": 8,
                                         "seen_since_boot": 8}],
        description="GPUs each source names: `nvml` listed now, `inventory` the server's "
                    "GPU rows (present or missing), `pci` the NVIDIA PCI functions and "
                    "`seen_since_boot` the GPUs the agent saw since boot (these two only "
                    "when the probe reports them).")
    full_sweep_at: datetime | None = Field(
        default=None, description="When the newest full sweep (every GPU tested) arrived, "
                                  "once a judgement has read it; the server's clock.")


class MarkOut(BaseModel):
    host: str
    scheduler: str
    taken_out_at: datetime
    reason: str
    applied: bool = Field(description="False: recorded in observe mode, the node was not "
                                      "taken out.")
    clear_since: datetime | None = Field(description="Healthy since (its return waits).")
    adopted: bool = Field(default=False, description="Found out by peerwatch on the "
                                                     "scheduler with no mark, and adopted.")
    text: str = Field(examples=["taken out by peerwatch 03:12 UTC: GPU5 down: ..."])


class MarksResponse(BaseModel):
    marks: list[MarkOut]


class BreakerOut(BaseModel):
    scheduler: str
    open: bool
    mode: str | None
    opened_at: datetime | None
    reason: str
    reset_by: str | None
    reset_at: datetime | None
    taken_out_in_window: int = Field(description="take_out actions within window_s.")
    window_s: float
    cause: str | None = Field(default=None, description="Why it is open: `limit` (a take-out "
                              "would pass one) or `state_lost` (the scheduler shows nodes out "
                              "by peerwatch the server has no record of).")
    known: bool = Field(default=False, description="The server holds peerwatch's drain state "
                        "for this scheduler (it recorded an action or a reset).")


class LeaseIn(BaseModel):
    """Take or renew the scheduler's lease: the one controller that acts."""

    scheduler: str = SchedulerName
    holder: str = Field(min_length=1, max_length=128, pattern=r"^[\x21-\x7e]+$",
                        examples=["head1:4242"], description="Who asks (host:pid).")
    ttl_s: float = Field(gt=0, le=86_400, description="Held this long unless renewed.")


class LeaseRelease(BaseModel):
    scheduler: str = SchedulerName
    holder: str = Field(min_length=1, max_length=128)


class LeaseOut(BaseModel):
    scheduler: str
    holder: str | None = Field(description="Who acts now; none when no live lease is held.")
    held: bool = Field(description="In a POST's answer: whether the asker holds it now.")
    acquired_at: datetime | None
    expires_at: datetime | None


class DrainStateResponse(BaseModel):
    generated_at: datetime
    scheduler: str
    nodes: list[DrainNodeOut]
    marks: list[MarkOut]
    breaker: BreakerOut
    lease: LeaseOut = Field(description="Which controller acts for this scheduler.")


def _optional_host(value: str | None) -> str | None:
    return None if value is None else valid_hostname(value)


class ActionIn(BaseModel):
    host: Annotated[str | None, Field(max_length=253, description="The node; none for the "
                                      f"breaker's own actions. Host name: {HOSTNAME_RULE}."),
                    AfterValidator(_optional_host)] = None
    scheduler: str = SchedulerName
    kind: ActionKind
    mode: Mode
    reason: str = Field(max_length=2000)
    actor: str = Field(min_length=1, max_length=128, examples=["peerwatch-drain@head1"])
    details: dict[str, Any] = Field(default_factory=dict)


class ActionOut(ActionIn):
    host: str | None = Field(default=None, description="The node; none for the breaker's "
                             "own actions.")  # as stored: an answer is never refused
    id: int
    at: datetime


class ActionsResponse(BaseModel):
    actions: list[ActionOut]


class BreakerReset(BaseModel):
    scheduler: str = SchedulerName
    by: str = Field(min_length=1, max_length=128)
    comment: str = Field(default="", max_length=2000)
