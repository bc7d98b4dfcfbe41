"""The values the decision engine reads and writes (no I/O, no server types).

`NodeFacts` is what the server judged about one host, `SchedNode` what the scheduler says of
the node, `Mark` peerwatch's own record on the server that it took the node out, `Breaker`
the circuit breaker's state; a `Decision` is what the engine wants done to one node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


@dataclass(frozen=True)
class GpuFact:
    gpu: int
    verdict: str  # healthy | degraded | down | unknown
    reason: str
    since: datetime
    action: str = ""  # what a person does about it (the server's catalog)


@dataclass(frozen=True)
class AlertFact:
    name: str  # the alertname, e.g. GPUMissing
    summary: str
    since: datetime  # when it fired
    gpu: int | None = None
    action: str = ""


@dataclass(frozen=True)
class NodeFacts:
    host: str
    verdict: str | None  # None: never judged
    reason: str
    since: datetime | None
    stale: bool = False
    gpus_total: int = 0
    gpus: tuple[GpuFact, ...] = ()
    alerts: tuple[AlertFact, ...] = ()
    maintenance_until: datetime | None = None
    started_at: datetime | None = None  # newest probe start / driver load: settle after boot
    nvlink_domain: str | None = None  # rack-scale NVLink domain and clique (labels)
    nvlink_clique: int | None = None
    action: str = ""  # what to do about the host's verdict (when down)
    # GPUs each source names (nvml now, inventory rows, pci, seen_since_boot) and when the
    # newest full sweep was judged: the evidence a return needs (app/drain/proof.py)
    gpu_counts: dict[str, int] = field(default_factory=dict)
    full_sweep_at: datetime | None = None

    @property
    def healthy_gpus(self) -> int:
        return sum(1 for g in self.gpus if g.verdict == "healthy")

    @property
    def present_gpus(self) -> int:
        return self.gpu_counts.get("nvml", len(self.gpus))

    @property
    def expected_gpus(self) -> int:
        return max(self.gpu_counts.values(), default=len(self.gpus))


@dataclass(frozen=True)
class SchedNode:
    """A node as the scheduler shows it: `out` drained/cordoned by anyone, `ours` out by
    peerwatch (Slurm: its reason prefix; Kubernetes: its own condition or annotation)."""

    name: str
    out: bool = False
    ours: bool = False
    reason: str = ""
    gpus: int | None = None  # GPUs the scheduler gives the node (Slurm GRES, nvidia.com/gpu)
    # when it was taken out, as the scheduler says (Slurm: the reason's [user@time];
    # Kubernetes: peerwatch's annotation); None: it does not say
    out_since: datetime | None = None


@dataclass(frozen=True)
class Mark:
    """peerwatch took `host` out (`applied`; False: observe mode only recorded it)."""

    host: str
    taken_out_at: datetime
    reason: str
    applied: bool = True
    clear_since: datetime | None = None  # healthy since, counting towards its return
    adopted: bool = False  # found out by peerwatch with no mark: the server saw no take-out


@dataclass(frozen=True)
class Breaker:
    open: bool = False
    opened_at: datetime | None = None
    reason: str = ""
    taken_out_in_window: int = 0  # take-outs recorded in the policy's breaker window
    cause: str | None = None  # while open: "limit" or "state_lost" (returns wait too)
    known: bool = True  # the server holds peerwatch's drain state for this scheduler


class Do(StrEnum):
    TAKE_OUT = "take_out"
    RETURN = "return"
    RECOVERING = "recovering"  # healthy now: its return waits for return_after
    RELAPSED = "relapsed"  # faulty again while recovering: the wait starts over
    ADOPT = "adopt"  # out by peerwatch on the scheduler, but no mark on the server
    FORGET = "forget"  # drop peerwatch's mark: someone else owns the node now, or it is gone
    TRIP_BREAKER = "breaker_trip"
    HOLD = "hold"  # would act, but may not now (debounce, settle, maintenance, breaker)
    KEEP = "keep"  # nothing to do


RECORDED = frozenset(Do) - {Do.HOLD, Do.KEEP}  # what is reported to the server


@dataclass(frozen=True)
class Decision:
    node: str
    do: Do
    reason: str
    details: dict[str, object] = field(default_factory=dict)


class BackedOff(RuntimeError):
    """The node changed under peerwatch between its read and its write: someone else drained
    or cordoned it. Nothing of theirs is changed; the words say whose it is and why."""


@dataclass(frozen=True)
class LeaseState:
    """Which controller acts for a scheduler: `held` by the asker, else `holder` until
    `expires_at` (None: no live lease)."""

    held: bool
    holder: str | None = None
    expires_at: datetime | None = None
