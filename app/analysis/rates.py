"""Rates from cumulative counters, the way Prometheus' `rate()` reads them.

NVLink and PCIe counters are lifetime totals: their size says nothing (healthy H200s read
CRC counts of 5-20), their growth says everything. A counter that goes backwards was reset
(driver reload, GPU reset) and restarted from zero, so the growth across a reset is the new
value itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

Point = tuple[datetime, int | None]


def increases(points: Sequence[Point]) -> list[tuple[datetime, datetime, int]]:
    """(from, to, growth) between consecutive readings; missing readings are skipped."""
    known = [(at, v) for at, v in points if v is not None]
    out = []
    for (t0, v0), (t1, v1) in zip(known, known[1:], strict=False):
        if t1 <= t0:
            continue
        out.append((t0, t1, v1 - v0 if v1 >= v0 else v1))
    return out


def rate_per_s(points: Sequence[Point]) -> float | None:
    """Average growth per second across `points` (time order), None with < 2 readings."""
    steps = increases(points)
    if not steps:
        return None
    span = (steps[-1][1] - steps[0][0]).total_seconds()
    return sum(d for _, _, d in steps) / span if span > 0 else None
