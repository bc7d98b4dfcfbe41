"""Reads of a host's RDMA NICs: the readings of each port over a window (what the NIC judge
takes rates of) and the NIC inventory of the newest report.

The port rows are sparse (app/ingest/sparse_nics.py): a reading that repeats the host's
newest stored one in every port's judged values is not stored, unless that one is
NIC_KEYFRAME_S old. So the readings are put back at the host's reading times (its
`gpu_samples`, one per GPU and reading): at each, the stored reading then, else the newest
stored one before it, unless that is NIC_KEYFRAME_S old (a reading with ports would have
been written: that one had none). The judge reads the same states, rates and judged
counters as when every reading was kept; the traffic counters (read by nothing on the
server) are the newest stored reading's.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from itertools import groupby
from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.nic_health import Reading
from peerwatch.app.store.tables.history import GpuSample
from peerwatch.app.store.tables.inventory import HostRuntime
from peerwatch.app.store.tables.nics import NIC_KEYFRAME_S, NicPortSample

KEYFRAME = timedelta(seconds=NIC_KEYFRAME_S)
Stored = tuple[str, int, datetime, Reading]  # device, port, time, the reading


# the reads of `port_readings`, built once (building a select cost more than its answer)
_START = select(func.max(NicPortSample.at)).where(
    NicPortSample.host_id == bindparam("host"), NicPortSample.at < bindparam("since"),
    NicPortSample.at > bindparam("reach"))
_READINGS = select(
    NicPortSample.device, NicPortSample.port, NicPortSample.at, NicPortSample.state,
    NicPortSample.phys_state, NicPortSample.rate_gbps, NicPortSample.link_layer,
    NicPortSample.counters).where(NicPortSample.host_id == bindparam("host"),
                                  NicPortSample.at >= bindparam("since")
                                  ).order_by(NicPortSample.at, NicPortSample.id)
_TIMES = select(GpuSample.at).distinct().where(GpuSample.host_id == bindparam("host"),
                                               GpuSample.at >= bindparam("since"))


def port_readings(session: Session, host_id: int, since: datetime
                  ) -> dict[tuple[str, int], list[Reading]]:
    """Each port's readings from `since` on, oldest first."""
    start = session.scalar(_START, {"host": host_id, "since": since,
                                    "reach": since - KEYFRAME}) or since
    stored = []
    for device, port, at, state, phys, rate, layer, counters in session.execute(
            _READINGS, {"host": host_id, "since": start}):
        when = _aware(at)
        stored.append((device, port, when, Reading(when, state, phys, rate, layer,
                                                   counters or {})))
    times = session.scalars(_TIMES, {"host": host_id, "since": since})
    out: dict[tuple[str, int], list[Reading]] = {}
    for device, port, reading in put_back(stored, (_aware(t) for t in times), since):
        out.setdefault((device, port), []).append(reading)
    return out


def put_back(stored: list[Stored], times: Iterable[datetime], since: datetime
             ) -> list[tuple[str, int, Reading]]:
    """The readings from `since` on: the `stored` ones (time order; the first may stand
    before `since`), and at each reading time in `times` with none stored the newest stored
    reading before it, under NIC_KEYFRAME_S old, at that time."""
    readings = {at: list(rows) for at, rows in groupby(stored, key=lambda s: s[2])}
    out: list[tuple[str, int, Reading]] = []
    last: tuple[datetime, list[Stored]] | None = None
    for at in sorted(set(readings) | set(times)):
        if at in readings:
            last = (at, readings[at])
            if at >= since:
                out += [(device, port, reading) for device, port, _, reading in readings[at]]
        elif last is not None and at >= since and at - last[0] < KEYFRAME:
            out += [(device, port, reading._replace(at=at))
                    for device, port, _, reading in last[1]]
    return out


def _aware(at: datetime) -> datetime:
    """SQLite hands timestamps back naive (they are stored in UTC)."""
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def nic_inventory(session: Session, host_id: int) -> list[dict[str, Any]]:
    """The NICs of the host's newest report (probes/nics.py NicDevice as JSON); [] none."""
    row = session.get(HostRuntime, host_id)
    return list(row.nics or []) if row is not None else []
