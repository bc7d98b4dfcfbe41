"""The prolog's gate (`peerwatch drain --gate`): may this node start a job now?

First the node's own round, as a health check would run it (a take-out waits for the
debounce and the breaker). Then the gate's own question, from the latest judgement: is a GPU
of this node missing or down now (or the host down)? Then the job is refused at once,
without the debounce and also while the breaker is open: the breaker bounds how many nodes
peerwatch drains, it does not let a job onto a GPU known to be gone. A GPU down while the host
settles after a start (links still train) is not refused; a missing one is.

Slurm drains a node whose prolog fails, with the reason "Prolog error" that is nobody's (so
peerwatch would never put it back): the gate drains it first with peerwatch's own reason and
action, recorded as a take-out (`details.by: gate`), so it returns once healthy like any
other. In `mode: observe` the gate only says what it would refuse; the job runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from peerwatch.app.drain.client import DrainClient
from peerwatch.app.drain.controller import Backend, Leader, Round, run_round
from peerwatch.app.drain.facts import BackedOff, Decision, Do, NodeFacts
from peerwatch.app.drain.policy import Fault, Policy, faults

KEEP, REFUSE, UNKNOWN = 0, 10, 75  # the gate's exit status; 75: EX_TEMPFAIL
HARD = ("gpu_missing", "gpu_down", "host_down")


@dataclass(frozen=True)
class Answer:
    status: int  # KEEP, REFUSE or UNKNOWN
    reason: str


def hard_faults(policy: Policy, facts: NodeFacts, now: datetime) -> list[Fault]:
    """What refuses a job now: a GPU missing or down, the host down (as the policy counts
    them), whatever their age; while the host settles after a start only a missing GPU."""
    found = [f for f in faults(policy, facts) if f.kind in HARD]
    settle = timedelta(seconds=policy.settle_after_boot_s)
    if facts.started_at is not None and now - facts.started_at < settle:
        found = [f for f in found if f.kind == "gpu_missing"]
    return found


def _round_says_out(node: str, r: Round) -> str | None:
    """The round took the node out, or it is still out by peerwatch: the job is refused."""
    for d, what in r.done:
        if d.node == node and d.do is Do.TAKE_OUT and what == "taken out":
            return d.reason
    mine = [d for d in r.decisions if d.node == node]
    if mine and mine[0].do is Do.KEEP and mine[0].reason.startswith("still out"):
        return mine[0].reason.removeprefix("still out: ")
    return None


def _take_out(policy: Policy, backend: Backend, client: DrainClient, actor: str,
              name: str, fault: Fault, say: Callable[[str], None]) -> None:
    """Drain with peerwatch's reason before the prolog fails (else Slurm's "Prolog error")."""
    d = Decision(name.lower(), Do.TAKE_OUT, fault.reason,
                 {"fault": fault.kind, "since": fault.since.isoformat(), "by": "gate"})
    try:
        backend.take_out(name, fault.reason)
    except BackedOff as exc:
        client.report(d, "backed_off", backend.name, policy.mode, actor,
                      {"wanted": "take_out", "why": str(exc)[:500]})
        say(f"{d.node}: take_out backed off: {exc}")
        return
    except RuntimeError as exc:
        client.report(d, "failed", backend.name, policy.mode, actor,
                      {"wanted": "take_out", "error": str(exc)[:500]})
        say(f"{d.node}: take_out failed: {exc}")
        return
    client.report(d, "take_out", backend.name, policy.mode, actor)
    say(f"{d.node}: taken out by the gate")


def gate(policy: Policy, backend: Backend, client: DrainClient, actor: str, node: str, *,
         leader: Leader | None = None, say: Callable[[str], None] = print,
         now: datetime | None = None) -> Answer:
    """KEEP, REFUSE (with peerwatch's reason) or UNKNOWN for `node`."""
    now = now or datetime.now(UTC)
    name = node.lower()
    r = run_round(policy, backend, client, actor, only=node, dry_run=not policy.acts,
                  say=say, now=now, leader=leader)
    p = r.plan
    facts = p.facts.get(name) if p is not None else None
    sched = p.nodes.get(name) if p is not None else None
    if facts is None or sched is None:
        return Answer(UNKNOWN, f"{node} is unknown to peerwatch or to the scheduler")
    out = _round_says_out(name, r)
    if out is not None:
        return Answer(REFUSE, out)
    in_maintenance = facts.maintenance_until is not None and now < facts.maintenance_until
    hard = hard_faults(policy, facts, now)
    if not hard or in_maintenance or (sched.out and not sched.ours):
        return Answer(KEEP, "no GPU missing or down")
    if not policy.acts:
        say(f"{name}: would refuse the job (mode: observe): {hard[0].reason}")
        return Answer(KEEP, hard[0].reason)
    _take_out(policy, backend, client, actor, p.spelled.get(name, node) if p else node,
              hard[0], say)
    return Answer(REFUSE, hard[0].reason)
