"""One round of `peerwatch drain`: read the server's state and the scheduler's nodes, decide
with the engine, act (only in `mode: act`, never in a dry run), report every change.

The order keeps nothing lost: the scheduler is changed first, then the action is reported;
if the report fails, the next round finds the node out by peerwatch with no mark and adopts
it (Slurm's reason prefix, Kubernetes' own condition are the ground truth of ownership). A
scheduler command that fails is reported as `failed` and changes no mark; a write the
backend backed off from (someone drained or cordoned the node between the round's read and
the write) is reported as `backed_off`, and their drain stands.

One controller acts per scheduler (`Leader`): each round asks for the lease (Slurm: held
through the server; Kubernetes: a coordination.k8s.io Lease); without it the round decides
and prints, but changes and records nothing, and says who acts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Protocol

from peerwatch.app.drain.client import DrainClient
from peerwatch.app.drain.engine import Fleet, changes, decide
from peerwatch.app.drain.facts import (
    BackedOff,
    Decision,
    Do,
    LeaseState,
    Mark,
    NodeFacts,
    SchedNode,
)
from peerwatch.app.drain.names import keep_valid
from peerwatch.app.drain.policy import Policy


class Backend(Protocol):
    name: str

    def nodes(self) -> list[SchedNode]: ...
    def take_out(self, name: str, reason: str) -> None: ...
    def put_back(self, name: str) -> None: ...
    def forget(self, name: str) -> None: ...


class Lease(Protocol):
    """A scheduler's lease: who may act (`ServerLease`, `k8s.KubeLease`)."""

    def take(self, holder: str, ttl_s: float) -> LeaseState: ...
    def peek(self, holder: str) -> LeaseState: ...
    def release(self, holder: str) -> None: ...


class ServerLease:
    """The lease of a scheduler without one of its own (Slurm), kept by the server."""

    def __init__(self, client: DrainClient, scheduler: str) -> None:
        self.client, self.scheduler = client, scheduler

    def take(self, holder: str, ttl_s: float) -> LeaseState:
        return self.client.take_lease(self.scheduler, holder, ttl_s)

    def peek(self, holder: str) -> LeaseState:
        seen = self.client.lease(self.scheduler)
        return LeaseState(seen.holder == holder, seen.holder, seen.expires_at)

    def release(self, holder: str) -> None:
        self.client.release_lease(self.scheduler, holder)


@dataclass
class Leader:
    """May this round act? The loop `take`s the lease (and renews it each round); a node's
    own health check only looks: it acts unless another controller holds a live lease."""

    lease: Lease
    holder: str  # host:pid
    ttl_s: float
    take: bool = True

    def observing(self) -> str | None:
        """None: act; else why this round only observes."""
        state = self.lease.take(self.holder, self.ttl_s) if self.take else \
            self.lease.peek(self.holder)
        if state.held or (not self.take and state.holder is None):
            return None
        until = f" until {state.expires_at:%Y-%m-%d %H:%M:%S} UTC" if state.expires_at else ""
        return (f"observing: the lease is held by {state.holder}{until}; "
                "deciding only, nothing done")


@dataclass
class Round:
    decisions: list[Decision]
    done: list[tuple[Decision, str]]  # (decision, what happened)
    observing: str | None = None  # why nothing was done: another controller holds the lease
    plan: Plan | None = None  # what the round decided from


def _lower(nodes: list[SchedNode]) -> tuple[tuple[SchedNode, ...], dict[str, str]]:
    """Nodes by lower-case name (how peerwatch names hosts), and each one's own spelling."""
    spelled = {n.name.lower(): n.name for n in nodes}
    return tuple(replace(n, name=n.name.lower()) for n in nodes), spelled


@dataclass
class Plan:
    decisions: list[Decision]
    spelled: dict[str, str]  # lower-case name -> the scheduler's own spelling
    marks: dict[str, Mark]
    facts: dict[str, NodeFacts]
    nodes: dict[str, SchedNode]  # by lower-case name, as the round read them
    refused: dict[str, str] = field(default_factory=dict)  # name off the rule -> why left alone


def plan(policy: Policy, backend: Backend, client: DrainClient, now: datetime,
         only: str | None = None) -> Plan:
    facts, marks, breaker = client.state(backend.name, policy.mode, policy.breaker.window_s)
    valid, refused = keep_valid(backend.nodes())
    nodes, spelled = _lower(valid)
    return Plan(decide(policy, now, Fleet(nodes, facts, marks, breaker), only), spelled,
                marks, facts, {n.name: n for n in nodes}, refused)


def _publish(backend: Backend, p: Plan, only: str | None,
             say: Callable[[str], None]) -> None:
    """Labels a scheduler can read (Kubernetes); a backend without `publish` has none."""
    publish = getattr(backend, "publish", None)
    if publish is None:
        return
    for name, spelled in sorted(p.spelled.items()):
        if name in p.facts and only in (None, name):
            try:
                publish(spelled, p.facts[name])
            except RuntimeError as exc:
                say(f"{name}: labels not written: {exc}")


def _apply(policy: Policy, backend: Backend, d: Decision, name: str, mark: Mark | None
           ) -> str:
    """Change the scheduler for `d` (act mode only); what was done, in words."""
    if not policy.acts or d.do in (Do.ADOPT, Do.RECOVERING, Do.RELAPSED, Do.TRIP_BREAKER):
        return "recorded" if policy.acts else "recorded (observe: not done)"
    if d.do is Do.TAKE_OUT:
        backend.take_out(name, d.reason)
        return "taken out"
    if d.do is Do.RETURN:
        if mark is None or not mark.applied:
            return "recorded"
        backend.put_back(name)
        return "put back"
    backend.forget(name)
    return "mark dropped"


def _act(policy: Policy, backend: Backend, client: DrainClient, actor: str, p: Plan,
         d: Decision, say: Callable[[str], None]) -> str:
    """Apply and report one decision; what happened, in words."""
    try:
        what = _apply(policy, backend, d, p.spelled.get(d.node, d.node), p.marks.get(d.node))
    except BackedOff as exc:  # someone else's drain or cordon: theirs stands
        client.report(d, "backed_off", backend.name, policy.mode, actor,
                      {"wanted": d.do.value, "why": str(exc)[:500]})
        say(f"{d.node}: {d.do.value} backed off: {exc}")
        return f"backed off: {exc}"
    except RuntimeError as exc:  # SlurmError, KubernetesError, BadNodeName: reported, mark
        # unchanged
        client.report(d, "failed", backend.name, policy.mode, actor,
                      {"wanted": d.do.value, "error": str(exc)[:500]})
        say(f"{d.node}: {d.do.value} failed: {exc}")
        return f"failed: {exc}"
    client.report(d, d.do.value, backend.name, policy.mode, actor)
    say(f"{d.node or '(breaker)'}: {what}")
    return what


def run_round(policy: Policy, backend: Backend, client: DrainClient, actor: str, *,
              dry_run: bool = False, only: str | None = None,
              now: datetime | None = None, say: Callable[[str], None] = print,
              leader: Leader | None = None) -> Round:
    """Decide over the whole fleet (the breaker counts all of it); act on `only` if given;
    with a `leader`, only while this controller holds the lease."""
    only = only.lower() if only else None
    p = plan(policy, backend, client, now or datetime.now(UTC), only)
    for name, refusal in p.refused.items():
        if only in (None, name.lower()):
            say(refusal)
    decisions = p.decisions
    if only is not None:
        decisions = [d for d in decisions if d.node in ("", only)]
    for d in decisions:
        say(f"{d.node or '(breaker)'}: {d.do.value}: {d.reason}")
    if dry_run:
        return Round(decisions, [], plan=p)
    observing = leader.observing() if leader is not None else None
    if observing is not None:
        say(f"(lease): {observing}")
        return Round(decisions, [], observing, p)
    done = [(d, _act(policy, backend, client, actor, p, d, say)) for d in changes(decisions)]
    if policy.acts:
        _publish(backend, p, only, say)
    return Round(decisions, done, plan=p)
