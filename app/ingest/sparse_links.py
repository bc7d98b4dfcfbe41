"""Which NVLink counter rows a report writes: a port's reading only when it says something
its newest stored row does not.

An 8-GPU host reads 144 ports every 30 s; a healthy port's error counters never move, and an
idle one's tx/rx bytes neither. Against the port's newest stored row, a reading is written
- at once when an error counter moved (what judging reads: its growth over any window is
  exactly that of every reading);
- when its tx/rx bytes moved and that row is LINK_KEYFRAME_S old (the throughput charts'
  resolution; the agent's `/metrics` has them at every scrape, for a time-series store);
- when that row is LINK_IDLE_KEYFRAME_S old, whatever it reads.
A reading left out therefore equals, in every error counter, the port's stored row before
it, and in every counter when a reading LINK_KEYFRAME_S or more after that row was left out
too: the readers carry a port's row forward over the gap (`app/queries/counters.py` reaches
back LINK_IDLE_KEYFRAME_S for each port's value at a window's start; `link_series` puts back
the readings a gap must have repeated).

What each port's newest row read comes from this process's memo (`InventoryMemo.links`),
trusted only while the host still shows the `last_report_at` this process set; otherwise
(another worker or replica stored the report before, a restart) from the host's rows, one
indexed range read of LINK_KEYFRAME_S and, for ports not in it, one of the
LINK_IDLE_KEYFRAME_S before. A report older than the host's newest writes every port.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from peerwatch.app.ingest.host_row import HostState
from peerwatch.app.ingest.inventory import LINKS_PENDING_KEY
from peerwatch.app.store.inventory_memo import (
    MEMO_KEY,
    Errors,
    InventoryMemo,
    LinkReadings,
    Port,
    Traffic,
)
from peerwatch.app.store.tables.history import (
    LINK_IDLE_KEYFRAME_S,
    LINK_KEYFRAME_S,
    LinkSample,
)

ERRORS = ("replay", "recovery", "crc_flit", "crc_data", "ecc_data")
TRAFFIC = ("tx_bytes", "rx_bytes")
KEYFRAME = timedelta(seconds=LINK_KEYFRAME_S)
IDLE_KEYFRAME = timedelta(seconds=LINK_IDLE_KEYFRAME_S)
Stored = tuple[Errors, Traffic, datetime]  # a port's newest row: errors, tx/rx, time


def sparse_link_rows(session: Session, host: HostState, rows: list[dict[str, Any]],
                     finished_at: datetime, newest: bool) -> list[dict[str, Any]]:
    """The rows of `rows` (a report's link rows, its samples in order) worth writing; what
    the ports' newest rows read after them is remembered once the transaction commits."""
    if not newest or not rows:
        return rows
    memo: InventoryMemo | None = session.info.get(MEMO_KEY)
    known = memo.links(host) if memo is not None else None
    ports = dict(known.ports) if known is not None else stored_ports(
        session, host.id, rows[0]["at"], {(r["gpu"], r["link"]) for r in rows})
    kept = []
    for row in rows:
        port, errors, traffic, at = (row["gpu"], row["link"]), _of(row, ERRORS), \
            _of(row, TRAFFIC), row["at"]
        if worth_writing(ports.get(port), errors, traffic, at):
            kept.append(row)
            ports[port] = (errors, traffic, at)
    if memo is not None:
        session.info[LINKS_PENDING_KEY] = (host.id, LinkReadings(ports), finished_at)
    return kept


def worth_writing(last: Stored | None, errors: Errors, traffic: Traffic, at: datetime) -> bool:
    """Whether a port's reading at `at` is written, given its newest stored row `last`."""
    if last is None:
        return True
    was_errors, was_traffic, was_at = last
    if at < was_at or errors != was_errors:
        return True
    age = at - was_at
    return age >= IDLE_KEYFRAME or (traffic != was_traffic and age >= KEYFRAME)


def stored_ports(session: Session, host_id: int, at: datetime,
                 wanted: set[Port]) -> dict[Port, Stored]:
    """Each port's newest row up to `at`, of the LINK_IDLE_KEYFRAME_S before it (a port
    without one is written, whatever it reads): the last LINK_KEYFRAME_S first, where a
    moving port has one, and the rest of the range only for the `wanted` ports it lacks."""
    found = _newest_rows(session, host_id, at - KEYFRAME, at)
    if wanted - found.keys():
        older = _newest_rows(session, host_id, at - IDLE_KEYFRAME, at - KEYFRAME)
        found = {**older, **found}
    return found


def _newest_rows(session: Session, host_id: int, after: datetime,
                 until: datetime) -> dict[Port, Stored]:
    """Each port's newest row in (after, until]."""
    query = (select(LinkSample.gpu, LinkSample.link, LinkSample.at,
                    *(getattr(LinkSample, c) for c in (*ERRORS, *TRAFFIC)))
             .where(LinkSample.host_id == host_id, LinkSample.at > after,
                    LinkSample.at <= until)
             .order_by(LinkSample.at, LinkSample.gpu, LinkSample.link))
    split = len(ERRORS)
    return {(gpu, link): (tuple(values[:split]), tuple(values[split:]), _aware(when))
            for gpu, link, when, *values in session.execute(query)}


def _of(row: dict[str, Any], columns: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(row[c] for c in columns)


def _aware(at: datetime) -> datetime:
    """SQLite hands timestamps back naive (they are stored in UTC)."""
    return at if at.tzinfo else at.replace(tzinfo=UTC)
