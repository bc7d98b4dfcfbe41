"""The breaker's arithmetic and its fail-closed rule. Pure: values in, decisions out.

It bounds what peerwatch does, over what peerwatch watches: the share limit counts the GPU
nodes the server has heard from (a CPU node the scheduler lists is not one), and only the
nodes peerwatch itself holds out use its slots (a person's maintenance drain does not).

Its state lives on the server. A server with no record of peerwatch's drains on this
scheduler (no breaker row: it is made by the first action) while the scheduler shows nodes
out by peerwatch has lost that state (a wiped or restored database): the breaker trips
closed with cause `state_lost`, and until a person resets it nothing is taken out and
nothing is returned; the nodes are adopted meanwhile, so peerwatch still owns them.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from peerwatch.app.drain.facts import Breaker, Decision, Do, SchedNode
from peerwatch.app.drain.policy import Policy

LOST = "state_lost"


def watched(nodes: tuple[SchedNode, ...], hosts: set[str]) -> list[SchedNode]:
    """The scheduler's nodes peerwatch monitors: those whose host the server has heard from."""
    return [n for n in nodes if n.name in hosts]


def room(policy: Policy, nodes: tuple[SchedNode, ...], hosts: set[str], breaker: Breaker,
         virtual_out: int) -> tuple[int, str]:
    """How many more nodes may be taken out now, and the limit that says so. `virtual_out`:
    nodes observe mode recorded as taken out (they are not out on the scheduler)."""
    limits = policy.breaker
    gpu_nodes = watched(nodes, hosts)
    out_now = sum(1 for n in nodes if n.ours) + virtual_out
    by_window = limits.max_per_window - breaker.taken_out_in_window
    # at least one node of a small fleet (20 % of 4 nodes would otherwise be none)
    by_share = max(1, math.floor(limits.max_share_out * len(gpu_nodes))) - out_now
    if by_window <= by_share:
        return by_window, (f"{limits.max_per_window} take-outs within {limits.window_s:g} s "
                           f"({breaker.taken_out_in_window} already)")
    return by_share, (f"{limits.max_share_out:.0%} of {len(gpu_nodes)} GPU nodes out at once "
                      f"({out_now} out by peerwatch already)")


def state_lost(nodes: tuple[SchedNode, ...], breaker: Breaker, now: datetime,
               grace_s: float) -> list[str]:
    """The nodes out by peerwatch on a scheduler the server holds no drain state for, each
    drained at least `grace_s` ago (or at a time the scheduler does not say). A younger
    drain may be a round's own, made a moment before that round records it on the server
    (overlapping health checks on a fresh server): not evidence that state was lost."""
    if breaker.known:
        return []
    settled = now - timedelta(seconds=grace_s)
    return sorted(n.name for n in nodes
                  if n.ours and (n.out_since is None or n.out_since <= settled))


def lost_trip(lost: list[str]) -> Decision:
    shown = ", ".join(lost[:10]) + (f" (+{len(lost) - 10} more)" if len(lost) > 10 else "")
    return Decision("", Do.TRIP_BREAKER, f"the server has no record of peerwatch's drains, yet "
                    f"{len(lost)} nodes are out by peerwatch ({shown}): its state was lost "
                    "(database wiped or restored?); nothing is taken out or returned until a "
                    "person resets the breaker", {"cause": LOST, "nodes": lost})


def returns_closed(breaker: Breaker, lost: list[str]) -> str | None:
    """Why returns wait too (only a lost state stops them; a limit never does)."""
    if lost:
        return "breaker: peerwatch's state was lost; a person resets it first"
    if breaker.open and breaker.cause == LOST:
        return f"breaker open since the state was lost: {breaker.reason}"
    return None
