"""Bring a simulated host's faults to what the scenario says they should be now."""

from __future__ import annotations

from collections.abc import Set

from peerwatch.probes.sim.faults import Fault
from peerwatch.probes.sim.simulated import SimulatedFabric


def apply_faults(fabric: SimulatedFabric, wanted: Set[Fault]) -> tuple[list[Fault], list[Fault]]:
    """Clear what is no longer wanted, inject what is new; returns (cleared, injected)."""
    current = set(fabric.faults)
    gone = [f for f in fabric.faults if f not in wanted]
    new = [f for f in wanted if f not in current]
    if gone:
        fabric.clear(*gone)
    if new:
        fabric.inject(*new)
    return gone, new
