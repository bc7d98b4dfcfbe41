"""A GPU that logged Xid 79 (fallen off the bus) is gone, whether or not the report that
carried the event still lists it: the driver reports it lost on the next read, and the
report order (event first, or the GPU's disappearance first) is an accident of timing.
So its pairs are not judged (unknown, as a missing GPU's), its verdict is down (the event's,
`judging/events.py`) and GPUMissing is its one page (`alerting/rules_probe.py`). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from peerwatch.app.analysis.xid_judge import EventFinding

OFF_BUS = ("xid", 79)


def fell_off(f: EventFinding) -> bool:
    return f.level == "fault" and (f.entry.kind, f.entry.code) == OFF_BUS


def off_bus_gpus(events: Sequence[EventFinding] | None) -> dict[int, EventFinding]:
    """GPUs whose held Xid 79 says they fell off the bus, listed in the report or not."""
    return {f.gpu: f for f in events or () if fell_off(f) and f.gpu is not None}
