"""Who is in the demo fleet: host names, presets and seeds, mixed so any size shows variety.

Presets are dealt round-robin (hgx8, h200x2, mesh4, pcie4, hgx8 ...), so even `--hosts 4`
has one of each and the default dozen has three of each. Names say what a host is
(`hgx8-01`, `h200x2-02`), which is what a person reading the dashboard wants to know first.
"""

from __future__ import annotations

from dataclasses import dataclass

PRESETS = ("hgx8", "h200x2", "mesh4", "pcie4")
DEFAULT_HOSTS = 12


@dataclass(frozen=True)
class DemoHost:
    name: str
    preset: str
    ordinal: int  # 1 for the first host of its preset
    seed: int


def plan_fleet(hosts: int, seed: int = 0) -> list[DemoHost]:
    if hosts < 1:
        raise ValueError(f"the demo needs at least one host, got {hosts}")
    fleet: list[DemoHost] = []
    counts = dict.fromkeys(PRESETS, 0)
    for i in range(hosts):
        preset = PRESETS[i % len(PRESETS)]
        counts[preset] += 1
        fleet.append(DemoHost(name=f"{preset}-{counts[preset]:02d}", preset=preset,
                              ordinal=counts[preset], seed=seed * 1000 + i))
    return fleet


def find_host(fleet: list[DemoHost], preset: str, ordinal: int = 1) -> DemoHost | None:
    """The `ordinal`-th host of a preset, else the first of it, else None (small fleets)."""
    same = [h for h in fleet if h.preset == preset]
    if not same:
        return None
    return next((h for h in same if h.ordinal == ordinal), same[0])
