"""One round of `peerwatch drain`: read the server's state and the scheduler's nodes, decide
with the engine, act (only in `mode: act`, never in a dry run), report every change.

The order keeps nothing lost: the scheduler is changed first, then the action is reported;
if the report fails, the next round finds the node out by peerwatch with no mark and adopts
it (Slurm's reason prefix, Kubernetes' own condition are the ground truth of ownership). A
scheduler command that fails is reported as `failed` and changes no mark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol

from peerwatch.app.drain.client import DrainClient
from peerwatch.app.drain.engine import Fleet, changes, decide
from peerwatch.app.drain.facts import Decision, Do, Mark, NodeFacts, SchedNode
from peerwatch.app.drain.policy import Policy


class Backend(Protocol):
    name: str

    def nodes(self) -> list[SchedNode]: ...
    def take_out(self, name: str, reason: str) -> None: ...
    def put_back(self, name: str) -> None: ...
    def forget(self, name: str) -> None: ...


@dataclass
class Round:
    decisions: list[Decision]
    done: list[tuple[Decision, str]]  # (decision, what happened)


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


def plan(policy: Policy, backend: Backend, client: DrainClient, now: datetime,
         only: str | None = None) -> Plan:
    facts, marks, breaker = client.state(backend.name, policy.mode, policy.breaker.window_s)
    nodes, spelled = _lower(backend.nodes())
    return Plan(decide(policy, now, Fleet(nodes, facts, marks, breaker), only), spelled,
                marks, facts)


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


def run_round(policy: Policy, backend: Backend, client: DrainClient, actor: str, *,
              dry_run: bool = False, only: str | None = None,
              now: datetime | None = None, say: Callable[[str], None] = print) -> Round:
    """Decide over the whole fleet (the breaker counts all of it); act on `only` if given."""
    only = only.lower() if only else None
    p = plan(policy, backend, client, now or datetime.now(UTC), only)
    decisions = p.decisions
    if only is not None:
        decisions = [d for d in decisions if d.node in ("", only)]
    for d in decisions:
        say(f"{d.node or '(breaker)'}: {d.do.value}: {d.reason}")
    done: list[tuple[Decision, str]] = []
    if dry_run:
        return Round(decisions, done)
    for d in changes(decisions):
        try:
            what = _apply(policy, backend, d, p.spelled.get(d.node, d.node), p.marks.get(d.node))
        except RuntimeError as exc:  # SlurmError, KubernetesError: reported, mark unchanged
            client.report(d, "failed", backend.name, policy.mode, actor,
                          {"wanted": d.do.value, "error": str(exc)[:500]})
            done.append((d, f"failed: {exc}"))
            say(f"{d.node}: {d.do.value} failed: {exc}")
            continue
        client.report(d, d.do.value, backend.name, policy.mode, actor)
        done.append((d, what))
        say(f"{d.node or '(breaker)'}: {what}")
    if policy.acts:
        _publish(backend, p, only, say)
    return Round(decisions, done)
