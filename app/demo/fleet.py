"""Who is in the demo fleet: host names, presets and seeds, mixed so any size shows variety.

Presets are dealt round-robin (hgx8, h200x2, mesh4, pcie4, hgx8 ...), so even `--hosts 4`
has one of each and the default dozen has three of each. Names say what a host is
(`hgx8-01`, `h200x2-02`), which is what a person reading the dashboard wants to know first.

Beside them, `plan_racks` adds GB200 NVL72 racks: 18 compute trays each (`nvl72-a-tray01`
... `nvl72-a-tray18`), all in one NVLink domain. A rack's trays probe at a quarter of the
pace of the other hosts (`pace`), so a rack adds about as much load as a few HGX hosts.
"""

from __future__ import annotations

from dataclasses import dataclass

PRESETS = ("hgx8", "h200x2", "mesh4", "pcie4")
DEFAULT_HOSTS = 12
DEFAULT_RACKS = 1
RACK_PRESET, RACK_TRAYS, RACK_PACE = "nvl72", 18, 4


@dataclass(frozen=True)
class DemoHost:
    name: str
    preset: str
    ordinal: int  # 1 for the first host of its preset
    seed: int
    rack: str | None = None  # rack presets: the rack this tray is in
    pace: int = 1  # intervals are this many times the fleet's (backfill: every pace-th step)


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


def rack_name(index: int) -> str:
    """nvl72-a, nvl72-b, ... nvl72-z, nvl72-27 ..."""
    letter = chr(ord("a") + index) if index < 26 else str(index + 1)
    return f"{RACK_PRESET}-{letter}"


def plan_racks(racks: int, seed: int = 0) -> list[DemoHost]:
    """`racks` NVL72 racks of 18 trays; ordinals count trays across racks (1..18 is rack a)."""
    if racks < 0:
        raise ValueError(f"the demo cannot have {racks} racks")
    trays: list[DemoHost] = []
    for r in range(racks):
        rack = rack_name(r)
        for t in range(1, RACK_TRAYS + 1):
            trays.append(DemoHost(name=f"{rack}-tray{t:02d}", preset=RACK_PRESET,
                                  ordinal=len(trays) + 1, seed=seed * 1000 + 500 + len(trays),
                                  rack=rack, pace=RACK_PACE))
    return trays


def rack_trays(fleet: list[DemoHost], rack: str) -> list[DemoHost]:
    return [h for h in fleet if h.rack == rack]
