"""The decision engine: per node, what peerwatch should do now. Pure: values in, decisions out.

Shared by every scheduler backend and by the controller's dry run, the Slurm health check
and the prolog gate. The rules, in order (docs/drain.md):
- a node inside a maintenance window is never touched;
- a node out of service by someone else is never touched (peerwatch's mark is dropped);
- a node peerwatch took out goes back once none of the policy's faults held for
  `return_after` and it is proven whole (`proof.py`: every GPU it is known to have present,
  a full sweep judged since the take-out); a fault while waiting starts the wait over;
- a node in service is taken out when a fault held for `debounce` and the host is not
  settling after a probe or driver start, unless the breaker is open or this take-out would
  pass one of its limits (then the breaker trips: a person resets it). Returns wait on it
  only when it opened because peerwatch's state was lost (`breaker.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from peerwatch.app.drain.breaker import lost_trip, returns_closed, state_lost
from peerwatch.app.drain.breaker import room as breaker_room
from peerwatch.app.drain.facts import Breaker, Decision, Do, Mark, NodeFacts, SchedNode
from peerwatch.app.drain.policy import Fault, Policy, faults
from peerwatch.app.drain.proof import count_fault, sweep_pending, unproven


@dataclass(frozen=True)
class Fleet:
    """Everything the engine reads in one round."""

    nodes: tuple[SchedNode, ...]  # as the scheduler lists them
    facts: dict[str, NodeFacts]  # by host name (lower case)
    marks: dict[str, Mark]  # peerwatch's own marks, by host name
    breaker: Breaker


def _at(t: datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S} UTC"


def _when_ours(policy: Policy, now: datetime, node: SchedNode, mark: Mark | None,
               facts: NodeFacts) -> Decision:
    """A node peerwatch holds out of service: keep it out, or start/finish its return."""
    name = node.name
    if mark is None:
        return Decision(name, Do.ADOPT, node.reason or "out by peerwatch, no mark recorded")
    found = _faults(policy, node, facts)
    why = None if found else unproven(node, mark, facts)
    if found or why:
        reason = found[0].reason if found else f"not proven whole: {why}"
        if mark.clear_since is not None:
            return Decision(name, Do.RELAPSED, reason)
        return Decision(name, Do.KEEP, f"still out: {reason}")
    if mark.clear_since is None:
        return Decision(name, Do.RECOVERING, "no fault the policy counts; returns after "
                        f"{policy.return_after_s:g} s healthy")
    back_at = mark.clear_since + timedelta(seconds=policy.return_after_s)
    if now >= back_at:
        if (pending := sweep_pending(mark, facts)) is not None:
            return Decision(name, Do.HOLD, f"healthy since {_at(mark.clear_since)}; {pending}")
        return Decision(name, Do.RETURN, f"healthy since {_at(mark.clear_since)}")
    return Decision(name, Do.HOLD, f"healthy since {_at(mark.clear_since)}; returns at "
                    f"{_at(back_at)}")


def _faults(policy: Policy, node: SchedNode, facts: NodeFacts) -> list[Fault]:
    """The policy's faults, and a scheduler GPU count above what NVML lists."""
    extra = count_fault(policy, node, facts)
    return [*faults(policy, facts), *([extra] if extra else [])]


def _when_in_service(policy: Policy, now: datetime, node: SchedNode,
                     facts: NodeFacts) -> Decision:
    found = _faults(policy, node, facts)
    if not found:
        return Decision(node.name, Do.KEEP, "no fault the policy counts")
    debounce = timedelta(seconds=policy.debounce_s)
    held = [f for f in found if now - f.since >= debounce]
    if not held:
        return Decision(node.name, Do.HOLD, f"{found[0].reason} (since {_at(found[0].since)}; "
                        f"must hold {policy.debounce_s:g} s first)")
    settle = timedelta(seconds=policy.settle_after_boot_s)
    if facts.started_at is not None and now - facts.started_at < settle:
        return Decision(node.name, Do.HOLD, f"{held[0].reason} (settling after a start at "
                        f"{_at(facts.started_at)} until {_at(facts.started_at + settle)})")
    return Decision(node.name, Do.TAKE_OUT, held[0].reason,
                    {"fault": held[0].kind, "since": held[0].since.isoformat()})


def decide_node(policy: Policy, now: datetime, node: SchedNode, mark: Mark | None,
                facts: NodeFacts | None) -> Decision:
    """One node's decision before the breaker is applied."""
    if facts is None:
        return Decision(node.name, Do.KEEP, "unknown to peerwatch: left alone")
    if facts.maintenance_until is not None and now < facts.maintenance_until:
        return Decision(node.name, Do.HOLD,
                        f"in maintenance until {_at(facts.maintenance_until)}: not touched")
    if node.out and not node.ours:
        if mark is not None:
            return Decision(node.name, Do.FORGET, f"out by someone else ({node.reason}): "
                            "peerwatch's mark dropped, the node left to them")
        return Decision(node.name, Do.KEEP, f"out by someone else ({node.reason}): left alone")
    virtual = mark is not None and not mark.applied and not policy.acts
    if node.ours or virtual:
        return _when_ours(policy, now, node, mark, facts)
    if mark is not None:
        why = ("returned to service by someone else" if mark.applied
               else "recorded in observe mode, now acting")
        return Decision(node.name, Do.FORGET, f"{why}: peerwatch's mark dropped")
    return _when_in_service(policy, now, node, facts)


def apply_breaker(policy: Policy, fleet: Fleet, wanted: list[Decision],
                  lost: Sequence[str] = ()) -> list[Decision]:
    """Take-outs the breaker lets through, the rest held, and the trip when a limit is hit."""
    if fleet.breaker.open or lost:
        why = ("peerwatch's state was lost" if lost else f"breaker open since "
               f"{fleet.breaker.opened_at and _at(fleet.breaker.opened_at)}: "
               f"{fleet.breaker.reason}")
        return [Decision(d.node, Do.HOLD, f"{d.reason} ({why})") for d in wanted]
    virtual = sum(1 for m in fleet.marks.values() if not m.applied and not policy.acts)
    room, limit = breaker_room(policy, fleet.nodes, set(fleet.facts), fleet.breaker, virtual)
    room = max(room, 0)
    if len(wanted) <= room:
        return wanted
    held = [Decision(d.node, Do.HOLD, f"{d.reason} (breaker: limit of {limit})")
            for d in wanted[room:]]
    trip = Decision("", Do.TRIP_BREAKER, f"{len(wanted) - room} more take-outs would pass the "
                    f"limit of {limit}", {"held": [d.node for d in held]})
    return [*wanted[:room], trip, *held]


def _closed(decisions: list[Decision], why: str | None) -> list[Decision]:
    """Returns held while the breaker is closed to them (peerwatch's state was lost)."""
    if why is None:
        return decisions
    return [Decision(d.node, Do.HOLD, f"{d.reason}; not returned: {why}")
            if d.do is Do.RETURN else d for d in decisions]


def decide(policy: Policy, now: datetime, fleet: Fleet, only: str | None = None
           ) -> list[Decision]:
    """Every node's decision, then peerwatch's marks of nodes the scheduler no longer has.
    With `only` (a node's own health check) the other nodes' take-outs are not counted
    against the breaker's room: only this node's round acts."""
    plain: list[Decision] = []
    wanted: list[Decision] = []
    listed = set()
    for node in sorted(fleet.nodes, key=lambda n: n.name):
        listed.add(node.name)
        d = decide_node(policy, now, node, fleet.marks.get(node.name), fleet.facts.get(node.name))
        if d.do is Do.TAKE_OUT and only not in (None, node.name):
            d = Decision(d.node, Do.HOLD, f"{d.reason} (left to its own round)")
        (wanted if d.do is Do.TAKE_OUT else plain).append(d)
    gone = [Decision(name, Do.FORGET, "node no longer in the scheduler: peerwatch's mark "
                     "dropped") for name in sorted(set(fleet.marks) - listed)]
    lost = state_lost(fleet.nodes, fleet.breaker, now, policy.breaker.lost_grace_s)
    plain = _closed(plain, returns_closed(fleet.breaker, lost))
    first = [lost_trip(lost)] if lost else []  # recorded before the adoptions it explains
    return [*first, *plain, *apply_breaker(policy, fleet, wanted, lost), *gone]


def changes(decisions: Iterable[Decision]) -> list[Decision]:
    """The decisions that do something (recorded on the server, applied in act mode)."""
    return [d for d in decisions if d.do not in (Do.HOLD, Do.KEEP)]
