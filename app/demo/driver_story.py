"""The demo's faults of the driver's own verdicts (app/analysis/gpu_health.py), cast onto
hosts no other story uses, where the fleet has them:

    +75 s   h200x2-03  GPU1's recovery action turns DRAIN_P2P (Xid 154): down, its pairs
                       left out of the scheduler answer (GPURecoveryActionRequired)
    +50 s   pcie4-03   GPU3 has a row remap pending: degraded, "reset the GPU when idle"
    +100 s  pcie4-03   GPU1's correctable PCIe AER errors rise (GPUPcieAerRising)
    +200 s  hgx8-02    GPU7's row remapping failed: down, "replace" (GPUMemoryFailed)
"""

from __future__ import annotations

import math
from collections.abc import Callable

from peerwatch.app.demo.fleet import DemoHost, find_host
from peerwatch.probes.sim.driver_faults import (
    AerGrowth,
    GpuRecoveryAction,
    RowRemapFailed,
    RowRemapPending,
)
from peerwatch.probes.sim.faults import Fault

Cast = Callable[[str, int, float, float, Callable[[float], tuple[Fault, ...]], str], None]
STORY: tuple[tuple[str, int, float, Fault, str], ...] = (
    ("h200x2", 3, 75, GpuRecoveryAction(gpu=1, action="drain_p2p"),
     "GPU1's driver asks to drain P2P (Xid 154): its pairs are left out"),
    ("pcie4", 3, 50, RowRemapPending(gpu=3),
     "GPU3 has a row remap pending: reset it when idle"),
    ("pcie4", 3, 100, AerGrowth(gpu=1, kind="correctable", per_second=0.2),
     "GPU1's correctable PCIe AER errors rise"),
    ("hgx8", 2, 200, RowRemapFailed(gpu=7), "GPU7's row remapping failed: replace it"),
)


def _always(fault: Fault) -> Callable[[float], tuple[Fault, ...]]:
    return lambda _elapsed: (fault,)


def driver_story(fleet: list[DemoHost], cast: Cast) -> None:
    for preset, ordinal, start, fault, what in STORY:
        host = find_host(fleet, preset, ordinal)
        if host is not None and host.ordinal == ordinal:
            cast(preset, ordinal, start, math.inf, _always(fault), what)
