"""Which RDMA port readings a report writes: a reading (every port of one counter sample)
only when it says something the NIC judge reads that the host's newest stored one does not.

A host's NIC ports mostly read the same from one report to the next in what the NIC judge
reads (state, physical state, rate, link layer, the judged counters: `nic_health.JUDGED`),
while a busy port's traffic counters (port_xmit_data, packets ...) move at every reading;
nothing on the server reads those (the API passes them through, /metrics and the host page
show the judged ones; the agent's `/metrics` has them all, for a time-series store), and a
row of counters is the costly kind. Against the newest stored reading, a reading is written
whole, every port of it, when a port's judged values differ or the set of ports does, and
when that reading is NIC_KEYFRAME_S old, whatever it reads; the traffic counters ride along
in the rows written. So a reading left out repeats the stored one before it in every judged
value of every port, and `app/queries/nics.py` puts it back at the host's reading times
(its `gpu_samples`, kept for every reading): the judge reads the same states, rates and
verdicts as when every reading was kept (the traffic counters beside them are the newest
stored reading's).

Sparse only where every reading of the report has its GPU rows (the reading times the
reader puts readings back at) and the report is the host's newest; otherwise every reading
is written. What the newest stored reading was comes from this process's memo
(`InventoryMemo.nics`, on the terms of its links), else from the host's rows.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import groupby
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from peerwatch.app.analysis.nic_health import JUDGED
from peerwatch.app.ingest.host_row import HostState
from peerwatch.app.ingest.inventory import NICS_PENDING_KEY
from peerwatch.app.store.inventory_memo import MEMO_KEY, InventoryMemo, NicKey, NicSnapshot
from peerwatch.app.store.tables.nics import NIC_KEYFRAME_S, NicPortSample

KEYFRAME = timedelta(seconds=NIC_KEYFRAME_S)
STATE = ("state", "phys_state", "rate_gbps", "link_layer")
VALUES = (*STATE, "counters")


def sparse_nic_rows(session: Session, host: HostState, rows: list[dict[str, Any]],
                    reading_times: set[datetime], finished_at: datetime,
                    newest: bool) -> list[dict[str, Any]]:
    """The rows of `rows` (a report's NIC port rows, its samples in order) worth writing;
    `reading_times`: the times the report has GPU rows at."""
    if not newest or not rows or any(r["at"] not in reading_times for r in rows):
        return rows
    memo: InventoryMemo | None = session.info.get(MEMO_KEY)
    last = memo.nics(host) if memo is not None else None
    if last is None:
        last = stored_snapshot(session, host.id, rows[0]["at"])
    kept = []
    for at, group in groupby(rows, key=lambda r: r["at"]):
        reading = list(group)
        snapshot = NicSnapshot(ports_of(reading), at)
        if worth_writing(last, snapshot):
            kept += reading
            last = snapshot
    if memo is not None and last is not None:
        session.info[NICS_PENDING_KEY] = (host.id, last, finished_at)
    return kept


def worth_writing(last: NicSnapshot | None, reading: NicSnapshot) -> bool:
    """Whether a reading is written, given the host's newest stored one `last`."""
    return (last is None or reading.at < last.at or _judged(reading) != _judged(last)
            or reading.at - last.at >= KEYFRAME)


def ports_of(rows: list[dict[str, Any]]) -> dict[NicKey, tuple[object, ...]]:
    """Each port's values in one reading's rows (a row's columns or a stored row's): what
    the judge reads, then all its counters."""
    out: dict[NicKey, tuple[object, ...]] = {}
    for r in rows:
        counters = r["counters"] or {}
        judged = tuple(sorted((k, v) for k, v in counters.items() if k in JUDGED))
        out[(r["device"], r["port"])] = ((*(r[c] for c in STATE), judged), counters)
    return out


def _judged(snapshot: NicSnapshot) -> dict[NicKey, object]:
    return {key: values[0] for key, values in snapshot.ports.items()}


def stored_snapshot(session: Session, host_id: int, at: datetime) -> NicSnapshot | None:
    """The host's newest stored reading up to `at`, of the NIC_KEYFRAME_S before it."""
    m = NicPortSample
    newest = session.scalar(select(func.max(m.at)).where(
        m.host_id == host_id, m.at <= at, m.at > at - KEYFRAME))
    if newest is None:
        return None
    query = select(m.device, m.port, *(getattr(m, c) for c in VALUES)).where(
        m.host_id == host_id, m.at == newest)
    rows = [dict(r._mapping) for r in session.execute(query)]
    return NicSnapshot(ports_of(rows), _aware(newest))


def _aware(at: datetime) -> datetime:
    """SQLite hands timestamps back naive (they are stored in UTC)."""
    return at if at.tzinfo else at.replace(tzinfo=UTC)
